"""The did-you-mean of `check` (engine.check.near_keys): its index finds what aligning the key with
every name would, and a check pays for a bounded number of lookups however many keys a file
holds."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.check import near_keys
from sysctl_advisor.engine.check.judge import NEAR_BUDGET
from sysctl_advisor.engine.check.near_keys import NearKeys, _edits
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import Cli


def _alignment(a: str, b: str) -> int:
    """The textbook optimal-string-alignment distance, the whole table: what _edits shortens."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(
                table[i - 1][j] + 1,
                table[i][j - 1] + 1,
                table[i - 1][j - 1] + (a[i - 1] != b[j - 1]),
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
    return table[-1][-1]


@settings(max_examples=400, deadline=None)
@given(st.text("ab.c", max_size=9), st.text("ab.c", max_size=9), st.integers(0, 3))
def test_edits_is_the_alignment_up_to_its_limit(a: str, b: str, limit: int) -> None:
    """What the key and name share at either end, and the cells far from the diagonal, are
    left out: the distance is the same wherever it is within the limit."""
    assert min(_edits(a, b, limit), limit + 1) == min(_alignment(a, b), limit + 1)


@pytest.fixture(scope="module")
def names(kb: KnowledgeBase) -> list[str]:
    return kb.catalog.kernel_keys()


def _every_name(key: str, names: list[str]) -> str | None:
    """The nearest name as aligning the key with each name in turn finds it."""
    fields = key.split(".")
    limit = 1 if len(fields[-1]) < 10 else 2
    best: tuple[int, str] | None = None
    for name in names:
        if "*" in name:
            parts = name.split(".")
            if len(parts) != len(fields):
                continue
            name = ".".join(f if p == "*" else p for p, f in zip(parts, fields, strict=True))
        if abs(len(key) - len(name)) > limit:
            continue  # each edit changes the length by one at most: the distance is more
        distance = _alignment(key, name)
        if distance <= limit and (best is None or distance < best[0]):
            best = (distance, name)
    return best[1] if best is not None else None


def test_the_index_finds_what_every_name_would(names: list[str]) -> None:
    """Slips of every kind (a letter changed, dropped, added, two swapped, in pairs) of every
    name, and keys far from all: the index skips only names that cannot be that close."""
    rng = random.Random(7)
    letters = sorted(set("".join(names)) | {"x", "1"})
    index = NearKeys(names)
    keys = []
    for name in names:
        for _ in range(6):
            key = list(name.replace("*", rng.choice(["eth0", "ens5", "all"])))
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(key))
                match rng.randrange(4):
                    case 0:
                        key[at] = rng.choice(letters)
                    case 1:
                        del key[at]
                    case 2:
                        key.insert(at, rng.choice(letters))
                    case _ if at + 1 < len(key):
                        key[at], key[at + 1] = key[at + 1], key[at]
            keys.append("".join(key))
    keys += [f"net.ipv4.foo{i}" for i in range(50)] + ["x" * n for n in range(1, 60)]
    found = [index.nearest(key) for key in keys]
    assert found == [_every_name(key, names) for key in keys]
    assert sum(f is not None for f in found) > len(names)  # many slips found, not none


def test_a_flood_of_keys_is_compared_within_a_budget(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fourth review: 100,000 near-miss keys cost 22 s, each aligned with the whole
    catalog. At most NEAR_BUDGET distinct keys are looked up in one check; the rest are
    reported as unknown, and a note says how many were not compared."""
    looked_up = []
    nearest = NearKeys.nearest

    def counting(self: NearKeys, key: str) -> str | None:
        looked_up.append(key)
        return nearest(self, key)

    monkeypatch.setattr(near_keys.NearKeys, "nearest", counting)
    extra = 1500
    conf = tmp_path / "99-flood.conf"
    conf.write_text("".join(f"net.ipv4.tcp_rmen{i} = 1\n" for i in range(NEAR_BUDGET + extra)))
    result = cli("check", str(conf), "--kernel", "6.1.0")
    assert result.exit_code == 1, result.stderr  # keys 6.1's sysctl tables lack: errors
    assert len(looked_up) == NEAR_BUDGET
    assert f"{extra:,} more keys not in the catalog were not compared" in result.stderr
