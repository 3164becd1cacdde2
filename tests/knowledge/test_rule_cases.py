"""Per-rule cases, one style for advice and check rules: tests/cases/<rule-id>.yaml, each with
cases that fire and cases that do not, validated against `CaseFile` (a misspelt key is an
error, never an expectation that checks nothing).

An advice rule's case gives facts (merged onto a plain 64-bit host), a profile and parameters,
whether the rule fires (contributes a setting, a cap that bites, a finding or a companion), and
what the plan must (or must not) contain. A check rule's case gives the sysctl text it judges
(`conf`; `# file: NAME` lines split it into the files of one sysctl.d directory), the facts or
`kernel` it assumes, and whether the rule reports a finding; each check rule's documented
examples (its `examples:` in rules/check) are two more of its cases.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.host import host_context
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.check.pipeline import judge_config
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.documents import KNOWLEDGE_FILE, parse_document, read_text
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.model_base import Field, Record, model, validate
from sysctl_advisor.outputs.advice_rules_reference import case_facts, case_params
from sysctl_advisor.sources.sysctl_files import read_file, read_tree
from tests.conftest import TESTS

CASES_DIR = TESTS / "cases"
CHECK_PROFILE = "frontend-proxy"  # the plan a check case's facts are judged against


@model
class Expect(Record):
    """What the plan must (or must not) hold when the case runs (advice rules)."""

    settings: dict[str, str | int] = Field(default_factory=dict)
    absent: list[str] = Field(default_factory=list)
    set_by_rule: list[str] = Field(default_factory=list)
    capped: list[str] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list)
    no_findings: list[str] = Field(default_factory=list)
    severities: dict[str, str] = Field(
        default_factory=dict, description="finding id -> the severity it must have"
    )
    companions: list[str] = Field(default_factory=list)
    companions_absent: list[str] = Field(default_factory=list)
    companion_targets: list[str] = Field(
        default_factory=list, description="targets some companion of the rule must have"
    )
    companion_targets_absent: list[str] = Field(
        default_factory=list, description="targets no companion of the rule may have"
    )
    unchanged: list[str] = Field(default_factory=list)
    rationale_contains: list[str] = Field(default_factory=list)
    rationale_absent: list[str] = Field(default_factory=list)
    message_contains: list[str] = Field(default_factory=list)
    message_absent: list[str] = Field(default_factory=list)
    kernel_default: dict[str, str | int | None] = Field(default_factory=dict)
    notes_contain: list[str] = Field(default_factory=list)


@model
class Case(Record):
    name: str = Field(min_length=1)
    fires: bool
    facts: dict[str, Any] | None = None
    profile: str | list[str] | None = Field(
        default=None, description="a profile, or several (a host running each workload)"
    )
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    kernel: str | None = Field(default=None, description="check rules: --kernel")
    conf: str | None = Field(default=None, description="check rules: the text judged")
    expect: Expect = Field(default_factory=Expect)


@model
class CaseFile(Record):
    rule: str
    cases: list[Case] = Field(min_length=1)

    def __post_init__(self) -> None:
        check = self.rule.startswith("check.")
        for index, case in enumerate(self.cases):
            if check and case.conf is None:
                raise ValueError(f"cases.{index}: a check rule's case needs `conf`")
            if not check and (case.conf is not None or case.kernel is not None):
                raise ValueError(f"cases.{index}: `conf` and `kernel` are for check rules")
            if check and (case.profile is not None or case.params or case.expect != Expect()):
                raise ValueError(
                    f"cases.{index}: `profile`, `params` and `expect` are for advice rules "
                    "(a check case says only whether the rule fires)"
                )


def load_case_file(path: Path) -> CaseFile:
    text = read_text(path)
    return validate(CaseFile, parse_document(text, path, KNOWLEDGE_FILE), path, text)


def _documented(kb: KnowledgeBase) -> list[tuple[str, Case]]:
    """Each check rule's documented examples, as two cases of its own."""
    found = []
    for rule_id, rule in sorted(kb.check_rules.items()):
        examples = rule.spec.examples
        for fires, text in ((True, examples.fires), (False, examples.quiet)):
            name = "documented example" + ("" if fires else " (quiet)")
            case = Case(
                name=name, fires=fires, facts=examples.facts, kernel=examples.kernel, conf=text
            )
            found.append((rule_id, case))
    return found


KB = KnowledgeBase.load()
FILES = [load_case_file(path) for path in sorted(CASES_DIR.glob("*.yaml"))]
CASES = [(f.rule, case) for f in FILES for case in f.cases] + _documented(KB)


@pytest.mark.parametrize(("rule_id", "case"), CASES, ids=[f"{r}:{c.name}" for r, c in CASES])
def test_case(kb: KnowledgeBase, rule_id: str, case: Case, tmp_path: Path) -> None:
    if rule_id.startswith("check."):
        assert (rule_id in _check_ids(kb, case, tmp_path)) == case.fires, case.conf
        return
    facts = facts_from_data(case_facts(case.facts))
    plan = build_plan(kb, facts, case.profile or "base", case_params(case.params))
    fired = (
        any(rule_id in s.rules + s.capped_by for s in plan.settings)
        or any(rule_id in u.rules for u in plan.unchanged)
        or any(f.rule == rule_id for f in plan.findings)
        or any(c.rule == rule_id for c in plan.companions)
    )
    assert fired == case.fires, (plan.applied_rules, plan.settings, plan.findings)
    expect = case.expect
    settings = {s.key: s for s in plan.settings}
    for key, value in expect.settings.items():
        assert key in settings, f"{key} not set; unchanged={plan.unchanged}, notes={plan.notes}"
        assert settings[key].value == str(value)
    for key in expect.absent:
        assert key not in settings, settings[key].value
    for key in expect.set_by_rule:
        assert rule_id in settings[key].rules + settings[key].capped_by
    for key in expect.capped:
        assert rule_id in settings[key].capped_by
    finding_ids = {f.id for f in plan.findings}
    for fid in expect.findings:
        assert fid in finding_ids, finding_ids
    for fid in expect.no_findings:
        assert fid not in finding_ids
    for fid, severity in expect.severities.items():
        found = {str(f.severity) for f in plan.findings if f.id == fid}
        assert found == {severity}, (fid, found)
    for text in expect.companions:
        assert any(text in c.setting for c in plan.companions), plan.companions
    for key in expect.unchanged:
        assert key in {u.key for u in plan.unchanged}
    for text in expect.rationale_contains:
        assert any(text in s.rationale for s in plan.settings), text
    for text in expect.message_contains:
        assert any(text in f.message for f in plan.findings), (text, plan.findings)
    for text in expect.message_absent:
        assert not any(text in f.message for f in plan.findings), text
    for text in expect.rationale_absent:
        assert not any(text in s.rationale for s in plan.settings), text
    for text in expect.companions_absent:
        assert not any(text in c.setting for c in plan.companions), plan.companions
    targets = {c.target for c in plan.companions if c.rule == rule_id}
    for target in expect.companion_targets:
        assert target in targets, (target, plan.companions)
    for target in expect.companion_targets_absent:
        assert target not in targets, (target, plan.companions)
    for key, default in expect.kernel_default.items():
        found = [s.kernel_default for s in plan.settings if s.key == key]
        found += [u.kernel_default for u in plan.unchanged if u.key == key]
        assert found == [None if default is None else str(default)], (key, found)
    for text in expect.notes_contain:
        assert any(text in n for n in plan.notes), (text, plan.notes)


def _check_ids(kb: KnowledgeBase, case: Case, tmp_path: Path) -> set[str]:
    """The finding ids `check` reports on the case's text, with its facts or kernel."""
    context = CheckContext()
    if case.facts:
        context = host_context(kb, facts_from_data(case.facts), case.profile or CHECK_PROFILE)
    if case.kernel:
        context.kernel = KernelVersion.parse(case.kernel)
    text = case.conf or ""
    if "# file:" in text:  # several files, as one sysctl.d directory
        directory = tmp_path / "sysctl.d"
        directory.mkdir()
        for chunk in text.split("# file: ")[1:]:
            name, _, body = chunk.partition("\n")
            (directory / name.strip()).write_text(body)
        config = read_tree(directory)
    else:
        path = tmp_path / "example.conf"
        path.write_bytes(text.encode())
        config = read_file(path)
    found, _ = judge_config(Checker(kb, kb.check_rules, context), config)
    return {f.id for f in found}


def test_every_rule_has_firing_and_quiet_cases(kb: KnowledgeBase) -> None:
    by_rule: dict[str, set[bool]] = {}
    for rule_id, case in CASES:
        by_rule.setdefault(rule_id, set()).add(case.fires)
    for rule_id in [*kb.rules, *kb.check_rules]:
        assert by_rule.get(rule_id) == {True, False}, f"{rule_id} needs a firing and a quiet case"
    assert set(by_rule) <= {*kb.rules, *kb.check_rules}, "a case file for no rule"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("rule: a.b\ncases:\n- {name: x, fires: true, expect: {setting: {k: 1}}}\n", "setting"),
        ("rule: a.b\ncases:\n- {name: x, fire: true}\n", "fire"),
        ("rule: a.b\ncases:\n- {name: x, fires: true, params: {a: [1]}}\n", "params.a"),
        ("rule: a.b\ncases: []\n", "cases"),
        ("rule: check.x\ncases:\n- {name: x, fires: true}\n", "needs `conf`"),
        (
            "rule: check.x\ncases:\n- {name: x, fires: true, conf: 'a.b = 1',"
            " expect: {findings: [check.x]}}\n",
            "are for advice rules",
        ),
        (
            "rule: check.x\ncases:\n- {name: x, fires: true, conf: 'a.b = 1', profile: p}\n",
            "are for advice rules",
        ),
    ],
)
def test_a_misspelt_case_is_an_error_not_a_silent_pass(
    text: str, where: str, tmp_path: Path
) -> None:
    path = tmp_path / "a.b.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(InputError) as caught:
        load_case_file(path)
    assert where in str(caught.value) and "a.b.yaml" in str(caught.value)


def test_every_rule_has_rationale_and_reference(kb: KnowledgeBase) -> None:
    for rule in kb.rules.values():
        assert rule.spec.references, rule.id
        assert rule.spec.rationale, rule.id
        assert len(rule.spec.description) > 40, rule.id


def test_case_files_are_named_for_their_rule() -> None:
    for path, case_file in zip(sorted(CASES_DIR.glob("*.yaml")), FILES, strict=True):
        assert path.stem == case_file.rule, path.name
