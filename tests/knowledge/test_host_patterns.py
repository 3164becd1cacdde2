"""Profile-map host patterns mean what ansible-core's own range expansion means.

The oracle is ansible-core's `expand_hostname_range` (ansible/plugins/inventory/__init__.py),
the function that turns `web[01:03]` in an inventory into web01, web02, web03; `*` and `?` are
compared with fnmatch as Ansible's host patterns use it. Ours never expands a range, so these
tests also check that huge ranges and hostile patterns cost nothing.
"""

from __future__ import annotations

import fnmatch
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysctl_advisor.knowledge.host_patterns import PatternError, compile_pattern, matches
from tests.commands.test_fleet import FIXTURES, TREE, fleet

inventory_plugins = pytest.importorskip("ansible.plugins.inventory", reason="needs ansible-core")
expand = inventory_plugins.expand_hostname_range


def ours(pattern: str, name: str) -> bool:
    return matches(compile_pattern(pattern), name)


def ansible(pattern: str, name: str) -> bool:
    names = expand(pattern) if "[" in pattern else [pattern]
    return any(fnmatch.fnmatchcase(name, n) for n in names)


def near_misses(names: list[str]) -> set[str]:
    """Names one edit away from Ansible's: other widths, neighbours, another letter case."""
    out: set[str] = set()
    for name in names:
        out |= {name[:-1], name + "0", "0" + name, name.swapcase(), name.replace("0", "", 1)}
        out |= {name[:i] + c + name[i + 1 :] for i in range(len(name)) for c in "019aZ-"}
    return out


@pytest.mark.parametrize(
    "pattern",
    [
        "web[01:03]", "web[1:10]", "web[1:10:3]", "web[:3]", "node[08:11]", "db[001:120:7].example",
        "rack[1:2]-node[a:c]", "h[a:C]", "h[x:B:2]", "[0:3]x", "w[9:9]", "w[0:0]", "w[00:10:5]",
        "web-*", "w?b[01:02]", "*[1:3]", "edge-??", "*", "[a:c]*[1:2]",
    ],
)  # fmt: skip
def test_matches_what_ansible_expands(pattern: str) -> None:
    expanded = expand(pattern) if "[" in pattern else []
    candidates = set(expanded) | near_misses(expanded or [pattern.replace("*", "x")])
    candidates |= {"web-1", "web-", "edge-01", "edge-1", "webx1", "", "a1", "c2x3", "x"}
    for name in sorted(candidates):
        assert ours(pattern, name) == ansible(pattern, name), (pattern, name)


_number = st.integers(min_value=0, max_value=130)


@st.composite
def range_patterns(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(["", "web", "n-", "db.", "a1"]))
    tail = draw(st.sampled_from(["", "-x", ".lan", "7", "*", "?"]))
    if draw(st.booleans()):
        first, last = sorted((draw(st.sampled_from("abcxyzABCZ")), draw(st.sampled_from("abcZ"))))
        first, last = (first, last) if first in "abcxyz" or last.isupper() else (last, first)
        if "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".index(first) > (
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".index(last)
        ):
            first, last = last, first
        bounds = f"{first}:{last}"
    else:
        low, high = sorted((draw(_number), draw(_number)))
        if draw(st.booleans()):  # zero-padded, as Ansible wants it: equal widths
            width = len(str(high)) + draw(st.integers(0, 1))
            bounds = f"{low:0{width}d}:{high:0{width}d}" if width > 1 else f"{low}:{high}"
        else:
            bounds = f"{low}:{high}"
    step = draw(st.sampled_from(["", ":1", ":2", ":5"]))
    return f"{head}[{bounds}{step}]{tail}"


@settings(max_examples=300, deadline=None)
@given(range_patterns(), st.data())
def test_ranges_agree_with_ansible_core(pattern: str, data: st.DataObject) -> None:
    expanded = expand(pattern.replace("*", "").replace("?", ""))
    pool = sorted(set(expanded) | near_misses(expanded[:20]))
    for name in data.draw(st.lists(st.sampled_from(pool), max_size=40)) + expanded[:5]:
        assert ours(pattern, name) == ansible(pattern, name), (pattern, name)


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("web[abc]", "character classes"), ("web[!a]", "character classes"),
        ("web[1:3", "character classes"), ("web]1", "outside a range"),
        ("~web.*", "operators"), ("!web01", "operators"), ("&web", "operators"),
        ("web01,web02", "operators"), ("w[1:2:0]", "step"), ("w[1:2:x]", "step"),
        ("w[01:3]", "same width"), ("w[3:1]", "begins after"), ("w[c:a]", "begins after"),
        ("w[a:1]", "neither"), ("w[1:2:3:4]", "begin:end"), ("w[1:]", "needs an end"),
        ("w[1:" + "9" * 19 + "]", "digits"), ("", "empty"), ("w" * 1025, "at most 1024"),
        ("w\x00", "outside a range"),
    ],
)  # fmt: skip
def test_refused_patterns_say_why(pattern: str, words: str) -> None:
    with pytest.raises(PatternError, match=words):
        compile_pattern(pattern)


def test_huge_ranges_and_hostile_patterns_are_cheap() -> None:
    name = "a" * 254 + "9"
    hostile = [
        "*a" * 512, "*?" * 512, "*[a:z]" * 170, "*[0:999999999999999999]" * 40,
        "h[0:999999999999999999]", "[0:99:1]" * 300,
    ]  # fmt: skip
    start = time.perf_counter()
    for pattern in hostile:
        compiled = compile_pattern(pattern[:1024])
        for _ in range(5):
            matches(compiled, name)
    assert time.perf_counter() - start < 2.0  # about 0.1 s here; exponential would never end
    assert ours("h[0:999999999999999999]", "h123456789012345678")
    assert not ours("h[0:999999999999999999:2]", "h123456789012345677")


def test_fleet_reads_ranges_as_ansible_does(tmp_path: Path) -> None:
    import json

    path = tmp_path / "profile-map.yaml"
    path.write_text(
        "- {hosts: 'web-[02:09]', profile: gridftp}\n"  # web-01 is not in this range
        "- {hosts: ['web-[00:01]', 'd[o:t]*'], profile: frontend-proxy}\n"
    )
    out = tmp_path / "out"
    code, err = fleet(
        "--ansible-facts", TREE, "--profile", "base", "--out", out, "--profile-map", path,
        "--inventory", FIXTURES / "inventory.json",
    )  # fmt: skip
    assert code == 1, err
    summary = json.loads((out / "summary.json").read_text())
    assert {h["host"]: h["profile"] for h in summary["hosts"]} == {
        "door-07": "frontend-proxy",  # d, then a letter from o to t
        "dtn-01": "frontend-proxy",
        "web-01": "frontend-proxy",
    }


def test_fleet_refuses_a_character_class_with_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "profile-map.yaml"
    path.write_text("- {hosts: '*', profile: base}\n- {hosts: ['x', 'web[12]'], profile: base}\n")
    code, err = fleet("--ansible-facts", TREE, "--out", tmp_path / "out", "--profile-map", path)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "profile-map.yaml" in err and "[1].hosts[1]" in err and "[01:03]" in err
