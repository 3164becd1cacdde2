"""Hundreds of listening sockets of a known server plan without exhausting the host's
expression budget: 500 HAProxy sockets (one per address, as `bind` lines on many VIPs give)
with full accept queues, and 500 Redis sockets cut to a somaxconn of 128. Rules tell listeners
apart by their `index`; comparing whole entries (`reject('in', listeners)`) walked every
entry's server record for each listener, and 150 of them failed with an error naming a
shipped rule."""

from __future__ import annotations

from typing import Any

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data

COUNT = 500


def _host(kind: str) -> dict[str, Any]:
    if kind == "haproxy":
        listeners = [
            {
                "address": f"10.0.{i // 250}.{i % 250 + 1}",
                "port": 443,
                "backlog": 1000,
                "queue": 1000,
                "process": {"pid": 100, "command": "haproxy"},
            }
            for i in range(COUNT)
        ]
        return {
            "sysctl": {"net.core.somaxconn": "4096"},
            "services": {"haproxy": {"maxconn": 100000}},
            "listeners": listeners,
        }
    listeners = [
        {
            "address": "0.0.0.0",
            "port": 6379 + i,
            "backlog": 128,
            "queue": 0,
            "process": {"pid": 100 + i, "command": "redis-server"},
        }
        for i in range(COUNT)
    ]
    return {
        "sysctl": {"net.core.somaxconn": "128"},
        "services": {"redis": {}},
        "listeners": listeners,
    }


@pytest.mark.parametrize(
    ("kind", "profile", "said"),
    [
        ("haproxy", "frontend-proxy", "restart HAProxy after net.core.somaxconn is 100000"),
        ("redis", "redis", "evidence.listener-cut-to-somaxconn"),
        ("redis", "frontend-proxy", "evidence.listener-cut-to-somaxconn"),
    ],
)
def test_hundreds_of_known_listeners_plan(
    kb: KnowledgeBase, kind: str, profile: str, said: str
) -> None:
    facts = facts_from_data(
        {"kernel": "6.8.0", "arch": "x86_64", "memory": {"total": "64 GiB"}, **_host(kind)}
    )
    plan = build_plan(kb, facts, profile)
    assert said in {f.id for f in plan.findings} | {c.setting for c in plan.companions}
