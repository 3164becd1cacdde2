"""A fresh network namespace's tcp_max_syn_backlog and tcp_max_tw_buckets
come from the global established hash (tcp_sk_init(), 4.11-5.15), and from 6.1 from a hash
table of its own when the namespace that creates it (the node's, for a pod) has
tcp_child_ehash_entries set (tcp_set_hashinfo()). The pod's plan starts from those values."""

from __future__ import annotations

from typing import Any

import pytest

from sysctl_advisor.engine.kubernetes_placement import Placement, netns_defaults, placement_for
from sysctl_advisor.engine.plan_builder import host_defaults
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data

SYN = "net.ipv4.tcp_max_syn_backlog"
TW = "net.ipv4.tcp_max_tw_buckets"


def _node(kernel: str, child: str | None) -> dict[str, Any]:
    return {
        "kernel": kernel,
        "arch": "x86_64",
        "memory": {"total": "16 GiB"},
        "sysctl": {} if child is None else {"net.ipv4.tcp_child_ehash_entries": child},
        "observed": {"time_wait_peak": 5000},
    }


def _placed(kb: KnowledgeBase, kernel: str, child: str | None) -> Placement:
    facts = facts_from_data(_node(kernel, child))
    return placement_for(kb, facts, "frontend-proxy", None, kb.kubernetes.version(None))


def _pod_defaults(placement: Placement) -> dict[str, str | None]:
    return {p.setting.key: p.setting.kernel_default for p in placement.pod}


@pytest.mark.parametrize(
    ("kernel", "child"),
    [
        ("4.19.0", None),  # per-namespace since 4.11, from the global table
        ("5.15.0", None),
        ("5.15.0", "1000"),  # no such key before 6.1: a value in the facts changes nothing
        ("6.1.20", None),
        ("6.1.20", "0"),  # 0: the child shares the global table
    ],
)
def test_a_fresh_namespace_takes_the_global_tables_defaults(
    kb: KnowledgeBase, kernel: str, child: str | None
) -> None:
    placement = _placed(kb, kernel, child)
    node = host_defaults(kb, facts_from_data(_node(kernel, None)))
    assert _pod_defaults(placement)[SYN] == node[SYN]
    assert TW not in _pod_defaults(placement)  # the global half of the table covers the peak
    assert not any("new network namespace" in n for n in placement.node.notes)


@pytest.mark.parametrize(
    ("kernel", "child", "syn", "tw"),
    [
        ("6.1.20", "1000", "128", "512"),  # rounded up to 1024 buckets
        ("6.18.0", "3000", "128", "2048"),
    ],
)
def test_from_6_1_the_nodes_child_ehash_sizes_a_pods_defaults(
    kb: KnowledgeBase, kernel: str, child: str, syn: str, tw: str
) -> None:
    placement = _placed(kb, kernel, child)
    pod = {p.setting.key: p.setting for p in placement.pod}
    assert pod[SYN].kernel_default == syn
    # the pod's table holds far fewer TIME_WAIT sockets than the node's: the peak now needs
    # the key set in the pod, as it did not with the global table
    assert pod[TW].kernel_default == tw and int(pod[TW].value) > int(tw)
    node = host_defaults(kb, facts_from_data(_node(kernel, child)))
    assert node[SYN] != syn  # the node's own defaults still come from the global table


def test_the_child_tables_defaults_follow_its_size(kb: KnowledgeBase) -> None:
    facts = facts_from_data(_node("6.18.0", "65536"))
    assert netns_defaults(kb, facts)[SYN][0] == 512
    assert netns_defaults(kb, facts)[TW][0] == 32768
    assert netns_defaults(kb, facts_from_data(_node("6.18.0", "0"))) == {}
