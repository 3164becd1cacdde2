"""`fleet --node-pools`: one node platform output per inventory group that is a node pool, its
plan the node plan most of the pool's hosts share, and each host whose own differs listed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import formats
from sysctl_advisor.outputs.node_platforms import extension
from tests.conftest import TESTS, Cli, invoke
from tests.outputs.test_json_contracts import validate

TREE = TESTS / "fixtures" / "ansible" / "tree"

# dtn-01's kernel (5.14) keeps net.core.rmem_max and wmem_max global: the node's keys. web-01's
# (6.18) has every key its plan sets per namespace: its node plan is empty.
MAP = """\
- hosts: dtn-01
  profile: gridftp
  set: {rtt_ms: 250}
- group: pool_dtn
  profile: gridftp
- group: pool_web
  profile: frontend-proxy
"""


def fleet(*args: str | Path) -> tuple[int, str]:
    result = invoke("fleet", *map(str, args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


def fleet_tree(tmp_path: Path, groups: dict[str, list[str]] | None = None) -> list[str | Path]:
    """Facts for dtn-01..03 (copies of one host) and web-01; an inventory with the two pools,
    an empty one, and a group that is no pool."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for host in ("dtn-01", "dtn-02", "dtn-03"):
        shutil.copy(TREE / "dtn-01", tree / host)
    shutil.copy(TREE / "web-01", tree / "web-01")
    groups = groups or {
        "pool_dtn": ["dtn-01", "dtn-02", "dtn-03"],
        "pool_web": ["web-01"],
        "pool_empty": [],
        "racks": ["dtn-01", "web-01"],
    }
    inventory = {
        "_meta": {"hostvars": {}},
        "all": {"children": sorted(groups)},
        **{name: {"hosts": hosts} for name, hosts in groups.items()},
    }
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "map.yaml").write_text(MAP)
    return [
        "--ansible-facts", tree, "--profile-map", tmp_path / "map.yaml",
        "--inventory", tmp_path / "inventory.json", "--out", tmp_path / "out",
    ]  # fmt: skip


def test_one_file_per_pool_with_the_plan_most_hosts_share(cli: Cli, tmp_path: Path) -> None:
    code, err = fleet(*fleet_tree(tmp_path), "--node-pools", "pool_*")
    assert code == 0, err
    assert "node pool pool_dtn: 1 of 3 hosts differ" in err
    out = tmp_path / "out"
    # pool_empty has no host: no file; `racks` is not a pool
    assert sorted(p.name for p in (out / "node_pools").iterdir()) == [
        "pool_dtn.yaml",
        "pool_web.yaml",
    ]
    summary = json.loads((out / "summary.json").read_text())
    validate("fleet-summary", summary)
    assert summary["node_format"] == "daemonset"
    pools = {p["pool"]: p for p in summary["node_pools"]}
    assert set(pools) == {"pool_dtn", "pool_web"}
    dtn = pools["pool_dtn"]
    # dtn-02 and dtn-03 share a plan; dtn-01 (first by name) has its own --set rtt_ms=250
    assert (dtn["representative"], dtn["profile"], dtn["hosts"]) == ("dtn-02", "gridftp", 3)
    assert dtn["file"] == "node_pools/pool_dtn.yaml"
    assert [d["host"] for d in dtn["differing"]] == ["dtn-01"]
    keys = {k["key"]: (k["pool"], k["host"]) for k in dtn["differing"][0]["keys"]}
    assert "net.core.rmem_max" in keys
    pool_value, host_value = keys["net.core.rmem_max"]
    assert pool_value is not None and host_value is not None
    assert int(host_value) > int(pool_value)  # a longer path: a larger buffer of its own
    assert pools["pool_web"]["representative"] == "web-01"
    assert pools["pool_web"]["differing"] == []

    # the pool's file is what recommend writes for its representative, less the keys its
    # hosts differ on: no host is given another's value (dtn-01's larger buffer stays its own)
    text = (out / "node_pools" / "pool_dtn.yaml").read_text()
    recommend = cli(
        "recommend",
        "--facts",
        tmp_path / "tree" / "dtn-02",
        "--profile",
        "gridftp",
        "-f",
        "daemonset",
    )
    assert recommend.exit_code == 0
    documents = [d for d in yaml.safe_load_all(text) if d]
    assert [d["kind"] for d in documents] == ["ConfigMap", "DaemonSet"]
    conf = documents[0]["data"]["90-sysctl-advisor.conf"]
    assert "net.core.rmem_max" not in conf and "net.core.rmem_max" in err
    own = next(d for d in yaml.safe_load_all(recommend.stdout) if d)["data"]
    assert f"net.core.rmem_max = {pool_value}" in own["90-sysctl-advisor.conf"]
    for document in documents:
        assert kubernetes_validate.validate(document, "1.32", strict=True) == "1.32"

    markdown = (out / "summary.md").read_text()
    assert "## Node pools" in markdown
    assert "| `dtn-01` | `pool_dtn` | `net.core.rmem_max` |" in markdown
    # the inventory says a pool's hosts are Kubernetes nodes: web-01's own file (its profile
    # widens the port range) reserves the NodePorts, as its pool's file does
    host_conf = (out / "host_files" / "web-01.conf").read_text()
    assert "net.ipv4.ip_local_reserved_ports = " in host_conf
    reserved = host_conf.split("net.ipv4.ip_local_reserved_ports = ", 1)[1].split("\n", 1)[0]
    assert "30000-32767" in reserved and "10250" in reserved
    marker = (out / ".sysctl-advisor-fleet").read_text()
    assert "node_pools/pool_dtn.yaml" in marker


def test_a_pool_platform_format_and_a_rerun_without_pools(tmp_path: Path) -> None:
    args = fleet_tree(tmp_path)
    code, err = fleet(*args, "--node-pools", "pool_dtn", "--node-format", "bottlerocket")
    assert code == 0, err
    out = tmp_path / "out"
    assert [p.name for p in (out / "node_pools").iterdir()] == ["pool_dtn.toml"]
    text = (out / "node_pools" / "pool_dtn.toml").read_text()
    assert "[settings.kernel.sysctl]" in text and '"net.core.rmem_max"' not in text
    code, err = fleet(*args)  # the next run without pools leaves no stale pool file
    assert code == 0, err
    assert not (out / "node_pools").exists()
    assert "node_pools" not in json.loads((out / "summary.json").read_text())


def test_every_node_format_has_a_file_extension() -> None:
    kb = KnowledgeBase.load()
    extensions = {fmt: extension(kb.node_platforms[fmt]) for fmt in formats.NODE}
    assert extensions == {
        "daemonset": "yaml",
        "talos": "yaml",
        "bottlerocket": "toml",
        "aks": "json",
        "gke": "yaml",
        "eks": "mime",
    }


@pytest.mark.parametrize(
    ("extra", "groups", "words"),
    [
        (["--node-pools", "pool_*", "--node-format", "kubernetes"], None, ["--node-format"]),
        (
            ["--node-pools", "pool_*"],
            {"pool_a": ["dtn-01", "dtn-02"], "pool_b": ["dtn-02", "dtn-03"]},
            ["dtn-02", "two node pools", "pool_a", "pool_b"],
        ),
        (["--node-pools", "nodes_*"], None, ["no inventory group matches", "nodes_*"]),
    ],
)
def test_refusals(
    tmp_path: Path, extra: list[str], groups: dict[str, list[str]] | None, words: list[str]
) -> None:
    args = fleet_tree(tmp_path, groups)
    if groups is not None:  # the map's groups must exist
        (tmp_path / "map.yaml").write_text("- hosts: '*'\n  profile: gridftp\n")
    code, err = fleet(*args, *extra)
    assert code == 2
    assert all(w in err for w in words), err
    assert not (tmp_path / "out").exists()


def test_pools_need_the_inventory(tmp_path: Path) -> None:
    args = fleet_tree(tmp_path)
    code, err = fleet(
        "--ansible-facts", args[1], "--profile", "base", "--out", tmp_path / "out",
        "--node-pools", "pool_*",
    )  # fmt: skip
    assert code == 2 and "--inventory" in err


def test_two_pools_of_one_profile_cannot_share_a_daemonset(tmp_path: Path) -> None:
    args = fleet_tree(tmp_path, {"pool_a": ["dtn-01"], "pool_b": ["dtn-02"]})
    rest = "- hosts: '*'\n  profile: gridftp\n"
    (tmp_path / "map.yaml").write_text(MAP.split("- group")[0] + rest)  # dtn-01 differs
    code, err = fleet(*args, "--node-pools", "pool_*")
    assert code == 2 and "pool_a and pool_b" in err and "DaemonSets" in err, err
    code, err = fleet(*args, "--node-pools", "pool_*", "--node-format", "talos")
    assert code == 0, err


def test_the_pool_file_is_built_from_the_plans_the_summary_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each host's facts are read once: the representative's facts file, changed on disk
    after it was read (a host re-gathering its facts during the run, here after a kernel
    upgrade that makes the buffer maxima per namespace), does not reach the pool's file. A
    second read used to give the pool a node plan no host's own plan had, while the summary
    said no host differed."""
    from sysctl_advisor.commands import fleet as fleet_command

    args = fleet_tree(tmp_path, {"pool_dtn": ["dtn-02", "dtn-03"], "pool_web": ["web-01"]})
    tree = tmp_path / "tree"
    reads: list[str] = []
    load = fleet_command.load_ansible_facts

    def read_then_change(path: Path) -> object:
        facts = load(path)
        reads.append(path.name)
        if path.name == "dtn-02":  # the representative
            data = json.loads(path.read_text())
            inner = data.get("ansible_facts", data)
            inner["ansible_kernel"] = "6.18.0"
            path.write_text(json.dumps(data))
        return facts

    monkeypatch.setattr(fleet_command, "load_ansible_facts", read_then_change)
    code, err = fleet(*args, "--node-pools", "pool_*", "-j", "1")
    assert code == 0, err
    assert sorted(reads) == sorted(p.name for p in tree.iterdir())  # once each
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    dtn = next(p for p in summary["node_pools"] if p["pool"] == "pool_dtn")
    assert (dtn["representative"], dtn["differing"]) == ("dtn-02", [])

    def settings(text: str) -> dict[str, str]:
        lines = (line.split(" = ", 1) for line in text.splitlines() if " = " in line)
        return {k.strip(): v for k, v in lines if not k.startswith("#")}

    own = settings((out / "host_files" / "dtn-02.conf").read_text())
    documents = yaml.safe_load_all((out / "node_pools" / "pool_dtn.yaml").read_text())
    pool = settings(next(d for d in documents if d)["data"]["90-sysctl-advisor.conf"])
    assert "net.core.rmem_max" in pool
    assert {k: own.get(k) for k in pool} == pool
