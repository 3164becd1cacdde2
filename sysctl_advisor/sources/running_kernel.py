"""Read the running kernel as `check` targets it (model.running_kernel): the names under
/proc/sys, walked by descriptor without following links and within a bound, one interface
directory of each per-interface tree (every interface has the same keys), the congestion
controls offered and the modules on disk."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sysctl_advisor.model.running_kernel import INTERFACE_DIRECTORIES, RunningKernel
from sysctl_advisor.sources.module_lists import kernel_modules

# /proc/sys lists about 1,500 keys; a node with thousands of interfaces lists more, but only
# one interface of each tree is walked. Past this many names the listing is not used.
MAX_NAMES = 50_000
_DEPTH = 8
_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# An interface directory every per-interface tree has; another one is walked too (neigh's
# `default` lacks the per-device keys).
_SAMPLES = ("all", "default", "lo")
_OFFERED = "net.ipv4.tcp_available_congestion_control"
_TEXT = 4096  # what of a listing file is read


def _text(fd: int, name: str) -> str:
    """A small file under /proc/sys, opened by descriptor and read within a bound."""
    try:
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(file).st_mode):
            return ""
        return os.read(file, _TEXT).decode("ascii", "replace")
    except OSError:
        return ""
    finally:
        os.close(file)


def _walk(
    fd: int, parts: tuple[str, ...], keys: set[str], read_only: set[str], texts: dict[str, str]
) -> None:
    names = sorted(os.listdir(fd))
    if parts in INTERFACE_DIRECTORIES:
        others = [n for n in names if n not in _SAMPLES][:1]
        names = [n for n in names if n in _SAMPLES] + others
    for name in names:
        if len(keys) > MAX_NAMES:
            raise OverflowError
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        shown = "*" if parts in INTERFACE_DIRECTORIES else name.replace(".", "/")
        if stat.S_ISDIR(info.st_mode) and len(parts) < _DEPTH:
            try:
                child = os.open(name, _FLAGS, dir_fd=fd)
            except OSError:
                continue
            try:
                _walk(child, (*parts, shown), keys, read_only, texts)
            finally:
                os.close(child)
        elif stat.S_ISREG(info.st_mode):
            key = ".".join((*parts, shown))
            keys.add(key)
            if not info.st_mode & 0o222:
                read_only.add(key)
            if key == _OFFERED:
                texts[key] = _text(fd, name)


def read_running_kernel(release: str, root: Path = Path("/")) -> RunningKernel | None:
    """The running kernel's keys, or None where /proc/sys cannot be listed whole."""
    keys: set[str] = set()
    read_only: set[str] = set()
    texts: dict[str, str] = {}
    try:
        fd = os.open(root / "proc/sys", _FLAGS)
    except OSError:
        return None
    try:
        _walk(fd, (), keys, read_only, texts)
    except (OSError, OverflowError):
        return None
    finally:
        os.close(fd)
    return RunningKernel(
        release=release,
        keys=frozenset(keys),
        read_only=frozenset(read_only),
        whole_net="net.core.netdev_max_backlog" in keys,
        offered=tuple(texts.get(_OFFERED, "").split()),
        modules=kernel_modules(root, release),
    )
