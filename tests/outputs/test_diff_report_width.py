"""The plain `diff` text fits COLUMNS: no line longer than the width, at any width from
MIN_WIDTH up, whatever the keys, values and file names; a key and a number that fit on a line
are never split; without COLUMNS (not a terminal) the width is DEFAULT_WIDTH."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sysctl_advisor.commands.diff import diff
from sysctl_advisor.model.current_config import Problem
from sysctl_advisor.model.diff import STATUSES, DiffEntry, DiffReport
from sysctl_advisor.model.plan import Finding
from sysctl_advisor.outputs.diff_report import DEFAULT_WIDTH, MIN_WIDTH, render_plain
from tests.conftest import EXAMPLES

FIXTURES = Path(__file__).parents[1] / "fixtures"
LAYERED = FIXTURES / "sysctl-trees" / "layered"
DUMP = FIXTURES / "dumps" / "sysctl-a-6.18.txt"

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,20}(\.[a-z0-9_-]{1,30}){1,4}", fullmatch=True)
NUMBER = st.integers(0, 2**64).map(str)
VALUES = st.one_of(
    st.none(),
    NUMBER,
    st.lists(NUMBER, min_size=2, max_size=4).map(" ".join),
    st.text(st.characters(codec="utf-8", categories=["L", "N", "P", "Zs"]), max_size=120),
)
SOURCES = st.one_of(
    st.none(),
    st.lists(st.from_regex(r"[a-zA-Z0-9._-]{1,60}", fullmatch=True), min_size=1, max_size=8)
    .map("/".join)
    .map(lambda p: f"{p}:12"),
)


@st.composite
def reports(draw: st.DrawFn) -> DiffReport:
    entries = [
        DiffEntry(
            key=draw(KEYS),
            current=draw(VALUES),
            recommended=draw(VALUES),
            kernel_default=draw(VALUES),
            status=draw(st.sampled_from(STATUSES)),
            source=draw(SOURCES),
            rationale=draw(st.text(max_size=300)),
        )
        for _ in range(draw(st.integers(0, 6)))
    ]
    label = draw(st.text(min_size=1, max_size=300))
    problems = [
        Problem(draw(st.text(min_size=1, max_size=200)), draw(st.text(max_size=200)), "error")
        for _ in range(draw(st.integers(0, 2)))
    ]
    findings = [
        Finding("check.x", "warning", None, draw(st.text(max_size=200)), "check.x")
        for _ in range(draw(st.integers(0, 2)))
    ]
    return DiffReport(
        draw(st.none() | st.text(max_size=80)),
        draw(st.none() | st.text(max_size=60)),
        "base",
        draw(st.sampled_from(["tree", "file", "dump", "facts", "live"])),
        label,
        entries,
        findings,
        problems,
    )


@settings(max_examples=300, deadline=None)
@given(report=reports(), width=st.integers(MIN_WIDTH, 300))
def test_no_line_is_longer_than_the_width(report: DiffReport, width: int) -> None:
    lines = render_plain(report, width).splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    words = {word for line in lines for word in line.split()}
    table_words = width - 17  # the narrowest column a value has (one block per key)
    for entry in report.entries:
        if len(entry.key) <= width - 9:  # a status and the key fit on one line
            assert entry.key in words, entry.key
        for value in (entry.current, entry.recommended):
            if value is not None and value.isascii():
                for word in value.split():
                    if word.isdigit() and len(word) <= table_words:
                        assert word in words, word


@settings(max_examples=50, deadline=None)
@given(width=st.integers(1, MIN_WIDTH))
def test_below_the_minimum_the_minimum_is_used(width: int) -> None:
    report = DiffReport("h", "6.1", "base", "file", "x.conf", [])
    assert render_plain(report, width) == render_plain(report, MIN_WIDTH)


CASES = [
    (EXAMPLES / "c1m-server.yaml", "c1m-server", LAYERED),
    (EXAMPLES / "ec2-nginx-frontend.yaml", "frontend-proxy", LAYERED.resolve()),
    (EXAMPLES / "ec2-nginx-frontend.yaml", "frontend-proxy", DUMP),
]


@pytest.mark.parametrize(("facts", "profile", "current"), CASES, ids=lambda c: str(c)[-24:])
@pytest.mark.parametrize("columns", ["60", "80", "120", "200", None, "", "wide", "0"])
def test_the_command_fits_columns(
    facts: Path,
    profile: str,
    current: Path,
    columns: str | None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`diff` piped (not a terminal) takes its width from COLUMNS, else DEFAULT_WIDTH, and keeps
    every key and the file each value came from."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    width = int(columns) if columns and columns.isdigit() and int(columns) else DEFAULT_WIDTH
    code = diff(profile, facts=facts, current=current)
    out = capsys.readouterr().out
    assert code in (0, 1)
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    if width >= 80:  # a table
        assert any(line.startswith("STATUS") for line in lines)
    else:  # one block a key, each value on a labelled line
        assert any(line.startswith("    recommended  ") for line in lines)
    assert out.rstrip().splitlines()[-1].startswith(("Drift:", "No drift"))
    if width >= 100:  # six columns, or the file under its key: never cut in two
        for name in ("etc/sysctl.conf:3", "net.core.somaxconn"):
            assert any(name in line for line in lines) or current == DUMP, name


# Found by the property: rich pads a line by cells, and a combining mark (U+093A) takes none,
# so the padding passed the width by characters.
COMBINING = DiffReport(
    hostname=None, kernel="\u093a", profile="base", current_kind="tree", current_label="0",
    entries=[
        DiffEntry(
            key="a.0.0.0.00", current=None, recommended=None, kernel_default=None, status="ok",
            source="0/0/0/0/0/0/0:12", rationale="", default_set_by=None, modelled_default=None,
        )
    ],
    findings=[], problems=[],
)  # fmt: skip


@settings(max_examples=80, deadline=None)
@example(report=COMBINING, width=67)
@given(report=reports(), width=st.integers(MIN_WIDTH, 200))
def test_on_a_terminal_no_line_is_wider_either(report: DiffReport, width: int) -> None:
    """The rich table on a terminal of that width; narrower than a key and its numbers, one
    block per key as in the plain text, never lines the terminal would cut."""
    import re

    from rich.cells import cell_len

    from sysctl_advisor.outputs.diff_report import render_rich

    text = re.sub(r"\x1b\[[0-9;]*m", "", render_rich(report, width))
    lines = text.splitlines()
    # a terminal's width is in cells: a combining mark takes none, a wide character two
    assert all(cell_len(line) <= width for line in lines), max(lines, key=cell_len)
