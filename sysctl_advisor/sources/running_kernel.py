"""Read the running kernel as `check` targets it (model.running_kernel): the names under
/proc/sys, walked by descriptor without following links and within a bound, one interface
directory of each per-interface tree (every interface has the same keys), the congestion
controls offered and the modules on disk."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sysctl_advisor.model.directories import read_at
from sysctl_advisor.model.running_kernel import RunningKernel
from sysctl_advisor.model.vocabulary import NOT_INTERFACES
from sysctl_advisor.sources.module_lists import kernel_modules

# /proc/sys lists about 1,500 keys; a node with thousands of interfaces lists more, but only
# one interface of each tree is walked. Past this many names the listing is not used.
MAX_NAMES = 50_000
_DEPTH = 8
_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_OFFERED = "net.ipv4.tcp_available_congestion_control"
_TEXT = 4096  # what of a listing file is read


class _Walk:
    """What a walk of /proc/sys gathers, and the per-interface trees it shortens: of each, the
    named directories (`all`, `default`) and one device's (every device has the same keys)."""

    def __init__(self, interface_directories: frozenset[tuple[str, ...]], device: int) -> None:
        self.interface_directories = interface_directories
        self.device = device  # /proc/sys's own filesystem: another one below is a mount
        self.keys: set[str] = set()
        self.read_only: set[str] = set()
        self.directories: set[str] = set()
        self.texts: dict[str, str] = {}

    def walk(self, fd: int, parts: tuple[str, ...]) -> None:
        names = sorted(os.listdir(fd))
        if parts and names:  # an empty one is a mount point waiting (fs/binfmt_misc)
            self.directories.add(".".join(parts))
        per_interface = parts in self.interface_directories
        if per_interface:
            devices = [n for n in names if n not in NOT_INTERFACES][:1]
            names = [n for n in names if n in NOT_INTERFACES] + devices
        for name in names:
            if len(self.keys) + len(self.directories) > MAX_NAMES:
                raise OverflowError
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if info.st_dev != self.device:
                continue  # a mount point (binfmt_misc's automount): opening it would mount it
            shown = "*" if per_interface and name not in NOT_INTERFACES else name.replace(".", "/")
            here = (*parts, shown)
            if stat.S_ISDIR(info.st_mode) and len(parts) < _DEPTH:
                try:
                    child = os.open(name, _FLAGS, dir_fd=fd)
                except OSError:
                    continue
                try:
                    self.walk(child, here)
                finally:
                    os.close(child)
            elif stat.S_ISREG(info.st_mode):
                key = ".".join(here)
                self.keys.add(key)
                if not info.st_mode & 0o222:
                    self.read_only.add(key)
                if key == _OFFERED:
                    self.texts[key] = (read_at(fd, name, _TEXT) or b"").decode("ascii", "replace")


def read_running_kernel(
    release: str,
    interface_directories: frozenset[tuple[str, ...]],
    root: Path = Path("/"),
) -> RunningKernel | None:
    """The running kernel's keys, or None where /proc/sys cannot be listed whole.
    `interface_directories`: the per-interface trees (the kernel-keys table's `*`)."""
    try:
        fd = os.open(root / "proc/sys", _FLAGS)
    except OSError:
        return None
    try:
        found = _Walk(interface_directories, os.fstat(fd).st_dev)
        found.walk(fd, ())
    except (OSError, OverflowError):
        return None
    finally:
        os.close(fd)
    return RunningKernel(
        release=release,
        keys=frozenset(found.keys),
        read_only=frozenset(found.read_only),
        directories=frozenset(found.directories),
        interface_directories=interface_directories,
        whole_net="net.core.netdev_max_backlog" in found.keys,
        offered=tuple(found.texts.get(_OFFERED, "").split()),
        modules=kernel_modules(root, release),
    )
