"""The advisor's own entries in its cache directory: listed (`sysctl-advisor cache`), removed
when no run has used them for UNUSED_SECONDS (when the advisor next writes its cache, so
upgrades and code changes do not pile up old caches), or all removed (`cache --clear`).

Each cache file and template-code directory is named after the versions and the code that made
it, so a new version leaves the old ones behind, unused. A run that uses one refreshes its
modification time (at most once a day, `mark_used`), so the mtime says when it was last used.
`remove_entries` looks only in the private cache directory and removes only entries that:

* have a name the advisor gives its caches (the patterns below; anything else stays);
* are regular files, or template-code directories holding only Jinja's bytecode files;
* belong to the current user (as the directory itself must);
* were not used for the time asked (UNUSED_SECONDS when pruning, none when clearing).

It never follows a symlink: entries are examined with lstat and removed through the directory's
file descriptor. A second installation (another Python, another version) that shares the cache
directory keeps its files as long as it runs at least once in that time.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from dataclasses import dataclass

UNUSED_SECONDS = 30 * 24 * 3600
_REFRESH_SECONDS = 24 * 3600

# What the cache modules name their files (and write_cache's temporary files); compiled on
# first use (re's own cache), by the rare run that prunes.
_CACHE_FILE = (
    r"(?:(?:expressions|templates)-py\d+-jinja[\w.+-]+\.marshal"
    r"|(?:specs|facts)-py\d+-[\w.+-]+\.(?:marshal|pickle)"
    r"|\.(?:expressions|templates|specs|facts)-py\d+-[\w.+-]+\.tmp)\Z"
)
# The template-code directories of earlier versions (jinja2.FileSystemBytecodeCache's files in
# them): never written now, pruned like the rest when no run has used them for a month.
_TEMPLATE_DIRECTORY = re.compile(r"templates-jinja[\w.+-]+-[0-9a-f]{12}\Z")
_TEMPLATE_FILE = re.compile(r"__jinja2_[0-9a-f]{40}\.cache(?:\w+\.tmp)?\Z")


def mark_used(fd: int, info: os.stat_result) -> None:
    """Refresh the mtime of a cache file a run uses (open at `fd`, `info` its fstat) when it
    is more than a day old; a failure only means it may be pruned later and rebuilt."""
    if time.time() - info.st_mtime > _REFRESH_SECONDS:
        with contextlib.suppress(OSError):
            os.utime(fd)


@dataclass(frozen=True)
class Entry:
    """One cache entry of the advisor's."""

    name: str
    kind: str  # what it holds, in words
    size: int  # bytes
    used: float  # when a run last used it (its mtime)


_KINDS = {
    "expressions": "compiled rule expressions",
    "templates": "compiled output templates",
    "specs": "validated knowledge files",
    "facts": "validated facts files and check configurations",
}


def _ours(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid()


def _template_directory_files(parent: int, name: str) -> tuple[int, list[str]] | None:
    """(its descriptor, its files) for a template-code directory that holds only Jinja's
    bytecode files of ours; None (nothing opened) for anything else."""
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    names = []
    try:
        for entry in os.scandir(fd):
            info = entry.stat(follow_symlinks=False)
            if not (
                _TEMPLATE_FILE.match(entry.name) and stat.S_ISREG(info.st_mode) and _ours(info)
            ):
                os.close(fd)
                return None  # not only ours: the directory stays as it is
            names.append(entry.name)
    except OSError:
        os.close(fd)
        raise
    return fd, names


def _walk(parent: int, remove_unused_for: float | None) -> list[Entry]:
    """Our entries in the directory open at `parent`; with `remove_unused_for`, those not used
    for that many seconds are removed (and returned). Errors only leave an entry in place."""
    found: list[Entry] = []
    now = time.time()
    with contextlib.suppress(OSError):
        for item in os.scandir(parent):
            with contextlib.suppress(OSError):
                info = item.stat(follow_symlinks=False)
                if not _ours(info):
                    continue
                unused = remove_unused_for is not None and now - info.st_mtime > remove_unused_for
                entry = Entry(item.name, _KINDS.get(item.name.split("-")[0].lstrip("."), "?"),
                              info.st_size, info.st_mtime)  # fmt: skip
                if stat.S_ISREG(info.st_mode) and re.match(_CACHE_FILE, item.name):
                    if unused:
                        os.unlink(item.name, dir_fd=parent)
                    if remove_unused_for is None or unused:
                        found.append(entry)
                elif stat.S_ISDIR(info.st_mode) and _TEMPLATE_DIRECTORY.match(item.name):
                    opened = _template_directory_files(parent, item.name)
                    if opened is None:
                        continue
                    fd, names = opened
                    try:
                        size = sum(os.stat(n, dir_fd=fd).st_size for n in names)
                        if unused:  # only what was checked: a new file keeps the directory
                            for checked in names:
                                os.unlink(checked, dir_fd=fd)
                    finally:
                        os.close(fd)
                    if unused:
                        os.rmdir(item.name, dir_fd=parent)
                    if remove_unused_for is None or unused:
                        found.append(Entry(item.name, _KINDS["templates"], size, info.st_mtime))
    return found


def entries(directory: int) -> list[Entry]:
    """The advisor's cache entries in the directory open at `directory`, by name."""
    return sorted(_walk(directory, None), key=lambda e: e.name)


def remove_entries(directory: int, unused_for: float = UNUSED_SECONDS) -> list[Entry]:
    """Remove the advisor's cache entries in the directory open at `directory` that no run
    used for `unused_for` seconds (all of them with a negative value); those removed."""
    return _walk(directory, unused_for)
