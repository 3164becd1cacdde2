"""Every shipped advice rule that sets or caps a key says its reason in one
sentence, its `summary`, which the annotated sysctl.conf prints instead of the rationale.

Each summary is rendered as the plan renders it (RuleResult.summary_for, recorded while the
plan is built) over the rules' own cases (tests/cases/<rule id>.yaml), the varied hosts
(tests/outputs/test_varied_hosts.py TABLE) and the example hosts with their golden profiles:
one line, one sentence, at most 200 characters, the summary itself (not the rationale it falls
back to when it renders empty), no template left over.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.rules import RuleResult
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.outputs.advice_rules_reference import case_facts, case_params
from tests.knowledge.test_rule_cases import FILES
from tests.outputs.test_varied_hosts import every_host

MOST = 200
# A full stop (or ! ?) then a space and a capital starts a second sentence. These summaries
# abbreviate nothing with a full stop; version numbers (4.13, 2.6.37) have no space after it.
SECOND_SENTENCE = re.compile(r"[.!?] +[A-Z]")


@dataclass(frozen=True)
class Rendered:
    rule: str
    key: str
    where: str
    text: str
    rationale: str
    own: str  # the summary template's own rendering, before summary_for falls back


def _ours(kb: KnowledgeBase) -> list[str]:
    """The shipped advice rules that set or cap a key."""
    return sorted(rule_id for rule_id, rule in kb.rules.items() if rule.spec.set or rule.spec.cap)


def _template(value: str | dict[str, str] | None, key: str) -> str | None:
    """The template a rule's rationale or summary gives for `key` (its own, else `default`)."""
    if value is None or isinstance(value, str):
        return value
    return value.get(key, value.get("default"))


def _runs() -> Iterator[tuple[str, Any, str, dict[str, str]]]:
    """(where, facts, profile, parameters) of every plan the summaries are judged on."""
    for case_file in FILES:
        for case in case_file.cases:
            facts = facts_from_data(case_facts(case.facts))
            where = f"case {case_file.rule}: {case.name}"
            yield where, facts, case.profile or "base", case_params(case.params)
    yield from every_host()


@pytest.fixture(scope="module")
def rendered(kb: KnowledgeBase) -> list[Rendered]:
    """Every summary of these rules that a plan printed, with the run it came from."""
    ours = set(_ours(kb))
    found: list[Rendered] = []
    run = [""]  # the plan being built
    original = RuleResult.summary_for

    def recording(self: RuleResult, key: str) -> str:
        text = original(self, key)
        if self.rule.id in ours:
            own = self._text(key, self.rule.summary, self.summary, "summary")
            found.append(Rendered(self.rule.id, key, run[0], text, self.rationale_for(key), own))
        return text

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RuleResult, "summary_for", recording)
        for where, facts, profile, params in _runs():
            run[0] = where
            build_plan(kb, facts, profile, params)
    return found


def test_every_rule_that_sets_or_caps_has_a_summary_for_each_key(kb: KnowledgeBase) -> None:
    ours = _ours(kb)
    assert len(ours) >= 33, ours  # every family is here
    for rule_id in ours:
        spec = kb.rules[rule_id].spec
        assert spec.summary, f"{rule_id} has no summary"
        for key in {*spec.set, *spec.cap}:
            assert _template(spec.summary, key), f"{rule_id} has no summary for {key}"


def test_every_rule_is_judged_on_a_plan(kb: KnowledgeBase, rendered: list[Rendered]) -> None:
    """Each rule's summary is rendered on at least one plan (its firing case at least)."""
    assert {r.rule for r in rendered} == set(_ours(kb))


def test_each_summary_is_one_short_sentence(rendered: list[Rendered]) -> None:
    bad = []
    for r in rendered:
        text = r.text
        problems = [
            "newline" if "\n" in text else "",
            f"{len(text)} characters" if len(text) > MOST else "",
            "two sentences" if SECOND_SENTENCE.search(text[:-1]) else "",
            "not ended by a full stop" if not text.endswith(".") else "",
            "template left" if "{{" in text or "{%" in text else "",
            "doubled space" if "  " in text else "",
            "space before punctuation" if re.search(r" [,;:.)]", text) else "",
            # an empty summary falls back to the rationale: the sentence must be the summary's
            "the summary rendered empty" if not r.own.strip() else "",
        ]
        if any(problems):
            found = ", ".join(p for p in problems if p)
            bad.append(f"{r.rule} {r.key} ({r.where}): {found}: {text}")
    assert not bad, "\n".join(bad)


def test_a_summary_is_shorter_than_its_rationale(
    kb: KnowledgeBase, rendered: list[Rendered]
) -> None:
    """The point of a summary: where a rule's rationale runs past one short sentence, the
    summary printed in its place is shorter."""
    longer = [
        f"{r.rule} {r.key} ({r.where}): {len(r.text)} >= {len(r.rationale)}"
        for r in rendered
        if len(r.rationale) > MOST and len(r.text) >= len(r.rationale)
    ]
    assert not longer, "\n".join(longer)
