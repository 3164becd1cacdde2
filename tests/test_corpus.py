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
    counts = count()
    assert counts["total"] > 0
    assert counts["unknown_key_share"] < 0.20, (
        f"{UNKNOWN_KEY} is {counts['unknown_key_share']:.1%} of {counts['total']} findings"
    )
