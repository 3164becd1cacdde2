"""Whether a path stays inside the tree it came from, every symlink resolved: the one check
every reader of a copied tree (`--root`, sysctl.d trees, nginx includes, kernel logs) uses."""

from __future__ import annotations

import os
from pathlib import Path


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with every symlink in it resolved, lies within `root` (resolved)."""
    try:
        real_root = os.path.realpath(root)
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    return os.path.commonpath([real_root, real]) == real_root
