"""Per-rule case files: tests/cases/<rule-id>.yaml, each with cases that fire and that do not.

A case gives facts (merged onto a plain 64-bit host), a profile and parameters, whether the
rule fires (contributes a setting, a cap that bites, a finding or a companion), and what the
plan must (or must not) contain.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from tests.conftest import TESTS

CASES_DIR = TESTS / "cases"
BASE_FACTS: dict[str, Any] = {
    "hostname": "case",
    "kernel": "5.15.0-91-generic",
    "arch": "x86_64",
    "memory": {"total": "16 GiB"},
    "cpu": {"threads": 8},
}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _load_cases() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for case in doc["cases"]:
            found.append((doc["rule"], case["name"], case))
    return found


CASES = _load_cases()


@pytest.mark.parametrize(("rule_id", "name", "case"), CASES, ids=[f"{r}:{n}" for r, n, _ in CASES])
def test_case(kb: KnowledgeBase, rule_id: str, name: str, case: dict[str, Any]) -> None:
    facts = facts_from_data(_merge(BASE_FACTS, case.get("facts", {})))
    params = {
        k: str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in case.get("params", {}).items()
    }
    plan = build_plan(kb, facts, case.get("profile", "base"), params)
    fired = (
        any(rule_id in s.rules + s.capped_by for s in plan.settings)
        or any(rule_id in u.rules for u in plan.unchanged)
        or any(f.rule == rule_id for f in plan.findings)
        or any(c.rule == rule_id for c in plan.companions)
    )
    assert fired == case["fires"], (plan.applied_rules, plan.settings, plan.findings)
    expect = case.get("expect", {})
    settings = {s.key: s for s in plan.settings}
    for key, value in expect.get("settings", {}).items():
        assert key in settings, f"{key} not set; unchanged={plan.unchanged}, notes={plan.notes}"
        assert settings[key].value == str(value)
    for key in expect.get("absent", []):
        assert key not in settings, settings[key].value
    for key in expect.get("set_by_rule", []):
        assert rule_id in settings[key].rules + settings[key].capped_by
    for key in expect.get("capped", []):
        assert rule_id in settings[key].capped_by
    finding_ids = {f.id for f in plan.findings}
    for fid in expect.get("findings", []):
        assert fid in finding_ids, finding_ids
    for fid in expect.get("no_findings", []):
        assert fid not in finding_ids
    for text in expect.get("companions", []):
        assert any(text in c.setting for c in plan.companions), plan.companions
    for key in expect.get("unchanged", []):
        assert key in {u.key for u in plan.unchanged}
    for text in expect.get("rationale_contains", []):
        assert any(text in s.rationale for s in plan.settings), text
    for text in expect.get("message_contains", []):
        assert any(text in f.message for f in plan.findings), (text, plan.findings)
    for text in expect.get("message_absent", []):
        assert not any(text in f.message for f in plan.findings), text
    for text in expect.get("rationale_absent", []):
        assert not any(text in s.rationale for s in plan.settings), text
    for text in expect.get("companions_absent", []):
        assert not any(text in c.setting for c in plan.companions), plan.companions
    for key, text in expect.get("kernel_default", {}).items():
        found = [s.kernel_default for s in plan.settings if s.key == key]
        found += [u.kernel_default for u in plan.unchanged if u.key == key]
        assert found == [None if text is None else str(text)], (key, found)
    for text in expect.get("notes_contain", []):
        assert any(text in n for n in plan.notes), (text, plan.notes)


def test_every_rule_has_firing_and_quiet_cases(kb: KnowledgeBase) -> None:
    by_rule: dict[str, set[bool]] = {}
    for rule_id, _, case in CASES:
        by_rule.setdefault(rule_id, set()).add(bool(case["fires"]))
    for rule_id in kb.rules:
        assert by_rule.get(rule_id) == {True, False}, f"{rule_id} needs a firing and a quiet case"


def test_every_rule_has_rationale_and_reference(kb: KnowledgeBase) -> None:
    for rule in kb.rules.values():
        assert rule.spec.references, rule.id
        assert rule.spec.rationale, rule.id
        assert len(rule.spec.description) > 40, rule.id


SEEDS = {
    "000_0b38f953df3d3951.txt",
    "001_acd4bf0469cc77db.txt",
    "002_562960dd2feb2fcc.txt",
    "003_be7a195788c93bd6.txt",
    "004_5423ca1b8920f361.txt",
}


def test_seed_references_name_real_seed_files(kb: KnowledgeBase) -> None:
    refs = [r for rule in kb.rules.values() for r in rule.spec.references]
    refs += [r for rule in kb.check_rules.values() for r in rule.spec.references]
    refs += [r for key in kb.catalog.keys.values() for r in key.references]
    named = {r.split(":", 1)[1].split()[0] for r in refs if r.startswith("seed:")}
    assert named and named <= SEEDS, named - SEEDS
