"""This mount namespace's mounts from a mountinfo file (written here, at test time): octal
escapes decoded, the cgroup v2 hierarchy's root preferred to a bind mount of a sub-cgroup, and
the cgroup a process is in found below whichever is mounted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources import mounts, sysctl_watch
from sysctl_advisor.sources.mounts import Mount

SUB_CGROUP_BIND = (
    "40 30 0:28 /system.slice/docker.service /var/lib/a\\040b\\011c\\012d\\134e rw "
    "shared:9 - cgroup2 cgroup2 rw\n"
)
HIERARCHY = "41 30 0:28 / /sys/fs/cgroup/unified rw shared:10 master:2 - cgroup2 cgroup2 rw\n"
BPF = "42 30 0:33 / /sys/fs/bpf rw - bpf bpf rw,mode=700\n"


def _mountinfo(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "mountinfo"
    path.write_text("".join(lines) + "not a mountinfo line\n")
    return path


def test_every_field_is_read_and_every_octal_escape_decoded(tmp_path: Path) -> None:
    found = mounts.mounts(_mountinfo(tmp_path, SUB_CGROUP_BIND, BPF))
    assert found == [
        Mount(Path("/var/lib/a b\tc\nd\\e"), "/system.slice/docker.service", "cgroup2", (0, 28)),
        Mount(Path("/sys/fs/bpf"), "/", "bpf", (0, 33)),
    ]
    assert mounts.on(os.makedev(0, 33), "bpf", tmp_path / "mountinfo")
    assert not mounts.on(os.makedev(0, 28), "bpf", tmp_path / "mountinfo")


def test_the_hierarchys_root_is_preferred_to_a_bind_mount_of_a_sub_cgroup(
    tmp_path: Path,
) -> None:
    both = _mountinfo(tmp_path, SUB_CGROUP_BIND, HIERARCHY)
    assert sysctl_watch.cgroup2_mount(both) == Path("/sys/fs/cgroup/unified")
    only_bind = _mountinfo(tmp_path, SUB_CGROUP_BIND, BPF)
    assert sysctl_watch.cgroup2_mount(only_bind) == Path("/var/lib/a b\tc\nd\\e")
    assert sysctl_watch.cgroup2_mount(_mountinfo(tmp_path, BPF)) is None


def test_the_own_cgroup_is_found_below_the_mount_that_reaches_it(tmp_path: Path) -> None:
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("1:name=systemd:/x\n0::/system.slice/docker.service/c1\n")
    hierarchy = _mountinfo(tmp_path, SUB_CGROUP_BIND, HIERARCHY)
    assert mounts.own_cgroup(hierarchy, cgroup) == Path(
        "/sys/fs/cgroup/unified/system.slice/docker.service/c1"
    )
    bind = _mountinfo(tmp_path, SUB_CGROUP_BIND)
    assert mounts.own_cgroup(bind, cgroup) == Path("/var/lib/a b\tc\nd\\e/c1")
    cgroup.write_text("0::/user.slice\n")
    assert mounts.own_cgroup(bind, cgroup) is None  # the bind mount does not reach it
    assert mounts.own_cgroup(_mountinfo(tmp_path, BPF), cgroup) is None


def test_a_mountinfo_that_is_no_file_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError):
        mounts.mounts(fifo)
