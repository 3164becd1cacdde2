"""Whether a path stays inside the tree it came from, every symlink resolved: the one check
every reader of a copied tree (`--root`, sysctl.d trees, nginx includes, kernel logs) uses;
and `named_beneath`, the one rule for a file a facts file names (a service's config)."""

from __future__ import annotations

import os
from collections.abc import Callable
from itertools import islice
from pathlib import Path, PurePosixPath

from sysctl_advisor.model.documents import open_regular_file
from sysctl_advisor.model.errors import InputError

LIVE_ROOT = Path("/")  # the host being read, not a copied tree


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with every symlink in it resolved, lies within `root` (resolved)."""
    try:
        real_root = os.path.realpath(root)
    except (OSError, ValueError):
        return False
    return within((real_root,), path)


# Every refusal of a name a facts file gives says this and nothing else: whether the file it
# points at exists, is a directory or is readable is none of the facts file's business.
OUTSIDE_FACTS_DIRECTORY = "outside the facts file's directory; not read"


def named_beneath(base: Path, name: str) -> Path | None:
    """The file a facts file names, `name` taken relative to `base` (the facts file's
    directory), or None when it is not a file beneath `base`: an absolute name, or one whose
    `..` climbs above `base`, is refused on its text alone, before anything is opened or
    looked at; the `..` of the rest are taken lexically (`a/../b` is `b` even where `a` is a
    link); and a name that reaches outside through a link in `base` is refused too."""
    path = PurePosixPath(name)
    if not name or path.is_absolute():
        return None
    parts: list[str] = []
    for part in path.parts:  # `.` and empty components are already gone
        if part != "..":
            parts.append(part)
        elif not parts:
            return None
        else:
            parts.pop()
    if not parts:
        return None  # the directory itself
    named = base.joinpath(*parts)
    return named if inside(base, named) else None


def within(real_roots: tuple[str, ...], path: Path) -> bool:
    """Whether `path`, every symlink in it resolved, lies within one of `real_roots` (already
    resolved: a reader judging many files against the same roots resolves them once)."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    return any(os.path.commonpath([root, real]) == root for root in real_roots)


def open_regular(path: Path, root: Path | None = None) -> int | None:
    """A descriptor to read the regular file `path`, or None: as open_regular_file (found
    O_PATH, so a special file is never opened), and with `root` only inside that tree as the
    descriptor resolves."""
    allowed = None if root is None else (lambda real: inside(root, real))
    try:
        return open_regular_file(path, allowed)
    except InputError:
        return None


def read_regular(path: Path, root: Path | None, limit: int) -> bytes | None:
    """The first `limit` bytes of the regular file `path` (open_regular), or None: read until
    the end or the limit, since one read of a /proc file gives about a page at most."""
    fd = open_regular(path, root)
    if fd is None:
        return None
    try:
        chunks: list[bytes] = []
        size = 0
        while size < limit and (chunk := os.read(fd, limit - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def listed_names(
    path: Path,
    allowed: Callable[[Path], bool] | None,
    limit: int,
    keep: Callable[[os.DirEntry[str]], bool] | None = None,
) -> list[str] | None:
    """The names of a directory's entries that `keep` accepts, the first `limit` listed; None
    when it is unreadable, or its real path (as the descriptor opened resolves) is one
    `allowed` refuses (a copied tree's: `partial(inside, root)`). Opened once and listed
    through the descriptor judged, never by its name again (a directory swapped for a link
    after a check by name would list the host's)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if allowed is not None and not allowed(Path(os.readlink(f"/proc/self/fd/{fd}"))):
            return None
        with os.scandir(fd) as entries:
            return [e.name for e in islice(entries, limit) if keep is None or keep(e)]
    except OSError:
        return None
    finally:
        os.close(fd)
