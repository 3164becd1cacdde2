"""The golden files (tests/golden/): the one comparison every golden test makes.

`python -m tests.regenerate` runs the golden tests to rewrite them (UPDATE_GOLDEN=1) or to list
the stale ones (REPORT names a file each stale golden file's path is appended to)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import TESTS

GOLDEN = TESTS / "golden"
UPDATE = "UPDATE_GOLDEN"
REPORT = "SYSCTL_ADVISOR_GOLDEN_REPORT"
REGENERATE = "python -m tests.regenerate"


def assert_golden(path: Path, text: str) -> None:
    """The text is the golden file's (UPDATE_GOLDEN=1 writes it first)."""
    current = path.read_text() if path.exists() else None
    report = os.environ.get(REPORT)
    if current != text and report:
        with open(report, "a", encoding="utf-8") as handle:  # O_APPEND: each line whole
            handle.write(f"{path}\n")
    if current != text and os.environ.get(UPDATE):
        path.write_text(text)
        current = text
    assert current is not None, f"missing golden file {path}; regenerate: {REGENERATE}"
    assert text == current, f"stale golden file {path}; regenerate: {REGENERATE}"
