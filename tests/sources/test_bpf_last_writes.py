"""The last-writer map: the program with sink="last" attached by a link to a throwaway cgroup,
per-namespace writes in a fresh network namespace, the map read back; and the same kept by
pins in a bpffs (mounted in a private mount namespace) after every descriptor closed. Root,
cgroup v2 and a kernel that loads the program are needed; elsewhere the tests skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sysctl_advisor.sources.bpf import syscall
from sysctl_advisor.sources.sysctl_last_writes import (
    LastWrite,
    load_last_writes,
    read_last_writes,
)
from tests.conftest import HANG_SECONDS, ROOT
from tests.sources.test_sysctl_watch import _attached_soon, _in_namespace, _problem, cgroup

pytestmark = pytest.mark.skipif(_problem() is not None, reason=str(_problem()))
__all__ = ["cgroup"]

SCRIPT = (
    "echo 1 > /proc/sys/net/ipv4/ip_forward; echo 0 > /proc/sys/net/ipv4/ip_forward;"
    " echo 1 > /proc/sys/net/ipv4/ip_forward; echo 8192 > /proc/sys/net/core/somaxconn;"
    " stat -L -c %i /proc/self/ns/net"
)


def _recorded(cgroup: Path, script: str) -> tuple[str, list[LastWrite]]:
    """`script` run in a fresh network namespace in `cgroup` while the last-writer program is
    linked there: what it printed, and the map's entries."""
    loaded = load_last_writes()
    target = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY)
    try:
        link = syscall.link_create(loaded.prog_fd, target, syscall.CGROUP_SYSCTL)
        try:
            printed = _in_namespace(cgroup, script).stdout
            return printed, read_last_writes(loaded.map_fd)
        finally:
            os.close(link)
    finally:
        os.close(target)
        loaded.close()


def test_the_map_keeps_the_last_write_of_each_key_and_their_count(cgroup: Path) -> None:
    printed, found = _recorded(cgroup, SCRIPT)
    netns = int(printed)
    assert [(w.write.key, w.write.old, w.write.new, w.count) for w in found] == [
        ("net.core.somaxconn", "4096\n", "8192\n", 1),
        ("net.ipv4.ip_forward", "0\n", "1\n", 3),
    ]
    assert {(w.write.comm, w.write.netns, w.write.parent_pid) for w in found} == {
        ("sh", netns, os.getpid())
    }


def test_a_key_written_in_two_namespaces_keeps_both_writes(cgroup: Path) -> None:
    """A pod's somaxconn is its own entry: it never hides the last write in another namespace."""
    write = "echo {} > /proc/sys/net/core/somaxconn; stat -L -c %i /proc/self/ns/net"
    # the second namespace made inside the first, which is alive meanwhile: a namespace's
    # inode number is handed out again once it is gone, and two in turn may share one
    printed, found = _recorded(
        cgroup, f"{write.format(1024)}; unshare -n sh -c '{write.format(2048)}'"
    )
    first, second = map(int, printed.split())
    assert first != second
    assert sorted((w.write.key, w.write.netns, w.write.new, w.count) for w in found) == sorted(
        [
            ("net.core.somaxconn", first, "1024\n", 1),
            ("net.core.somaxconn", second, "2048\n", 1),
        ]
    )


PINNED = """
import os, subprocess, sys
from sysctl_advisor.sources import sysctl_watch
from sysctl_advisor.sources.bpf import syscall
from sysctl_advisor.sources.sysctl_last_writes import (
    LastWrite,
    load_last_writes,
    read_last_writes,
)
cgroup, pins = sys.argv[1], sys.argv[2]
subprocess.run(["mount", "-t", "bpf", "bpf", pins], check=True)
loaded = load_last_writes()
target = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY)
link = syscall.link_create(loaded.prog_fd, target, syscall.CGROUP_SYSCTL)
syscall.obj_pin(link, pins + "/link")
syscall.obj_pin(loaded.map_fd, pins + "/last")
for fd in (link, target):
    os.close(fd)
loaded.close()
print(len(sysctl_watch.attached(cgroup)), flush=True)
subprocess.run(
    ["unshare", "-n", "sh", "-c", "echo 600 > /proc/sys/net/ipv4/tcp_keepalive_time"],
    preexec_fn=lambda: open(cgroup + "/cgroup.procs", "w").write("0"),
    check=True,
)
last = syscall.obj_get(pins + "/last")
print(*[(w.write.key, w.write.new, w.count) for w in read_last_writes(last)], flush=True)
os.close(last)
os.unlink(pins + "/link")
os.unlink(pins + "/last")
print(len(sysctl_watch.attached(cgroup)), flush=True)
"""


def test_pinned_link_and_map_outlive_their_descriptors(cgroup: Path, tmp_path: Path) -> None:
    pins = tmp_path / "bpffs"
    pins.mkdir()
    command = ["unshare", "-m", "--propagation", "private", sys.executable, "-c", PINNED]
    done = subprocess.run(
        [*command, str(cgroup), str(pins)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=True,
    )
    attached, found, after = done.stdout.splitlines()
    assert attached == "1"
    assert found == "('net.ipv4.tcp_keepalive_time', '600\\n', 1)"
    assert after in ("0", "1")  # the unpinned link's release may run just after
    assert _attached_soon(cgroup) == []
