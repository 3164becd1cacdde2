"""Parse kernel log lines and count the known message families in them, into the facts'
`kernel_events`, `kernel_log` and `kernel_messages`.

The formats: journal JSON lines (`journalctl -o json`), syslog lines (`Nov 22 10:00:00 host
kernel: …` or RFC 3339 `2026-11-22T10:00:00.123456+00:00 host kernel: …`, only the `kernel:`
lines), and dmesg output (`[12345.678901] …`, `dmesg -T`'s `[Sat Nov 22 10:00:00 2026] …`,
`dmesg --time-format=iso`, or no timestamps at all). Unless the caller names the format, it is
taken from the first non-empty line.

Timestamps (`first_seen`, `last_seen`, `kernel_log.since`) are ISO 8601 UTC, and only where a
line carries a wall-clock time, or where the boot's wall-clock time is known: dmesg's
`[seconds since boot]` is not one, so events read from a saved dmesg file have no
first_seen/last_seen, and a `since_seconds` window cannot be applied to it (`kernel_log.since`
is then absent); the live dmesg's times are the boot's wall-clock time (`Tally.booted`, now
less CLOCK_MONOTONIC, the clock printk's times follow while the host does not suspend) plus
the seconds since boot. Syslog lines without a year are taken in this machine's time
zone, in the latest year that does not put them more than a day after `now`.

The lines are hostile: a line is matched in its first MAX_LINE characters, and examples are
made printable and cut to MAX_EXAMPLE characters. Matching is plain substring search: linear in
the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, Literal

from sysctl_advisor.model.text_escape import one_line

MAX_LINE = 4096  # characters of a message matched against the families
MAX_EXAMPLE = 512  # characters of an example (the facts model's limit)
DAY = 86400.0
LATEST = 253402214400.0  # 9999-12-31: times beyond cannot be written in ISO 8601

Format = Literal["json", "syslog", "dmesg"]

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    )
}
# `Nov 22 10:00:00 host kernel: text`; the tag may carry a pid (`kernel[0]:` is not the kernel's
# own form, but some relays write it).
_BSD_SYSLOG = re.compile(
    r"(?P<mon>[A-Z][a-z]{2}) (?P<day>[ 0-9]?[0-9]) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?:\.[0-9]{1,9})? (?P<host>[^\s:]+) (?P<tag>[^\s:\[]+)(?:\[[0-9]{1,10}\])?:(?: |$)"
)
_ISO = (
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})T(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?:[.,](?P<frac>[0-9]{1,9}))?(?P<tz>Z|[+-][0-9]{2}:?[0-9]{2})"
)
_RFC3339_SYSLOG = re.compile(
    _ISO + r" (?P<host>[^\s:]+) (?P<tag>[^\s:\[]+)(?:\[[0-9]{1,10}\])?:(?: |$)"
)
_DMESG_ISO = re.compile(r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})T(?P<time>[0-9:]{8}),[0-9]+")
_ISO_PREFIX = re.compile(_ISO + r" ?")
# `[  601.749973]`, with CONFIG_PRINTK_CALLER `[  601.749973][T19113]` (thread) or `[C1]` (CPU)
_DMESG_UPTIME = re.compile(r"\[ *(?P<uptime>[0-9]{1,12}\.[0-9]{1,9})\](?:\[ *[TC][0-9]{1,10}\])? ?")
_DMESG_CTIME = re.compile(
    r"\[(?:[A-Z][a-z]{2}) (?P<mon>[A-Z][a-z]{2}) +(?P<day>[0-9]{1,2}) "
    r"(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}) (?P<year>[0-9]{4})\] ?"
)


@dataclass
class _Family:
    count: int = 0
    first: float | None = None
    last: float | None = None
    example: str = ""
    example_time: float | None = None


@dataclass
class Tally:
    """Counts per family over the kernel lines of one source."""

    matchers: list[tuple[str, tuple[str, ...]]]
    cutoff: float | None  # epoch seconds; lines older are outside the window
    booted: float | None = None  # the boot's epoch seconds (live dmesg): uptime to a time
    lines: int = 0
    window_applied: bool = True  # every line read had a time the window could be applied to
    found: dict[str, _Family] = field(default_factory=dict)

    def add(self, text: str, when: float | None, uptime: float | None = None) -> None:
        if when is None and uptime is not None and self.booted is not None:
            when = self.booted + uptime
        if when is not None and not 0 <= when < LATEST:
            when = None  # a malformed time: the line counts, without a time
        if when is not None:
            if self.cutoff is not None and when < self.cutoff:
                return
        elif self.cutoff is not None:
            self.window_applied = False
        self.lines += 1
        text = text[:MAX_LINE]
        lowered = text.lower()
        for family, substrings in self.matchers:
            if any(s in lowered for s in substrings):
                self._count(family, text, when)

    def _count(self, family: str, text: str, when: float | None) -> None:
        seen = self.found.get(family)
        if seen is None:
            seen = self.found[family] = _Family()
        seen.count += 1
        if when is not None:
            seen.first = when if seen.first is None else min(seen.first, when)
            seen.last = when if seen.last is None else max(seen.last, when)
        # The newest line is the example; without times, the last one read.
        if when is None or seen.example_time is None or when >= seen.example_time:
            seen.example = text
            seen.example_time = when

    def result(self, source: str) -> dict[str, Any]:
        events: list[dict[str, Any]] = []
        examples: list[str] = []
        for family, _ in self.matchers:
            seen = self.found.get(family)
            if seen is None:
                continue
            example = printable(seen.example)
            event: dict[str, Any] = {"family": family, "count": seen.count, "example": example}
            if seen.first is not None and seen.last is not None:
                event["first_seen"] = iso_utc(seen.first)
                event["last_seen"] = iso_utc(seen.last)
            events.append(event)
            examples.append(example)
        log: dict[str, Any] = {"source": printable(source, 1024), "lines": self.lines}
        if self.cutoff is not None and self.window_applied:
            log["since"] = iso_utc(self.cutoff)
        return {"kernel_events": events, "kernel_log": log, "kernel_messages": examples}


# --- line formats ---------------------------------------------------------------------------


def tally_lines(lines: Sequence[bytes], tally: Tally, now: float, fmt: Format | None) -> None:
    """Count every line of `lines` in `fmt` (None: taken from the first non-empty line)."""
    if fmt is None:
        fmt = _detect(lines)
    if fmt == "json":
        for raw in lines:
            _journal_entry(raw, tally)
        return
    this_year = _year_of(now)
    previous: _Stamp = (None, None)
    for raw in lines:
        text = raw.decode("utf-8", errors="replace")
        if fmt == "syslog":
            _syslog_line(text, tally, now, this_year)
        else:
            previous = _dmesg_line(text, tally, previous)


def _detect(lines: Sequence[bytes]) -> Format:
    for raw in lines:
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            continue
        if text.startswith("{"):
            return "json"
        if _BSD_SYSLOG.match(text) or _RFC3339_SYSLOG.match(text):
            return "syslog"
        return "dmesg"
    return "dmesg"


def journal_entry(raw: bytes) -> tuple[dict[str, Any], str | None, float | None] | None:
    """One `journalctl -o json` entry, its MESSAGE as text and its time (None: not an entry).
    MESSAGE is a string, an array of byte values (text that is not UTF-8) or null (a field
    above 4096 bytes: text None); __REALTIME_TIMESTAMP is in microseconds."""
    if not raw.strip():
        return None
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):
        return None  # not a JSON line (or cut at kernel_log_input.MAX_RAW_LINE)
    if not isinstance(entry, dict):
        return None
    message = entry.get("MESSAGE")
    text: str | None = None
    if isinstance(message, list):
        if len(message) > MAX_LINE * 4 or not all(
            isinstance(b, int) and 0 <= b <= 255 for b in message
        ):
            return None
        text = bytes(message).decode("utf-8", errors="replace")
    elif isinstance(message, str):
        text = message
    stamp = entry.get("__REALTIME_TIMESTAMP")
    when = None
    if isinstance(stamp, str) and stamp.isascii() and stamp.isdigit() and len(stamp) <= 19:
        when = int(stamp) / 1e6
    return entry, text, when


def _journal_entry(raw: bytes, tally: Tally) -> None:
    """A kernel line of the journal (null MESSAGE: longer than the journal prints, still a
    kernel line read)."""
    found = journal_entry(raw)
    if found is None:
        return
    entry, text, when = found
    transport = entry.get("_TRANSPORT")
    if transport is not None and transport != "kernel":
        return  # a userspace entry of a whole-journal export
    tally.add(text or "", when)


def _syslog_line(text: str, tally: Tally, now: float, this_year: int) -> None:
    match = _BSD_SYSLOG.match(text)
    if match is not None:
        if match["tag"] != "kernel":
            return
        when = _bsd_time(match["mon"], match["day"].strip(), match["time"], now, this_year)
        _kernel_message(text[match.end() :], tally, when)
        return
    match = _RFC3339_SYSLOG.match(text)
    if match is not None and match["tag"] == "kernel":
        _kernel_message(text[match.end() :], tally, _iso_time(match))


def _kernel_message(text: str, tally: Tally, when: float | None) -> None:
    """A syslog line's message, without the `[uptime]` klogd or rsyslog's imklog put first."""
    uptime = _DMESG_UPTIME.match(text)
    tally.add(text[uptime.end() :] if uptime else text, when)


_Stamp = tuple[float | None, float | None]  # (wall-clock time, seconds since boot)


def _dmesg_line(text: str, tally: Tally, previous: _Stamp) -> _Stamp:
    """Count one dmesg line; return its time for the next line. A line without a time of its
    own after one with a time continues that message (dmesg indents the further lines of a
    multi-line message) and takes its time."""
    if not text.strip():
        return previous
    match = _DMESG_UPTIME.match(text)
    if match is not None:
        stamp: _Stamp = (None, float(match["uptime"]))
    elif (match := _DMESG_CTIME.match(text)) is not None:
        when = _local_time(int(match["year"]), match["mon"], match["day"], match["time"])
        stamp = (when, None)
    elif (match := _ISO_PREFIX.match(text)) is not None and _DMESG_ISO.match(text):
        stamp = (_iso_time(match), None)
    else:  # a continuation line; or `dmesg -t`, `journalctl -o cat`: no time at all
        tally.add(text.strip(), *previous)
        return previous
    tally.add(text[match.end() :], *stamp)
    return stamp


# --- times ----------------------------------------------------------------------------------


def _year_of(now: float) -> int:
    return datetime.fromtimestamp(now).year


def _bsd_time(month: str, day: str, clock: str, now: float, this_year: int) -> float | None:
    """A syslog time without a year, in this machine's time zone, in the latest year that does
    not put it more than a day after `now` (a day of clock skew between hosts is allowed: a
    line of Jan 1 read on Dec 31 is next year's)."""
    for year in range(this_year + 1, this_year - 8, -1):
        when = _local_time(year, month, day, clock)
        if when is not None and when <= now + DAY:
            return when
    return None


@lru_cache(maxsize=4096)  # a log repeats the same second many times
def _local_time(year: int, month: str, day: str, clock: str) -> float | None:
    number = _MONTHS.get(month)
    if number is None:
        return None
    try:
        hour, minute, second = (int(part) for part in clock.split(":"))
        return datetime(year, number, int(day), hour, minute, min(second, 59)).timestamp()
    except (ValueError, OverflowError):
        return None


def _iso_time(match: re.Match[str]) -> float | None:
    try:
        year, month, day = (int(part) for part in match["date"].split("-"))
        hour, minute, second = (int(part) for part in match["time"].split(":"))
        zone = match["tz"]
        offset = timedelta(0)
        if zone != "Z":
            digits = zone[1:].replace(":", "")
            offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
            if zone[0] == "-":
                offset = -offset
        moment = datetime(year, month, day, hour, minute, min(second, 59), tzinfo=timezone(offset))
        return moment.timestamp()
    except (ValueError, OverflowError):
        return None


def iso_utc(when: float) -> str:
    """Epoch seconds as ISO 8601 UTC to the second (the facts' Timestamp)."""
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def printable(text: str, limit: int = MAX_EXAMPLE) -> str:
    """One printable line of at most `limit` characters: tabs and line breaks become spaces,
    other control, format or separator characters visible escapes (\\x1b)."""
    text = one_line(text.translate(_BLANKS).strip())
    return text[:limit].rstrip()


_BLANKS = str.maketrans("\t\n\r", "   ")
