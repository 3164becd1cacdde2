"""build_plan's settling phase: a rule that reads `planned`, the values the plan ends with,
runs again when a key it reads ends elsewhere than the rules were evaluated with, until
nothing a reader reads moves (a few passes at most); one that sets and caps nothing runs once,
at the end, with the values the plan ends with."""

from __future__ import annotations

from typing import Any

from sysctl_advisor.engine.plan_host import PlanInputs
from sysctl_advisor.engine.plan_resolve import resolve_key
from sysctl_advisor.engine.plan_rules import RuleRound, RuleRunner
from sysctl_advisor.engine.plan_work import first_by_rule
from sysctl_advisor.knowledge.rules import Rule
from sysctl_advisor.knowledge.values import parse_current
from sysctl_advisor.model.plan import Setting

# How many times `planned` is worked out at most: once from the first pass, again while a
# reader that ran again moved a key another reader reads.
PLANNED_PASSES = 4


def settle(runner: RuleRunner, round_: RuleRound) -> None:
    """Phase five, on `round_`: the values the readers were evaluated with; a reader whose
    own wants depend on `planned` (postgresql.overcommit's ratio, tcp-buffers.bdp's maxima)
    can move a key another reader reads once it runs again, so `planned` is worked out again
    until nothing a reader reads moves. Then the readers that set nothing, once."""
    inputs = runner.inputs
    readers = [r.rule for _, r in round_.results if r.rule.reads_planned] + [
        inputs.kb.rules[inputs.runs[i].rule_id] for i in round_.later
    ]
    if not readers:
        return
    wanted = _aliases_read(readers)
    given = inputs.baseline
    touched: set[str] | None = None  # after a rerun, the keys whose wants may have moved
    for _ in range(PLANNED_PASSES):
        planned = planned_values(inputs, round_, wanted, touched, given)
        rerun = _readers_moved(round_, planned, given)
        if not rerun:
            break
        runner.plan_with(planned)
        given = planned
        touched = {key for i in rerun for key in inputs.kb.rules[inputs.runs[i].rule_id].keys}
        round_.evaluate(runner, rerun)
    if round_.later:  # they set nothing: once, with the values the plan ends with
        runner.plan_with(planned)
        round_.evaluate(runner, round_.later, wanting=False)


def _aliases_read(readers: list[Rule]) -> set[str] | None:
    """The aliases of `planned` the readers read (None: all)."""
    wanted: set[str] | None = set()
    for rule in readers:
        aliases = rule.planned_aliases
        wanted = None if wanted is None or aliases is None else wanted | aliases
    return wanted


def planned_values(
    inputs: PlanInputs,
    round_: RuleRound,
    wanted: set[str] | None,
    touched: set[str] | None,
    given: dict[str, Any],
) -> dict[str, Any]:
    """`planned` worked out from the round: each key a reader reads (of `wanted`, None: all)
    that the rules are about, or after a rerun each `touched` key, its setting's value
    (caps and floors applied, no text), else its baseline; the other keys as `given` (the
    baseline on the first pass)."""
    planned = dict(inputs.baseline if touched is None else given)
    by_rule = first_by_rule(round_.results)
    for key in touched if touched is not None else round_.work:
        spec = inputs.kb.catalog.keys[key]
        if wanted is not None and spec.alias not in wanted:
            continue
        item = round_.work.get(key)
        first = resolve_key(inputs, item, by_rule, text=False) if item is not None else None
        planned[spec.alias] = (  # else the baseline
            parse_current(first.value, spec)
            if isinstance(first, Setting)
            else inputs.baseline[spec.alias]
        )
    return planned


def _readers_moved(round_: RuleRound, planned: dict[str, Any], given: dict[str, Any]) -> list[int]:
    """The runs of readers that read a key `planned` moves from what they were given."""
    moved = {alias for alias, value in planned.items() if value != given[alias]}
    index = {id(r): i for i, r in round_.by_run.items() if r is not None}
    return [
        index[id(result)]
        for _, result in round_.results
        if result.rule.reads_planned
        and ((aliases := result.rule.planned_aliases) is None or aliases & moved)
    ]
