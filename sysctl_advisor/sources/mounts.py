"""This mount namespace's mounts, as /proc/self/mountinfo lists them (read bounded, as every
file the advisor reads), and what is found from them: the cgroup v2 hierarchy's mount and the
cgroup v2 directory this process is in.

A mountinfo line is `ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - FSTYPE
SOURCE SUPER-OPTIONS`; the kernel escapes a space, tab, newline and backslash in ROOT and
MOUNT-POINT as an octal `\\NNN` (`show_mountinfo`: fs/namespace.c in 2.6.32, fs/proc_namespace.c
in 3.10 through 6.18; fs/seq_file.c `mangle_path` with " \\t\\n\\\\"), decoded here. ROOT
is the directory of the file system mounted there: `/` for a hierarchy's root, a sub-cgroup's
path for a bind mount of one."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sysctl_advisor.model.documents import read_bytes

MOUNTINFO = Path("/proc/self/mountinfo")
OWN_CGROUP = Path("/proc/self/cgroup")
LIMIT = 1 << 22  # far more than any host's mount table
_ESCAPE = re.compile(rb"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    mount_point: Path
    root: str  # the directory of the file system mounted there ("/": its root)
    fstype: str
    device: tuple[int, int]  # major, minor: st_dev of what is on it


def _decoded(field: bytes) -> str:
    return os.fsdecode(_ESCAPE.sub(lambda m: bytes([int(m[1], 8) & 0xFF]), field))


def mounts(mountinfo: Path = MOUNTINFO) -> list[Mount]:
    """The mounts, in the order listed; a line that is not a mountinfo line is skipped."""
    found = []
    for line in read_bytes(mountinfo, limit=LIMIT).splitlines():
        fields, separator, after = line.partition(b" - ")
        parts, kind = fields.split(), after.split()
        if not separator or len(parts) < 5 or not kind:
            continue
        major, _, minor = parts[2].partition(b":")
        if not (major.isdigit() and minor.isdigit()):
            continue
        found.append(
            Mount(
                mount_point=Path(_decoded(parts[4])),
                root=_decoded(parts[3]),
                fstype=_decoded(kind[0]),
                device=(int(major), int(minor)),
            )
        )
    return found


def on(device: int, fstype: str, mountinfo: Path = MOUNTINFO) -> bool:
    """Whether a file system of `fstype` with this st_dev is mounted here."""
    wanted = (os.major(device), os.minor(device))
    return any(m.device == wanted and m.fstype == fstype for m in mounts(mountinfo))


def cgroup2(mountinfo: Path = MOUNTINFO) -> Mount | None:
    """The cgroup v2 hierarchy's mount: one of its root (root field `/`) where there is one,
    else the first (a bind mount of a sub-cgroup, as a container may have); None without."""
    found = [m for m in mounts(mountinfo) if m.fstype == "cgroup2"]
    return next((m for m in found if m.root == "/"), found[0] if found else None)


def own_cgroup(mountinfo: Path = MOUNTINFO, cgroup: Path = OWN_CGROUP) -> Path | None:
    """The cgroup v2 directory this process is in (its `0::` line in /proc/self/cgroup, below
    the mount of the hierarchy); None without cgroup v2, or where the mount does not reach it."""
    mount = cgroup2(mountinfo)
    if mount is None:
        return None
    for line in read_bytes(cgroup, limit=LIMIT).decode(errors="surrogateescape").splitlines():
        if line.startswith("0::"):
            inside = os.path.relpath(line[3:] or "/", mount.root)
            if inside == ".." or inside.startswith("../"):
                return None
            return mount.mount_point if inside == "." else mount.mount_point / inside
    return None
