"""build_plan's rule phase: each rule run evaluated with what the rules see (the host, the
workload's parameters, `planned`), and the round of results the later phases merge, settle and
annotate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sysctl_advisor.engine.plan_host import PlanInputs
from sysctl_advisor.engine.plan_merge import merge_wants
from sysctl_advisor.engine.plan_work import KeyWork
from sysctl_advisor.knowledge.rules import FindingResult, RuleResult
from sysctl_advisor.knowledge.workloads import RuleRun


@dataclass
class RuleRunner:
    """Evaluates rule runs. What the rules see, and the context their `when`s share
    (read-only), is made once per workload whose parameters a run takes, and made again once
    `planned` changes."""

    inputs: PlanInputs
    seen: dict[str, tuple[dict[str, Any], Any]] = field(default_factory=dict)

    def evaluate(self, run: RuleRun) -> RuleResult | None:
        """The run's result (None: the rule does not apply)."""
        kb = self.inputs.kb
        first = run.workloads[0]
        if first not in self.seen:
            run_variables = {**self.inputs.variables, "params": self.inputs.params_by[first]}
            self.seen[first] = (run_variables, kb.compiler.context(run_variables))
        run_variables, screen = self.seen[first]
        return kb.rules[run.rule_id].evaluate(run_variables, screen=screen)

    def plan_with(self, planned: dict[str, Any]) -> None:
        """Runs from now on see these values as `planned`."""
        self.inputs.variables["planned"] = planned
        self.seen.clear()


@dataclass
class RuleRound:
    """The rules' results so far, by run (an index into the inputs' runs), and what they merge
    to: each key's wants and caps, and the contradictions the merge found. `later`: the runs of
    rules that read `planned` and set and cap nothing (their findings and companions quote the
    plan), evaluated once, at the end."""

    by_run: dict[int, RuleResult | None]
    later: list[int]
    results: list[tuple[RuleRun, RuleResult]] = field(default_factory=list)
    work: dict[str, KeyWork] = field(default_factory=dict)
    contradictions: list[FindingResult] = field(default_factory=list)

    def evaluate(self, runner: RuleRunner, indexes: list[int], *, wanting: bool = True) -> None:
        """These runs evaluated (again), and the results merged again; `wanting` False for
        runs of rules that set and cap nothing, whose results change no key's wants or caps
        (the merge would come out the same): they only join the results."""
        runs = runner.inputs.runs
        for i in indexes:
            self.by_run[i] = runner.evaluate(runs[i])
        if wanting:
            self.merge(runner.inputs)
        else:
            self.results = self._in_run_order(runner.inputs)

    def merge(self, inputs: PlanInputs) -> None:
        """The results in run order, and what they merge to."""
        self.results = self._in_run_order(inputs)
        self.work, self.contradictions = merge_wants(self.results, inputs)

    def _in_run_order(self, inputs: PlanInputs) -> list[tuple[RuleRun, RuleResult]]:
        return [(inputs.runs[i], r) for i, r in sorted(self.by_run.items()) if r is not None]


def run_rules(runner: RuleRunner) -> RuleRound:
    """Phase two: every run evaluated with `planned` as the baseline, but those of rules that
    read `planned` and set and cap nothing (kept for the end); not merged yet."""
    inputs = runner.inputs
    round_ = RuleRound({}, [])
    for i, run in enumerate(inputs.runs):
        rule = inputs.kb.rules[run.rule_id]
        if rule.reads_planned and not (rule.spec.set or rule.spec.cap):
            round_.later.append(i)
            continue
        round_.by_run[i] = runner.evaluate(run)
    return round_
