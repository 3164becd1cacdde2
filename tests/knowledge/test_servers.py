"""The server table and what rules see of the listeners: recognition, SO_REUSEPORT groups
merged, and a host with thousands of listeners planned within the expression budget."""

from __future__ import annotations

from typing import Any

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.servers import MAX_RULE_LISTENERS
from sysctl_advisor.model.host_facts import facts_from_data


def _host(listeners: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kernel": "5.15.0-91-generic",
        "memory": {"total": "16 GiB"},
        "sysctl": {"net.core.somaxconn": "4096"},
        "listeners": listeners,
    }


def test_recognition_by_command_executable_java_main_and_go(kb: KnowledgeBase) -> None:
    recognise = kb.servers.recognise
    assert recognise({"command": "nginx"}).id == "nginx"  # type: ignore[union-attr]
    # Debian's redis-server is a link to redis-check-rdb: the command decides
    assert recognise({"command": "redis-server", "executable": "redis-check-rdb"}).id == "redis"  # type: ignore[union-attr]
    tomcat = {"command": "java", "java_main": "org.apache.catalina.startup.Bootstrap"}
    assert recognise(tomcat).id == "tomcat"  # type: ignore[union-attr]
    assert recognise({"command": "java", "java_main": "app.jar"}).id == "java"  # type: ignore[union-attr]
    assert recognise({"command": "caddy", "go": True}).id == "go"  # type: ignore[union-attr]
    assert recognise({"command": "exim4"}) is None and recognise(None) is None
    assert recognise({"command": "sshd"}).id == "sshd"  # type: ignore[union-attr]


def test_reuseport_groups_become_one_entry_per_address(kb: KnowledgeBase) -> None:
    """64 nginx workers with `reuseport` on 31 addresses: 1,984 sockets, 31 entries, one
    companion per port, and the plan is made (it used to exhaust the expression budget)."""
    listeners = [
        {
            "address": f"10.0.0.{a + 1}",
            "port": 443,
            "backlog": 511,
            "queue": w % 3,
            "process": {"pid": 1000 + w, "command": "nginx"},
        }
        for a in range(31)
        for w in range(64)
    ]
    annotated, distinct = kb.servers.annotate(listeners)
    assert annotated is not None and distinct == len(annotated) == 31
    assert {e["sockets"] for e in annotated} == {64} and {e["queue"] for e in annotated} == {2}
    plan = build_plan(kb, facts_from_data(_host(listeners)), "frontend-proxy")
    backlog = [c for c in plan.companions if c.rule == "listen-backlog.listeners"]
    assert [c.setting for c in backlog] == ["listen 443 backlog=16384;"]


def test_thousands_of_distinct_listeners_are_cut_to_the_fullest(kb: KnowledgeBase) -> None:
    listeners = [
        {
            "address": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}",
            "port": 1024 + i % 60000,
            "backlog": 128,
            "queue": 128 if i == 4321 else 0,
            "process": {"pid": 1 + i, "command": "unknownprog"},
        }
        for i in range(10_000)
    ]
    annotated, distinct = kb.servers.annotate(listeners)
    assert annotated is not None and (distinct, len(annotated)) == (10_000, MAX_RULE_LISTENERS)
    assert any(e["queue"] == 128 for e in annotated)  # the full queue is kept
    plan = build_plan(kb, facts_from_data(_host(listeners)), "frontend-proxy")
    assert any("10,000 distinct listening sockets" in n for n in plan.notes)
    assert any(f.id == "listen-backlog.listener-program-unknown" for f in plan.findings)


def test_node_agents_are_marked_beside_the_server_they_run_as(kb: KnowledgeBase) -> None:
    """The kubelet stays a Go program (its server), and is marked as the node's own agent."""
    kubelet = {"pid": 1130, "command": "kubelet", "go": True}
    assert kb.servers.recognise(kubelet).id == "go"  # type: ignore[union-attr]
    assert kb.servers.node_agent(kubelet).id == "kubelet"  # type: ignore[union-attr]
    assert kb.servers.node_agent({"command": "caddy", "go": True}) is None
    annotated, _ = kb.servers.annotate(
        [
            {"address": "0.0.0.0", "port": 10250, "backlog": 4096, "process": kubelet},
            {"address": "0.0.0.0", "port": 9000, "backlog": 4096, "process": {"command": "app"}},
        ]
    )
    assert annotated is not None
    assert [e["node_agent"] for e in annotated] == [{"id": "kubelet", "name": "the kubelet"}, None]


def test_container_runtimes_say_which_the_listeners_show(kb: KnowledgeBase) -> None:
    crio = {"address": "127.0.0.1", "port": 41000, "backlog": 4096, "process": {"command": "crio"}}
    runtimes = kb.servers.container_runtimes([crio])
    assert {r["id"]: r["seen"] for r in runtimes} == {"containerd": False, "crio": True}
    assert all("{nofile}" in r["setting"] for r in runtimes)
    assert not any(r["seen"] for r in kb.servers.container_runtimes(None))
