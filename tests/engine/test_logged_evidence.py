"""A kernel message family is the same evidence however the facts carry it: the log reader's
`kernel_events` alone, the facts' `kernel_messages` alone, or both (`observed.logged`, read by
every rule that acts on the kernel log)."""

from __future__ import annotations

from typing import Any

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.kernel_messages import logged, matchers
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.advice_rules_reference import case_facts
from tests.knowledge.test_kernel_messages import ERAS

HOSTS: dict[str, dict[str, Any]] = {
    "64-bit": {"kernel": "6.1.0-18-amd64", "memory": {"total": "16 GiB"}},
    "32-bit": {"kernel": "2.6.32-642.el6.i686", "arch": "i686", "memory": {"total": "4 GiB"}},
    "node": {
        "kernel": "5.15.0-91-generic",
        "sysctl": {"net.netfilter.nf_conntrack_max": "262144"},
        "links": ["eth0", "cali1a2b3c4d5e6"],
    },
}
LINES = [(family, line) for family, lines in ERAS.items() for line in lines]


def _plan(kb: KnowledgeBase, host: dict[str, Any], observed: dict[str, Any]) -> Plan:
    facts = facts_from_data(case_facts({**host, "observed": observed}))
    return build_plan(kb, facts, "base", {})


def _advice(plan: Plan) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    findings = sorted((f.rule, f.id) for f in plan.findings if f.rule != "evidence.kernel-log")
    settings = sorted((s.key, s.value) for s in plan.settings)
    return findings, settings


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize(
    ("family", "line"), LINES, ids=[f"{f}:{i}" for i, (f, _) in enumerate(LINES)]
)
def test_events_alone_are_the_same_evidence_as_the_lines(
    kb: KnowledgeBase, host: str, family: str, line: str
) -> None:
    by_lines = _plan(kb, HOSTS[host], {"kernel_messages": [line]})
    by_events = _plan(
        kb, HOSTS[host], {"kernel_events": [{"family": family, "count": 1, "example": line}]}
    )
    assert _advice(by_events) == _advice(by_lines)
    # and the family is acted on at all: some rule other than the summary reads it
    quiet = _plan(kb, HOSTS[host], {})
    assert len(by_events.findings) > len(quiet.findings), family


def test_logged_merges_events_and_lines_without_counting_twice(kb: KnowledgeBase) -> None:
    families = matchers(kb.message_families)
    found = logged(
        families,
        ["TCP: too many orphaned sockets", "eth0: link up", "TCP: too many orphaned sockets"],
        [
            {
                "family": "tcp.too-many-orphans",
                "count": 5,
                "first_seen": "2026-11-20T03:00:00Z",
                "last_seen": "2026-11-21T03:00:00Z",
                "example": "TCP: too many orphaned sockets",
            },
            {"family": "site.own-family", "count": 1, "example": "a family the catalog lacks"},
        ],
    )
    assert list(found) == ["tcp.too-many-orphans", "site.own-family"]
    orphans = found["tcp.too-many-orphans"]
    assert orphans["count"] == 5  # the larger count, never the sum
    assert orphans["lines"] == ["TCP: too many orphaned sockets"]
    assert orphans["last_seen"] == "2026-11-21T03:00:00Z"
    by_lines = logged(families, ["TCP: too many orphaned sockets"] * 3, [])
    assert by_lines["tcp.too-many-orphans"]["count"] == 3
    assert by_lines["tcp.too-many-orphans"]["last_seen"] is None
    assert logged(families, ["eth0: link up"], []) == {}


def test_many_lines_of_one_family_are_read_in_linear_time(kb: KnowledgeBase) -> None:
    lines = [f"nf_conntrack: table full, dropping packet {i}" for i in range(100_000)]
    found = logged(matchers(kb.message_families), lines, [])
    assert found["netfilter.conntrack-table-full"]["count"] == 100_000
