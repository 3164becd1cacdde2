"""Plans by host shape (fleet): the same plan as building it, for every host of a shape."""

from __future__ import annotations

import pytest

from advisor.engine.plan_builder import build_plan
from advisor.engine.plan_cache import PlanCache
from advisor.knowledge.knowledge_base import KnowledgeBase
from advisor.sources.facts_file import load_facts
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES


@pytest.mark.parametrize(("host", "profile"), list(EXAMPLE_PROFILES.items()))
def test_a_cached_plan_is_the_plan(kb: KnowledgeBase, host: str, profile: str) -> None:
    cache = PlanCache(kb)
    assert cache.enabled
    first = load_facts(EXAMPLES / f"{host}.yaml")
    twin = first.model_copy(update={"hostname": "twin-01"})
    assert cache.plan(kb, first, profile) == build_plan(kb, first, profile)
    assert cache.plan(kb, twin, profile) == build_plan(kb, twin, profile)
    assert (cache.hits, cache.misses) == (1, 1)
    memory = first.memory.model_copy(update={"total": first.memory.total + 2**20})
    other = first.model_copy(update={"memory": memory})
    assert cache.plan(kb, other, profile) == build_plan(kb, other, profile)
    assert cache.misses == 2  # another shape


def test_parameters_and_profile_are_part_of_the_shape(kb: KnowledgeBase) -> None:
    cache = PlanCache(kb)
    facts = load_facts(EXAMPLES / "dtn-10g.yaml")
    a = cache.plan(kb, facts, "gridftp", {"rtt_ms": "50"})
    b = cache.plan(kb, facts, "gridftp", {"rtt_ms": "150"})
    c = cache.plan(kb, facts, "base")
    assert cache.misses == 3 and a != b and a != c


def test_it_turns_itself_off_for_a_fleet_of_distinct_hosts(kb: KnowledgeBase) -> None:
    cache = PlanCache(kb, trial=10, max_entries=4)
    facts = load_facts(EXAMPLES / "dtn-10g.yaml")
    for i in range(12):
        memory = facts.memory.model_copy(update={"total": 2**33 + i * 2**20})
        cache.plan(kb, facts.model_copy(update={"memory": memory}), "base")
        assert len(cache.entries) <= 4
    assert not cache.enabled and not cache.entries


def test_a_rule_that_reads_the_hostname_keeps_every_host_apart(
    kb: KnowledgeBase, tmp_path: object
) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    (tmp_path / "by-name.yaml").write_text(
        "id: custom.by-name\n"
        "title: Per-host somaxconn\n"
        "description: somaxconn by host name\n"
        "when: \"facts.hostname is not none and facts.hostname.startswith('big')\"\n"
        'set:\n  net.core.somaxconn: "8192"\n'
        "rationale: by name\n"
        "references: [local]\n"
    )
    custom = KnowledgeBase.load(rules_dirs=[tmp_path])
    assert not PlanCache(custom).enabled
    assert PlanCache(kb).enabled
