"""The undo of a plan (engine.undo): every key the plan changes back to what was there."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.engine.undo import BELOW_FLOOR_FINDING, UNDO_FINDING, undo_diff, undo_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts, facts_from_data
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.plan_render import Renderer, rendered_settings
from tests.conftest import EXAMPLES, load_facts
from tests.test_properties import hosts, profile_and_params

AT = "2026-11-20T21:00:00Z"  # the haproxy example's snapshot


def _plan(kb: KnowledgeBase, host: str = "haproxy-frontend-rhel7") -> Plan:
    return build_plan(kb, load_facts(EXAMPLES / f"{host}.yaml"), "frontend-proxy")


def _replaced(plan: Plan, key: str, **changes: object) -> Plan:
    settings = [dataclasses.replace(s, **changes) if s.key == key else s for s in plan.settings]
    return dataclasses.replace(plan, settings=settings)


def test_each_key_goes_back_to_the_value_in_force(kb: KnowledgeBase) -> None:
    plan = _plan(kb)
    undo = {s.key: s for s in undo_plan(plan, kb.catalog, AT).settings}
    assert undo["net.core.somaxconn"].value == "128"
    assert undo["net.ipv4.tcp_max_syn_backlog"].value == "2048"  # in force, not the default 1024
    somaxconn = undo["net.core.somaxconn"]
    assert "in force in the facts (read 2026-11-20T21:00:00Z)" in somaxconn.rationale
    assert "in place of the plan's 16384" in somaxconn.rationale
    assert somaxconn.references == [] and somaxconn.rules == ["listen-backlog.target"]


def test_every_element_of_a_vector_comes_back_as_the_kernel_printed_it(
    kb: KnowledgeBase,
) -> None:
    key = "net.ipv4.ip_local_port_range"
    plan = _replaced(_plan(kb), key, current="32768\t60999")  # sysctl -a prints tabs
    restored = next(s for s in undo_plan(plan, kb.catalog).settings if s.key == key)
    assert (restored.value, restored.values) == ("32768 60999", [32768, 60999])
    assert restored.human == "32768 / 60999"


def test_a_key_not_in_the_facts_goes_back_to_the_kernel_default(kb: KnowledgeBase) -> None:
    plan = _plan(kb)
    planned = {s.key: s for s in plan.settings}
    assert planned["net.ipv4.tcp_slow_start_after_idle"].current is None
    undo = undo_plan(plan, kb.catalog)
    restored = {s.key: s for s in undo.settings}
    assert restored["net.ipv4.tcp_slow_start_after_idle"].value == "1"
    assert (
        "kernel default for Linux 3.10.0"
        in restored["net.ipv4.tcp_slow_start_after_idle"].rationale
    )
    assert restored["net.ipv4.ip_local_reserved_ports"].value == ""  # none reserved by default
    assert any(
        "net.ipv4.tcp_slow_start_after_idle" in n and "kernel default" in n for n in undo.notes
    )


def test_a_host_default_someone_set_is_not_taken_for_the_kernels(kb: KnowledgeBase) -> None:
    key = "net.ipv4.tcp_slow_start_after_idle"
    plan = _replaced(
        _plan(kb), key, current=None, kernel_default="0", default_set_by="x", modelled_default="1"
    )
    restored = next(s for s in undo_plan(plan, kb.catalog).settings if s.key == key)
    assert restored.value == "1"


def test_an_unknown_value_without_a_modelled_default_is_named_not_guessed(
    kb: KnowledgeBase,
) -> None:
    key = "net.ipv4.tcp_slow_start_after_idle"
    plan = _replaced(_plan(kb), key, current=None, kernel_default=None)
    undo = undo_plan(plan, kb.catalog)
    assert key not in {s.key for s in undo.settings}
    [finding] = undo.findings
    assert (finding.id, finding.key, finding.severity) == (UNDO_FINDING, key, "warning")
    assert f"sysctl {key}" in finding.message  # the fix: read it on the host
    conf = Renderer(kb.catalog).render(undo, "conf", "test", undo=True)
    assert UNDO_FINDING in conf and f"{key} =" not in conf


def test_no_default_is_guessed_for_a_kernel_the_facts_do_not_name(kb: KnowledgeBase) -> None:
    plan = _plan(kb)
    plan = dataclasses.replace(plan, host=dataclasses.replace(plan.host, kernel=None))
    undo = undo_plan(plan, kb.catalog)
    lost = {f.key for f in undo.findings}
    assert "net.ipv4.tcp_slow_start_after_idle" in lost
    assert "net.core.somaxconn" not in lost  # in force: restored whatever the kernel


def test_settings_the_plan_leaves_as_they_are_need_no_line(kb: KnowledgeBase) -> None:
    plan = _plan(kb, "ec2-nginx-frontend")
    kept = [s.key for s in plan.settings if s.current is not None and s.current == s.value]
    assert kept
    undo = undo_plan(plan, kb.catalog)
    assert not set(kept) & {s.key for s in undo.settings}
    assert f"{len(kept)} settings of the plan leave the value as it was" in " ".join(undo.notes)
    # tw_recycle was on: the undo puts back exactly what was there
    assert {s.key: s.value for s in undo.settings}["net.ipv4.tcp_tw_recycle"] == "1"


def test_the_undo_keeps_the_header_and_drops_the_advice(kb: KnowledgeBase) -> None:
    plan = _plan(kb)
    undo = undo_plan(plan, kb.catalog)
    assert (undo.host, undo.profile) == (plan.host, plan.profile)
    assert undo.companions == [] and undo.references == [] and undo.unchanged == []
    assert any("not undone here" in n for n in undo.notes)  # the plan's haproxy changes


def test_every_renderer_writes_exactly_the_restored_values(kb: KnowledgeBase) -> None:
    undo = undo_plan(_plan(kb), kb.catalog)
    wanted = {s.key: s.value for s in undo.settings}
    renderer = Renderer(kb.catalog)
    for fmt in ("conf", "tuned", "ansible"):
        text = renderer.render(undo, fmt, "sysctl-advisor recommend --undo", undo=True)
        assert rendered_settings(fmt, text) == wanted  # tuned: never ">N", which would keep more
        assert "undoing the frontend-proxy plan" in text.split("\n\n")[0]


def test_the_undo_diff_says_what_goes_back_from_what(kb: KnowledgeBase) -> None:
    plan = _plan(kb, "ec2-nginx-frontend")
    report = undo_diff(plan, undo_plan(plan, kb.catalog), "facts x.yaml")
    entries = {e.key: e for e in report.entries}
    recycle = entries["net.ipv4.tcp_tw_recycle"]
    assert (recycle.current, recycle.recommended, recycle.status) == ("0", "1", "change")
    assert {e.status for e in report.entries} == {"ok", "change"}
    assert report.drift == sum(1 for e in report.entries if e.status == "change")


def _with_in_force(host: str, values: dict[str, str]) -> HostFacts:
    """An example host whose facts report these values in force (built here, as a facts file
    that lies, or a broken host, would)."""
    data = yaml.safe_load((EXAMPLES / f"{host}.yaml").read_text())
    data["sysctl"] = {**data.get("sysctl", {}), **values}
    return facts_from_data(data)


def test_a_capacity_in_force_below_its_floor_is_not_restored_and_the_undo_says_so(
    kb: KnowledgeBase,
) -> None:
    facts = _with_in_force("c1m-server", {"fs.file-max": "1", "net.core.somaxconn": "0"})
    plan = build_plan(kb, facts, "c1m-server")
    planned = {s.key: s for s in plan.settings}
    assert planned["fs.file-max"].current == "1" and planned["net.core.somaxconn"].current == "0"
    undo = undo_plan(plan, kb.catalog, AT)
    assert not {"fs.file-max", "net.core.somaxconn"} & {s.key for s in undo.settings}
    named = {f.key: f for f in undo.findings if f.id == BELOW_FLOOR_FINDING}
    assert set(named) == {"fs.file-max", "net.core.somaxconn"}
    file_max = named["fs.file-max"]
    assert file_max.severity == "warning"
    assert "fs.file-max = 1" in file_max.message and "floor 8192" in file_max.message
    assert f"the plan's {planned['fs.file-max'].value} stays" in file_max.message
    renderer = Renderer(kb.catalog)
    for fmt in ("conf", "tuned", "ansible", "json"):
        for detail in ("normal", "brief", "none"):
            text = renderer.render(undo, fmt, "test --undo", detail=detail, undo=True)
            if fmt == "json":
                document = json.loads(text)
                written = {s["key"]: s["value"] for s in document["settings"]}
                found = {(f["id"], f["key"]) for f in document["findings"]}
                assert (BELOW_FLOOR_FINDING, "fs.file-max") in found
            else:
                written = rendered_settings(fmt, text)
            assert written is not None and "fs.file-max" not in written, (fmt, detail)
            assert written  # the other keys are restored
            if fmt != "json":  # a comment names the key, its value and the floor, at every detail
                said = " ".join(line.lstrip("# ") for line in text.splitlines())
                said = " ".join(said.split())
                assert "Not restored: fs.file-max = 1, in force" in said, (fmt, detail)
                assert "below its floor 8192" in said, (fmt, detail)
    # diff --undo: the key is a finding, not a row that puts 1 back
    report = undo_diff(plan, undo, "facts x.yaml")
    assert "fs.file-max" not in {e.key for e in report.entries}
    assert ("fs.file-max", BELOW_FLOOR_FINDING) in {(f.key, f.id) for f in report.findings}


FLOORED = sorted(k for k, spec in KnowledgeBase.load().catalog.keys.items() if spec.floor)


@pytest.mark.parametrize("key", FLOORED)
def test_a_capacity_is_restored_down_to_its_floor_and_never_below(
    kb: KnowledgeBase, key: str
) -> None:
    floor = kb.catalog.keys[key].floor
    assert floor is not None
    plan = _plan(kb)
    for before, restored in [
        (str(floor.value), True),
        (str(floor.value - 1), False),
        (f"{floor.value - 1} {floor.value * 4}", False),  # the kernel stores the first number
        ("0", False),
    ]:
        setting = dataclasses.replace(
            plan.settings[0], key=key, value=str(floor.value * 2), current=before
        )
        undo = undo_plan(dataclasses.replace(plan, settings=[setting]), kb.catalog)
        assert ([s.value for s in undo.settings] == [before]) is restored, (key, before)
        assert ([f.key for f in undo.findings] == [key]) is not restored, (key, before)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(host=hosts, pp=profile_and_params, file_max=st.integers(0, 20000))
def test_no_undo_restores_a_capacity_below_its_floor(
    kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]], file_max: int
) -> None:
    profile, params = pp
    host = {**host, "sysctl": {**host.get("sysctl", {}), "fs.file-max": str(file_max)}}
    plan = build_plan(kb, facts_from_data(host), profile, {k: str(v) for k, v in params.items()})
    undo = undo_plan(plan, kb.catalog)
    for s in undo.settings:
        floor = kb.catalog.keys[s.key].floor
        assert floor is None or s.values[0] >= floor.value, (s.key, s.value)
    named = {f.key for f in undo.findings if f.id == BELOW_FLOOR_FINDING}
    for s in plan.settings:
        floor = kb.catalog.keys[s.key].floor
        below = floor is not None and s.current is not None and int(s.current) < floor.value
        assert (s.key in named) is (below and s.current != s.value), s.key
