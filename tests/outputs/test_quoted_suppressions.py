"""Text the facts give (a listening process's name) reaches a sysctl.conf's comments, wrapped at
its words: a wrapped line that starts with `sysctl-advisor:` would be read back by `check` as a
suppression comment the advisor never meant (an `ignore-file[...]` accepting a rule's
findings in root's file, or a malformed one failing the file's own check). Such a line has the
mark escaped; the suppressions the plan writes itself are still read."""

from __future__ import annotations

import re
from pathlib import Path

from sysctl_advisor.engine.check.host import host_context
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.outputs.plan_render import Renderer
from tests.check_paths import check_paths

DIRECTIVE = "sysctl-advisor: ignore-file[check.tw-recycle-enabled] r"
# the quoted directive at the start of a comment line, as written (or escaped)
LANDED = re.compile(r"^#[ \t]*sysctl-advisor(?::|\\x3a) ignore-file", re.M)
# a line check reads as a suppression comment (sources/sysctl_files.py)
READ = re.compile(r"^[ \t]*[#;][ \t]*sysctl-advisor:", re.M)


def _facts(command: str) -> dict[str, object]:
    return {
        "hostname": "h",
        "kernel": "5.15.0",
        "arch": "x86_64",
        "memory": {"total": 8 * 2**30},
        "sysctl": {"net.core.somaxconn": "4096"},
        "listeners": [
            # a Go program: its companion names it, in a comment with no line limit
            {
                "address": "0.0.0.0",
                "port": 9000,
                "backlog": 4096,
                "queue": 0,
                "process": {"pid": 1010, "command": command, "go": True},
            },
            # an overflowing one: the head's finding names it
            {
                "address": "127.0.0.1",
                "port": 5000,
                "backlog": 128,
                "queue": 120,
                "process": {"pid": 12, "command": command},
            },
        ],
    }


def test_a_process_name_never_becomes_a_suppression(kb: KnowledgeBase, tmp_path: Path) -> None:
    landed = 0
    for pad in range(1, 64 - len(DIRECTIVE)):
        facts = facts_from_data(_facts("x" * pad + " " + DIRECTIVE))
        plan = build_plan(kb, facts, "frontend-proxy")
        text = Renderer(kb.catalog).render(plan, "conf", "test")
        landed += bool(LANDED.search(text))
        assert READ.findall(text) == [], pad
        out = tmp_path / "out.conf"
        out.write_text(text)
        report = check_paths(
            Checker(kb, kb.check_rules, host_context(kb, facts, "frontend-proxy")), [out]
        )
        assert [f.id for f in report.findings] == [], pad
    assert landed, "no padding put the quoted directive at the start of a line"


def test_only_lines_read_as_suppressions_are_escaped() -> None:
    from sysctl_advisor.model.sysctl_conf import unmarked

    text = (
        "#   a sysctl-advisor: x\n#       sysctl-advisor: ignore[check.a] r\nkey = sysctl-advisor:"
    )
    assert unmarked(text).split("\n") == [
        "#   a sysctl-advisor: x",
        "#       sysctl-advisor\\x3a ignore[check.a] r",
        "key = sysctl-advisor:",
    ]


def test_the_plans_own_suppression_is_still_written(kb: KnowledgeBase) -> None:
    facts = facts_from_data(
        {
            "kernel": "5.15.0-91-generic",
            "arch": "x86_64",
            "memory": {"total": 64 * 2**30},
            "sysctl": {"vm.swappiness": "0"},
        }
    )
    text = Renderer(kb.catalog).render(build_plan(kb, facts, "mongodb"), "conf", "test")
    assert READ.findall(text) == ["# sysctl-advisor:"]
    assert "\n# sysctl-advisor: ignore[check.swappiness-zero] " in text
