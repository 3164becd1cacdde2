"""Several workloads on one host: `-p A -p B`, `includes:`, parameters by profile, merged wants,
and contradictions reported instead of picked."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.values import numbers, parse_current
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.plan import Plan
from tests.conftest import EXAMPLES, load_facts

FRONTEND = EXAMPLES / "ec2-nginx-frontend.yaml"
SHIPPED = ["frontend-proxy", "c1m-server", "gridftp"]


def _values(plan: Plan) -> dict[str, str]:
    return {s.key: s.value for s in plan.settings}


def test_two_profiles_merge_their_wants_by_the_catalog_policy(kb: KnowledgeBase) -> None:
    facts = load_facts(FRONTEND)
    both = build_plan(kb, facts, ["frontend-proxy", "c1m-server"])
    assert both.profile.name == "frontend-proxy+c1m-server"
    assert both.profile.workloads == ["frontend-proxy", "c1m-server"]
    # listen_backlog describes the host (merge: max): one value for every workload's rules
    assert both.profile.params["listen_backlog"] == 65535
    assert _values(both)["net.core.somaxconn"] == "65535"
    somaxconn = next(s for s in both.settings if s.key == "net.core.somaxconn")
    assert somaxconn.workloads == ["frontend-proxy", "c1m-server"]
    assert "Workloads: frontend-proxy, c1m-server." in somaxconn.summary
    # a key only one workload is about names only that one
    ports = next(s for s in both.settings if s.key == "net.ipv4.ip_local_port_range")
    assert ports.workloads == ["frontend-proxy"]
    # each rule's findings once: the nginx backlog advice follows the merged target
    nginx = [c.setting for c in both.companions if c.target == "nginx" and "backlog" in c.setting]
    assert nginx == ["listen 80 backlog=65535;"]


def test_one_profile_keeps_its_plan_and_names_no_workloads_in_text(kb: KnowledgeBase) -> None:
    facts = load_facts(FRONTEND)
    alone = build_plan(kb, facts, "frontend-proxy")
    assert alone == build_plan(kb, facts, ["frontend-proxy"])
    assert not any("Workloads:" in s.summary for s in alone.settings)
    assert alone.profile.workloads == ["frontend-proxy"]


@pytest.mark.parametrize(("a", "b"), list(itertools.permutations(SHIPPED, 2)))
def test_a_second_workload_never_lowers_a_capacity_the_first_wants(
    kb: KnowledgeBase, a: str, b: str
) -> None:
    """Capacities (`max` elements) only grow when a workload is added, unless a cap the other
    workload brings binds (caps always win, and the setting then names it)."""
    facts = load_facts(FRONTEND)
    one = build_plan(kb, facts, a)
    two = build_plan(kb, facts, [a, b])
    merged = {s.key: s for s in two.settings}
    compared = 0
    for setting in one.settings:
        spec = kb.catalog.keys[setting.key]
        if spec.is_text or setting.capped_by:
            continue
        other = merged.get(setting.key)
        if other is not None and other.capped_by:
            continue
        after = (
            numbers(parse_current(other.value, spec))
            if other is not None
            else numbers(parse_current(facts.sysctl[setting.key], spec))
            if setting.key in facts.sysctl
            else None
        )
        if after is None:
            continue
        for policy, before, now in zip(spec.policies(), setting.values, after, strict=True):
            if policy == "max":
                assert now >= before, (setting.key, a, b)
                compared += 1
    assert compared >= 3  # the property judged real capacities, not an empty plan


def test_set_reaches_every_profile_or_the_one_named(kb: KnowledgeBase) -> None:
    facts = load_facts(FRONTEND)
    names = ["frontend-proxy", "c1m-server"]
    everyone = build_plan(kb, facts, names, {"listen_backlog": "4096"})
    assert everyone.profile.params["listen_backlog"] == 4096
    one = build_plan(kb, facts, names, {"c1m-server.connections": "2000"})
    assert one.profile.params["connections"] == 2000
    with pytest.raises(InputError, match="not a profile of this workload"):
        build_plan(kb, facts, names, {"gridftp.rtt_ms": "10"})
    with pytest.raises(InputError, match="unknown parameter 'nope'"):
        build_plan(kb, facts, names, {"nope": "1"})
    with pytest.raises(InputError, match="unknown profile 'nope'"):
        build_plan(kb, facts, [*names, "nope"])


def _knowledge(tmp: Path, profiles: dict[str, dict[str, object]], rules: dict[str, object]) -> Path:
    """A --rules-dir with rules in family `site`, and a --profiles-dir."""
    (tmp / "rules" / "site").mkdir(parents=True)
    for name, rule in rules.items():
        (tmp / "rules" / "site" / f"{name}.yaml").write_text(yaml.safe_dump(rule))
    (tmp / "profiles").mkdir()
    for name, profile in profiles.items():
        (tmp / "profiles" / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, **profile}))
    return tmp


def _overcommit_rule(name: str, value: int, why: str) -> dict[str, object]:
    return {
        "id": f"site.{name}",
        "title": f"{name} wants overcommit {value}",
        "description": why,
        "references": ["linux-6-18-doc-sysctl-vm"],
        "set": {"vm.overcommit_memory": str(value)},
        "rationale": why,
        "summary": why,
    }


def test_workloads_that_want_different_modes_get_a_finding_not_a_pick(tmp_path: Path) -> None:
    site = _knowledge(
        tmp_path,
        {
            "forker": {"summary": "forks", "extends": "base", "rules": ["site.forker"]},
            "strict": {"summary": "strict", "extends": "base", "rules": ["site.strict"]},
            "role": {"summary": "both", "includes": ["forker", "strict"]},
        },
        {
            "forker": _overcommit_rule("forker", 1, "A fork must not fail."),
            "strict": _overcommit_rule("strict", 2, "The OOM killer must not run."),
        },
    )
    kb = KnowledgeBase.load([site / "rules"], [site / "profiles"])
    facts = load_facts(FRONTEND)
    alone = build_plan(kb, facts, "forker")
    assert _values(alone)["vm.overcommit_memory"] == "1"
    for plan in (build_plan(kb, facts, ["forker", "strict"]), build_plan(kb, facts, "role")):
        assert "vm.overcommit_memory" not in _values(plan)
        found = [f for f in plan.findings if f.id == "plan.contradiction"]
        assert len(found) == 1 and found[0].severity == "warning"
        message = found[0].message
        assert message.startswith(
            "vm.overcommit_memory is wanted as 1 by site.forker (forker); 2 by site.strict "
            "(strict): no value serves both, so nothing is set."
        )
        assert "site.forker: A fork must not fail." in message
        assert "site.strict: The OOM killer must not run." in message
    assert build_plan(kb, facts, "role").profile.workloads == ["role", "forker", "strict"]


def test_includes_are_checked_when_the_profiles_load(tmp_path: Path) -> None:
    site = _knowledge(tmp_path, {"role": {"summary": "r", "includes": ["nowhere"]}}, {})
    with pytest.raises(InputError, match="includes unknown profile 'nowhere'") as caught:
        KnowledgeBase.load(None, [site / "profiles"])
    assert caught.value.field == "includes[0]"


def test_an_includes_loop_is_one_line(tmp_path: Path) -> None:
    site = _knowledge(
        tmp_path,
        {"a": {"summary": "a", "includes": ["b"]}, "b": {"summary": "b", "includes": ["a"]}},
        {},
    )
    kb = KnowledgeBase.load(None, [site / "profiles"])
    with pytest.raises(InputError, match="profile includes loop through 'a'"):
        build_plan(kb, load_facts(FRONTEND), "a")


def test_a_parameter_two_profiles_declare_apart_runs_the_rule_for_each(tmp_path: Path) -> None:
    """Without a merge policy a parameter is each workload's own: the plan shows it as
    PROFILE.NAME, the rule runs once per value, and the wants merge by the key's policy."""

    def queue(default: int) -> dict[str, object]:
        return {"type": "int", "default": default, "description": "queue"}

    site = _knowledge(
        tmp_path,
        {
            name: {
                "summary": name,
                "extends": "base",
                "parameters": {"depth": queue(depth)},
                "rules": ["site.queue"],
            }
            for name, depth in (("small", 20000), ("large", 40000))
        },
        {
            "queue": {
                "id": "site.queue",
                "title": "queue",
                "description": "A queue.",
                "references": ["linux-6-18-doc-sysctl-vm"],
                "set": {"net.core.somaxconn": "params.depth"},
                "rationale": "Queue {{ params.depth }}.",
                "summary": "Queue {{ params.depth }}.",
            }
        },
    )
    kb = KnowledgeBase.load([site / "rules"], [site / "profiles"])
    plan = build_plan(kb, load_facts(FRONTEND), ["small", "large"])
    assert plan.profile.params["small.depth"] == 20000
    assert plan.profile.params["large.depth"] == 40000
    setting = next(s for s in plan.settings if s.key == "net.core.somaxconn")
    assert setting.value == "40000"
    assert setting.summary.startswith("[site.queue] Queue 40000.")  # the run that won
    assert setting.workloads == ["small", "large"]
    lowered = build_plan(kb, load_facts(FRONTEND), ["small", "large"], {"large.depth": "10"})
    assert _values(lowered)["net.core.somaxconn"] == "20000"


def test_redis_and_postgresql_on_one_host_leave_overcommit_to_the_operator(
    kb: KnowledgeBase,
) -> None:
    """Redis forks to save (overcommit_memory 1), PostgreSQL's documentation wants strict
    accounting (2) on a host of its own: together, a warning with both reasons, and the
    alternative both can live with."""
    facts = load_facts(FRONTEND)
    assert _values(build_plan(kb, facts, "redis"))["vm.overcommit_memory"] == "1"
    assert _values(build_plan(kb, facts, "postgresql"))["vm.overcommit_memory"] == "2"
    plan = build_plan(kb, facts, ["redis", "postgresql"])
    assert "vm.overcommit_memory" not in _values(plan)
    (found,) = [f for f in plan.findings if f.id == "plan.contradiction"]
    assert found.key == "vm.overcommit_memory"
    assert "1 by redis.overcommit (redis); 2 by postgresql.overcommit (postgresql)" in (
        found.message
    )
    # strict accounting is not what the plan ends with: its ratio is not set either, and the
    # postmaster is kept from the OOM killer by its OOM score instead (PostgreSQL's other way)
    assert "vm.overcommit_ratio" not in _values(plan)
    (companion,) = [c for c in plan.companions if c.rule == "postgresql.overcommit"]
    assert "OOMScoreAdjust=-1000" in companion.setting
    assert "PG_OOM_ADJUST_VALUE=0" in companion.setting


def test_a_plans_own_name_stands_for_its_profiles(kb: KnowledgeBase) -> None:
    """`-p frontend-proxy+c1m-server` (the name a plan shows) is the two profiles."""
    facts = load_facts(FRONTEND)
    joined = build_plan(kb, facts, "frontend-proxy+c1m-server")
    assert joined == build_plan(kb, facts, ["frontend-proxy", "c1m-server"])
