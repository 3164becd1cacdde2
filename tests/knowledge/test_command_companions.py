"""An interface name from the facts stays one word of every command the plan prints.

The kernel lets an interface be named `$(reboot)`, `;id`, `a'b` or `x*` (dev_valid_name() in
net/core/dev.c refuses only an empty name, 16 bytes or more, `.` and `..`, and the bytes `/`,
`:` and those lib/ctype.c's isspace() takes: 9-13, 32, 160). A companion's command (`tc qdisc
replace dev NAME`, `ethtool -G NAME`, `ip link set dev NAME`, `ethtool -K NAME`, the IRQ
script) and a command quoted in a rationale must carry such a name as data: a shell reading
the command sees exactly the words it sees for a plain name, with that name in their place.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data, interface_name
from sysctl_advisor.model.model_base import plain_data
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.advice_rules_reference import case_facts, case_params
from tests.conftest import TESTS, Cli

PLAIN = "nicplain0"  # a name the shell reads as itself
KERNEL_REFUSED = frozenset(b"/:\t\n\v\f\r \xa0")
HOSTILE = ["$(reboot)", "`reboot`", ";reboot", "a&&reboot", "x|sh", "a'b", 'a"b', "x*", "~root"]


def kernel_accepts(name: str) -> bool:
    """dev_valid_name() on the name's bytes."""
    raw = name.encode("utf-8", "surrogatepass")
    return (
        0 < len(raw) < 16
        and b"\0" not in raw
        and name not in (".", "..")
        and KERNEL_REFUSED.isdisjoint(raw)
    )


class _Inert:
    """The characters a POSIX shell reads as themselves outside quotes (letters, digits and
    @%+=:,./-_); any other (`$`, `` ` ``, `;`, `*`, `~`, quotes …) starts syntax."""

    def __contains__(self, char: object) -> bool:
        return isinstance(char, str) and re.fullmatch(r"[\w@%+=:,./-]", char) is not None


def shell_words(command: str) -> list[str]:
    """The words a shell sees, each unquoted character outside the inert set a word of its
    own (so `dev $(reboot)` is `dev`, `$`, `(`, `reboot`, `)`, not `dev`, `$(reboot)`)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.wordchars = _Inert()  # type: ignore[assignment]
    return list(lexer)


def _words_or_none(text: str) -> list[str]:
    """A backticked span's words; none for one that is not a command (prose with a quote)."""
    try:
        return shell_words(text)
    except ValueError:
        return []


def backticked(plan: Plan) -> list[str]:
    """Every `command` quoted in the plan's texts (rationales, findings, companions)."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            found.extend(re.findall(r"`([^`]*)`", value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(plain_data(plan))
    return found


@dataclass(frozen=True)
class NamedCase:
    """A rule case with an interface whose name reaches a command, and what a shell reads in
    each command there with the plain name."""

    name: str
    facts: dict[str, Any]
    profile: str
    params: dict[str, str]
    others: frozenset[str]  # the case's other interface names
    commands: tuple[tuple[str, str, tuple[str, ...]], ...]  # rule, target, words
    quoted: tuple[tuple[str, ...], ...]  # the words of each backticked command with the name


def _with_name(facts: dict[str, Any], name: str) -> dict[str, Any]:
    data = json.loads(json.dumps(facts))
    old = data["nics"][0]["name"]
    data["nics"][0]["name"] = name
    if data.get("links"):
        data["links"] = [name if link == old else link for link in data["links"]]
    return data


def _plan(kb: KnowledgeBase, case: NamedCase, name: str) -> Plan:
    facts = facts_from_data(_with_name(case.facts, name))
    return build_plan(kb, facts, case.profile, case.params)


@cache
def knowledge() -> KnowledgeBase:
    return KnowledgeBase.load()


@cache
def named_cases() -> tuple[NamedCase, ...]:
    """Every advice rule case whose plan prints an interface's name in a command."""
    kb = knowledge()
    found = []
    for path in sorted((TESTS / "cases").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        if spec["rule"].startswith("check."):
            continue
        for case in spec["cases"]:
            facts = case_facts(case.get("facts"))
            if not facts.get("nics"):
                continue
            others = frozenset(nic["name"] for nic in facts["nics"][1:])
            named = NamedCase(
                case["name"],
                facts,
                case.get("profile") or "base",
                case_params(case.get("params") or {}),
                others,
                (),
                (),
            )
            plan = _plan(kb, named, PLAIN)
            commands = tuple(
                (c.rule, c.target, tuple(shell_words(c.setting)))
                for c in plan.companions
                if PLAIN in c.setting
            )
            quoted = tuple(tuple(shell_words(text)) for text in backticked(plan) if PLAIN in text)
            if commands or quoted:
                found.append(
                    NamedCase(
                        named.name, facts, named.profile, named.params, others, commands, quoted
                    )
                )
    return tuple(found)


def test_the_cases_reach_every_command_companion_that_names_an_interface() -> None:
    """The property below is not vacuous: the rule cases print names in each such command."""
    targets = {(rule, target) for case in named_cases() for rule, target, _ in case.commands}
    assert {
        ("pacing.fair-queue", "tc"),
        ("nic.fast-path", "ethtool"),
        ("nic.fast-path", "irq affinity"),
        ("nic.fast-path", "ip link"),
        ("evidence.rx-overruns", "ethtool"),
        ("udp.gso-gro", "ethtool"),
    } <= targets


def _same_words(case: NamedCase, name: str) -> None:
    plan = _plan(knowledge(), case, name)
    got = {(c.rule, c.target, tuple(_words_or_none(c.setting))) for c in plan.companions}
    for rule, target, words in case.commands:
        want = tuple(word.replace(PLAIN, name) for word in words)
        assert (rule, target, want) in got, (case.name, rule, target, want, plan.companions)
        if PLAIN in words:
            assert name in want  # the name is one argument of its own
    if "`" not in name:
        quoted = {tuple(_words_or_none(text)) for text in backticked(plan)}
        for words in case.quoted:
            want = tuple(word.replace(PLAIN, name) for word in words)
            assert want in quoted, (case.name, want)


def test_hostile_names_stay_one_word() -> None:
    for name in HOSTILE:
        assert kernel_accepts(name) and interface_name(name) == name
        for case in named_cases():
            _same_words(case, name)


SHELL_CHARACTERS = st.sampled_from([*"$()`;|&<>'\"\\*?[]{}~#!=%,.-_@+^", "a", "0", "é"])
NAMES = st.one_of(
    st.text(SHELL_CHARACTERS, min_size=1, max_size=15),
    st.text(min_size=1, max_size=15),
).filter(kernel_accepts)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(name=NAMES)
def test_any_name_the_kernel_accepts_stays_one_word(name: str) -> None:
    try:
        interface_name(name)
    except ValueError:
        assert not name.isprintable()  # refused only as every facts text is: not printable
        return
    for case in named_cases():
        if name in case.others or name == "lo":  # a second NIC of that name; lo is skipped
            continue
        _same_words(case, name)


def test_the_json_plan_carries_the_name_as_one_word(cli: Cli, tmp_path: Path) -> None:
    """The payload of the review: `tc qdisc replace dev $(reboot) root …` in the JSON plan."""
    name = "$(reboot)"
    facts = tmp_path / "facts.yaml"
    nics = [{"name": name, "driver": "mlx5_core", "speed_mbps": 100000, "mtu": 9000}]
    data = {"memory": {"total": "256 GiB", "numa_nodes": 2}, "kernel": "6.1.0", "nics": nics}
    data["observed"] = {"rx_overruns": 5000}
    data["sysctl"] = {"net.core.default_qdisc": "pfifo_fast"}
    facts.write_text(yaml.safe_dump(data))
    result = cli("recommend", "--facts", str(facts), "-p", "gridftp", "-f", "json")
    assert result.exit_code == 0, result.output
    settings_ = [c["setting"] for c in json.loads(result.stdout)["companions"]]
    commands = [s for s in settings_ if "reboot" in s]
    assert len(commands) >= 4, settings_  # tc, ethtool -G (twice), ip link, the IRQ script
    for command in commands:
        words = shell_words(command)
        assert "reboot" not in words and name in " ".join(words), command


@pytest.mark.parametrize(
    ("name", "kernel"),
    [
        ("$(reboot)", True),
        ("a'b;c", True),
        ("é", True),  # c3 a9
        ("ab" * 7 + "c", True),  # 15 bytes
        ("à", False),  # c3 a0: isspace(0xa0) in lib/ctype.c
        ("ab" * 8, False),  # 16 bytes
        ("a:b", False),
        ("..", False),
    ],
)
def test_the_facts_take_interface_names_as_the_kernel_does(name: str, kernel: bool) -> None:
    assert kernel_accepts(name) == kernel
    try:
        interface_name(name)
    except ValueError:
        assert not kernel
    else:
        assert kernel
