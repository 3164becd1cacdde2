"""A Kubernetes node is recognised from every kind of input: a facts file's `nics` or `links`,
listeners, Ansible facts (Calico, the AWS VPC CNI, Azure CNI, Cilium), a copied tree's kubelet
and CNI files; and a host that is no node is not, nor called known where the facts cannot
say. Each case goes through the reader of its kind and the rules' view of it (`kubernetes`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.commands.facts import facts
from sysctl_advisor.engine.plan_builder import host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts, facts_from_data
from sysctl_advisor.sources.ansible_facts import host_facts_from_document
from sysctl_advisor.sources.local_host import collect_data
from tests.conftest import Cli, load_facts

MEMORY = {"total": "16 GiB"}
KERNEL = "6.1.0-18-amd64"

# The interface dicts the setup module writes (module_utils/facts/network/linux.py): `module`
# and `pciid` only where /sys/class/net/NAME/device exists; a veth reports a speed (10000).
NIC = {"active": True, "type": "ether", "mtu": 9001, "speed": 25000}
VETH = {"active": True, "type": "ether", "mtu": 9001, "speed": 10000, "promisc": False}
SOFT = {"active": True, "type": "ether", "mtu": 1450}  # vxlan, dummy: no device, no speed
LOOPBACK = {"active": True, "type": "loopback", "mtu": 65536}


def _setup(interfaces: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One host's `ansible -m setup --tree` document with these interfaces."""
    facts: dict[str, Any] = {
        "ansible_hostname": "node-1",
        "ansible_kernel": KERNEL,
        "ansible_architecture": "x86_64",
        "ansible_memtotal_mb": 16000,
        "ansible_processor_vcpus": 4,
        "ansible_interfaces": list(interfaces),
    }
    for name, iface in interfaces.items():
        facts["ansible_" + name.replace("-", "_")] = {"device": name, **iface}
    return {"ansible_facts": facts}


def _ansible(interfaces: dict[str, dict[str, Any]]) -> Callable[[Path], HostFacts]:
    return lambda _: host_facts_from_document(_setup(interfaces), "node-1")


def _facts(data: dict[str, Any]) -> Callable[[Path], HostFacts]:
    return lambda _: facts_from_data({"memory": MEMORY, "kernel": KERNEL, **data})


def _tree(files: dict[str, str]) -> Callable[[Path], HostFacts]:
    """`facts --root` of a copied tree (proc/meminfo and these files, no /sys, no listeners),
    read back as `--facts` reads it."""

    def read(tmp_path: Path) -> HostFacts:
        root = tmp_path / "copy"
        files_in = {"proc/meminfo": "MemTotal: 16384000 kB\n", **files}
        for name, text in files_in.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        written = tmp_path / "facts.yaml"
        assert facts(root=root, output=written) == 0
        return load_facts(written)

    return read


CALICO = {
    "lo": LOOPBACK,
    "ens5": {**NIC, "module": "ena", "pciid": "0000:00:05.0"},
    "cali1a2b3c4d5e6": VETH,
    "cali9f8e7d6c5b4": VETH,
    "tunl0": {"active": True, "type": "unknown", "mtu": 8981},
    "vxlan.calico": SOFT,
}
AWS_VPC_CNI = {
    "lo": LOOPBACK,
    "ens5": {**NIC, "module": "ena", "pciid": "0000:00:05.0"},
    "ens6": {**NIC, "module": "ena", "pciid": "0000:00:06.0"},
    "eni3f2a1b0c9d8": VETH,
    "enie0d1c2b3a49": VETH,
}
AZURE_CNI = {
    "lo": LOOPBACK,
    "eth0": {**NIC, "module": "hv_netvsc", "pciid": "000d3a6b-1c2d-000d-3a6b-1c2d000d3a6b"},
    "enP30832s1": {**NIC, "module": "mlx5_core", "pciid": "7870:00:02.0"},
    "azv1f2e3d4": VETH,
    "azv9c8b7a6": VETH,
}
CILIUM = {
    "lo": LOOPBACK,
    "eth0": {**NIC, "module": "virtio_net", "pciid": "virtio1"},
    "cilium_host": VETH,
    "cilium_net": VETH,
    "cilium_vxlan": SOFT,
    "lxc_health": VETH,
    "lxc0a1b2c3d4e5f": VETH,
}
PLAIN = {
    "lo": LOOPBACK,
    "eno1": {**NIC, "module": "igb", "pciid": "0000:02:00.0"},
    "docker0": {"active": False, "type": "bridge", "mtu": 1500},
    "veth3c1d2e4": VETH,
    "virbr0": {"active": False, "type": "bridge", "mtu": 1500},
    "lxcbr0": {"active": True, "type": "bridge", "mtu": 1500},
    "vethAB12CD": VETH,
}
OVN_COMPUTE = {  # an OpenStack OVN compute node: Open vSwitch with a Geneve tunnel, no kubelet
    "lo": LOOPBACK,
    "eno1": {**NIC, "module": "ice", "pciid": "0000:3b:00.0"},
    "br-int": SOFT,
    "genev_sys_6081": SOFT,
    "tap5e6f7a8b-9c": VETH,
}
KUBELET_CONFIG = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
KUBELET = {
    "address": "::",
    "port": 10250,
    "backlog": 4096,
    "queue": 0,
    "process": {"pid": 812, "command": "kubelet", "go": True},
}

# (input, node, known, first sign or hint, kubelet port)
CASES: dict[str, tuple[Callable[[Path], HostFacts], bool, bool, str | None, int]] = {
    "facts nics, Calico names": (
        _facts({"nics": [{"name": "eth0"}, {"name": "cali0123456789a"}, {"name": "vxlan.calico"}]}),
        True,
        True,
        "interface cali0123456789a",
        10250,
    ),
    "facts links, flannel": (
        _facts({"links": ["cni0", "eth0", "flannel.1", "lo"]}),
        True,
        True,
        "interface cni0",
        10250,
    ),
    "facts links, NodeLocal DNSCache and kube-proxy IPVS": (
        _facts({"links": ["eth0", "kube-ipvs0", "lo", "nodelocaldns"]}),
        True,
        True,
        "interface kube-ipvs0",
        10250,
    ),
    "listeners: a kubelet": (
        _facts({"listeners": [KUBELET]}),
        True,
        True,
        "a kubelet listener on port 10250",
        10250,
    ),
    "Ansible facts of a Calico node": (
        _ansible(CALICO),
        True,
        True,
        "interface cali1a2b3c4d5e6",
        10250,
    ),
    "Ansible facts of an AWS VPC CNI node": (
        _ansible(AWS_VPC_CNI),
        True,
        True,
        "interface eni3f2a1b0c9d8",
        10250,
    ),
    "Ansible facts of an Azure CNI node": (
        _ansible(AZURE_CNI),
        True,
        True,
        "interface azv1f2e3d4",
        10250,
    ),
    "Ansible facts of a Cilium node": (
        _ansible(CILIUM),
        True,
        True,
        "interface cilium_host",
        10250,
    ),
    "a copied tree with kubelet and CNI files, no listeners": (
        _tree(
            {
                "var/lib/kubelet/config.yaml": KUBELET_CONFIG + "port: 10251\n",
                "etc/kubernetes/kubelet.conf": "apiVersion: v1\nkind: Config\n",
                "etc/cni/net.d/10-calico.conflist": "{}",
            }
        ),
        True,
        True,
        "kubelet configuration /var/lib/kubelet/config.yaml",
        10251,
    ),
    "a copied EKS tree: the kubelet's config.json and the AWS CNI's conflist": (
        _tree(
            {
                "etc/kubernetes/kubelet/config.json": '{"kind": "KubeletConfiguration"}',
                "etc/cni/net.d/10-aws.conflist": "{}",
            }
        ),
        True,
        True,
        "kubelet configuration /etc/kubernetes/kubelet/config.json",
        10250,
    ),
    "a copied k3s tree: its flannel CNI file under /var/lib/rancher": (
        _tree({"var/lib/rancher/k3s/agent/etc/cni/net.d/10-flannel.conflist": "{}"}),
        True,
        True,
        "k3s's flannel CNI configuration "
        "/var/lib/rancher/k3s/agent/etc/cni/net.d/10-flannel.conflist",
        10250,
    ),
    # negatives
    "a plain host: docker0, virbr0, lxcbr0 and veths": (
        _facts({"links": ["docker0", "eno1", "lo", "lxcbr0", "veth3c1d2e4", "virbr0"]}),
        False,
        True,
        None,
        10250,
    ),
    "Ansible facts of a plain host": (_ansible(PLAIN), False, True, None, 10250),
    "an LVS tunnelling real server: tunl0 alone cannot say": (
        _facts({"links": ["eth0", "lo", "tunl0"]}),
        False,
        False,
        "interface tunl0",
        10250,
    ),
    "Ansible facts of an OVN compute node: genev_sys_6081 alone cannot say": (
        _ansible(OVN_COMPUTE),
        False,
        False,
        "interface genev_sys_6081",
        10250,
    ),
    "a copied tree with Podman's CNI file alone cannot say": (
        _tree({"etc/cni/net.d/87-podman-bridge.conflist": "{}"}),
        False,
        False,
        "a CNI configuration (Podman with its CNI network backend installs its own here too) "
        "/etc/cni/net.d/87-podman-bridge.conflist",
        10250,
    ),
    "a copied tree with no kubelet or CNI file": (_tree({}), False, True, None, 10250),
    "hand-written nics, no sign: the facts cannot say": (
        _facts({"nics": [{"name": "eth0", "speed_mbps": 10000}]}),
        False,
        False,
        None,
        10250,
    ),
    "declared no node over a CNI interface": (
        _facts({"links": ["cali0123456789a"], "kubernetes": {"node": False}}),
        False,
        True,
        None,
        10250,
    ),
    "declared a node with no sign": (
        _facts({"kubernetes": {"node": True}}),
        True,
        True,
        "declared one by the facts or the Kubernetes output",
        10250,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_input_kind(kb: KnowledgeBase, tmp_path: Path, case: str) -> None:
    read, node, known, shown, kubelet_port = CASES[case]
    view = host_variables(kb, read(tmp_path))[0]["kubernetes"]
    assert (view["node"], view["known"]) == (node, known), view
    if node:
        assert view["signs"][0] == shown, view
    elif shown is None:
        assert view["signs"] == [] and view["hints"] == [], view
    else:
        assert view["signs"] == [] and view["hints"][0] == shown, view
    assert view["kubelet_port"] == kubelet_port


@pytest.mark.parametrize("setup", [CALICO, AWS_VPC_CNI, AZURE_CNI, CILIUM, PLAIN, OVN_COMPUTE])
def test_ansible_facts_list_every_interface_and_only_devices_as_nics(
    setup: dict[str, dict[str, Any]],
) -> None:
    facts = host_facts_from_document(_setup(setup), "node-1")
    assert facts.links == sorted(setup)
    devices = sorted(name for name, iface in setup.items() if "pciid" in iface)
    assert sorted(n.name for n in facts.nics) == devices  # no veth, vxlan, dummy or tunnel


def test_a_copied_tree_counts_only_regular_files_inside_it(tmp_path: Path) -> None:
    """A CNI file that links out of the tree is the host running the advisor, and a FIFO or a
    directory is no configuration: neither is found. A kubelet configuration that is no
    document, or gives no port a kubelet takes, is found, with no port."""
    root = tmp_path / "copy"
    cni = root / "etc/cni/net.d"
    cni.mkdir(parents=True)
    (root / "proc").mkdir()
    (root / "proc/meminfo").write_text("MemTotal: 16384000 kB\n")
    outside = tmp_path / "10-calico.conflist"
    outside.write_text("{}")
    (cni / "10-calico.conflist").symlink_to(outside)
    (cni / "05-cilium.conflist").mkdir()
    os.mkfifo(cni / "10-flannel.conflist")
    kubelet = root / "var/lib/kubelet"
    kubelet.mkdir(parents=True)
    (kubelet / "config.yaml").write_text("port: [10250\n")
    kb = KnowledgeBase.load()
    files = collect_data([], root, node_places=kb.kubernetes.node_places())["kubernetes_files"]
    assert files == {"found": ["/var/lib/kubelet/config.yaml"]}
    for text in ("port: 0\n", "port: true\n", "port: 70000\n", "- 1\n", "{"):
        (kubelet / "config.yaml").write_text(text)
        files = collect_data([], root, node_places=kb.kubernetes.node_places())
        assert files["kubernetes_files"] == {"found": ["/var/lib/kubelet/config.yaml"]}


def test_fleet_of_a_calico_node_from_ansible_facts_reserves_the_node_ports(
    cli: Cli,
    tmp_path: Path,
) -> None:
    """End to end: `fleet --ansible-facts` of a Calico node with the frontend-proxy profile,
    which widens the ephemeral range over the NodePorts, reserves them for the node."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "node-1").write_text(json.dumps(_setup(CALICO)))
    (tree / "web-1").write_text(json.dumps(_setup(PLAIN)))
    out = tmp_path / "out"
    result = cli(
        "fleet", "--ansible-facts", str(tree), "--profile", "frontend-proxy", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    ids = {h["host"]: h["finding_ids"] for h in summary["hosts"]}
    node = (out / "host_files" / "node-1.conf").read_text()
    assert "[time-wait.node-ports]" in node
    assert "net.ipv4.ip_local_reserved_ports = 10250,30000-32767" in node
    assert "time-wait.kubernetes-node-pod-keys" in ids["node-1"]
    assert "This host is a Kubernetes node (interface cali1a2b3c4d5e6" in " ".join(
        (out / "host_vars" / "node-1.yml").read_text().replace("#", " ").split()
    )
    plain = (out / "host_files" / "web-1.conf").read_text()
    assert "[time-wait.node-ports]" not in plain and "30000-32767" not in plain
    assert "time-wait.kubernetes-node-pod-keys" not in ids["web-1"]


def test_a_cni_directory_that_links_out_of_the_tree_is_not_listed(tmp_path: Path) -> None:
    root = tmp_path / "copy"
    (root / "proc").mkdir(parents=True)
    (root / "proc/meminfo").write_text("MemTotal: 16384000 kB\n")
    outside = tmp_path / "host-cni"
    outside.mkdir()
    (outside / "10-calico.conflist").write_text("{}")
    (outside / "99-other.conflist").write_text("{}")
    (root / "etc/cni").mkdir(parents=True)
    (root / "etc/cni/net.d").symlink_to(outside)
    kb = KnowledgeBase.load()
    files = collect_data([], root, node_places=kb.kubernetes.node_places())["kubernetes_files"]
    assert files == {"found": []}
