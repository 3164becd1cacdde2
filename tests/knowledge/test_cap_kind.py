"""A rule's caps are declared safety limits or one workload's preference (`cap_kind`), and
loading refuses a declaration that says nothing true: an unknown kind, or a preference on a
rule that caps nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import Cli, assert_one_line_error


def _rules_dir(tmp: Path, **fields: Any) -> Path:
    directory = tmp / "rules" / "mine"
    directory.mkdir(parents=True)
    rule: dict[str, Any] = {
        "id": "mine.caps",
        "title": "caps",
        "description": "A rule that declares its caps.",
        "rationale": "text",
        "references": ["linux-6-18-doc-ip-sysctl"],
        **fields,
    }
    (directory / "caps.yaml").write_text(yaml.safe_dump(rule))
    return tmp / "rules"


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"cap_kind": "wish", "cap": {"net.core.somaxconn": "1024"}}, "cap_kind"),
        ({"cap_kind": "preference", "set": {"net.core.somaxconn": "1024"}}, "caps nothing"),
    ],
)
def test_a_cap_kind_that_says_nothing_true_is_one_line_exit_2(
    cli: Cli, fields: dict[str, Any], words: str, tmp_path: Path
) -> None:
    result = cli("rules", "--rules-dir", str(_rules_dir(tmp_path, **fields)))
    assert_one_line_error(result.exit_code, result.stderr, words, "caps.yaml")


def test_caps_are_safety_limits_unless_declared(kb: KnowledgeBase) -> None:
    kinds = {rule_id: rule.spec.cap_kind for rule_id, rule in kb.rules.items() if rule.spec.cap}
    assert kinds["tcp-buffers.small-defaults"] == "preference"
    assert kinds["tcp-mem.ram-cap"] == "safety"
