"""Count known kernel message families in the host's kernel log.

Where the log comes from:

* `path` (the `--kernel-log FILE` option): that file only, in whichever format it holds —
  journal JSON lines (`journalctl -o json`), syslog lines (`Nov 22 10:00:00 host kernel: …` or
  RFC 3339 `2026-11-22T10:00:00.123456+00:00 host kernel: …`, only the `kernel:` lines), or
  dmesg output (`[12345.678901] …`, `dmesg -T`'s `[Sat Nov 22 10:00:00 2026] …`,
  `dmesg --time-format=iso`, or no timestamps at all). The format is taken from the first
  non-empty line.
* the live host (`root` is /): the journal (`journalctl`), else /var/log/kern.log, else the
  `kernel:` lines of /var/log/messages, else the `dmesg` command (which a kernel with
  kernel.dmesg_restrict = 1 refuses without CAP_SYSLOG). A source that cannot be read or holds
  no kernel line gives way to the next. Without `since_seconds` the journal gives the current
  boot (`journalctl -k`); with it, every boot in the window (`_TRANSPORT=kernel --since`).
  Rotated files (kern.log.1 …) are not read.
* a copied tree (`root` is not /): only root/var/log/kern.log, else root/var/log/messages, and
  not when their links lead out of the tree.

Timestamps (`first_seen`, `last_seen`, `kernel_log.since`) are ISO 8601 UTC, and only where a
line carries a wall-clock time: dmesg's `[seconds since boot]` is not one, so events read from
such lines have no first_seen/last_seen, and a `since_seconds` window cannot be applied to a
saved dmesg file (`kernel_log.since` is then absent). The live `dmesg` is filtered by the
window through CLOCK_MONOTONIC, which, like the kernel's printk clock, stops during suspend.
Syslog lines without a year are taken in this machine's time zone, in the latest year that
does not put them more than a day after `now`.

Everything read is hostile: only regular files are opened (O_NONBLOCK, so a FIFO cannot block),
at most MAX_LOG_BYTES of a file (its end, the newest lines) or of a command's output are read,
a line is matched in its first MAX_LINE characters, and examples are made printable and cut to
MAX_EXAMPLE characters. Matching is plain substring search: linear in the input.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import stat
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.sources.tree_paths import inside

LIVE_ROOT = Path("/")
KERN_LOG = "var/log/kern.log"
MESSAGES = "var/log/messages"
MAX_LOG_BYTES = 64 * 1024 * 1024  # of a file (its end) or of a command's output
MAX_RAW_LINE = 64 * 1024  # bytes of one line kept (a journal JSON entry holds many fields)
MAX_LINE = 4096  # characters of a message matched against the families
MAX_EXAMPLE = 512  # characters of an example (the facts model's limit)
MAX_JOURNAL_ENTRIES = 200_000
MAX_LOG_LINES = 1_000_000  # lines of a file or of dmesg kept (the newest): bounds memory and time
COMMAND_TIMEOUT = 20.0  # seconds for journalctl or dmesg
DAY = 86400.0
LATEST = 253402214400.0  # 9999-12-31: times beyond cannot be written in ISO 8601
_CHUNK = 1 << 20

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
class _Tally:
    """Counts per family over the kernel lines of one source."""

    matchers: list[tuple[str, tuple[str, ...]]]
    cutoff: float | None  # epoch seconds; lines older are outside the window
    uptime_cutoff: float | None = None  # the same, in seconds since boot (live dmesg)
    lines: int = 0
    window_applied: bool = True  # every line read had a time the window could be applied to
    found: dict[str, _Family] = field(default_factory=dict)

    def add(self, text: str, when: float | None, uptime: float | None = None) -> None:
        if when is not None and not 0 <= when < LATEST:
            when = None  # a malformed time: the line counts, without a time
        if when is not None:
            if self.cutoff is not None and when < self.cutoff:
                return
        elif uptime is not None and self.uptime_cutoff is not None:
            if uptime < self.uptime_cutoff:
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


def read_kernel_log(
    matchers: Mapping[str, Sequence[str]],
    *,
    path: Path | None = None,
    since_seconds: int | None = None,
    root: Path = LIVE_ROOT,
    now: float | None = None,
) -> dict[str, Any] | None:
    """A fragment of the facts' `observed` mapping: `kernel_events` (per family found: count,
    first_seen, last_seen, example), `kernel_log` (source, since, lines) and `kernel_messages`
    (one example line per family found). None when no kernel log could be read.

    `path` is read alone and must be a readable regular file (InputError otherwise, for
    `--kernel-log`). `since_seconds` keeps the lines of that many seconds before `now`."""
    if since_seconds is not None and since_seconds < 0:
        raise InputError("must not be negative", field="--since")
    clock = time.time() if now is None else now
    cutoff = clock - since_seconds if since_seconds is not None else None
    families = [
        (str(family), tuple(s.lower() for s in substrings if s))
        for family, substrings in matchers.items()
    ]

    def tally() -> _Tally:
        return _Tally(families, cutoff)

    if path is not None:
        return _read_given_file(path, tally(), clock)
    live = _resolve(root) == LIVE_ROOT
    first_empty: dict[str, Any] | None = None
    for source in _sources(root, live, since_seconds):
        result = source(tally(), clock)
        if result is None:
            continue
        if result["kernel_log"]["lines"] > 0:
            return result
        first_empty = first_empty or result
    return first_empty


# --- sources ------------------------------------------------------------------------------


_Source = Callable[[_Tally, float], "dict[str, Any] | None"]


def _sources(root: Path, live: bool, since_seconds: int | None) -> list[_Source]:
    def file_source(relative: str, fmt: Format | None) -> _Source:
        def read(tally: _Tally, now: float) -> dict[str, Any] | None:
            path = root / relative
            if not live and not inside(root, path):
                return None  # its links lead out of the copied tree
            try:
                lines, truncated = _file_lines(path)
            except OSError:
                return None
            _tally_lines(lines, tally, now, fmt)
            return tally.result(str(path) + (_tail_note() if truncated else ""))

        return read

    files = [file_source(KERN_LOG, None), file_source(MESSAGES, "syslog")]
    if not live:
        return files

    def journal(tally: _Tally, now: float) -> dict[str, Any] | None:
        argv = ["journalctl", "-o", "json", "--no-pager", "-q", "-r"]
        argv += ["-n", str(MAX_JOURNAL_ENTRIES)]
        if since_seconds is None:
            argv.append("-k")  # the current boot's kernel messages
        else:
            assert tally.cutoff is not None
            argv += ["_TRANSPORT=kernel", f"--since=@{int(tally.cutoff)}"]
        output = _run(argv)
        if output is None:
            return None
        _tally_lines(_split(output), tally, now, "json")
        return tally.result("journal")

    def dmesg(tally: _Tally, now: float) -> dict[str, Any] | None:
        output = _run(["dmesg"])
        if output is None:
            return None
        if tally.cutoff is not None:
            # printk times are seconds since boot on the clock CLOCK_MONOTONIC follows
            tally.uptime_cutoff = time.monotonic() - (now - tally.cutoff)
        _tally_lines(_split(output), tally, now, "dmesg")
        return tally.result("dmesg")

    return [journal, *files, dmesg]


def _read_given_file(path: Path, tally: _Tally, now: float) -> dict[str, Any]:
    try:
        lines, truncated = _file_lines(path)
    except IsADirectoryError:
        raise InputError(
            "is a directory, expected a file", path=path, field="--kernel-log"
        ) from None
    except FileNotFoundError:
        raise InputError("no such file", path=path, field="--kernel-log") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(f"cannot read: {reason}", path=path, field="--kernel-log") from None
    _tally_lines(lines, tally, now, None)
    return tally.result(str(path) + (_tail_note() if truncated else ""))


def _tail_note() -> str:
    return f" (its newest lines: at most {MAX_LOG_BYTES / 2**20:g} MiB, {MAX_LOG_LINES:,} lines)"


class _NotRegular(OSError):
    pass


def _file_lines(path: Path) -> tuple[list[bytes], bool]:
    """The lines of a regular file's last MAX_LOG_BYTES, each cut to MAX_RAW_LINE bytes, and
    whether the file was longer. Raises OSError (IsADirectoryError, _NotRegular …)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "is a directory, expected a file")
        if not stat.S_ISREG(info.st_mode):
            raise _NotRegular(0, "not a regular file (a FIFO, device or socket)")
        start = max(0, info.st_size - MAX_LOG_BYTES)
        if start:
            os.lseek(fd, start, os.SEEK_SET)
        newest = deque(_bounded_lines(_chunks(fd), skip_first=start > 0), maxlen=MAX_LOG_LINES + 1)
        cut = len(newest) > MAX_LOG_LINES
        if cut:
            newest.popleft()
        return list(newest), start > 0 or cut
    finally:
        os.close(fd)


def _chunks(fd: int) -> Iterator[bytes]:
    left = MAX_LOG_BYTES  # the file may grow while it is read
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _bounded_lines(chunks: Iterator[bytes], skip_first: bool = False) -> Iterator[bytes]:
    """Lines split on \\n, each cut to MAX_RAW_LINE bytes: memory stays bounded whatever the
    longest line, and the work is linear in the input."""
    pending: list[bytes] = []
    kept = 0
    skipping = skip_first  # the first line of a tail is a partial one
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping and kept < MAX_RAW_LINE:
                piece = piece[: MAX_RAW_LINE - kept]
                pending.append(piece)
                kept += len(piece)
            if end < 0:
                break
            if not skipping:
                yield b"".join(pending)
            pending, kept, skipping = [], 0, False
            start = end + 1
    if kept and not skipping:  # a last line without a newline
        yield b"".join(pending)


def _split(output: bytes) -> list[bytes]:
    return list(deque(_bounded_lines(iter((output,))), maxlen=MAX_LOG_LINES))


def _run(argv: list[str]) -> bytes | None:
    """A command's output, at most MAX_LOG_BYTES and COMMAND_TIMEOUT seconds of it (complete
    lines only); None when the command is missing, or fails or hangs without output (dmesg
    refused, no journal). Empty bytes: it ran and printed nothing (an empty journal)."""
    program = shutil.which(argv[0])
    if program is None:
        return None
    env = {
        **os.environ,
        "SYSTEMD_COLORS": "0",
        "SYSTEMD_PAGER": "cat",
        "PAGER": "cat",
        "LC_ALL": "C",
    }
    try:
        proc = subprocess.Popen(
            [program, *argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
    except OSError:
        return None
    assert proc.stdout is not None
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + COMMAND_TIMEOUT
    complete = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if not selector.select(left):
                    continue
                chunk = os.read(proc.stdout.fileno(), _CHUNK)
                if not chunk:
                    complete = True
                    break
                chunks.append(chunk[: MAX_LOG_BYTES - size])
                size += len(chunks[-1])
                if size >= MAX_LOG_BYTES:
                    break
    finally:
        if complete:  # output closed: let it exit with its own status
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.5, deadline - time.monotonic()))
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
    output = b"".join(chunks)
    if not complete:  # cut short: drop the partial last line
        output = output[: output.rfind(b"\n") + 1]
    if not output and (proc.returncode != 0 or not complete):
        return None  # refused, failed or hung without a line
    return output


def _resolve(path: Path) -> Path:
    return Path(os.path.realpath(path))


# --- line formats ---------------------------------------------------------------------------


def _tally_lines(lines: Sequence[bytes], tally: _Tally, now: float, fmt: Format | None) -> None:
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


def _journal_entry(raw: bytes, tally: _Tally) -> None:
    """One `journalctl -o json` entry: MESSAGE is a string, an array of byte values (text
    that is not UTF-8) or null (a field above 4096 bytes); __REALTIME_TIMESTAMP is in
    microseconds."""
    if not raw.strip():
        return
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):
        return  # not a JSON line (or cut at MAX_RAW_LINE)
    if not isinstance(entry, dict):
        return
    transport = entry.get("_TRANSPORT")
    if transport is not None and transport != "kernel":
        return  # a userspace entry of a whole-journal export
    message = entry.get("MESSAGE")
    if isinstance(message, list):
        if not all(isinstance(b, int) and 0 <= b <= 255 for b in message):
            return
        text = bytes(message).decode("utf-8", errors="replace")
    elif isinstance(message, str):
        text = message
    else:
        text = ""  # null: longer than the journal prints; still a kernel line read
    stamp = entry.get("__REALTIME_TIMESTAMP")
    when = None
    if isinstance(stamp, str) and stamp.isascii() and stamp.isdigit() and len(stamp) <= 19:
        when = int(stamp) / 1e6
    tally.add(text, when)


def _syslog_line(text: str, tally: _Tally, now: float, this_year: int) -> None:
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


def _kernel_message(text: str, tally: _Tally, when: float | None) -> None:
    """A syslog line's message, without the `[uptime]` klogd or rsyslog's imklog put first."""
    uptime = _DMESG_UPTIME.match(text)
    tally.add(text[uptime.end() :] if uptime else text, when)


_Stamp = tuple[float | None, float | None]  # (wall-clock time, seconds since boot)


def _dmesg_line(text: str, tally: _Tally, previous: _Stamp) -> _Stamp:
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
