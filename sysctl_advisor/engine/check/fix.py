"""`check --fix`: the mechanical fixes, as data. Each fixable rule names the one function that
rewrites a line it reported; the function works from the line's own text again (never from
the finding's words) and returns None wherever the fix is not certain, so a file changed
since it was judged, or a line the fix cannot read the same way, is left as it is.

* `check.inline-comment`: where the kernel already drops the text from the `#` on (every
  field read, a blank before the `#`), the comment moves to its own line above: the kernel
  is handed the same fields, and the file says so. A comment that would then read as a
  suppression (`# sysctl-advisor: ...`) is not moved.
* `check.not-decimal`: each field the kernel stores, written as the decimal number it reads
  (`030` is 24, `0x10` is 16); the rest of the line as it was.
* `check.duplicate-key`: the earlier line of an integer key set again later in the same
  file is removed (the last assignment wins; the earlier never takes effect), where a later
  line sets every element and the target kernel takes it, within the key's range there
  (values.taken: a refused or short write leaves the earlier value, or some of its elements,
  in force under `sysctl -p`), and unless a suppression comment stands before it (removing the
  line would hand that comment to the next one).
* `check.duplicate-same-value`: the earlier of two lines writing the same value is removed,
  whatever the kernel does with it, unless a suppression comment stands before it.

One fix per line per pass: `fix_text` is run again on its own output by the command until
nothing more is fixed, so a line with two defects gets both fixes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from sysctl_advisor.engine.check.values import taken
from sysctl_advisor.model.kernel_write import FIELD, kernel_write
from sysctl_advisor.model.sysctl_conf import (
    C_SPACE,
    Assignment,
    advisor_comment,
    parse_conf_lines,
)

if TYPE_CHECKING:
    from sysctl_advisor.engine.check.findings import CheckFinding
    from sysctl_advisor.knowledge.catalog import Catalog
    from sysctl_advisor.model.kernel_version import KernelVersion


class Line(NamedTuple):
    """One line of the file being fixed, as the fix sees it."""

    lines: list[str]  # the whole file's lines (split at \n only), read-only
    at: int  # this line's index in `lines`
    assignment: Assignment
    catalog: Catalog
    # each key's last assignment in `lines`, parsed once for the whole file (a file of many
    # duplicates has a finding on each line)
    last: Mapping[str, Assignment]
    # each key's last assignment the target kernel takes (values.taken), by key: the line
    # that replaces an earlier one for certain under `sysctl -p`
    last_taken: Mapping[str, Assignment]
    target: tuple[KernelVersion | None, int | None]  # the kernel and word size judged for


# A fix: the line's replacement lines (none: the line goes), or None when not certain.
Fix = Callable[[Line], list[str] | None]


def _value_start(raw: str) -> int:
    """Where the value's text starts in a raw assignment line (after `=` and blanks)."""
    equals = raw.index("=")
    start = equals + 1
    while start < len(raw) and raw[start] in C_SPACE:
        start += 1
    return start


def _integer_write(line: Line) -> tuple[int, ...] | None:
    """The fields the kernel stores for this line when every one is read and nothing is
    refused; None for a key the catalog does not model as integers."""
    spec = line.catalog.keys.get(line.assignment.key)
    if spec is None or spec.is_text:
        return None
    write = kernel_write(line.assignment.value, spec.length)
    return write.stored if write.complete else None


def _move_comment(line: Line) -> list[str] | None:
    spec = line.catalog.keys.get(line.assignment.key)
    if spec is None or spec.is_text:
        return None  # a name or a path: the `#` is part of what the kernel is given
    write = kernel_write(line.assignment.value, spec.length)
    if write.refused or not write.ignored.startswith("#"):
        return None
    raw = line.lines[line.at]
    start = _value_start(raw)
    hash_at = raw.find("#", start)
    if hash_at <= start or raw[hash_at - 1] not in " \t":
        return None
    end = "\r" if raw.endswith("\r") else ""
    comment = raw[hash_at:].rstrip(C_SPACE)
    indent = raw[: len(raw) - len(raw.lstrip(" \t"))]
    if advisor_comment(comment) is not None:
        return None  # it would become a suppression
    return [indent + comment + end, raw[:hash_at].rstrip(" \t") + end]


def _decimal(line: Line) -> list[str] | None:
    stored = _integer_write(line)
    if stored is None:
        return None
    line_text = line.lines[line.at]
    end = "\r" if line_text.endswith("\r") else ""  # a CRLF file's line keeps its \r
    raw = line_text[: len(line_text) - len(end)]
    start = _value_start(raw)
    out, at = [raw[:start]], start
    for number, match in zip(stored, FIELD.finditer(raw, start), strict=False):
        out += [raw[at : match.start(1)], str(number)]
        at = match.end(1)
    out.append(raw[at:])
    fixed = "".join(out) + end
    return None if fixed == line_text else [fixed]


def _drop_earlier(line: Line) -> list[str] | None:
    """A line set again later to another value goes only where the target kernel takes one
    of the later values: where it may refuse them all, `sysctl -p` keeps this line's."""
    replacing = line.last_taken.get(line.assignment.key)
    if replacing is None or replacing.line <= line.at + 1:
        return None  # no later line the kernel is sure to take: `sysctl -p` may keep this one
    return _drop_repeated(line)


def _drop_repeated(line: Line) -> list[str] | None:
    """The line goes: the key is set again later in the file (to the same value, for
    check.duplicate-same-value: whatever the kernel does with that line, it does with this
    one), unless a suppression comment above speaks for it."""
    if line.assignment.is_glob:
        return None
    last = line.last.get(line.assignment.key)
    if last is None or last.line <= line.at + 1:
        return None  # the line the finding named is set again no more
    for at in range(line.at - 1, -1, -1):
        before = line.lines[at]
        text = before.strip(C_SPACE)
        if text and text[0] not in "#;":
            break  # the assignment before: comments above it are not this line's
        if advisor_comment(before) is not None:
            return None
    return []


FIXES: dict[str, Fix] = {
    "check.inline-comment": _move_comment,
    "check.not-decimal": _decimal,
    "check.duplicate-key": _drop_earlier,
    "check.duplicate-same-value": _drop_repeated,
}


def fixable(rule_id: str) -> bool:
    return rule_id in FIXES


def fix_text(
    text: str,
    findings: Iterable[CheckFinding],
    catalog: Catalog,
    judged: str | None = None,
    target: tuple[KernelVersion | None, int | None] = (None, None),
) -> tuple[str, list[CheckFinding]]:
    """`text` with the fixable findings on its lines fixed (at most one per line), and the
    findings fixed. `judged`, line for line, is what the fixes read where it is not `text`
    itself: a template's sysctl lines (its Jinja comments and statements blank), so a line
    inside `{# #}` never decides that an earlier one can go. `target`: the kernel release and
    word size the file is judged for, whose ranges say whether a later line is taken."""
    lines = text.split("\n")
    seen = lines if judged is None else judged.split("\n")
    if len(seen) != len(lines):
        return text, []
    replaced: dict[int, list[str]] = {}
    fixed: list[CheckFinding] = []
    last: dict[str, Assignment] | None = None
    last_taken: dict[str, Assignment] = {}
    for finding in findings:
        fix = FIXES.get(finding.id)
        if fix is None or finding.line is None or not 1 <= finding.line <= len(lines):
            continue
        index = finding.line - 1
        if index in replaced:
            continue
        if seen[index] != lines[index]:
            continue  # a line the template makes, not one written as the kernel reads it
        assignments, _, _ = parse_conf_lines(lines[index])
        if len(assignments) != 1 or assignments[0].key != finding.key:
            continue
        if last is None:
            every = parse_conf_lines("\n".join(seen))[0]
            last = {a.key: a for a in every}
            last_taken = {
                a.key: a for a in every if taken(catalog, a.key, a.value, *target) is not None
            }
        new = fix(Line(seen, index, assignments[0], catalog, last, last_taken, target))
        if new is not None:
            replaced[index] = new
            fixed.append(finding)
    if not replaced:
        return text, []
    out: list[str] = []
    for index, raw in enumerate(lines):
        out.extend(replaced.get(index, [raw]))
    return "\n".join(out), fixed


__all__ = ["FIXES", "fix_text", "fixable"]
