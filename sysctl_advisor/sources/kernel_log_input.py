"""Obtain a kernel log's (or an application's log's) raw bytes, bounded, as lines: the end of
a regular file, or the output of journalctl or dmesg.

Everything read is hostile: only regular files are opened (O_NONBLOCK, so a FIFO cannot block),
at most MAX_LOG_BYTES of a file (its end, the newest lines) or of a command's output are read,
each line is cut to MAX_RAW_LINE bytes and only the newest MAX_LOG_LINES lines are kept, and a
command gets COMMAND_TIMEOUT seconds. Splitting into lines is linear in the input.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from sysctl_advisor.model.documents import open_regular_file
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.system_tools import system_env, system_program

MAX_LOG_BYTES = 64 * 1024 * 1024  # of a file (its end) or of a command's output
MAX_RAW_LINE = 64 * 1024  # bytes of one line kept (a journal JSON entry holds many fields)
MAX_JOURNAL_ENTRIES = 200_000
MAX_LOG_LINES = 1_000_000  # lines of a file or of dmesg kept (the newest): bounds memory and time
COMMAND_TIMEOUT = 20.0  # seconds for journalctl or dmesg
_CHUNK = 1 << 20


def journal_output(since: float | None) -> bytes | None:
    """The journal's kernel entries as `journalctl -o json` lines, newest first: the current
    boot's (`journalctl -k`), or with `since` (epoch seconds) those of every boot from then on.
    None or empty as for _run."""
    argv = ["journalctl", "-o", "json", "--no-pager", "-q", "-r"]
    argv += ["-n", str(MAX_JOURNAL_ENTRIES)]
    if since is None:
        argv.append("-k")  # the current boot's kernel messages
    else:
        argv += ["_TRANSPORT=kernel", f"--since=@{int(since)}"]
    return _run(argv)


def units_journal_output(units: tuple[str, ...]) -> bytes | None:
    """The current boot's journal entries of the systemd units named (names or globs, which
    journalctl matches against the units in the journal) as `journalctl -o json` lines,
    newest first; None or empty as for _run, None without units."""
    if not units:
        return None
    argv = ["journalctl", "-o", "json", "--no-pager", "-q", "-r", "-b"]
    argv += ["-n", str(MAX_JOURNAL_ENTRIES)]
    argv += [f"--unit={unit}" for unit in units]  # one argument each: never an option
    return _run(argv)


def dmesg_output() -> bytes | None:
    """The `dmesg` command's output; None or empty as for _run."""
    return _run(["dmesg"])


def tail_note() -> str:
    """Added to a source's name when only its newest lines were read."""
    return f" (its newest lines: at most {MAX_LOG_BYTES / 2**20:g} MiB, {MAX_LOG_LINES:,} lines)"


def file_lines(
    path: Path, allowed: Callable[[Path], bool] | None = None
) -> tuple[list[bytes], bool]:
    """The lines of a regular file's last MAX_LOG_BYTES, each cut to MAX_RAW_LINE bytes, and
    whether the file was longer. Opened once (open_regular_file: a FIFO or a device is refused
    unopened, and with `allowed` a file whose real path, as opened, it refuses); InputError
    with the reason otherwise."""
    fd = open_regular_file(path, allowed)
    try:
        info = os.fstat(fd)
        start = max(0, info.st_size - MAX_LOG_BYTES)
        if start:
            os.lseek(fd, start, os.SEEK_SET)
        newest = deque(_bounded_lines(_chunks(fd), skip_first=start > 0), maxlen=MAX_LOG_LINES + 1)
        cut = len(newest) > MAX_LOG_LINES
        if cut:
            newest.popleft()
        return list(newest), start > 0 or cut
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
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


def split_lines(output: bytes) -> list[bytes]:
    """A command's output as lines, bounded as a file's are."""
    return list(deque(_bounded_lines(iter((output,))), maxlen=MAX_LOG_LINES))


def _run(argv: list[str]) -> bytes | None:
    """A command's output, at most MAX_LOG_BYTES and COMMAND_TIMEOUT seconds of it (complete
    lines only); None when the command is missing, or fails or hangs without output (dmesg
    refused, no journal). Empty bytes: it ran and printed nothing (an empty journal). The
    command is the system's own, from the system directories with the system environment
    (system_tools), never one the caller's PATH or environment chose."""
    program = system_program(argv[0])
    if program is None:
        return None
    try:
        proc = subprocess.Popen(
            [program, *argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=system_env(),
            cwd="/",
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
