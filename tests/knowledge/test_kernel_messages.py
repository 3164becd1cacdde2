"""The kernel message families (rules/catalog/kernel-messages.yaml): every family matches each
era's wording and misses its near misses; the file's model refuses bad input in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.kernel_messages import (
    MessageFamily,
    load_message_families,
    matchers,
)
from sysctl_advisor.knowledge.resources import data_dir
from sysctl_advisor.model.errors import InputError
from tests.conftest import one_line_message

SHIPPED = data_dir("rules") / "catalog" / "kernel-messages.yaml"

# Each family: lines as kernels of several eras print them (as they reach the log, with the
# pr_fmt prefixes), and lines that look alike but are something else.
ERAS: dict[str, list[str]] = {
    "tcp.out-of-socket-memory": [
        "Out of socket memory",  # 2.6.12 .. 3.2 tcp_out_of_resources()
    ],
    "tcp.too-many-orphans": [
        "TCP: too many of orphaned sockets",  # 2.6.12 .. 3.2 tcp_close()
        "TCP: too many orphaned sockets",  # 3.3+ tcp_check_oom()
    ],
    "tcp.out-of-memory": [
        "TCP: out of memory -- consider tuning tcp_mem",  # 3.3+ tcp_check_oom()
    ],
    "tcp.syn-flood": [
        "possible SYN flooding on port 80. Sending cookies.",  # IPv4 .. 2.6.35
        "TCPv6: Possible SYN flooding on port 80. Dropping request.",  # IPv6 .. 3.0
        "TCP: Possible SYN flooding on port 80. Dropping request.",  # IPv4 2.6.36 .. 3.0
        "TCP: Possible SYN flooding on port 80. Sending cookies.  Check SNMP counters.",  # 3.1
        "TCP: TCP: Possible SYN flooding on port 80. Sending cookies.  Check SNMP counters.",
        "TCP: TCPv6: Possible SYN flooding on port 443. Dropping request.  Check SNMP counters.",
        "TCP: request_sock_TCP: Possible SYN flooding on port 80. Sending cookies.  "
        "Check SNMP counters.",  # 3.17 .. 6.1
        "TCP: request_sock_TCPv6: Possible SYN flooding on port 443. Dropping request.  "
        "Check SNMP counters.",
        "TCP: request_sock_TCP: Possible SYN flooding on port 192.0.2.1:80. Sending cookies.",
        "TCP: request_sock_TCPv6: Possible SYN flooding on port [::]:443. Dropping request.",
        "TCP: request_sock_subflow_v4: Possible SYN flooding on port [::]:20002. Sending cookies.",
    ],
    "tcp.time-wait-overflow": [
        "TCP: time wait bucket table overflow",  # .. 2.6.36
    ],
    "netfilter.conntrack-table-full": [
        "ip_conntrack: table full, dropping packet.",  # .. 2.6.21
        "nf_conntrack: table full, dropping packet.",  # 2.6.15 .. 3.4
        "nf_conntrack: table full, dropping packet",  # 3.5 .. 4.6
        "nf_conntrack: nf_conntrack: table full, dropping packet",  # 4.7+
        "nf_conntrack: nf_conntrack: table full in netns 4026532297, dropping packet",  # 6.18
    ],
    "mm.page-allocation-failure": [
        "java: page allocation failure. order:0, mode:0x20",  # .. 2.6.39
        "swapper/0: page allocation failure: order:2, mode:0x4020",  # 3.0 .. 4.4
        "java: page allocation failure: order:0, mode:0x2080020(GFP_ATOMIC)",  # 4.6 .. 4.11
        "java: page allocation failure: order:0, mode:0x2080020(GFP_ATOMIC), nodemask=(null)",
        "nginx: page allocation failure: order:4, mode:0x40dc0(GFP_KERNEL|__GFP_COMP|"
        "__GFP_ZERO), nodemask=(null),cpuset=/,mems_allowed=0",  # 5.0+ warn_alloc()
    ],
    "neigh.table-overflow": [
        "Neighbour table overflow.",  # .. 2.6.35 (route cache)
        "ipv4: Neighbour table overflow.",  # 2.6.36 .. 3.3
        "ipv6: Neighbour table overflow.",
        "IPv4: Neighbour table overflow",  # 3.4, 3.5
        "IPv6: Neighbour table overflow",
        "neighbour: arp_cache: neighbor table overflow!",  # 4.3+ neigh_alloc()
        "neighbour: ndisc_cache: neighbor table overflow!",
    ],
}
NEAR_MISSES: dict[str, list[str]] = {
    "tcp.out-of-socket-memory": [
        "Out of memory: Kill process 1234 (java) score 900 or sacrifice child",
        "UDP: socket memory pressure",
    ],
    "tcp.too-many-orphans": [
        "EXT4-fs (sda1): 3 orphan inodes deleted",
        "TCP: too many open requests",
    ],
    "tcp.out-of-memory": [
        "Out of memory: Killed process 4321 (nginx) total-vm:1024kB",
        "TCP: consider tuning tcp_rmem",
    ],
    "tcp.syn-flood": [
        "TCP: drop open request from 10.0.0.1/80",
        "net_ratelimit: 10 callbacks suppressed",
    ],
    "tcp.time-wait-overflow": [
        "TCP: time wait bucket table full",
        "TCP: request_sock_TCP: Possible time wait overflow",
    ],
    "netfilter.conntrack-table-full": [
        "nf_conntrack: expectation table full",
        "nf_conntrack: falling back to vmalloc.",
    ],
    "mm.page-allocation-failure": [
        "java: page allocation stalls for 10062ms, order:0, mode:0x14200ca(GFP_HIGHUSER_MOVABLE)",
        "Out of memory: Kill process 1 (init)",
    ],
    "neigh.table-overflow": [
        "ipv4: dst cache overflow",
        "neighbour: arp_cache: neighbor entry removed",
    ],
}


def families_of(line: str, table: dict[str, tuple[str, ...]]) -> set[str]:
    lowered = line.lower()
    return {family for family, subs in table.items() if any(s in lowered for s in subs)}


@pytest.fixture(scope="module")
def table() -> dict[str, tuple[str, ...]]:
    return matchers(load_message_families(SHIPPED))


def test_shipped_families_load() -> None:
    families = load_message_families(SHIPPED)
    ids = [f.id for f in families]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9.-]{0,63}", i) for i in ids)
    assert all(f.references and f.kernels and f.means for f in families)


def test_every_family_has_era_lines_and_near_misses(table: dict[str, tuple[str, ...]]) -> None:
    assert set(ERAS) == set(table), "every family needs era lines here (and no stale ones)"
    assert set(NEAR_MISSES) == set(table)


@pytest.mark.parametrize(
    ("family", "line"), [(f, line) for f, lines in ERAS.items() for line in lines]
)
def test_each_era_matches_its_family_only(
    table: dict[str, tuple[str, ...]], family: str, line: str
) -> None:
    assert families_of(line, table) == {family}
    assert families_of(line.upper(), table) == {family}  # case-insensitive


@pytest.mark.parametrize(
    ("family", "line"), [(f, line) for f, lines in NEAR_MISSES.items() for line in lines]
)
def test_near_misses_do_not_match(
    table: dict[str, tuple[str, ...]], family: str, line: str
) -> None:
    assert family not in families_of(line, table)


def test_matchers_are_lowercase_and_deduplicated() -> None:
    family = MessageFamily(
        id="x.y",
        title="t",
        match=["Possible SYN", "possible syn", "OTHER text"],
        kernels="k",
        means="m",
        references=["r"],
    )
    assert matchers([family]) == {"x.y": ("possible syn", "other text")}


def test_substrings_are_plain_text_not_patterns(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(
        "families:\n  - id: a.b\n    title: T\n    match: ['(a+)+$ .*']\n    kernels: k\n"
        "    means: m\n    references: [r]\n"
    )
    table = matchers(load_message_families(path))
    assert families_of("xx (a+)+$ .* yy", table) == {"a.b"}
    assert families_of("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", table) == set()


def test_the_spec_cache_gives_the_same_families() -> None:
    assert load_message_families(SHIPPED, SpecCache()) == load_message_families(SHIPPED)


GOOD = {
    "id": "a.b",
    "title": "T",
    "match": ["some text"],
    "kernels": "k",
    "means": "m",
    "references": ["r"],
}


def write_family(tmp_path: Path, **changes: object) -> Path:
    import yaml

    family = {**GOOD, **changes}
    path = tmp_path / "kernel-messages.yaml"
    path.write_text(yaml.safe_dump({"families": [GOOD, family]}, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"id": "Bad_ID"}, "families.1.id", "does not match the pattern ^"),
        ({"match": []}, "families.1.match", ""),
        ({"match": ["ab"]}, "families.1.match.0", "4 to 200 characters"),
        ({"match": ["x" * 201]}, "families.1.match.0", "4 to 200 characters"),
        ({"match": [" padded "]}, "families.1.match.0", "leading or trailing spaces"),
        ({"match": ["tab\there"]}, "families.1.match.0", "U+0009"),
        ({"match": ["esc\x1b[31m"]}, "families.1.match.0", "U+001B"),
        ({"title": "two\nlines"}, "families.1.title", "U+000A"),
        ({"means": "bidi \u202e override"}, "families.1.means", "U+202E"),
        ({"references": []}, "families.1.references", ""),
        ({"regex": "x"}, "families.1.regex", "unknown field"),
    ],
)
def test_bad_family_is_one_line_naming_file_and_field(
    tmp_path: Path, changes: dict[str, object], field: str, words: str
) -> None:
    if "id" not in changes:
        changes = {**changes, "id": "c.d"}
    path = write_family(tmp_path, **changes)
    with pytest.raises(InputError) as caught:
        load_message_families(path)
    one_line_message(caught.value, str(path))
    assert (caught.value.path, caught.value.field) == (str(path), field)
    assert words in caught.value.message


def test_duplicate_id_names_its_line(tmp_path: Path) -> None:
    path = write_family(tmp_path)  # GOOD twice
    with pytest.raises(InputError) as caught:
        load_message_families(path)
    assert caught.value.field == "families.1.id"
    assert caught.value.line is not None and caught.value.line > 1
    assert "duplicate message family id 'a.b'" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("- a\n- b\n", "must be a mapping"),
        ("families: []\n", "k.yaml:1: families:"),
        ("families: [1, 2]\n", "k.yaml:1: families.0:"),
        ("families:\n  a: 1\n  a: 2\n", "duplicate key"),
        ("families: [" * 200, "nested more than"),
    ],
)
def test_bad_document(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_message_families(path)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    with pytest.raises(InputError, match="not a regular file"):
        load_message_families(path)
