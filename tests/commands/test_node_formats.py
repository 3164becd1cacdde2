"""`recommend --format` for each node platform, through the CLI: every example host
under its profile renders (each output read back before it is written), the keys a platform
does not take are said on stderr and in the file, never dropped, the node is planned as a
Kubernetes node (NodePorts reserved), and `--undo` writes the node's undo in the same place."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import formats
from sysctl_advisor.outputs.node_platforms import read_back
from tests.conftest import EXAMPLE_PARAMS, EXAMPLE_PROFILES, EXAMPLES, invoke

HAPROXY = str(EXAMPLES / "haproxy-frontend-rhel7.yaml")


def _recommend(*args: str) -> tuple[int, str, str]:
    result = invoke("recommend", *args)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("fmt", formats.NODE)
@pytest.mark.parametrize("host", sorted(EXAMPLE_PROFILES))
def test_every_example_renders_on_every_platform(host: str, fmt: str) -> None:
    params = [f"--set={k}={v}" for k, v in EXAMPLE_PARAMS.get(host, {}).items()]
    code, out, err = _recommend(
        "--facts", str(EXAMPLES / f"{host}.yaml"), "-p", EXAMPLE_PROFILES[host], "-f", fmt, *params
    )
    assert code == 0 and out, err
    for line in err.splitlines():  # each key not taken is said, and listed in the file
        if " is not set: " in line:
            key = line.split(f"{fmt}: ", 1)[1].split(" = ", 1)[0]
            assert key in out, (key, fmt)


def test_the_node_reserves_node_ports_whatever_the_facts_show() -> None:
    code, out, _ = _recommend("--facts", HAPROXY, "-p", "frontend-proxy", "-f", "daemonset")
    values = read_back(out, KnowledgeBase.load().node_platforms["daemonset"])
    assert code == 0 and "30000-32767" in values["net.ipv4.ip_local_reserved_ports"]
    assert "10250" in values["net.ipv4.ip_local_reserved_ports"]


def test_undo_writes_the_node_s_values_in_force() -> None:
    code, out, err = _recommend(
        "--facts", HAPROXY, "-p", "frontend-proxy", "-f", "daemonset", "--undo"
    )
    assert code == 0, err
    facts = yaml.safe_load(Path(HAPROXY).read_text())
    restored = read_back(out, KnowledgeBase.load().node_platforms["daemonset"])
    assert restored and "--undo" in out
    in_force = facts.get("sysctl", {})
    compared = [key for key in restored if key in in_force]
    assert compared  # the example's facts show values in force for the node's keys
    for key in compared:  # restored as the kernel printed it
        assert restored[key] == " ".join(str(in_force[key]).split()), key


def test_kubernetes_version_needs_a_kubernetes_format() -> None:
    code, _, err = _recommend(
        "--facts", HAPROXY, "-p", "frontend-proxy", "-f", "conf", "--kubernetes-version", "1.32"
    )
    assert code == 2 and "--kubernetes-version" in err
    code, _, err = _recommend(
        "--facts", HAPROXY, "-p", "frontend-proxy", "-f", "talos", "--kubernetes-version", "1.32"
    )
    assert code == 0, err
