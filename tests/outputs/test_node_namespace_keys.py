"""The node's own network namespace on Kubernetes: the keys that protect it (the NodePort and
kubelet reservation, and the port range that goes with it) are set by every node output that
acts in it, or listed as not taken, never filed for the pods; when the workload's server
listens in the node's namespace (hostNetwork), every per-namespace key is the node's."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from sysctl_advisor.commands.recommend import recommend
from sysctl_advisor.engine.kubernetes_placement import Placement, placement_for
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.outputs import formats
from sysctl_advisor.outputs.kubernetes_manifests import manifest_settings, render_kubernetes
from sysctl_advisor.outputs.node_platforms import read_back, render_node, split
from sysctl_advisor.outputs.plan_render import Renderer
from tests.conftest import EXAMPLES, load_facts

# A kernel where ip_local_reserved_ports and ip_local_port_range are per namespace (3.16+)
KERNEL = "6.8.0-49-generic"


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load()


def _node(kernel: str = KERNEL, listeners: bool = True) -> HostFacts:
    facts = load_facts(EXAMPLES / "haproxy-frontend-rhel7.yaml")
    facts = replace(facts, kernel=kernel)
    return facts if listeners else replace(facts, listeners=[])


def _placement(kb: KnowledgeBase, profile: str, facts: HostFacts, mode: str) -> Placement:
    return placement_for(kb, facts, profile, {}, kb.kubernetes.version(None), mode)


def _header_pod_keys(text: str) -> set[str]:
    """The keys the header's sentence files for the pods (none when it has no such sentence)."""
    flat = " ".join(line.strip().lstrip("#/").strip(" \"',") for line in text.splitlines())
    found = re.search(r"Per-namespace keys belong in the pods[^:]*: (.*?)\.(?: |$)", flat)
    return set(found[1].replace(",", " ").split()) if found else set()


PROFILES = ["frontend-proxy", "redis", "postgresql", "c1m-server", "gridftp", "kafka"]


@pytest.mark.parametrize("platform", formats.NODE)
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("mode", ["pod", "auto"])
def test_a_node_namespace_key_is_on_the_node_or_not_taken_never_the_pods(
    kb: KnowledgeBase, platform: str, profile: str, mode: str
) -> None:
    placement = _placement(kb, profile, _node(), mode)
    node_keys = {s.key: s.value for s in placement.node.settings}
    assert set(placement.node_namespace) <= set(node_keys)
    text = render_node(kb.node_platforms[platform], Renderer(kb.catalog), placement, "rebuild")
    taken = read_back(text, kb.node_platforms[platform])
    refused = {s.key for s, _ in split(kb.node_platforms[platform], placement)[1]}
    pod_line = _header_pod_keys(text)
    assert pod_line == {p.setting.key for p in placement.pod}  # the sentence read whole
    pods = {p.setting.key: p.setting.value for p in placement.pod}
    for key in placement.node_namespace:
        assert (key in taken and taken[key] == node_keys[key]) or key in refused, key
        # a pod's own value (its own range, its own listeners) may be listed for the pods;
        # the node's NodePort reservation never is
        if key in pod_line:
            assert "30000" not in pods[key] and "10250" not in pods[key].split(","), key
    for key in refused:  # what the platform refuses is said, with its value
        assert f"{key} = {node_keys[key]}" in text.replace('",\n      "', " "), key


def test_the_nodeport_reservation_is_in_every_output_that_acts_in_the_node(
    kb: KnowledgeBase,
) -> None:
    """The frontend widens the range over the NodePorts: the node's namespace gets the
    reservation and the range together where the platform takes any key; AKS and GKE list
    them as not taken."""
    placement = _placement(kb, "frontend-proxy", _node(), "pod")
    assert set(placement.node_namespace) == {
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.ip_local_port_range",
    }
    reserved = next(s.value for s in placement.node.settings if s.key.endswith("reserved_ports"))
    assert "30000-32767" in reserved and "10250" in reserved
    for platform in ("daemonset", "talos", "bottlerocket"):
        text = render_node(kb.node_platforms[platform], Renderer(kb.catalog), placement, "r")
        taken = read_back(text, kb.node_platforms[platform])
        assert taken["net.ipv4.ip_local_reserved_ports"] == reserved, platform
        assert taken["net.ipv4.ip_local_port_range"] == "10240 65535", platform
        assert "The node: no key to set" not in text
    for platform in ("aks", "gke", "eks"):
        refused = {s.key: why for s, why in split(kb.node_platforms[platform], placement)[1]}
        assert "net.ipv4.ip_local_reserved_ports" in refused, platform


def test_hostnetwork_ingress_keys_go_on_the_node(kb: KnowledgeBase) -> None:
    """HAProxy listens in the node's facts, so the workload is hostNetwork: somaxconn (per
    namespace, raised for its overflowing queue) is set on the node, none in a pod."""
    auto = _placement(kb, "frontend-proxy", _node(), "auto")
    assert auto.host_network == ["HAProxy listens on ports 80, 443"]
    assert auto.pod == []
    assert "net.core.somaxconn" in {s.key for s in auto.node.settings}
    eks = render_node(kb.node_platforms["eks"], Renderer(kb.catalog), auto, "rebuild")
    assert "net.core.somaxconn = 16384" in eks
    assert "hostNetwork" in eks
    pods = _placement(kb, "frontend-proxy", _node(), "pod")
    assert pods.host_network == []
    assert "net.core.somaxconn" in {p.setting.key for p in pods.pod}
    assert "net.core.somaxconn" not in {s.key for s in pods.node.settings}


def test_no_listener_of_the_workload_means_pods(kb: KnowledgeBase) -> None:
    placement = _placement(kb, "frontend-proxy", _node(listeners=False), "auto")
    assert placement.host_network == []
    # a profile whose servers do not listen here: redis on a node running HAProxy
    assert _placement(kb, "redis", _node(), "auto").host_network == []
    assert _placement(kb, "redis", _node(), "host").host_network == ["--workload-network host"]


def test_kubernetes_format_in_hostnetwork_mode(kb: KnowledgeBase) -> None:
    placement = _placement(kb, "frontend-proxy", _node(), "auto")
    text = render_kubernetes(Renderer(kb.catalog), placement, "rebuild")
    pod, node, _ = manifest_settings(text)
    assert pod == {}
    assert node["net.core.somaxconn"] == "16384"
    assert "1. The pod: none (hostNetwork" in text
    flat = " ".join(line.lstrip("# ") for line in text.splitlines())
    assert "A hostNetwork pod may not set net.* sysctls" in flat


def test_a_key_in_both_namespaces_reads_back_in_both(kb: KnowledgeBase) -> None:
    """In pod mode the pod's range (for its upstream connections) and the node's (with its
    reservation) are two namespaces' values, both written."""
    placement = _placement(kb, "frontend-proxy", _node(), "pod")
    text = render_kubernetes(Renderer(kb.catalog), placement, "rebuild")
    pod, node, _ = manifest_settings(text)
    assert "net.ipv4.ip_local_port_range" in pod and "net.ipv4.ip_local_port_range" in node
    assert "30000-32767" in node["net.ipv4.ip_local_reserved_ports"]
    # a pod's namespace serves no NodePort: no reservation for one in its securityContext
    assert "30000" not in pod.get("net.ipv4.ip_local_reserved_ports", "")
    assert "10250" not in pod.get("net.ipv4.ip_local_reserved_ports", "")


def test_workload_network_on_the_command_line(tmp_path: Path) -> None:
    facts = EXAMPLES / "haproxy-frontend-rhel7.yaml"
    out = tmp_path / "aks.json"
    args = {"profile": "frontend-proxy", "facts": facts, "fmt": "aks", "output": out}
    assert recommend(**args, workload_network="pod") == 0
    assert "netCoreSomaxconn" not in json.loads(out.read_text())["sysctls"]
    assert recommend(**args) == 0
    assert json.loads(out.read_text())["sysctls"]["netCoreSomaxconn"] == 16384
    from sysctl_advisor.model.errors import InputError

    with pytest.raises(InputError, match="--format kubernetes"):
        recommend(profile="frontend-proxy", facts=facts, workload_network="host")
