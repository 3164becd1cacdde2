"""Advice outside sysctl on a Kubernetes node: the node's own agents (the kubelet, kube-proxy,
the container runtime) get no restart companion to chase a listen backlog, and a file-limit
companion names the container runtime, which sets a pod's RLIMIT_NOFILE, not a service unit or
limits.conf. The same host declared not a node keeps both as before."""

from __future__ import annotations

import dataclasses

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.host_facts import Kubernetes as KubernetesFacts
from sysctl_advisor.model.plan import Plan
from tests.conftest import EXAMPLES, TESTS, Cli, load_facts

NODE = TESTS / "fixtures" / "node-companions" / "kubeadm-containerd-node.yaml"
AGENTS = ("kubelet", "kube-proxy", "containerd")


def _plan(kb: KnowledgeBase, facts: HostFacts, profile: str) -> Plan:
    return build_plan(kb, facts, profile)


def _not_a_node(facts: HostFacts) -> HostFacts:
    return dataclasses.replace(facts, kubernetes=KubernetesFacts(node=False))


def test_the_nodes_agents_get_no_restart_companion(kb: KnowledgeBase) -> None:
    plan = _plan(kb, load_facts(NODE), "frontend-proxy")
    texts = [f"{c.target} {c.setting} {c.rationale}" for c in plan.companions]
    assert not [t for t in texts if any(agent in t for agent in AGENTS)], texts
    assert any(c.setting == "listen 80 backlog=16384;" for c in plan.companions)  # the workload
    said = [f for f in plan.findings if f.id == "listen-backlog.listener-node-agents"]
    assert len(said) == 1 and "take 16,384 when they next restart" in said[0].message
    assert "the kubelet on ports 10250, 10248; kube-proxy on ports 10256, 10249" in said[0].message
    # nor are they offered a restart in the loopback finding
    assert not any(
        "kubelet" in f.message for f in plan.findings if f.id == "listen-backlog.listener-loopback"
    )


def test_a_host_declared_not_a_node_restarts_them_as_before(kb: KnowledgeBase) -> None:
    plan = _plan(kb, _not_a_node(load_facts(NODE)), "frontend-proxy")
    settings = [c.setting for c in plan.companions]
    assert (
        "restart the program after net.core.somaxconn is 16384 (kubelet, pid 1130; "
        "kube-proxy, pid 2044)" in settings
    ), settings
    assert not any(f.id == "listen-backlog.listener-node-agents" for f in plan.findings)


def test_the_file_limit_on_a_node_is_the_container_runtimes(kb: KnowledgeBase) -> None:
    plan = _plan(kb, load_facts(NODE), "c1m-server")
    limits = {c.target: c for c in plan.companions if c.rule == "connection-scale.file-handles"}
    assert set(limits) == {"containerd"}, limits  # the runtime its listeners show
    assert limits["containerd"].setting == "LimitNOFILE=1048576"
    assert "containerd.service" in limits["containerd"].rationale


def test_a_host_that_is_not_a_node_keeps_the_unit_and_limits_conf(kb: KnowledgeBase) -> None:
    plan = _plan(kb, _not_a_node(load_facts(NODE)), "c1m-server")
    limits = {
        c.target: c.setting for c in plan.companions if c.rule == "connection-scale.file-handles"
    }
    assert limits == {"systemd": "LimitNOFILE=1048576", "limits.conf": "*  -  nofile  1048576"}


def test_a_node_platforms_output_names_the_runtime_not_a_unit(cli: Cli) -> None:
    """A node output plans the host as a node whatever its facts show: the Kafka broker's limit
    is the container runtime's (both, as the facts show neither)."""
    result = cli(
        "recommend", "--facts", str(EXAMPLES / "search-node.yaml"), "-p", "kafka", "-f", "daemonset"
    )
    assert result.exit_code == 0, result.stderr
    assert "containerd: LimitNOFILE=100000" in result.stdout
    assert 'CRI-O: default_ulimits = ["nofile=100000:100000"]' in result.stdout
    assert "systemd: LimitNOFILE" not in result.stdout
