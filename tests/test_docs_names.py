"""The repository names nothing a reader of it cannot open: no file outside it (the project's
design notes and domain notes, the source documents it was begun from, by their file names) and
no number of the project's own tracker ("issue N"). An upstream project's issue is cited with
the project's name before it ("kubernetes issue 111682"). Docs, the README, the benchmarks and
the knowledge files the docs are generated from are held to it; the Python sources too, where
the files not yet cleaned are listed in KNOWN (strict: a cleaned one fails until it leaves)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

OUTSIDE = re.compile(
    r"DESIGN\.md|kernel-facts\b|anchors\.md"
    r"|(?<![\w/])(?:\.\./)*shared/(?:domain|seeds|peers|hooks)\b"
    r"|\b\d{3}_[0-9a-f]{16}\.txt\b"  # a source document's file name
    r"|\bseeds? \d{3}\b|\b(?:the|a) seeds?\b|\(seeds?\)",  # the source documents by number
    re.IGNORECASE,
)
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+")
# words that may stand before "issue N" without naming a project
_NOT_A_PROJECT = {"a", "an", "and", "as", "by", "for", "from", "in", "its", "of", "or", "our",
                  "per", "see", "same", "that", "the", "this", "to", "with"}  # fmt: skip


def _project_before(text: str, at: int) -> bool:
    """Whether the word before position `at` names a project (`kubernetes`, `quic-go/quic-go`)."""
    before = text[:at].rstrip().rsplit(" ", 1)[-1].lstrip("('\"`[")
    return bool(re.fullmatch(r"[A-Za-z][\w.-]*(?:/[\w.-]+)?", before)) and (
        before.lower() not in _NOT_A_PROJECT
    )


def offences(path: Path) -> list[str]:
    """Each outside name and tracker number in the file, wrapped lines (and comments) joined."""
    text = re.sub(r"[ \t]*\n[ \t]*(?:#+[ \t]*)?", " ", path.read_text(encoding="utf-8"))
    found = [m[0] for m in OUTSIDE.finditer(text)]
    found += [m[0] for m in ISSUE.finditer(text) if not _project_before(text, m.start())]
    return found


def _files(*patterns: str) -> list[Path]:
    return sorted({p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file()})


DOCS = _files(
    "README.md", "docs/**/*.md", "benchmarks/**/*.md", "benchmarks/**/*.py",
    "rules/**/*.yaml", "profiles/*.yaml", "examples/*.yaml", "tests/cases/*.yaml",
    "templates/**/*", "action.yml", "pyproject.toml",
)  # fmt: skip
CODE = [
    path
    for path in _files("sysctl_advisor/**/*.py", "tests/**/*.py", "action/**/*.py", ".ci/*")
    # their own patterns for these names
    if path not in {Path(__file__), ROOT / "tests" / "knowledge" / "test_sources.py"}
]
# Not yet cleaned (comments and docstrings); each leaves the list when it is.
KNOWN: set[str] = set()


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _params(paths: list[Path]) -> list[object]:
    return [
        pytest.param(
            path,
            id=_name(path),
            marks=[pytest.mark.xfail(strict=True, reason="not yet cleaned")]
            if _name(path) in KNOWN
            else [],
        )
        for path in paths
    ]


@pytest.mark.parametrize("path", _params(DOCS + CODE))
def test_names_only_what_a_reader_can_open(path: Path) -> None:
    assert offences(path) == []


def test_the_checks_find_what_they_are_for(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See ../shared/domain/notes, DESIGN.md and 001_acd4bf0469cc77db.txt (issue 46);\n"
        "# Issue 33 item 2, as seed 003 did.\n"
    )
    assert len(offences(page)) == 6
    page.write_text(
        "kubernetes issue 111682, amazon-eks-ami\n  issue 1307, quic-go/quic-go issue #3415;\n"
        "systemd's src/shared/ directory; the kernel seeds the next connection.\n"
    )
    assert offences(page) == []
