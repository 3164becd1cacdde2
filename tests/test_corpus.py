"""The corpus of public sysctl files holds `check` to the bar of a reviewer's time."""

from __future__ import annotations

import re

from tests.corpus import CORPUS, UNKNOWN_KEY, count, entries

RELEASE = re.compile(r"\d+\.\d+(\.\d+)?")


def test_every_file_is_indexed_with_its_source_and_kernel() -> None:
    corpus = entries()
    assert len(corpus) >= 30
    names = [entry.file for entry in corpus]
    assert len(set(names)) == len(names)
    on_disk = {p.name for p in CORPUS.iterdir() if p.is_file()}
    assert on_disk - {"index.yaml", "__init__.py", "__main__.py"} == set(names)
    for entry in corpus:
        assert re.fullmatch(r"[0-9a-f]{40}", entry.commit), entry.file
        assert RELEASE.fullmatch(entry.kernel), entry.file
        assert entry.repository.count("/") == 1 and entry.path and entry.why, entry.file


def test_unknown_keys_are_under_a_fifth_of_the_findings() -> None:
    """The issue's bar on `check.unknown-key`, and what replaced most of its lines held to its
    promise: keys the release has that the catalog does not model are one summary line per
    file at most (`check.unmodelled-key`), so the two together stay a small part of the
    output (31 of 148 findings, 20.9%, when this was written; a file's line each)."""
    counts = count()
    total = counts["total"]
    assert total > 0
    assert counts["unknown_key_share"] < 0.20, (
        f"{UNKNOWN_KEY} is {counts['unknown_key_share']:.1%} of {total} findings"
    )
    summaries = sum(counts["rules"].get("check.unmodelled-key", {}).values())
    assert summaries <= counts["files"]
    unknown = sum(counts["rules"].get(UNKNOWN_KEY, {}).values())
    assert (unknown + summaries) / total < 0.25, (unknown, summaries, total)
