"""Format a DiffReport: plain text within COLUMNS (a rich table on a terminal), markdown, JSON."""

from __future__ import annotations

import io
import os
import re
import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sysctl_advisor.engine.undo import UNDO_DIFF_KIND
from sysctl_advisor.model.diff import DiffEntry, DiffReport, ObservedOwner
from sysctl_advisor.model.documents import dump_json
from sysctl_advisor.model.severity import SEVERITY_ORDER
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.outputs.markdown_text import FOLD_ROWS, Limits, fit_document
from sysctl_advisor.outputs.plan_render import Renderer, first_sentence, host_default

if TYPE_CHECKING:
    from rich.table import Table

_COLUMNS = ("STATUS", "KEY", "CURRENT", "RECOMMENDED", "DEFAULT", "SOURCE")
# an undo's report (engine.undo.undo_diff): the plan's value, and the value the undo restores
_UNDO_COLUMNS = ("STATUS", "KEY", "PLAN", "RESTORED", "DEFAULT", "SOURCE")
_STYLES = {"ok": "green", "change": "yellow", "missing": "cyan", "remove": "red"}
_GAP = 2  # between two columns of a table


def _rows(report: DiffReport) -> list[tuple[str, ...]]:
    """Every cell one line: file names from a pull request can hold anything."""
    return [
        tuple(
            one_line(cell)
            for cell in (
                e.status,
                e.key,
                e.current if e.current is not None else "-",
                e.recommended if e.recommended is not None else "(remove)",
                _default_cell(e),
                e.source or "-",
            )
        )
        for e in report.entries
    ]


def _default_cell(entry: DiffEntry) -> str:
    """The DEFAULT column: the kernel's default, or the host's with who set it and the
    kernel's own beside it."""
    if entry.kernel_default is None:
        return "-"
    said = host_default(entry.default_set_by, entry.modelled_default)
    return entry.kernel_default if said is None else f"{entry.kernel_default} ({said})"


def columns(report: DiffReport) -> tuple[str, ...]:
    return _UNDO_COLUMNS if report.current_kind == UNDO_DIFF_KIND else _COLUMNS


def _heading(report: DiffReport) -> str:
    return f"{_host_line(report)}; {_values_from(report)}"


def _host_line(report: DiffReport) -> str:
    host = report.hostname or "host"
    kernel = f" ({report.kernel})" if report.kernel else ""
    return one_line(f"{host}{kernel}, profile {report.profile}")


def _values_from(report: DiffReport) -> str:
    if report.current_kind == UNDO_DIFF_KIND:
        return one_line(
            f"undo: PLAN is each value once the plan is applied, RESTORED what the undo writes "
            f"(the values in force from {report.current_label}, else the kernel default)"
        )
    return one_line(f"current values from {report.current_kind} {report.current_label}")


def summary(report: DiffReport) -> str:
    counts = report.counts()
    total = len(report.entries)
    if report.current_kind == UNDO_DIFF_KIND:
        if report.drift == 0:
            return f"Nothing to undo: the plan leaves all {total} values as they were."
        return f"The undo restores {report.drift} of {total} keys the plan sets."
    if report.drift == 0:
        return f"No drift: all {total} recommended values are in force."
    parts = [f"{counts[s]} {s}" for s in ("change", "missing", "remove") if counts[s]]
    return f"Drift: {report.drift} of {total} keys ({', '.join(parts)})."


def _item(text: str, width: int) -> list[str]:
    """One list item, wrapped with a hanging indent; a word longer than the line (a file name)
    is the only thing split."""
    return textwrap.wrap(
        one_line(text),
        width=width,
        initial_indent="  ",
        subsequent_indent="    ",
        break_long_words=True,
        break_on_hyphens=False,
    )


SHOWN = 64  # characters of a value or name an observed write shows (the JSON has them whole)


def _clip(text: str | None) -> str:
    text = one_line(text or "")
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _who(owner: ObservedOwner) -> str:
    """The writer, and what the write shows of it: process, parent, unit or pod."""
    shown = [f"{_clip(owner.comm)}[{owner.pid}]" if owner.pid else _clip(owner.comm)]
    if owner.parent:
        parent = f"{_clip(owner.parent)}[{owner.parent_pid}]" if owner.parent_pid else owner.parent
        shown.append(f"parent {_clip(parent)}")
    if owner.unit:
        shown.append(f"unit {_clip(owner.unit)}")
    if owner.pod:
        shown.append(f"pod {_clip(owner.pod)}")
    details = ", ".join(part for part in shown if part)
    return f"{_clip(owner.name)} ({details})" if owner.writer is not None else details


def observed_line(key: str, owner: ObservedOwner) -> str:
    """One writer the record shows writing `key`: who, where, when last, how often, whether
    it explains the value in force (its write was the last applied) or wrote before another,
    and the fix in its configuration."""
    times = "once" if owner.count == 1 else f"{owner.count} times"
    refused = ", refused (the value in force stayed)" if owner.applied is False else ""
    values = ", ".join(_clip(v) for v in owner.values)
    where = (
        ""
        if owner.in_force
        else " in a network namespace this kernel does not say"
        if owner.in_force is None
        else f" in network namespace {_clip(owner.namespace)}"
    )
    mark = (
        " (explains the value in force)"
        if owner.explains
        else " (an earlier writer: another wrote after it)"
        if owner.in_force
        else ""
    )
    text = (
        f"{key}: written by {_who(owner)}{where}: {values}, {times}, last "
        f"{_clip(owner.last)}{refused}{mark}."
    )
    if owner.fix is not None:
        target = f" ({_clip(owner.fix_target)})" if owner.fix_target else ""
        text += f" Fix{target}: {owner.fix}"
    return text


UNKNOWN_NAMESPACE = (
    "Written in a network namespace not known (this kernel does not say; the value in force "
    "here, or not):"
)
SHOWN_OWNERS = 8  # writers of a key shown in force, and as many apart (the JSON has them all)


def observed_lines(key: str, owners: Iterable[ObservedOwner], in_force: bool | None) -> list[str]:
    """The lines of the writers of `key` whose writes were made where the value in force is
    (False: those apart; None: those whose namespace the kernel does not say), SHOWN_OWNERS at
    most and a line counting the others."""
    chosen = [o for o in owners if o.in_force is in_force]
    lines = [observed_line(key, owner) for owner in chosen[:SHOWN_OWNERS]]
    if len(chosen) > SHOWN_OWNERS:
        lines.append(more_owners(key, len(chosen) - SHOWN_OWNERS))
    return lines


def more_owners(key: str, count: int) -> str:
    return f"{key}: {count:,} other writers, not shown (the JSON format lists each)."


def static_only(report: DiffReport) -> str | None:
    """The one line for facts whose record could not be made."""
    if report.provenance is None or not report.provenance.startswith("unavailable"):
        return None
    return f"Observed writers: provenance {_clip(report.provenance)}: the static tier only."


def _notes(report: DiffReport, width: int = 100) -> list[str]:
    lines: list[str] = []
    why = [e for e in report.entries if e.status != "ok"]
    apart: list[str] = []
    unknown: list[str] = []
    if why:
        lines += ["", "Why:"]
        for e in why:
            lines += _item(f"{e.key}: {first_sentence(e.rationale, drop_tag=False)}", width)
            if e.owner is not None:
                lines += _item(f"{e.key} in force: probably {e.owner}.", width)
            for text in observed_lines(e.key, e.observed or (), True):
                lines += _item(text, width)
            unknown += observed_lines(e.key, e.observed or (), None)
            apart += observed_lines(e.key, e.observed or (), False)
    if unknown:
        lines += ["", UNKNOWN_NAMESPACE]
        for text in unknown:
            lines += _item(text, width)
    if apart:
        lines += ["", "Written in other namespaces (not the value in force here):"]
        for text in apart:
            lines += _item(text, width)
    unavailable = static_only(report)
    if unavailable is not None:
        lines += ["", *_wrapped(unavailable, width)]
    findings = sorted(
        (f for f in report.findings if f.severity != "info"),
        key=lambda f: (SEVERITY_ORDER[f.severity], f.id),
    )
    if findings:
        lines += ["", "Findings:"]
        for f in findings:
            lines += _item(f"[{f.severity}] {f.id}: {' '.join(f.message.split())}", width)
    if report.problems:
        lines += ["", "In the current configuration:"]
        for p in report.problems:
            lines += _item(f"[{p.severity}] {p}", width)
    return lines


DEFAULT_WIDTH = 100  # the plain table's width when COLUMNS does not say (not a terminal)
MIN_WIDTH = 30  # narrower is taken as this: a key and its label need a line


def plain_width() -> int:
    """The plain text's width: COLUMNS when it is a positive number, else DEFAULT_WIDTH."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isascii() and columns.isdigit() and len(columns) <= 6 and int(columns) > 0:
        return int(columns)
    return DEFAULT_WIDTH


def _wrapped(text: str, width: int, indent: str = "", hang: str = "") -> list[str]:
    """`text` in lines of at most `width`, split between words where it can be, inside a word
    (a file name, a long key) only where one is longer than the line."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=hang,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def _indented(line: str, width: int) -> list[str]:
    """A line of a cell wrapped to `width`, its continuations as indented as its start."""
    text = line.lstrip(" ")
    lead = line[: len(line) - len(text)]
    if len(lead) >= width:
        lead = ""
    return _wrapped(text, width, indent=lead, hang=lead)


def _table_lines(rows: list[tuple[str, ...]], widths: list[int]) -> list[str]:
    """Rows of cells (a cell's own lines apart) laid out in columns of `widths`; a cell wider
    than its column wraps within it."""
    out: list[str] = []
    for row in rows:
        cells = [
            [piece for line in cell.split("\n") for piece in _indented(line, w)]
            for cell, w in zip(row, widths, strict=True)
        ]
        for i in range(max(len(c) for c in cells)):
            parts = [
                (c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True)
            ]
            out.append((" " * _GAP).join(parts).rstrip())
    return out


def _stacked(
    rows: list[tuple[str, ...]], width: int, titles: tuple[str, ...] = _COLUMNS
) -> list[str]:
    """Too narrow for columns: each key on its own line under its status, then one labelled
    line per value."""
    labels = [c.lower() for c in titles[2:]]
    indent = 4 + max(len(label) for label in labels) + _GAP
    out: list[str] = []
    for row in rows:
        out += _wrapped(f"{row[0]}  {row[1]}", width, hang="    ")
        for label, value in zip(labels, row[2:], strict=True):
            if label == "source" and value == "-":
                continue
            lead = f"    {label}".ljust(indent)
            out += _wrapped(value, width, indent=lead, hang=" " * indent)
    return out


def plain_table(
    rows: list[tuple[str, ...]], width: int, titles: tuple[str, ...] = _COLUMNS
) -> list[str]:
    """The table of keys in at most `width` columns: six columns when they fit; else the file
    a value came from under its key, cells wrapping within their columns (a key and a number
    are never split); else, when even that cannot fit, one block per key."""
    six = [[c, *(r[i] for r in rows)] for i, c in enumerate(titles)]
    gaps = _GAP * (len(titles) - 1)
    if sum(_fit_widths(six, 10**6)) + gaps <= width:
        return _table_lines([titles, *rows], _fit_widths(six, width))
    apart = [(r[0], f"{r[1]}\n  {r[-1]}" if r[-1] != "-" else r[1], *r[2:-1]) for r in rows]
    header = (titles[0], f"{titles[1]}\n  {titles[-1]}", *titles[2:-1])
    five = [[header[i], *(r[i] for r in apart)] for i in range(len(header))]
    widths = _fit_widths(five, width)
    if sum(widths) + _GAP * (len(widths) - 1) <= width:
        return _table_lines([header, *apart], widths)
    return _stacked(rows, width, titles)


def render_plain(report: DiffReport, width: int = DEFAULT_WIDTH) -> str:
    """The report as plain text, no line longer than `width` (at least MIN_WIDTH). A heading
    too long for the line keeps the host and profile on top, and says where the values in
    force came from (a long path, whole) under the table."""
    width = max(width, MIN_WIDTH)
    heading, under = _heading(report), []
    if len(heading) > width:
        heading = _host_line(report)
        values_from = _values_from(report)
        under = ["", *_wrapped(values_from[0].upper() + values_from[1:] + ".", width)]
    out = [*_wrapped(heading, width), ""]
    out += plain_table(_rows(report), width, columns(report))
    out += under
    out += _notes(report, width)
    out += ["", *_wrapped(summary(report), width)]
    return "\n".join(out) + "\n"


def _fit_widths(cells: list[list[str]], width: int) -> list[int]:
    """Column widths for a terminal `width`: the first two columns (status, key) never narrow
    below their first lines, so a key is never split (a source line under it may fold); the
    others start at their longest line and give way, widest first, down to their longest word,
    so a number is never split."""
    natural = [max(len(line) for cell in column for line in cell.split("\n")) for column in cells]
    floor = [
        max(len(cell.split("\n")[0]) for cell in column)
        if i < 2
        else max(len(word) for cell in column for word in cell.split())
        for i, column in enumerate(cells)
    ]
    widths = list(natural)
    excess = sum(widths) + _GAP * (len(widths) - 1) - width
    while excess > 0:
        give = [i for i in range(len(widths)) if widths[i] > floor[i]]
        if not give:
            break  # narrower than the words themselves: the terminal crops
        widest = max(give, key=lambda i: (widths[i], -i))
        step = min(excess, widths[widest] - floor[widest])
        if len(give) > 1:
            others = sorted((widths[i] for i in give if i != widest), reverse=True)
            step = min(step, max(1, widths[widest] - others[0]))
        widths[widest] -= step
        excess -= step
    return widths


def _rich_table(report: DiffReport, width: int) -> tuple[Table, int]:
    """Keys and numbers are read whole: a key never wraps, a vector wraps only between its
    elements. When six columns do not fit, the file a value came from goes on a dim line under
    its key. Returns the table and the width to print it at."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    rows = _rows(report)
    titles = columns(report)
    six = [[c, *(r[i] for r in rows)] for i, c in enumerate(titles)]
    source_apart = sum(_fit_widths(six, 10**6)) + _GAP * 5 > width
    if source_apart:
        keys = [f"{r[1]}\n{r[-1]}" if r[-1] != "-" else r[1] for r in rows]
        widths = _fit_widths([six[0], ["KEY", *keys], *six[2:-1]], width)
    else:
        widths = _fit_widths(six, width)
    table = Table(
        title=escape(_heading(report)),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        pad_edge=False,
        show_edge=False,
    )
    for column, column_width in zip(titles, widths, strict=False):
        table.add_column(column, width=column_width, overflow="fold")
    for row in rows:
        cells = [escape(cell) for cell in row]  # a file name is text, never rich markup
        style = _STYLES.get(row[0], "")
        status = f"[{style}]{cells[0]}[/]" if style else cells[0]
        if not source_apart:
            table.add_row(status, *cells[1:])
        elif row[-1] == "-":
            table.add_row(status, *cells[1:-1])
        else:
            table.add_row(status, f"{cells[1]}\n[dim]{cells[-1]}[/]", *cells[2:-1])
    # On a terminal narrower than the words themselves, lines run long rather than split a key.
    return table, max(width, sum(widths) + _GAP * (len(widths) - 1))


def render_rich(report: DiffReport, width: int | None = None) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=width, highlight=False, emoji=False)
    table, table_width = _rich_table(report, console.width)
    if table_width <= console.width:
        Console(
            file=buffer, force_terminal=True, width=table_width, highlight=False, emoji=False
        ).print(table)
    else:  # narrower than a key and its numbers: one block per key, as the plain text does
        width = max(console.width, MIN_WIDTH)
        lines = [
            *_wrapped(_heading(report), width),
            "",
            *_stacked(_rows(report), width, columns(report)),
        ]
        # wrapped by characters; rich folds what a wide character takes past the width in cells
        console.print("\n".join(lines), markup=False, overflow="fold")
    console.print("\n".join(_notes(report, console.width - 2)), markup=False)
    console.print("\n" + summary(report), markup=False)
    # rich pads a line to the width by cells; a combining mark takes none, so its padding
    # would pass the width by characters: a terminal needs no trailing blanks
    lines = buffer.getvalue().splitlines()
    return "".join(_TRAILING_BLANKS.sub("", line) + "\n" for line in lines)


# blanks at the end of a line, before any closing colour codes
_TRAILING_BLANKS = re.compile(r" +(?=(?:\x1b\[[0-9;]*m)*$)")


def render_markdown(report: DiffReport, renderer: Renderer) -> str:
    """A pull-request comment within GitHub's size limit: problems, findings and reasons lose
    rows first, the table of keys last."""
    template = renderer.env.get_template("diff.md.j2")
    context = {
        "report": report,
        "observed": {
            e.key: [
                *observed_lines(e.key, e.observed, True),
                *observed_lines(e.key, e.observed, None),
                *observed_lines(e.key, e.observed, False),
            ]
            for e in report.entries
            if e.observed
        },
        "static_only": static_only(report),
        "summary": summary(report),
        "heading": _heading(report),
        "columns": [c.lower() for c in columns(report)],
    }
    why = sum(1 for e in report.entries if e.status != "ok")
    findings = sum(1 for f in report.findings if f.severity != "info")
    counts = {"why": why, "findings": findings, "problems": len(report.problems)}

    def render(limits: Limits) -> str:
        shown = {name: limits.get(name) for name in (*counts, "entries")}
        return template.render(**context, limits=shown, fold=FOLD_ROWS)

    return fit_document(render, [counts, {"entries": len(report.entries)}])


def render_diff(
    report: DiffReport,
    fmt: str,
    renderer: Renderer,
    *,
    terminal: bool = False,
    width: int | None = None,
) -> str:
    """`width`: the plain text's, by default COLUMNS (a terminal's own is rich's to find)."""
    if fmt == "json":
        return dump_json(report.to_json_data())
    if fmt == "markdown":
        return render_markdown(report, renderer)
    if terminal:
        return render_rich(report)
    return render_plain(report, plain_width() if width is None else width)
