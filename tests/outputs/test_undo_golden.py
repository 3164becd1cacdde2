"""Golden undo file: the haproxy example's frontend-proxy plan undone, as `recommend --undo`
writes it. Regenerate after an intended change with:
UPDATE_GOLDEN=1 pytest tests/outputs/test_undo_golden.py"""

from __future__ import annotations

import os

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.engine.undo import undo_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs.plan_render import Renderer
from tests.conftest import EXAMPLES, TESTS, load_facts


def test_golden_undo_conf(kb: KnowledgeBase) -> None:
    host, profile = "haproxy-frontend-rhel7", "frontend-proxy"
    facts = load_facts(EXAMPLES / f"{host}.yaml")
    assert facts.observed.period is not None
    undo = undo_plan(build_plan(kb, facts, profile), kb.catalog, facts.observed.period.at)
    command = f"sysctl-advisor recommend --facts examples/{host}.yaml --profile {profile} --undo"
    text = Renderer(kb.catalog).render(undo, "conf", command, undo=True)
    path = TESTS / "golden" / f"{host}.{profile}.undo.conf"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text()
