"""The check rules that look at a key are found by one lookup of its name and one pattern of
the rules' globs: a key only the `*` rules look at (most of a `sysctl -a` dump) is given
those rules as one shared list, worked out once, not by asking every rule."""

from __future__ import annotations

from sysctl_advisor.knowledge.check_rules import RulesByKey
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import ROOT

DUMP = ROOT / "tests" / "fixtures" / "dumps" / "sysctl-a-6.18.txt"


def _keys() -> list[str]:
    lines = DUMP.read_text().splitlines()
    return [line.split("=")[0].strip() for line in lines if "=" in line]


def test_a_key_no_rule_names_gets_the_rules_for_every_key(kb: KnowledgeBase) -> None:
    rules = RulesByKey(list(kb.check_rules.values()))
    assert rules.every  # the shipped rules include some for every key (`*`)
    unnamed = [key for key in _keys() if rules.looking_at(key) is rules.every]
    assert len(unnamed) > len(_keys()) // 2


def test_the_rules_for_a_key_are_those_that_look_at_it_in_order(kb: KnowledgeBase) -> None:
    every = list(kb.check_rules.values())
    rules = RulesByKey(every)
    for key in [*_keys(), "net.ipv4.conf.eth0.rp_filter", "net.ipv4.ip_conntrack_max"]:
        assert rules.looking_at(key) == [rule for rule in every if rule.looks_at(key)]
