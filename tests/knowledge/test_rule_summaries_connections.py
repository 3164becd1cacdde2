"""Issue 34, item 3: every advice rule of the connection families (connection-scale,
listen-backlog, nic, orphans, time-wait, evidence) that sets or caps a key says its reason in
one sentence, its `summary`, which the annotated sysctl.conf prints instead of the rationale.

Each summary is rendered as the plan renders it (RuleResult.summary_for, recorded while the
plan is built) over the rules' own cases (tests/cases/<rule id>.yaml), the varied hosts
(tests/outputs/test_varied_hosts.py TABLE) and the example hosts with their golden profiles:
one line, one sentence, at most 200 characters, no Jinja left over.
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
from tests.conftest import EXAMPLE_PARAMS, EXAMPLE_PROFILES, EXAMPLES, load_facts
from tests.knowledge.test_rule_cases import BASE_FACTS, FILES, _merge
from tests.outputs.test_varied_hosts import HOSTS, TABLE

FAMILIES = ("connection-scale", "listen-backlog", "nic", "orphans", "time-wait", "evidence")
MOST = 200
# A full stop followed by a space and a capital inside the text starts a second sentence;
# none of the abbreviations these summaries use ends in a full stop before a capital.
SECOND_SENTENCE = re.compile(r"[.!?] +[A-Z]")


@dataclass(frozen=True)
class Rendered:
    rule: str
    key: str
    where: str
    text: str


def _ours(kb: KnowledgeBase) -> list[str]:
    """The rules of these families that set or cap a key."""
    return sorted(
        rule_id
        for rule_id, rule in kb.rules.items()
        if rule_id.split(".", 1)[0] in FAMILIES and (rule.spec.set or rule.spec.cap)
    )


def _runs(kb: KnowledgeBase) -> Iterator[tuple[str, Any, str, dict[str, str]]]:
    """(where, facts, profile, parameters) of every plan the summaries are judged on."""
    for case_file in FILES:
        if case_file.rule.split(".", 1)[0] not in FAMILIES or case_file.rule not in kb.rules:
            continue
        for case in case_file.cases:
            facts = facts_from_data(_merge(BASE_FACTS, case.facts or {}))
            params = {
                k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in case.params.items()
            }
            yield f"case {case_file.rule}: {case.name}", facts, case.profile or "base", params
    for stem, profile, words in TABLE:
        params = dict(word.split("=", 1) for word in words.split())
        yield f"host {stem}", load_facts(HOSTS / f"{stem}.yaml"), profile, params
    for host, profile in EXAMPLE_PROFILES.items():
        facts = load_facts(EXAMPLES / f"{host}.yaml")
        yield f"example {host}", facts, profile, EXAMPLE_PARAMS.get(host, {})


@pytest.fixture(scope="module")
def rendered(kb: KnowledgeBase) -> list[Rendered]:
    """Every summary of these rules that a plan printed, with the run it came from."""
    ours = set(_ours(kb))
    found: list[Rendered] = []
    run = {"where": ""}  # the plan being built
    original = RuleResult.summary_for

    def recording(self: RuleResult, key: str) -> str:
        text = original(self, key)
        if self.rule.id in ours:
            found.append(Rendered(self.rule.id, key, run["where"], text))
        return text

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RuleResult, "summary_for", recording)
        for run["where"], facts, profile, params in _runs(kb):
            build_plan(kb, facts, profile, params)
    return found


def test_every_rule_that_sets_or_caps_has_a_summary(kb: KnowledgeBase) -> None:
    ours = _ours(kb)
    assert len(ours) >= 15, ours  # the families are all here
    for rule_id in ours:
        spec = kb.rules[rule_id].spec
        assert spec.summary, f"{rule_id} has no summary"
        if isinstance(spec.summary, dict) and "default" not in spec.summary:
            keys = {*spec.set, *spec.cap}
            assert keys <= set(spec.summary), (rule_id, keys - set(spec.summary))


def test_every_rule_is_rendered_somewhere(kb: KnowledgeBase, rendered: list[Rendered]) -> None:
    """Each rule's summary is judged on at least one plan (its firing case at least)."""
    assert {r.rule for r in rendered} == set(_ours(kb))


def test_each_summary_is_one_short_sentence(rendered: list[Rendered]) -> None:
    bad = []
    for r in rendered:
        text = r.text
        problems = [
            "newline" if "\n" in text else "",
            f"{len(text)} characters" if len(text) > MOST else "",
            "two sentences" if SECOND_SENTENCE.search(text.rstrip(".")) else "",
            "not ended" if not text.endswith(".") else "",
            "template left" if "{{" in text or "{%" in text else "",
            "doubled space" if "  " in text else "",
            "empty" if not text.strip() else "",
        ]
        if any(problems):
            bad.append(
                f"{r.rule} {r.key} ({r.where}): {', '.join(p for p in problems if p)}: {text}"
            )
    assert not bad, "\n".join(bad)
