"""Count known kernel message families in the host's kernel log: choose the log, read it
(`kernel_log_input`), count its lines (`kernel_log_lines`).

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

The live `dmesg` is filtered by the window through CLOCK_MONOTONIC, which, like the kernel's
printk clock, stops during suspend. How times are read and what bounds the input is said in
`kernel_log_lines` and `kernel_log_input`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.kernel_log_input import (
    dmesg_output,
    file_lines,
    journal_output,
    split_lines,
    tail_note,
)
from sysctl_advisor.sources.kernel_log_lines import Format, Tally, tally_lines
from sysctl_advisor.sources.tree_paths import LIVE_ROOT, inside

KERN_LOG = "var/log/kern.log"
MESSAGES = "var/log/messages"


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

    def tally() -> Tally:
        return Tally(families, cutoff)

    if path is not None:
        return _read_given_file(path, tally(), clock)
    live = _resolve(root) == LIVE_ROOT
    first_empty: dict[str, Any] | None = None
    for source in _sources(root, live):
        result = source(tally(), clock)
        if result is None:
            continue
        if result["kernel_log"]["lines"] > 0:
            return result
        first_empty = first_empty or result
    return first_empty


# --- sources ------------------------------------------------------------------------------


_Source = Callable[[Tally, float], "dict[str, Any] | None"]


def _sources(root: Path, live: bool) -> list[_Source]:
    def file_source(relative: str, fmt: Format | None) -> _Source:
        def read(tally: Tally, now: float) -> dict[str, Any] | None:
            path = root / relative
            # in a copied tree, a file whose links lead out of it is not read
            allowed = None if live else (lambda real: inside(root, real))
            try:
                lines, truncated = file_lines(path, allowed)
            except InputError:
                return None
            tally_lines(lines, tally, now, fmt)
            return tally.result(str(path) + (tail_note() if truncated else ""))

        return read

    files = [file_source(KERN_LOG, None), file_source(MESSAGES, "syslog")]
    if not live:
        return files

    def journal(tally: Tally, now: float) -> dict[str, Any] | None:
        output = journal_output(tally.cutoff)  # None exactly when since_seconds is None
        if output is None:
            return None
        tally_lines(split_lines(output), tally, now, "json")
        return tally.result("journal")

    def dmesg(tally: Tally, now: float) -> dict[str, Any] | None:
        output = dmesg_output()
        if output is None:
            return None
        # printk times are seconds since boot on the clock CLOCK_MONOTONIC follows
        tally.booted = now - time.monotonic()
        tally_lines(split_lines(output), tally, now, "dmesg")
        return tally.result("dmesg")

    return [journal, *files, dmesg]


def _read_given_file(path: Path, tally: Tally, now: float) -> dict[str, Any]:
    try:
        lines, truncated = file_lines(path)
    except InputError as exc:
        raise InputError(exc.message, path=path, field="--kernel-log") from None
    tally_lines(lines, tally, now, None)
    return tally.result(str(path) + (tail_note() if truncated else ""))


def _resolve(path: Path) -> Path:
    return Path(os.path.realpath(path))
