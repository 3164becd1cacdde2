"""Every key may have another owner: the plan never sets a key against the writer that owns it,
kube-proxy's own value is the host's default, and diff and check name the writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.engine.check.host import host_context
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.diff import build_diff
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.current_config import from_values
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.sources.sysctl_files import read_tree
from tests.engine.test_settle import EVERY_FORMAT, _values_in
from tests.knowledge.test_writers import SIGNS

NODE = {
    "hostname": "node-1",
    "kernel": "6.1.0-18-amd64",
    "memory": {"total": 32 * 2**30},
    "cpu": {"threads": 16},
    "links": ["eth0", "cali0123456789a"],
    "sysctl": {"vm.overcommit_memory": "1"},
}


@pytest.mark.parametrize("fmt", EVERY_FORMAT)
def test_postgresql_on_a_node_leaves_overcommit_to_the_kubelet(kb: KnowledgeBase, fmt: str) -> None:
    text, carried = _values_in(kb, facts_from_data(NODE), ["postgresql"], fmt)
    assert "vm.overcommit_memory" not in carried, fmt
    assert "vm.overcommit_memory =" not in text and "vm.overcommit_memory=" not in text


def test_the_contradiction_names_the_kubelet_and_the_alternative(kb: KnowledgeBase) -> None:
    plan = build_plan(kb, facts_from_data(NODE), "postgresql")
    (found,) = [f for f in plan.findings if f.id == "plan.contradiction"]
    assert found.key == "vm.overcommit_memory"
    assert "the kubelet writes 1" in found.message
    assert "a Kubernetes node: interface cali0123456789a" in found.message
    assert "Guaranteed QoS pod" in found.message and "OOMScoreAdjust=-1000" in found.message
    (companion,) = [c for c in plan.companions if c.rule == "postgresql.overcommit"]
    assert "PG_OOM_ADJUST_FILE=/proc/self/oom_score_adj" in companion.setting
    assert "vm.overcommit_ratio" not in {s.key for s in plan.settings}


def test_a_host_that_is_no_node_keeps_strict_overcommit(kb: KnowledgeBase) -> None:
    host = {**NODE, "links": ["eth0"]}
    plan = build_plan(kb, facts_from_data(host), "postgresql")
    assert {s.key: s.value for s in plan.settings}["vm.overcommit_memory"] == "2"
    assert not [f for f in plan.findings if f.id == "plan.contradiction"]


TABLE_FULL = {
    "family": "netfilter.conntrack-table-full",
    "count": 40,
    "example": "nf_conntrack: nf_conntrack: table full, dropping packet",
}


@pytest.mark.parametrize(
    ("cpus", "kube_proxys", "raised"),
    [
        (8, 262144, 530000),
        (16, 524288, 1100000),
        (64, 2097152, 4200000),  # before 1.36: maxPerCore x CPUs
        (64, 1048576, 2100000),  # 1.36 and later cap it at 1048576
    ],
)
def test_kube_proxy_nodes_raise_conntrack_where_the_table_was_full(
    kb: KnowledgeBase, cpus: int, kube_proxys: int, raised: int
) -> None:
    """kube-proxy's maxPerCore x CPUs is the host's default, not a raise: a "table full" at
    it doubles it (the old guess, twice the kernel's 262,144, took 524,288 as raised)."""
    host = {
        "kernel": "6.1.0-18-amd64",
        "memory": {"total": 64 * 2**30},
        "cpu": {"threads": cpus},
        "processes": ["kubelet", "kube-proxy"],
        "sysctl": {"net.netfilter.nf_conntrack_max": str(kube_proxys)},
        "observed": {"kernel_events": [TABLE_FULL]},
    }
    plan = build_plan(kb, facts_from_data(host), "base")
    setting = next(s for s in plan.settings if s.key == "net.netfilter.nf_conntrack_max")
    assert setting.value == str(raised)
    assert setting.kernel_default == str(kube_proxys)
    assert setting.default_set_by is not None and "kube-proxy" in setting.default_set_by
    assert any(c.target == "kube-proxy" and "maxPerCore: 0" in c.setting for c in plan.companions)


def test_kube_proxys_value_above_32_cpus_is_the_releases_figure_in_force(
    kb: KnowledgeBase,
) -> None:
    """Above 32 CPUs kube-proxy writes maxPerCore x CPUs before 1.36 and 1048576 from it: a
    value in force that is neither is not kube-proxy's, and the plan does not say it is."""
    host = {
        "kernel": "6.1.0-18-amd64",
        "memory": {"total": 64 * 2**30},
        "cpu": {"threads": 64},
        "processes": ["kubelet", "kube-proxy"],
        "sysctl": {"net.netfilter.nf_conntrack_max": "3000000"},
    }
    plan = build_plan(kb, facts_from_data(host), "base")
    assert not any("writes 2097152" in note.says for note in plan.owners), plan.owners
    (note,) = [n for n in plan.owners if n.key == "net.netfilter.nf_conntrack_max"]
    assert note.value is None and "kube-proxy writes it" in note.says


# A fixture for each writer of the catalog: the host's facts that show it, and where diff (a
# drifted key the plan sets) or check --facts (a line for a key it writes) names it.
# A conntrack table that overflowed at kube-proxy's 8 x 32768.
CONNTRACK_FULL = {
    "cpu": {"threads": 8},
    "sysctl": {"net.netfilter.nf_conntrack_max": "262144"},
    "observed": {"kernel_events": [TABLE_FULL]},
}
DIFF_FIXTURES: dict[str, tuple[dict[str, Any], str, str]] = {
    # writer: (facts, profile, key); SIGNS[writer] shows the writer
    "kube-proxy": (
        {**SIGNS["kube-proxy"], **CONNTRACK_FULL},
        "base",
        "net.netfilter.nf_conntrack_max",
    ),
    "k3s": ({**SIGNS["k3s"], **CONNTRACK_FULL}, "base", "net.netfilter.nf_conntrack_max"),
    "openshift-nto": (
        {**SIGNS["openshift-nto"], "sysctl": {"net.ipv4.tcp_notsent_lowat": "131072"}},
        "frontend-proxy",
        "net.ipv4.tcp_notsent_lowat",
    ),
    "bpftune": (
        {**SIGNS["bpftune"], "sysctl": {"net.ipv4.tcp_max_syn_backlog": "256"}},
        "frontend-proxy",
        "net.ipv4.tcp_max_syn_backlog",
    ),
    "tuned": (
        {**SIGNS["tuned"], "sysctl": {"net.core.somaxconn": "2048"}},
        "frontend-proxy",
        "net.core.somaxconn",
    ),
    "systemd-sysctl": (
        {**SIGNS["systemd-sysctl"], "kernel_modules": {"loadable": ["sch_fq"], "builtin": []}},
        "gridftp",
        "net.core.default_qdisc",
    ),
    "aks-agentbaker": (
        {**SIGNS["aks-agentbaker"], "services": {"nginx": {"listen_backlog": 65535}}},
        "frontend-proxy",
        "net.core.somaxconn",
    ),
    "eks-al2023-ami": (
        {
            "sysctl": {"vm.max_map_count": "65530", "vm.overcommit_memory": "1"},
            "sysctl_files": {
                "vm.max_map_count": "/etc/sysctl.d/99-sysctl.conf:3",
                "vm.overcommit_memory": "/etc/sysctl.d/99-amazon.conf:1",
            },
        },
        "elasticsearch",
        "vm.max_map_count",
    ),
}
CHECK_FIXTURES: dict[str, tuple[dict[str, Any], str]] = {
    # writer: (facts, the line of a sysctl file it overrides)
    "kubelet": (SIGNS["kubelet"], "vm.overcommit_memory = 2"),
    "dockerd": (SIGNS["dockerd"], "net.ipv4.ip_forward = 0"),
    "cni-plugins": ({"processes": ["ptp"]}, "net.ipv4.ip_forward = 0"),
    "cilium-agent": (SIGNS["cilium-agent"], "net.ipv4.conf.all.rp_filter = 1"),
    "systemd-networkd": (SIGNS["systemd-networkd"], "net.ipv4.conf.eth0.promote_secondaries = 0"),
    "wg-quick": (SIGNS["wg-quick"], "net.ipv4.conf.all.src_valid_mark = 0"),
}
FILE_FIXTURES: dict[str, tuple[dict[str, Any], str]] = {
    # writer: (facts that show its file, a line of 50-site.conf that file replaces at boot)
    "cilium-sysctlfix": (SIGNS["cilium-sysctlfix"], "net.ipv4.conf.all.rp_filter = 1"),
    "gke-node-image": (SIGNS["gke-node-image"], "net.ipv4.ip_forward = 1"),
}


def test_every_writer_has_a_fixture(kb: KnowledgeBase) -> None:
    """(A writer with no key it always writes, a pod's own writes, shows only in a record of
    writes: tests/engine/test_observed_owners.py.)"""
    named = set(DIFF_FIXTURES) | set(CHECK_FIXTURES) | set(FILE_FIXTURES)
    assert named == {w.id for w in kb.writers.spec.writers if not w.own and w.writes}


def _name(kb: KnowledgeBase, writer: str) -> str:
    return next(w.name for w in kb.writers.spec.writers if w.id == writer)


@pytest.mark.parametrize("writer", sorted(DIFF_FIXTURES))
def test_diff_names_the_writer_of_a_drifted_value(kb: KnowledgeBase, writer: str) -> None:
    data, profile, key = DIFF_FIXTURES[writer]
    facts = facts_from_data({"memory": {"total": 16 * 2**30}, "kernel": "6.1.0-18-amd64", **data})
    plan = build_plan(kb, facts, profile)
    current = from_values(facts.sysctl, "facts", "test", "facts", facts.sysctl_files)
    report = build_diff(plan, current, kb.catalog, kb.catalog.kernel_for(facts)[0])
    (entry,) = [e for e in report.entries if e.key == key]
    assert entry.status == "change", (entry, plan.notes)
    assert entry.owner is not None and entry.owner.startswith(_name(kb, writer)), entry.owner


@pytest.mark.parametrize("writer", sorted(CHECK_FIXTURES))
def test_check_names_the_writer_of_a_line(kb: KnowledgeBase, writer: str, tmp_path: Path) -> None:
    data, line = CHECK_FIXTURES[writer]
    facts = facts_from_data({"memory": {"total": 16 * 2**30}, "kernel": "6.1.0-18-amd64", **data})
    (tmp_path / "50-site.conf").write_text(line + "\n")
    found = Checker(kb, kb.check_rules, host_context(kb, facts)).check_config(read_tree(tmp_path))
    said = [f.message for f in found if f.id == "check.other-writer"]
    assert said and said[0].split(" here, but ")[1].startswith(_name(kb, writer)), said


@pytest.mark.parametrize("writer", sorted(FILE_FIXTURES))
def test_check_names_the_writers_file_that_sorts_later(
    kb: KnowledgeBase, writer: str, tmp_path: Path
) -> None:
    data, line = FILE_FIXTURES[writer]
    facts = facts_from_data({"memory": {"total": 16 * 2**30}, "kernel": "6.1.0-18-amd64", **data})
    (tmp_path / "50-site.conf").write_text(line + "\n")
    found = Checker(kb, kb.check_rules, host_context(kb, facts)).check_config(read_tree(tmp_path))
    said = [f.message for f in found if f.id == "check.other-writer-file"]
    assert said and _name(kb, writer) in said[0], said
