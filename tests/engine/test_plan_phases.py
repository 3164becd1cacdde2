"""build_plan's phases one at a time, on a knowledge base of site rules made for them: what each
phase hands the next (resolve workloads -> run rules -> merge wants -> apply caps and floors ->
settle -> annotate), and that the phases in that order are build_plan."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.engine.plan_annotate import annotate
from sysctl_advisor.engine.plan_builder import build_plan, host_variables
from sysctl_advisor.engine.plan_host import PlanInputs, resolve_workloads
from sysctl_advisor.engine.plan_merge import merge_wants
from sysctl_advisor.engine.plan_resolve import resolve_key
from sysctl_advisor.engine.plan_rules import RuleRound, RuleRunner, run_rules
from sysctl_advisor.engine.plan_settle import planned_values, settle
from sysctl_advisor.engine.plan_work import first_by_rule
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.plan import Setting

REFERENCES = 'references: ["linux-6-18-doc-ip-sysctl: site policy"]\n'
RULES = {
    "want-backlog": "set:\n  net.core.somaxconn: 100000\n",
    "cap-backlog": "cap:\n  net.core.somaxconn: 50000\n",
    "mode-always": "set:\n  vm.overcommit_memory: 1\n",
    "mode-never": "set:\n  vm.overcommit_memory: 2\n",
    "few-files": "set:\n  fs.file-max: 100\n",
    # reads the plan's somaxconn and sets nothing: runs once, at the end
    "quote-backlog": (
        "findings:\n  - id: site.backlog\n    severity: info\n    key: net.core.somaxconn\n"
        '    when: "planned.somaxconn is not none"\n'
        '    message: "The plan ends with somaxconn {{ planned.somaxconn }}."\n'
    ),
    # reads the plan's somaxconn and wants twice it of the SYN backlog: runs again once the
    # backlog's want and cap are resolved
    "follow-backlog": (
        "set:\n  net.ipv4.tcp_max_syn_backlog: "
        '"planned.somaxconn * 2 if planned.somaxconn is not none else none"\n'
    ),
}
HOST = {
    "kernel": "6.1.0",
    "memory": {"total": "8 GiB"},
    "sysctl": {
        "net.core.somaxconn": "4096",
        "fs.file-max": "1000",  # below the floor of this capacity
        "net.ipv4.tcp_fin_timeout": "sixty",  # not a value the key holds
    },
}


@pytest.fixture(scope="module")
def site_kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    root = tmp_path_factory.mktemp("site")
    (root / "rules").mkdir()
    for name, body in RULES.items():
        (root / "rules" / f"{name}.yaml").write_text(
            f"id: site.{name}\ntitle: Site rule {name}\ndescription: The site's {name}.\n"
            f"{body}rationale: Site policy ({name}).\n{REFERENCES}"
        )
    (root / "profiles").mkdir()
    (root / "profiles" / "site.yaml").write_text(
        "name: site\nsummary: Site policy\ndescription: The site's rules.\n"
        f"rules: [{', '.join(f'site.{n}' for n in RULES)}]\n"
    )
    (root / "profiles" / "plain.yaml").write_text(
        "name: plain\nsummary: Site policy, plain\ndescription: No rule reads the plan.\n"
        "rules: [site.want-backlog, site.cap-backlog]\n"
    )
    return KnowledgeBase.load([root / "rules"], [root / "profiles"])


def _inputs(kb: KnowledgeBase, host: dict[str, Any] = HOST) -> PlanInputs:
    facts = facts_from_data(host)
    return resolve_workloads(kb, facts, kb.workload("site"), host_variables(kb, facts))


def _merged(kb: KnowledgeBase) -> tuple[RuleRunner, RuleRound]:
    runner = RuleRunner(_inputs(kb))
    round_ = run_rules(runner)
    round_.merge(runner.inputs)
    return runner, round_


def test_resolve_workloads_gives_the_baseline_and_leaves_out_what_a_key_cannot_hold(
    site_kb: KnowledgeBase,
) -> None:
    """The baseline is the value in force, else the kernel default; `planned` starts there. A
    value in force the key cannot hold is not known, with a note, and never emitted."""
    inputs = _inputs(site_kb)
    assert inputs.baseline["somaxconn"] == 4096
    assert inputs.baseline["overcommit_memory"] == inputs.defaults["vm.overcommit_memory"]
    assert inputs.variables["planned"] is inputs.baseline
    assert "net.ipv4.tcp_fin_timeout" in inputs.unmodelled
    assert inputs.current["tcp_fin_timeout"] is None
    assert any(n.startswith("facts: net.ipv4.tcp_fin_timeout = sixty") for n in inputs.notes)
    assert {r.rule_id for r in inputs.runs} == {f"site.{n}" for n in RULES}
    assert inputs.variables["workloads"] == ["site"]


def test_run_rules_keeps_a_reader_that_sets_nothing_for_the_end(site_kb: KnowledgeBase) -> None:
    """Every run is evaluated but the one of a rule that reads `planned` and sets nothing: that
    one waits for the values the plan ends with."""
    runner = RuleRunner(_inputs(site_kb))
    round_ = run_rules(runner)
    runs = runner.inputs.runs
    assert [runs[i].rule_id for i in round_.later] == ["site.quote-backlog"]
    evaluated = {runs[i].rule_id for i, result in round_.by_run.items() if result is not None}
    assert evaluated == {f"site.{n}" for n in RULES} - {"site.quote-backlog"}
    assert round_.results == [] and round_.work == {}  # not merged yet


def test_merge_wants_drops_a_mode_wanted_two_ways_with_a_contradiction(
    site_kb: KnowledgeBase,
) -> None:
    """Two rules that want overcommit_memory 1 and 2: no value serves both, so the key leaves
    the work and a contradiction names both; a want and a cap on one key stay together."""
    runner, round_ = _merged(site_kb)
    work, contradictions = merge_wants(round_.results, runner.inputs)
    assert "vm.overcommit_memory" not in work
    (found,) = [c for c in contradictions if c.key == "vm.overcommit_memory"]
    assert found.id == "plan.contradiction"
    assert "site.mode-always" in found.message and "site.mode-never" in found.message
    backlog = work["net.core.somaxconn"]
    assert backlog.wants == [("site.want-backlog", 100000)]
    assert backlog.caps == [("site.cap-backlog", 50000)]


def test_resolve_key_applies_the_cap_over_the_want_and_the_floor_over_the_value(
    site_kb: KnowledgeBase,
) -> None:
    """Caps beat wants, and the rationale says so; a capacity below its floor is raised to it
    (a want below the value in force keeps the value in force first)."""
    runner, round_ = _merged(site_kb)
    by_rule = first_by_rule(round_.results)
    backlog = resolve_key(runner.inputs, round_.work["net.core.somaxconn"], by_rule)
    assert isinstance(backlog, Setting)
    assert (backlog.value, backlog.capped_by, backlog.wanted) == (
        "50000",
        ["site.cap-backlog"],
        [100000],
    )
    assert "Safety cap (site.cap-backlog) wins: the wanted 100000 becomes 50000." in (
        backlog.rationale
    )
    files = resolve_key(runner.inputs, round_.work["fs.file-max"], by_rule)
    assert isinstance(files, Setting)
    assert files.value == "8192" and "the floor of this capacity" in files.rationale
    no_text = resolve_key(runner.inputs, round_.work["net.core.somaxconn"], by_rule, text=False)
    assert isinstance(no_text, Setting) and no_text.rationale == "" and no_text.value == "50000"


def test_settle_runs_a_reader_again_and_the_one_that_sets_nothing_once(
    site_kb: KnowledgeBase,
) -> None:
    """Before settling, the SYN backlog follows the baseline's somaxconn; after, the capped
    value the plan ends with, and the reader that sets nothing has run with it."""
    runner, round_ = _merged(site_kb)
    first = round_.work["net.ipv4.tcp_max_syn_backlog"].wants
    assert first == [("site.follow-backlog", 2 * 4096)]
    planned = planned_values(runner.inputs, round_, {"somaxconn"}, None, runner.inputs.baseline)
    assert planned["somaxconn"] == 50000
    settle(runner, round_)
    assert round_.work["net.ipv4.tcp_max_syn_backlog"].wants == [("site.follow-backlog", 2 * 50000)]
    assert runner.inputs.variables["planned"]["somaxconn"] == 50000
    quote = [r for _, r in round_.results if r.rule.id == "site.quote-backlog"]
    assert [f.message for r in quote for f in r.findings] == ["The plan ends with somaxconn 50000."]


def test_settle_without_readers_leaves_the_round_alone(site_kb: KnowledgeBase) -> None:
    """A plan no rule of which reads `planned` is settled as it was merged."""
    facts = facts_from_data(HOST)
    workload = site_kb.workload("plain")
    inputs = resolve_workloads(site_kb, facts, workload, host_variables(site_kb, facts))
    runner = RuleRunner(inputs)
    round_ = run_rules(runner)
    round_.merge(inputs)
    results, work = list(round_.results), round_.work
    settle(runner, round_)
    assert round_.results == results and round_.work is work
    assert inputs.variables["planned"] is inputs.baseline


def test_annotate_emits_settings_and_says_why_a_key_is_left_out(
    site_kb: KnowledgeBase,
) -> None:
    """The plan: settings sorted by section with their caps, the contradictions and the rules'
    findings, and a note for the key whose value in force the key cannot hold, which is never
    emitted."""
    runner, round_ = _merged(site_kb)
    settle(runner, round_)
    plan = annotate(runner.inputs, round_)
    values = {s.key: s.value for s in plan.settings}
    assert values == {
        "net.core.somaxconn": "50000",
        "net.ipv4.tcp_max_syn_backlog": "100000",
        "fs.file-max": "8192",
    }
    assert {f.id for f in plan.findings} == {"plan.contradiction", "site.backlog"}
    assert plan.notes is runner.inputs.notes
    assert "net.ipv4.tcp_fin_timeout" not in values
    assert plan.applied_rules == [r.rule.id for _, r in round_.results]


def test_the_phases_in_order_are_build_plan(site_kb: KnowledgeBase) -> None:
    """build_plan is the phases run in order, nothing more."""
    runner, round_ = _merged(site_kb)
    settle(runner, round_)
    assert annotate(runner.inputs, round_) == build_plan(site_kb, facts_from_data(HOST), "site")


def test_the_phases_are_short() -> None:
    """No function in the engine runs past 80 lines, none of the plan's phases past 60."""
    engine = Path(__file__).resolve().parents[2] / "sysctl_advisor" / "engine"
    long: list[str] = []
    for path in sorted(engine.rglob("*.py")):
        limit = 60 if path.name.startswith("plan_") else 80
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({length} lines)")
    assert long == []
