"""Cache files that no run has used for UNUSED_SECONDS are removed when the advisor next writes
its cache, so upgrades and code changes do not pile up old caches.

Each cache file and template-code directory is named after the versions and the code that made
it, so a new version leaves the old ones behind, unused. A run that uses one refreshes its
modification time (at most once a day, `mark_used`), so the mtime says when it was last used.
`prune_unused` looks only in the private cache directory and removes only entries that:

* have a name the advisor gives its caches (the patterns below; anything else stays);
* are regular files, or template-code directories holding only Jinja's bytecode files;
* belong to the current user (as the directory itself must);
* were not used for UNUSED_SECONDS.

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
from pathlib import Path

UNUSED_SECONDS = 30 * 24 * 3600
_REFRESH_SECONDS = 24 * 3600

# What cache_files and the cache users name their files (and write_cache's temporary files).
_CACHE_FILE = re.compile(
    r"(?:expressions-py\d+-jinja[\w.+-]+\.marshal"
    r"|(?:specs|facts)-py\d+-[\w.+-]+\.(?:marshal|pickle)"
    r"|\.(?:expressions|specs|facts)-py\d+-[\w.+-]+\.tmp)\Z"
)
# plan_render's template-code directories and what jinja2.FileSystemBytecodeCache writes in them.
_TEMPLATE_DIRECTORY = re.compile(r"templates-jinja[\w.+-]+-[0-9a-f]{12}\Z")
_TEMPLATE_FILE = re.compile(r"__jinja2_[0-9a-f]{40}\.cache(?:\w+\.tmp)?\Z")


def mark_used(target: int | Path, info: os.stat_result | None = None) -> None:
    """Refresh the mtime of a cache file (an open descriptor) or directory that a run uses, when
    it is more than a day old; a failure only means it may be pruned later and rebuilt."""
    with contextlib.suppress(OSError):
        if info is None:
            info = os.stat(target) if isinstance(target, int) else os.lstat(target)
        if time.time() - info.st_mtime > _REFRESH_SECONDS:
            os.utime(target)


def _unused(info: os.stat_result, now: float) -> bool:
    return info.st_uid == os.geteuid() and now - info.st_mtime > UNUSED_SECONDS


def _pruned_template_directory(parent: int, name: str) -> bool:
    """Remove a template-code directory that holds only Jinja's bytecode files of ours."""
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        names = []
        for entry in os.scandir(fd):
            info = entry.stat(follow_symlinks=False)
            if not (
                _TEMPLATE_FILE.match(entry.name)
                and stat.S_ISREG(info.st_mode)
                and info.st_uid == os.geteuid()
            ):
                return False  # not only ours: the directory stays as it is
            names.append(entry.name)
        for checked in names:  # only what was checked; anything new since keeps the directory
            os.unlink(checked, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)
    return True


def prune_unused(directory: Path) -> int:
    """Remove the advisor's cache entries in `directory` that no run used for UNUSED_SECONDS;
    the number removed. Errors only leave an entry in place."""
    removed = 0
    now = time.time()
    try:
        parent = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        for entry in os.scandir(parent):
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if not _unused(info, now):
                    continue
                if stat.S_ISREG(info.st_mode) and _CACHE_FILE.match(entry.name):
                    os.unlink(entry.name, dir_fd=parent)
                    removed += 1
                elif (
                    stat.S_ISDIR(info.st_mode)
                    and _TEMPLATE_DIRECTORY.match(entry.name)
                    and _pruned_template_directory(parent, entry.name)
                ):
                    removed += 1
    finally:
        os.close(parent)
    return removed
