"""A value in force that the facts' kernel holds is the host's: the plan keeps the key, even
where the value lies outside the range the advisor itself writes."""

from __future__ import annotations

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data


def test_a_tcp_rmem_min_below_a_page_in_force_keeps_the_key_in_the_plan(
    kb: KnowledgeBase,
) -> None:
    """Upstream 3.10 and later store a tcp_rmem field from 1 (proc_dointvec_minmax, extra1 =
    SYSCTL_ONE): a min of 1024 in force is a value the kernel holds, not noise to drop."""
    facts = facts_from_data(
        {
            "kernel": "6.1.0-18-amd64",
            "arch": "x86_64",
            "memory": {"total": "64 GiB"},
            "nics": [{"name": "eth0", "speed_mbps": 10000, "driver": "ixgbe"}],
            "sysctl": {"net.ipv4.tcp_rmem": "1024 131072 6291456"},
        }
    )
    plan = build_plan(kb, facts, "gridftp")
    assert "net.ipv4.tcp_rmem" in {s.key for s in plan.settings}
    assert not any("net.ipv4.tcp_rmem" in note and "not a value" in note for note in plan.notes)
