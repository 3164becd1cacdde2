"""The Kubernetes table (rules/catalog/kubernetes.yaml) against itself and the key catalog."""

from __future__ import annotations

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.kubernetes import KubernetesVersion
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.29", (1, 29)), ("v1.32", (1, 32)), ("1.30.7", (1, 30)), (" 1.36 ", (1, 36))],
)
def test_versions_parse(text: str, expected: tuple[int, int]) -> None:
    version = KubernetesVersion.parse(text)
    assert (version.major, version.minor) == expected and str(version) == ".".join(
        map(str, expected)
    )


@pytest.mark.parametrize("text", ["", "1", "latest", "1.29-rc1", "1.29\n--x", "2.x"])
def test_bad_versions_are_refused(kb: KnowledgeBase, text: str) -> None:
    with pytest.raises(InputError):
        kb.kubernetes.version(text)


def test_the_kubelet_kernel_gates_agree_with_the_catalog(kb: KnowledgeBase) -> None:
    """Two sources read independently: the kernel the kubelet requires for a safe sysctl is the
    kernel from which the catalog says the key is per-namespace."""
    checked = 0
    for entry in kb.kubernetes.spec.kubelet_safe:
        spec = kb.catalog.keys.get(entry.name)
        if spec is None or entry.kernel is None:
            continue
        assert spec.netns_since == entry.kernel, entry.name
        checked += 1
    assert checked >= 6


def test_the_baseline_never_allows_what_the_kubelet_does_not(kb: KnowledgeBase) -> None:
    safe = {s.name: KubernetesVersion.parse(s.since) for s in kb.kubernetes.spec.kubelet_safe}
    for entry in kb.kubernetes.spec.pod_security_baseline:
        assert entry.name in safe and safe[entry.name] <= KubernetesVersion.parse(entry.since)


def test_verdicts(kb: KnowledgeBase) -> None:
    k = kb.kubernetes
    new = KernelVersion.parse("6.8.0")
    assert k.verdict("net.ipv4.ip_local_port_range", KubernetesVersion(1, 25), new).safe
    assert not k.verdict("net.ipv4.ip_local_reserved_ports", KubernetesVersion(1, 26), new).safe
    assert k.verdict("net.ipv4.ip_local_reserved_ports", KubernetesVersion(1, 27), new).safe
    # safe in the oldest release read is safe since then or earlier, never "since" it
    assert k.verdict("net.ipv4.ip_local_port_range", KubernetesVersion(1, 36), new).why.endswith(
        f"since Kubernetes {k.oldest} or earlier"
    )
    assert k.verdict(
        "net.ipv4.ip_local_reserved_ports", KubernetesVersion(1, 36), new
    ).why.endswith("since Kubernetes 1.27")
    old = KernelVersion.parse("4.4.0")
    assert not k.verdict("net.ipv4.tcp_keepalive_time", KubernetesVersion(1, 29), old).safe
    somaxconn = k.verdict("net.core.somaxconn", KubernetesVersion(1, 36), new)
    assert not somaxconn.safe and not somaxconn.baseline
    # A newer release than the table is judged by the newest lists.
    assert k.lists_for(KubernetesVersion(1, 99)) == k.newest
