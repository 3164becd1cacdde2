"""Three hosts, applied and planned again: the regenerated outputs are the same, in every format.

Each host (tests/fixtures/applied/) is a class the plan once undid on its second run: a host
running three workloads, a C1M gateway under TCP memory pressure, an AKS node with a full
conntrack table. The plan is applied as every delivery path applies it (installed whole: the
values in force become the output's, the advisor's own file sets them, written after every
line the logs hold), and planned again: the same keys with the same values, byte for byte in
the lines each format applies; the kernel's lines that led to the values are then older than
them, and the plan says so (an application's need, such as Redis's backlog, is not dated).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from tests.conftest import ROOT
from tests.engine.test_settle import EVERY_FORMAT, _settings_lines, _values_in, applied

HOSTS = {
    "three-workloads": ["frontend-proxy", "redis", "kafka"],
    "c1m-gateway": ["c1m-server"],
    "aks-node": ["frontend-proxy"],
}


def _host(name: str) -> dict[str, object]:
    data = yaml.safe_load((ROOT / "tests" / "fixtures" / "applied" / f"{name}.yaml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("fmt", EVERY_FORMAT)
@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_regenerated_output_is_the_same(kb: KnowledgeBase, host: str, fmt: str) -> None:
    data, profiles = _host(host), HOSTS[host]
    first_text, first = _values_in(kb, facts_from_data(data), profiles, fmt)
    assert first, "the plan sets nothing on this host: the fixture no longer tests a thing"
    again_text, again = _values_in(kb, facts_from_data(applied(data, first)), profiles, fmt)
    assert again == first
    assert _settings_lines(fmt, again_text) == _settings_lines(fmt, first_text)


@pytest.mark.parametrize(
    ("host", "key"),
    [("c1m-gateway", "net.ipv4.tcp_mem"), ("aks-node", "net.netfilter.nf_conntrack_max")],
)
def test_the_evidence_behind_a_value_is_older_than_it_once_applied(
    kb: KnowledgeBase, host: str, key: str
) -> None:
    """The key the evidence raised stays (the advisor's own file sets it), and the plan says
    the lines were logged before the value in force was set."""
    data, profiles = _host(host), HOSTS[host]
    plan = build_plan(kb, facts_from_data(data), profiles)
    carried = {s.key: s.value for s in plan.settings}
    assert key in carried
    again = build_plan(kb, facts_from_data(applied(data, carried)), profiles)
    assert {s.key: s.value for s in again.settings}[key] == carried[key]
    dated = [f for f in again.findings if f.id == "evidence.logged-before-value"]
    assert dated and any(key in f.message or f.key == key for f in dated), again.findings


def test_an_applications_need_is_not_dated_once_applied(kb: KnowledgeBase) -> None:
    """Redis's warning names the backlog it needs (511): a need, not evidence against a value,
    so it is not dated once the plan is applied. Its rule stays quiet because the value in
    force meets the need, and the listing of warnings shows the value in force now."""
    data, profiles = _host("three-workloads"), HOSTS["three-workloads"]
    carried = {s.key: s.value for s in build_plan(kb, facts_from_data(data), profiles).settings}
    assert int(carried["net.core.somaxconn"]) >= 511
    again = build_plan(kb, facts_from_data(applied(data, carried)), profiles)
    assert {s.key: s.value for s in again.settings}["net.core.somaxconn"] == carried[
        "net.core.somaxconn"
    ]
    ids = {f.id for f in again.findings}
    assert "evidence.logged-before-value" not in ids and "evidence.redis-somaxconn" not in ids
    (listing,) = [f for f in again.findings if f.id == "evidence.app-warnings"]
    assert f"net.core.somaxconn in force now: {carried['net.core.somaxconn']}" in listing.message


def test_the_fixtures_are_the_classes_named(kb: KnowledgeBase) -> None:
    names = {p.stem for p in Path(ROOT / "tests" / "fixtures" / "applied").glob("*.yaml")}
    assert names == set(HOSTS)
    aks = build_plan(kb, facts_from_data(_host("aks-node")), HOSTS["aks-node"])
    assert any(f.id == "connection-scale.conntrack-table-full" for f in aks.findings)
    gateway = build_plan(kb, facts_from_data(_host("c1m-gateway")), HOSTS["c1m-gateway"])
    assert any(f.id == "tcp-mem.exhausted" for f in gateway.findings)


def test_an_aks_node_pool_configured_with_the_plan_settles(kb: KnowledgeBase) -> None:
    """AKS writes a node pool's linuxOSConfig sysctls into /etc/sysctl.d/999-sysctl-aks.conf:
    a node whose pool took the plan's `aks` document shows that file, and plans the same."""
    data, profiles = _host("aks-node"), HOSTS["aks-node"]
    _, first = _values_in(kb, facts_from_data(data), profiles, "aks")
    assert first
    pool = applied(data, first, own="/etc/sysctl.d/999-sysctl-aks.conf")
    _, again = _values_in(kb, facts_from_data(pool), profiles, "aks")
    assert again == first
