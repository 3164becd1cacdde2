"""Count applications' start-up warnings (rules/catalog/app-messages.yaml) in their logs, into
the facts' `observed.app_events`.

Where the lines come from:

* the live host (`root` is /): the current boot's journal entries of the systemd units the
  families name (`journalctl -o json -b --unit=GLOB ...`), then the log files they name;
* a copied tree (`root` is not /): only the log files, under root, and not when their links
  lead out of the tree. No command is run.

Only the current boot is read from the journal, whatever window the kernel log is read over:
a start-up warning speaks of the settings in force when the application started, and every
service running now started in this boot. Log files are read whole up to their newest
MAX_LOG_BYTES; their lines carry no time the reader parses, so events from them have no
first_seen/last_seen. A start-up logged both to the journal and to a file counts twice.

Everything read is hostile, and bounded as the kernel log is (`kernel_log_input`): regular
files only (a FIFO cannot block), at most MAX_LOG_BYTES and MAX_LOG_LINES of each source, each
line cut to MAX_RAW_LINE bytes and matched in its first MAX_LINE characters, examples printable
and cut to 512 characters, the figure a line asks for (`wants`) at most 19 digits and
MAX_WANTS. Matching is plain substring search: linear in the input.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import MAX_WANTS
from sysctl_advisor.sources.kernel_log_input import file_lines, split_lines, units_journal_output
from sysctl_advisor.sources.kernel_log_lines import (
    LATEST,
    MAX_LINE,
    iso_utc,
    journal_entry,
    printable,
)
from sysctl_advisor.sources.tree_paths import LIVE_ROOT, inside

MAX_DIGITS = 19
MAX_UNIT = 255


@dataclass(frozen=True)
class _Reader:
    family: str
    match: tuple[str, ...]
    after: str | None
    scale: int


@dataclass
class _Found:
    count: int = 0
    first: float | None = None
    last: float | None = None
    example: str = ""
    example_time: float | None = None
    unit: str | None = None
    wants: int | None = None


@dataclass
class AppTally:
    """Counts per family over every source read."""

    readers: list[_Reader]
    found: dict[str, _Found] = field(default_factory=dict)

    def add(self, text: str, when: float | None, unit: str | None) -> None:
        if when is not None and not 0 <= when < LATEST:
            when = None  # a malformed time: the line counts, without a time
        text = text[:MAX_LINE]
        lowered = text.lower()
        for reader in self.readers:
            if any(s in lowered for s in reader.match):
                self._count(reader, text, lowered, when, unit)

    def _count(
        self, reader: _Reader, text: str, lowered: str, when: float | None, unit: str | None
    ) -> None:
        seen = self.found.setdefault(reader.family, _Found())
        seen.count += 1
        if when is not None:
            seen.first = when if seen.first is None else min(seen.first, when)
            seen.last = when if seen.last is None else max(seen.last, when)
        # The newest line is the example; without times, the last one read.
        if when is None or seen.example_time is None or when >= seen.example_time:
            seen.example, seen.example_time, seen.unit = text, when, unit
            seen.wants = wanted(lowered, reader.after, reader.scale)

    def events(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = []
        for reader in self.readers:
            seen = self.found.get(reader.family)
            if seen is None:
                continue
            event: dict[str, Any] = {
                "family": reader.family,
                "count": seen.count,
                "example": printable(seen.example),
            }
            if seen.first is not None and seen.last is not None:
                event["first_seen"] = iso_utc(seen.first)
                event["last_seen"] = iso_utc(seen.last)
            if seen.unit is not None:
                event["unit"] = seen.unit
            if seen.wants is not None:
                event["wants"] = seen.wants
            result.append(event)
        return result


def wanted(lowered: str, after: str | None, scale: int) -> int | None:
    """The first run of digits right after `after` in the line, times `scale`; None when the
    line has none there or the figure is out of bounds."""
    if after is None:
        return None
    start = lowered.find(after)
    if start < 0:
        return None
    start += len(after)
    end = start
    while end < len(lowered) and end - start <= MAX_DIGITS and "0" <= lowered[end] <= "9":
        end += 1
    digits = lowered[start:end]
    if not digits or len(digits) > MAX_DIGITS:
        return None
    value = int(digits) * scale
    return value if value <= MAX_WANTS else None


def read_app_log(
    readers: Mapping[str, Mapping[str, Any]], *, root: Path = LIVE_ROOT
) -> list[dict[str, Any]] | None:
    """The facts' `app_events`: per family found, count, first_seen/last_seen (journal lines
    only), the newest line as example, its unit or log file and the figure it asks for. An
    empty list when a source was read and nothing found; None when none could be read.

    `readers`: family id -> {match, wants ({after, scale} or None), units, logs}, as
    `knowledge.app_messages.app_readers` gives them."""
    tally = AppTally(_readers(readers))
    live = os.path.realpath(root) == str(LIVE_ROOT)
    read_any = False
    if live:
        output = units_journal_output(units_of(readers))
        if output is not None:
            read_any = True
            for raw in split_lines(output):
                _journal_entry(raw, tally)
    logs = dict.fromkeys(p for r in readers.values() for p in r.get("logs", ()))
    for relative in logs:
        path = root / relative
        # in a copied tree, a file whose links lead out of it is not read
        allowed = None if live else (lambda real: inside(root, real))
        try:
            lines, _ = file_lines(path, allowed)
        except InputError:
            continue  # missing, not a regular file, unreadable, or out of the tree
        read_any = True
        where = "/" + str(relative).lstrip("/")
        for raw in lines:
            tally.add(raw.decode("utf-8", errors="replace").rstrip("\r"), None, where)
    return tally.events() if read_any else None


def _readers(readers: Mapping[str, Mapping[str, Any]]) -> list[_Reader]:
    result: list[_Reader] = []
    for family, spec in readers.items():
        wants = spec.get("wants") or {}
        match = tuple(str(s).lower() for s in spec.get("match", ()) if s)
        after = str(wants["after"]).lower() if wants.get("after") else None
        result.append(_Reader(str(family), match, after, int(wants.get("scale", 1))))
    return result


def _journal_entry(raw: bytes, tally: AppTally) -> None:
    """One `journalctl -o json` entry, _SYSTEMD_UNIT kept when it is a plain unit name."""
    found = journal_entry(raw)
    if found is None:
        return
    entry, text, when = found
    if text is not None:
        tally.add(text, when, _unit(entry.get("_SYSTEMD_UNIT")))


def _unit(value: object) -> str | None:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_UNIT or not value.isascii():
        return None
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.@\\-")
    if not value[0].isalnum() or not set(value) <= allowed:
        return None
    return value


def units_of(readers: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    """The systemd units (names or globs) the families' lines are read from."""
    return tuple(dict.fromkeys(u for r in readers.values() for u in r.get("units", ())))
