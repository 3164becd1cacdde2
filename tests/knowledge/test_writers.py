"""The writers catalog (rules/catalog/writers.yaml): loaded and checked, every writer recognised
from its signs, values worked out from the facts, and its page generated from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.engine.owners import owners
from sysctl_advisor.engine.plan_builder import host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.writers import Seen, WritersSpec
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.model_base import plain_data, validate
from sysctl_advisor.model.vocabulary import key_matches
from sysctl_advisor.outputs.writers_reference import render_writers
from tests.conftest import ROOT

CATALOG = ROOT / "rules" / "catalog" / "writers.yaml"
# For each writer, facts that show it (and only the signs the catalog names).
SIGNS: dict[str, dict[str, Any]] = {
    "kubelet": {"processes": ["kubelet"]},
    "kube-proxy": {"processes": ["kube-proxy"]},
    "k3s": {"processes": ["k3s-agent"]},
    "dockerd": {"processes": ["dockerd"]},
    "cni-plugins": {"links": ["eth0", "cni0"]},
    "cilium-sysctlfix": {
        "sysctl": {"net.ipv4.tcp_mem": "1 2 3"},
        "sysctl_files": {"net.ipv4.tcp_mem": "/etc/sysctl.d/99-zzz-override_cilium.conf:1"},
    },
    "cilium-agent": {"processes": ["cilium-agent"]},
    "systemd-networkd": {"processes": ["systemd-network"]},
    "systemd-sysctl": {
        "sysctl": {"net.core.default_qdisc": "fq_codel"},
        "sysctl_files": {"net.core.default_qdisc": "/usr/lib/sysctl.d/50-default.conf:48"},
    },
    "wg-quick": {"links": ["eth0", "wg0"]},
    "tuned": {"processes": ["tuned"]},
    "openshift-nto": {"processes": ["cluster-node-tu"]},
    "bpftune": {"processes": ["bpftune"]},
    "eks-al2023-ami": {
        "sysctl": {"net.ipv4.ip_local_reserved_ports": "10250"},
        "sysctl_files": {
            "net.ipv4.ip_local_reserved_ports": "/etc/sysctl.d/67-eks-reserved-ports.conf:1"
        },
    },
    "aks-agentbaker": {
        "sysctl": {"net.core.somaxconn": "16384"},
        "sysctl_files": {"net.core.somaxconn": "/etc/sysctl.d/999-sysctl-aks.conf:4"},
    },
    "gke-node-image": {
        "sysctl": {"net.ipv4.tcp_syncookies": "1"},
        "sysctl_files": {"net.ipv4.tcp_syncookies": "/etc/sysctl.d/60-gce-network-security.conf:1"},
    },
    "pod": {  # a write seen in a pod's network namespace by a program no writer names
        "writers": {
            "provenance": "watch 5s",
            "writes": [
                {
                    "key": "net.core.somaxconn",
                    "value": "8192",
                    "time": "2026-12-07T10:00:00Z",
                    "comm": "sh",
                    "netns": {
                        "kind": "pod",
                        "pod": {"uid": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"},
                    },
                }
            ],
        }
    },
}


def _present(kb: KnowledgeBase, data: dict[str, Any]) -> set[str]:
    facts = facts_from_data({"memory": {"total": 8 * 2**30}, "kernel": "6.1.0", **data})
    variables, _, _ = host_variables(kb, facts)
    return {w.writer.id for w in owners(kb, variables).writes}


def test_every_writer_has_a_sign_case(kb: KnowledgeBase) -> None:
    others = {w.id for w in kb.writers.spec.writers if not w.own}
    assert set(SIGNS) == others


@pytest.mark.parametrize("writer", sorted(SIGNS))
def test_each_writer_is_recognised_from_its_signs_alone(kb: KnowledgeBase, writer: str) -> None:
    spec = next(w for w in kb.writers.spec.writers if w.id == writer)
    if not spec.writes:  # a pod's own writes: no key it always writes, only its signs
        facts = facts_from_data({"memory": {"total": 8 * 2**30}, **SIGNS[writer]})
        seen = Seen.of(plain_data(facts), [])
        assert kb.writers.signs(spec, seen)
        assert _present(kb, SIGNS[writer]) == set()
        return
    assert _present(kb, SIGNS[writer]) - {"kubelet"} == {writer} - {"kubelet"}
    assert writer in _present(kb, SIGNS[writer])


def test_a_host_without_signs_has_no_writers(kb: KnowledgeBase) -> None:
    assert _present(kb, {"processes": ["sshd", "bash"], "links": ["lo", "eth0"]}) == set()


def test_a_kubernetes_node_runs_the_kubelet(kb: KnowledgeBase) -> None:
    assert "kubelet" in _present(kb, {"links": ["eth0", "cali0123456789a"]})


@pytest.mark.parametrize(
    ("cpus", "in_force", "value"),
    [
        (2, None, 131072),
        (8, None, 262144),
        (16, None, 524288),
        (32, None, 1048576),
        # above 32 CPUs the release decides: the figure in force of the two, else not known
        (64, "2097152", 2097152),  # before 1.36
        (64, "1048576", 1048576),  # 1.36 and later
        (64, "3000000", None),
        (64, None, None),
    ],
)
def test_kube_proxys_value_is_max_per_core_times_the_cpus(
    kb: KnowledgeBase, cpus: int, in_force: str | None, value: int | None
) -> None:
    facts = facts_from_data(
        {
            "memory": {"total": 2**34},
            "cpu": {"threads": cpus},
            "processes": ["kube-proxy"],
            "sysctl": {"net.netfilter.nf_conntrack_max": in_force} if in_force else {},
        }
    )
    variables, _, _ = host_variables(kb, facts)
    (write,) = owners(kb, variables).of("net.netfilter.nf_conntrack_max")
    assert write.value == value


def test_the_advisors_own_file_is_recognised_by_name(kb: KnowledgeBase) -> None:
    assert kb.writers.is_own("/etc/sysctl.d/90-sysctl-advisor.conf:12")
    assert kb.writers.is_own("/etc/sysctl.d/50-sysctl-advisor-tuning.conf:1")
    assert not kb.writers.is_own("/etc/sysctl.d/99-sysctl.conf:3")
    assert kb.writers.own_name == "90-sysctl-advisor.conf"


def test_a_star_is_one_interface_never_all_or_default() -> None:
    assert key_matches("net.ipv4.conf.*.rp_filter", "net.ipv4.conf.eth0.rp_filter")
    assert not key_matches("net.ipv4.conf.*.rp_filter", "net.ipv4.conf.all.rp_filter")
    assert not key_matches("net.ipv4.conf.*.rp_filter", "net.ipv4.conf.default.rp_filter")
    assert not key_matches("net.ipv4.conf.*.rp_filter", "net.ipv4.conf.rp_filter")
    assert key_matches("vm.overcommit_memory", "vm.overcommit_memory")


def _spec(text: str) -> None:
    validate(WritersSpec, yaml.safe_load(text), Path("writers.yaml"), text)


OWN = (
    "observed: {remove: r, unknown: u, command: c, file: f, own: o, fight: {id: drift.fight,"
    " severity: warning, switches: 2, message: m}}\n"
    "writers:\n  - {id: me, name: me, own: true, summary: s, signs: {files: [90-me.conf]}}\n"
)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            "  - {id: w, name: w, summary: s, signs: {processes: [w]}, references: [x],"
            " writes: [{key: vm.swappiness, when: boot, note: n, references: [x]}]}\n",
            "boot",
        ),
        (
            "  - {id: w, name: w, summary: s, signs: {processes: [w]}, references: [x],"
            " writes: [{key: vm.swappiness, when: start, file: 9.conf, note: n,"
            " references: [x]}]}\n",
            "boot",
        ),
        ("  - {id: w, name: w, summary: s, signs: {}, references: [x]}\n", "sign"),
        ("  - {id: w, name: w, summary: s, signs: {processes: [w]}}\n", "references"),
        ("  - {id: me, name: me, own: true, summary: s, signs: {files: [9.conf]}}\n", "twice"),
    ],
)
def test_a_writer_that_says_too_little_is_refused(extra: str, said: str) -> None:
    with pytest.raises(InputError, match=said):
        _spec(OWN + extra)


def test_the_writers_page_has_a_section_per_writer(kb: KnowledgeBase) -> None:
    """(That docs/writers.md is the generated page: tests/test_regenerate.py.)"""
    page = render_writers(kb.writers, kb.sources)
    for writer in kb.writers.spec.writers:
        assert f"\n## {writer.id}\n" in page
