"""Whether a path stays inside the tree it came from, every symlink resolved: the one check
every reader of a copied tree (`--root`, sysctl.d trees, nginx includes, kernel logs) uses."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with every symlink in it resolved, lies within `root` (resolved)."""
    try:
        real_root = os.path.realpath(root)
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    return os.path.commonpath([real_root, real]) == real_root


def open_regular(path: Path, root: Path | None = None) -> int | None:
    """A descriptor to read `path` (non-blocking), or None: the name is opened O_PATH first,
    which runs no driver code (a device node in a copied tree is never opened), then it must
    be a regular file and, with `root`, lie inside it as that descriptor resolves (a link
    swapped in after a check by name is judged by what was opened); only then is it opened
    for reading, through the descriptor, so the file checked is the file read."""
    try:
        found = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(found).st_mode):
            return None
        if root is not None and not inside(root, Path(os.readlink(f"/proc/self/fd/{found}"))):
            return None
        return os.open(f"/proc/self/fd/{found}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    finally:
        os.close(found)
