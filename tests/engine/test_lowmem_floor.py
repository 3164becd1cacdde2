"""The smallest lowmem the facts take (16 MiB, as memory.total) still plans socket memory a
socket can use: no profile writes a tcp_mem or udp_mem field of 0 or 1 page, nor a
min_free_kbytes of 0, on a 32-bit host whose kernel logged atomic allocation failures and
whose UDP queues peaked far above lowmem."""

from __future__ import annotations

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data

FACTS = {
    "kernel": "4.19.0-6-686-pae",
    "arch": "i686",
    "memory": {"total": "3 GiB", "lowmem": "16 MiB"},
    "sysctl": {"net.ipv4.udp_mem": "100 200 300", "net.ipv4.tcp_mem": "100000 200000 300000"},
    "observed": {
        "udp": {"in_datagrams": 1000, "rcvbuf_errors": 10, "mem_pages_peak": 10**9},
        "kernel_messages": ["page allocation failure: order:0, mode:0x20"],
    },
}


def test_the_least_lowmem_plans_usable_socket_memory(kb: KnowledgeBase) -> None:
    facts = facts_from_data(FACTS)
    for profile in kb.profiles:
        values = {s.key: s.values for s in build_plan(kb, facts, profile).settings}
        for key in ("net.ipv4.tcp_mem", "net.ipv4.udp_mem"):
            assert key in values, (profile, key)  # in force beyond lowmem: each is planned
            assert min(values[key]) > 1, (profile, key, values[key])
        assert (values.get("vm.min_free_kbytes") or [1])[0] > 0, profile
