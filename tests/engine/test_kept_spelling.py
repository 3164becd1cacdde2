"""A value in force the plan keeps though a check rule flags it carries the suppression comment
however the facts spell it: `00`, `0x0`, `-0` or `0 # note` are the 0 the kernel holds and the
plan writes, and the advisor's own file still passes its own check."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.engine.check.host import host_context
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.outputs.plan_render import Renderer
from tests.check_paths import check_paths


@pytest.mark.parametrize("spelled", ["0", "00", "0x0", "-0", "0 # kept on purpose"])
def test_a_kept_value_spelled_otherwise_is_still_accepted(
    kb: KnowledgeBase, tmp_path: Path, spelled: str
) -> None:
    facts = facts_from_data(
        {
            "kernel": "5.15.0-91-generic",
            "arch": "x86_64",
            "memory": {"total": "64 GiB"},
            "sysctl": {"vm.swappiness": spelled},
        }
    )
    plan = build_plan(kb, facts, "mongodb")
    out = tmp_path / "out.conf"
    out.write_text(Renderer(kb.catalog).render(plan, "conf", "test"))
    assert "\nvm.swappiness = 0\n" in out.read_text()
    report = check_paths(Checker(kb, kb.check_rules, host_context(kb, facts, "mongodb")), [out])
    assert [f"{f.id}: {f.message}" for f in report.findings] == []
