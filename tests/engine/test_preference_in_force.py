"""A preference cap against another workload's want says which value stays: the value in force
as the kernel holds it, never a word of text the kernel cannot hold (a facts file's
`tcp_rmem: a b c` is no value in force of `b`)."""

from __future__ import annotations

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data


@pytest.mark.parametrize(
    ("text", "stays"),
    [
        ("a b c", "the kernel default stays"),
        ("4096 junk 6291456", "the kernel default stays"),
        ("4096\t131072   6291456", "the value in force (131072) stays"),
    ],
)
def test_the_value_said_to_stay_is_one_the_kernel_holds(
    kb: KnowledgeBase, text: str, stays: str
) -> None:
    facts = facts_from_data(
        {
            "kernel": "6.8.0",
            "arch": "x86_64",
            "memory": {"total": "64 GiB"},
            "sysctl": {"net.ipv4.tcp_rmem": text},
        }
    )
    plan = build_plan(kb, facts, ["c1m-server", "gridftp"])
    found = [
        f.message
        for f in plan.findings
        if f.id == "plan.contradiction" and f.key == "net.ipv4.tcp_rmem"
    ]
    assert found and all(stays in m for m in found), found
