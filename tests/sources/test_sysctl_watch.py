"""The sysctl-write watch on this kernel: a throwaway cgroup under the test's own cgroup v2
directory, a writer moved into it that writes per-namespace keys inside a fresh network
namespace (never the host's values), the events read back, and nothing left attached after
the watch however it ends. Root, cgroup v2 and a kernel that loads the program are needed;
elsewhere the tests skip with the reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysctl_advisor.sources import sysctl_watch
from sysctl_advisor.sources.mounts import own_cgroup
from tests.conftest import HANG_SECONDS, ROOT
from tests.namespaces import host_sysctls, namespace_problem

KEYS = {"net.core.somaxconn": "8192", "net.ipv4.tcp_keepalive_time": "600"}
WRITER = "".join(
    f"echo {value} > /proc/sys/{key.replace('.', '/')}\n" for key, value in KEYS.items()
)


# the name other test modules import (the cgroup v2 directory this process is in)
_own_cgroup = own_cgroup


def _problem() -> str | None:
    if os.geteuid() != 0:
        return "needs root to load a BPF program"
    if (netns := namespace_problem()) is not None:
        return netns
    if own_cgroup() is None:
        return "needs a cgroup v2 hierarchy"
    try:
        map_fd, ring = sysctl_watch._create_map(None)
        drops_fd = sysctl_watch.create_drops_map()
    except OSError as exc:
        return f"the kernel refuses the map: {exc.strerror}"
    try:
        sink = "ring" if ring else "queue"
        prog_fd, _ = sysctl_watch.load(map_fd, sink, drops_fd, sysctl_watch.offsets())
        os.close(prog_fd)
    except OSError as exc:
        return f"the kernel refuses the program: {exc.strerror}"
    finally:
        os.close(map_fd)
        os.close(drops_fd)
    return None


pytestmark = pytest.mark.skipif(_problem() is not None, reason=str(_problem()))


def _host_settings() -> dict[str, str]:
    """The host's settings under /proc/sys/{fs,vm,net} (tests/namespaces.py), and the
    writable ones under kernel/ but the last pid handed out."""
    values = host_sysctls()
    for directory, _, files in os.walk("/proc/sys/kernel"):
        for name in files:
            path = os.path.join(directory, name)
            if name == "ns_last_pid" or not os.stat(path).st_mode & 0o200:
                continue
            try:
                values[path] = Path(path).read_text()
            except OSError:
                continue
    return values


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A throwaway cgroup under this test's own, removed afterwards."""
    own = own_cgroup()
    assert own is not None
    path = own / f"sysctl-advisor-test-{uuid.uuid4().hex[:12]}"
    path.mkdir()
    before = _host_settings()
    try:
        yield path
    finally:
        path.rmdir()
    assert _host_settings() == before, "the host's /proc/sys changed"


def _in_namespace(cgroup: Path, script: str) -> subprocess.CompletedProcess[str]:
    """`script` by sh, moved into `cgroup` before it starts, in a fresh network namespace."""
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", script],
        preexec_fn=lambda: (cgroup / "cgroup.procs").write_text("0"),
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=True,
    )


@pytest.mark.parametrize("ringbuf", [True, False], ids=["ring buffer", "queue"])
def test_each_write_is_recorded_with_its_writer(cgroup: Path, ringbuf: bool) -> None:
    defaults = {
        key: _in_namespace(cgroup, f"cat /proc/sys/{key.replace('.', '/')}").stdout for key in KEYS
    }
    started = time.time()
    seen: dict[str, sysctl_watch.SysctlWrite] = {}
    with sysctl_watch.watch(cgroup, HANG_SECONDS, ringbuf=ringbuf) as events:
        assert len(sysctl_watch.attached(cgroup)) == 1
        writer = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", WRITER],
            preexec_fn=lambda: (cgroup / "cgroup.procs").write_text("0"),
        )
        assert writer.wait(timeout=HANG_SECONDS) == 0
        for event in events:
            seen[event.key] = event
            if set(seen) == set(KEYS):
                break
    assert sysctl_watch.attached(cgroup) == []
    assert set(seen) == set(KEYS)  # the reads of the defaults above were not recorded
    for key, value in KEYS.items():
        event = seen[key]
        assert (event.old, event.new) == (defaults[key], f"{value}\n")
        assert (event.pid, event.comm, event.uid) == (writer.pid, "sh", 0)
        assert event.cgroup_id == os.stat(cgroup).st_ino
        assert event.time is not None and started - 1 <= event.time <= time.time() + 1
        assert not event.truncated
    assert events.dropped == 0


def test_a_write_names_its_parent_and_network_namespace(cgroup: Path) -> None:
    """The writer prints its own netns inode (as /proc/self/ns/net shows it) and its parent's
    pid; the watch reports the same, and the parent's name."""
    script = "stat -L -c %i /proc/self/ns/net; echo $PPID; echo 1 > /proc/sys/net/ipv4/ip_forward"
    with sysctl_watch.watch(cgroup, HANG_SECONDS) as events:
        assert events.left_out == ()
        printed = _in_namespace(cgroup, script).stdout.split()
        event = next(iter(events))
    assert (event.key, event.new) == ("net.ipv4.ip_forward", "1\n")
    assert event.netns == int(printed[0]) != os.stat("/proc/self/ns/net").st_ino
    assert event.parent_pid == int(printed[1]) == os.getpid()
    assert event.parent_comm == Path("/proc/self/comm").read_text().strip()[:15]


@pytest.mark.parametrize("ringbuf", [True, False], ids=["ring buffer", "queue"])
def test_what_the_map_could_not_take_is_counted(cgroup: Path, ringbuf: bool) -> None:
    """A one-page ring (or an 8-event queue) undrained while 64 writes come: each write is
    either an event or a drop."""
    writes = 64
    script = f"for i in $(seq {writes}); do echo 1 > /proc/sys/net/ipv4/ip_forward; done"
    with sysctl_watch.watch(
        cgroup, 0, ringbuf=ringbuf, ring_bytes=os.sysconf("SC_PAGESIZE"), queue_entries=8
    ) as events:
        _in_namespace(cgroup, script)
        seen = len(list(events))
    assert events.dropped > 0
    assert seen + events.dropped == writes


def test_nothing_stays_attached_after_an_error(cgroup: Path) -> None:
    with pytest.raises(RuntimeError), sysctl_watch.watch(cgroup, HANG_SECONDS):
        assert len(sysctl_watch.attached(cgroup)) == 1
        raise RuntimeError("in the block")
    assert sysctl_watch.attached(cgroup) == []


def test_the_callers_signal_mask_is_given_back(cgroup: Path) -> None:
    """SIGINT and SIGTERM are held from the end of the block until everything is closed (a
    signal between the two would kill the process with the program attached), and the
    caller's mask is what it was afterwards, whether the block ends or raises."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    with sysctl_watch.watch(cgroup, HANG_SECONDS):
        pass
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == before
    with pytest.raises(RuntimeError), sysctl_watch.watch(cgroup, HANG_SECONDS):
        raise RuntimeError("in the block")
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == before
    assert sysctl_watch.attached(cgroup) == []


WATCHER = """
import sys
from sysctl_advisor.sources.sysctl_watch import watch
with watch(sys.argv[1], float(sys.argv[2])) as events:
    print("attached", flush=True)
    for event in events:
        pass
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_nothing_stays_attached_after_a_signal(cgroup: Path, signum: int) -> None:
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCHER, str(cgroup), str(HANG_SECONDS)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline() == "attached\n"
        assert len(sysctl_watch.attached(cgroup)) == 1
        watcher.send_signal(signum)
        assert watcher.wait(timeout=HANG_SECONDS) != 0
    finally:
        watcher.kill()
        watcher.communicate()
    assert sysctl_watch.attached(cgroup) == []


def test_nothing_stays_attached_after_sigkill(cgroup: Path) -> None:
    """The program is attached through a link, which the kernel detaches when the killed
    process's descriptors close."""
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCHER, str(cgroup), str(HANG_SECONDS)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline() == "attached\n"
        assert len(sysctl_watch.attached(cgroup)) == 1
    finally:
        watcher.kill()
        watcher.communicate()
    assert _attached_soon(cgroup) == []


def _attached_soon(cgroup: Path) -> list[int]:
    """What stays attached once a released link's detach had time to run (it may run just
    after the last descriptor closes)."""
    deadline = time.monotonic() + HANG_SECONDS
    while (found := sysctl_watch.attached(cgroup)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return found


def test_a_directory_that_is_no_cgroup_is_unavailable(tmp_path: Path) -> None:
    with (
        pytest.raises(sysctl_watch.Unavailable, match="cannot be attached"),
        sysctl_watch.watch(tmp_path, 1),
    ):
        pass
