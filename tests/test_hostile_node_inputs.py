"""A hostile-input review of the Kubernetes-node inputs: the kubelet's and the CNI plugins' files
in a `facts --root` tree, Ansible's interface list, the facts' `kubernetes_files`, the names a
profile gives (`servers:` among them) and the outputs all of these reach. Each payload is built
at test time: bad input is one line on stderr and exit 2, a file no collector could have found
is not found, and a name never becomes syntax in an output."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.engine.plan_builder import host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.sources.ansible_facts import AnsibleFacts, facts_data
from sysctl_advisor.sources.node_files import MAX_FOUND, read_node_files
from tests.conftest import assert_one_line_error
from tests.test_hostile_workloads import APP_NODE, profiles_dir, run

KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
MEMORY = {"total": "16 GiB"}

# --- broke, fixed -----------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["servers", "includes", "extends", "rules"])
@pytest.mark.parametrize("name", ["x" * 100_000, "redis\n", "Redis"])
def test_a_name_a_profile_gives_has_the_form_of_what_it_names(
    tmp_path: Path, field: str, name: str
) -> None:
    """A `--profiles-dir` profile naming a server, a profile or rules by 100,000 characters
    printed all of them in its one line of error, with no line number: each name is now held
    to the form of what it names (a server id, a profile name, a rule id or glob), refused
    where it stands."""
    value = json.dumps(name if field == "extends" else [name])
    directory = profiles_dir(tmp_path, {"pz": f"name: pz\nsummary: s\n{field}: {value}\n"})
    code, _, err = run("recommend", "--facts", APP_NODE, "--profiles-dir", directory, "-p", "redis")
    line = assert_one_line_error(code, err, f"pz.yaml:3: {field}")
    assert len(line) < 300, len(line)


@pytest.mark.parametrize("port", [True, "10250", 10250.0])
def test_a_kubelet_port_no_collector_writes_is_refused(tmp_path: Path, port: Any) -> None:
    """`facts` reads the port from the kubelet's configuration as an int, and only as one;
    `kubelet_port: true` in a facts file was taken as port 1, and reserved."""
    files = {"found": [KUBELET_CONFIG], "kubelet_port": port}
    facts = tmp_path / "facts.yaml"
    facts.write_text(yaml.safe_dump({"memory": MEMORY, "kubernetes_files": files}))
    code, out, err = run("recommend", "--facts", str(facts), "-p", "frontend-proxy")
    assert_one_line_error(code, err, "kubernetes_files.kubelet_port", "must be int")
    assert out == ""


def test_a_file_found_twice_is_one_sign(kb: KnowledgeBase) -> None:
    """A facts file listing the kubelet's configuration three times showed it as three signs
    (the interfaces were each shown once)."""
    facts = facts_from_data({"memory": MEMORY, "kubernetes_files": {"found": [KUBELET_CONFIG] * 3}})
    view = host_variables(kb, facts)[0]["kubernetes"]
    assert view["signs"] == [f"kubelet configuration {KUBELET_CONFIG}"]


# --- held -------------------------------------------------------------------------------------


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    for folder in ("etc/cni", "etc/kubernetes/kubelet", "var/lib/kubelet"):
        (root / folder).mkdir(parents=True)
    return root


def _found(kb: KnowledgeBase, root: Path) -> dict[str, Any]:
    return read_node_files(root, kb.kubernetes.node_places(), live=False)


def test_special_files_stand_for_no_file_and_no_directory(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO, a socket or a device node where the CNI directory or a configuration should be is
    never opened (a FIFO's open would wait for a writer; a device's runs its driver)."""
    root = _tree(tmp_path)
    os.mkfifo(root / "etc/cni/net.d")
    os.mkfifo(root / KUBELET_CONFIG.lstrip("/"))
    k3s = root / "var/lib/rancher/k3s/agent/etc/cni"
    k3s.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as sock:
        monkeypatch.chdir(k3s)  # a socket's path is short: bound by its name in the directory
        sock.bind("net.d")
        if os.geteuid() == 0:  # a device node, as a copied /dev would hold
            os.mknod(root / "etc/kubernetes/kubelet.conf", 0o600 | 0o020000, os.makedev(1, 3))
        assert _found(kb, root) == {"found": []}


def test_a_crowded_cni_directory_is_looked_at_within_bounds(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """100,000 CNI files: at most MAX_FOUND are kept (the facts' own bound), the kubelet's
    configuration, named exactly, first among them."""
    root = _tree(tmp_path)
    (root / KUBELET_CONFIG.lstrip("/")).write_text("port: 10251\n")
    cni = root / "etc/cni/net.d"
    cni.mkdir()
    for i in range(100_000):
        (cni / f"{i:06d}.conflist").touch()
    files = _found(kb, root)
    assert files["found"][0] == KUBELET_CONFIG and len(files["found"]) == MAX_FOUND
    assert files["kubelet_port"] == 10251
    facts_from_data({"memory": MEMORY, "kubernetes_files": files})  # as the facts take it


def test_names_no_collector_could_write_are_not_found(kb: KnowledgeBase, tmp_path: Path) -> None:
    """A line break, an escape sequence, bytes that are no UTF-8, a leading dash or 200
    characters in a CNI file's name: the name is left out, never written into the facts."""
    root = _tree(tmp_path)
    cni = root / "etc/cni/net.d"
    cni.mkdir()
    for name in (b"a\n.conflist", b"\x1b[2J.conflist", b"\xff.conflist", b"-rf.conf", b"a b.conf"):
        (Path(os.fsdecode(bytes(cni))) / os.fsdecode(name)).touch()
    (cni / ("x" * 200 + ".conflist")).touch()
    (cni / "10-calico.conflist").touch()
    assert _found(kb, root) == {"found": ["/etc/cni/net.d/10-calico.conflist"]}


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefg", "bcdefgh", strict=True)
)


@pytest.mark.parametrize(
    "text",
    [
        "port: 10251\nx: " + "[" * 100_000 + "]" * 100_000 + "\n",  # nested flow
        "port: 10251\nx:\n" + "".join(" " * i + "- \n" for i in range(2_000)),  # nested block
        "port: 10251\n" + BOMB,
        "port: 10251\n" + "#" * (300 * 1024) + "\n",  # above the kind's size
        "port: 10251\nport: 10252\n",
        "port: 10251\n---\nport: 10252\n",
        "port: !!python/object/apply:os.getpid []\n",
        "port: '10251'\n",
        "port: true\n",
        'port: "10251\\n2"\n',
        "port: 99999999999999999999999999999999\n",
    ],
)
def test_a_kubelet_configuration_gives_a_port_only_as_a_kubelet_reads_one(
    kb: KnowledgeBase, tmp_path: Path, text: str
) -> None:
    """Deep, bombed, oversized, duplicated or tagged: the file is found (its presence is the
    sign), and gives no port."""
    root = _tree(tmp_path)
    (root / KUBELET_CONFIG.lstrip("/")).write_text(text)
    json_config = root / "etc/kubernetes/kubelet/config.json"
    json_config.write_text('{"port": 10251, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    files = _found(kb, root)
    assert files == {"found": [KUBELET_CONFIG, "/etc/kubernetes/kubelet/config.json"]}


HOSTILE_LINK = "cali$(id)`|*#<"  # 14 bytes: a name the kernel accepts, and Calico's prefix


def test_ansible_interfaces_give_only_names_a_kernel_could(tmp_path: Path) -> None:
    """A 1 MB name, a line break, non-strings, duplicates and 10,000 veths: links holds each
    name a kernel accepts once; and the one that looks like Calico's shows the node in every
    output without becoming syntax in any (a comment, a JSON string, escaped Markdown)."""
    veths = [f"veth{i:08x}" for i in range(10_000)]
    interfaces = ["x" * 1_000_000, "eth0\nnet.core.somaxconn = 1", 7, None, ["lo"], {"a": 1}]
    interfaces += [HOSTILE_LINK, HOSTILE_LINK, "eth0", "lo", *veths]
    setup = {
        "ansible_hostname": "node-1",
        "ansible_memtotal_mb": 16000,
        "ansible_interfaces": interfaces,
        "ansible_eth0": {"device": "eth0", "module": "ena", "pciid": "0000:00:05.0", "mtu": 9001},
    }
    data = facts_data(AnsibleFacts(setup), "node-1")
    assert data["links"] == sorted({HOSTILE_LINK, "eth0", "lo", *veths})
    assert [n["name"] for n in data["nics"]] == ["eth0"]
    facts = tmp_path / "node-1.json"
    facts.write_text(json.dumps(data))
    commented = ["conf", "tuned", "ansible", "kubernetes", "daemonset", "talos", "gke", "eks"]
    commented.append("bottlerocket")
    for fmt in [*commented, "json", "aks", "markdown"]:
        code, out, err = run("recommend", "--facts", str(facts), "-p", "frontend-proxy", "-f", fmt)
        assert code == 0, (fmt, err)
        if fmt in commented:
            shown = [line for line in out.splitlines() if "cali$(id)" in line]
            assert all(line.lstrip().startswith("#") for line in shown), (fmt, shown)
        elif fmt == "markdown":
            assert HOSTILE_LINK not in out and "cali$(id)\\`\\|\\*\\#&lt;" in out
        else:
            json.loads(out)
    code, out, _ = run("recommend", "--facts", str(facts), "-p", "frontend-proxy", "-f", "json")
    assert f"interface {HOSTILE_LINK}" in json.dumps(json.loads(out))
