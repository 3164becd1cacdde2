"""Whether a path stays inside the tree it came from, every symlink resolved: the one check
every reader of a copied tree (`--root`, sysctl.d trees, nginx includes, kernel logs) uses."""

from __future__ import annotations

import os
from pathlib import Path

from sysctl_advisor.model.documents import open_regular_file
from sysctl_advisor.model.errors import InputError


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with every symlink in it resolved, lies within `root` (resolved)."""
    try:
        real_root = os.path.realpath(root)
    except (OSError, ValueError):
        return False
    return within((real_root,), path)


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
