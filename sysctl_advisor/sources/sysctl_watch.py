"""Every sysctl write under a cgroup v2 directory, for a while, as the kernel sees it: a
BPF_PROG_TYPE_CGROUP_SYSCTL program (sources/bpf/program.py) attached with BPF_F_ALLOW_MULTI
beside whatever else is attached there, allowing every access, and detached when the watch
ends, however it ends (an exception, SIGINT, SIGTERM). It writes no /proc/sys value.

The hook runs in the writer's context at the write's attempt, before the handler parses the
value: a write the handler then refuses is seen too. Writes through netlink (devconf) and
writes by tasks outside the cgroup are not seen. Linux 5.2+ (the hook), root (CAP_BPF and
CAP_SYS_ADMIN, CAP_PERFMON for the task helpers).

The program is attached through a BPF link (Linux 5.7+) where the kernel has one: the kernel
detaches it when the link's last descriptor closes, so even a watch killed by SIGKILL leaves
nothing attached; older kernels get BPF_PROG_ATTACH, detached on every exit this process
sees. What the map could not take is counted in the kernel: `Events.dropped`."""

from __future__ import annotations

import errno
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from sysctl_advisor.model.sysctl_conf import key_of_path
from sysctl_advisor.sources import mounts
from sysctl_advisor.sources.bpf import btf, program, syscall
from sysctl_advisor.sources.bpf.ringbuf import RingBuffer

RINGBUF_BYTES = 256 * 1024  # a power of two, whole pages: some 600 events between drains
QUEUE_ENTRIES = 1024
POLL_SECONDS = 0.05  # how often a queue (no ring buffer) is drained
_UNKNOWN_HELPER = re.compile(
    r"unknown func \S*#(\d+)|program of this type cannot use helper \S*#(\d+)"
)


class Unavailable(Exception):
    """The watch cannot run here: the one-line reason (no root, no cgroup v2, refused)."""


@dataclass(frozen=True)
class SysctlWrite:
    key: str  # as sysctl(8) names it: net.core.somaxconn
    old: str | None  # the value before, as the handler prints it (its newline kept)
    new: str  # the text written, as written
    truncated: bool  # the name or a value was longer than the event holds
    pid: int | None  # the writer's process (tgid) and thread ids
    tid: int | None
    comm: str | None
    uid: int | None
    cgroup_id: int | None  # the cgroup v2 inode number of the writer's cgroup
    monotonic_ns: int | None  # CLOCK_MONOTONIC at the write
    time: float | None  # the same as seconds since the epoch
    parent_pid: int | None = None  # task->real_parent->tgid
    parent_comm: str | None = None
    netns: int | None = None  # the writer's network namespace inode, /proc/PID/ns/net net:[N]


class Events:
    """The writes as they come (iterate once), what the kernel could not hand over (`dropped`,
    final once the iteration ended) and the SysctlWrite fields this kernel does not give."""

    def __init__(
        self, writes: Iterator[SysctlWrite], drops_fd: int, without: frozenset[int]
    ) -> None:
        self._writes = writes
        self._drops_fd: int | None = drops_fd
        self._dropped = 0
        self.left_out = left_out_fields(without)

    def __iter__(self) -> Iterator[SysctlWrite]:
        return self._writes

    @property
    def dropped(self) -> int:
        if self._drops_fd is not None:
            self._dropped = read_dropped(self._drops_fd)
        return self._dropped

    def freeze(self) -> None:
        """Keep the count, before its map closes."""
        self._dropped = self.dropped
        self._drops_fd = None


def left_out_fields(without: frozenset[int]) -> tuple[str, ...]:
    fields = {field for helper in without for field in program.FIELDS.get(helper, ())}
    return tuple(f for f in SysctlWrite.__dataclass_fields__ if f in fields)


def read_dropped(drops_fd: int) -> int:
    value = syscall.map_lookup(drops_fd, bytes(4), 8)
    return 0 if value is None else int.from_bytes(value, "little")


def cgroup2_mount(mountinfo: Path = mounts.MOUNTINFO) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on
    hybrid hosts), a mount of its root preferred to a bind mount of a sub-cgroup; None without
    one."""
    found = mounts.cgroup2(mountinfo)
    return None if found is None else found.mount_point


def _text(raw: bytes, length: int = -1) -> str:
    """A NUL-terminated field; `length` where the helper gave it (a sysctl helper's count of
    bytes copied: a written value may hold NULs of its own)."""
    data = raw[:length] if 0 < length < len(raw) else raw.split(b"\0", 1)[0]
    return data.decode("utf-8", errors="backslashreplace")


def parse(record: bytes, without: frozenset[int], realtime_offset_ns: int) -> SysctlWrite:
    """One event of the program (program.EVENT), the fields of the helpers left out absent."""

    def has(helper: int) -> bool:
        return helper not in without

    (when, pid_tgid, cgroup_id, uid_gid, name_ret, old_ret, new_ret, parent_ret, netns_ret) = (
        fields := program.EVENT.unpack(record[: program.EVENT_SIZE])
    )[:9]
    parent_pid, _, _, comm, parent_comm, netns, name, old, new = fields[9:]
    e2big = -errno.E2BIG
    task = not program.TASK_HELPERS & without
    return SysctlWrite(
        key=key_of_path(_text(name)),
        old=None if old_ret < 0 and old_ret != e2big else _text(old),
        new=_text(new, new_ret),
        truncated=e2big in (name_ret, old_ret, new_ret),
        pid=pid_tgid >> 32 if has(program.GET_CURRENT_PID_TGID) else None,
        tid=pid_tgid & 0xFFFFFFFF if has(program.GET_CURRENT_PID_TGID) else None,
        comm=_text(comm) if has(program.GET_CURRENT_COMM) else None,
        uid=uid_gid & 0xFFFFFFFF if has(program.GET_CURRENT_UID_GID) else None,
        cgroup_id=cgroup_id if has(program.GET_CURRENT_CGROUP_ID) else None,
        monotonic_ns=when if has(program.KTIME_GET_NS) else None,
        time=(when + realtime_offset_ns) / 1e9 if has(program.KTIME_GET_NS) else None,
        parent_pid=parent_pid if task and parent_ret == 0 else None,
        parent_comm=_text(parent_comm) if task and parent_ret == 0 else None,
        netns=netns if task and netns_ret == 0 and netns else None,
    )


def realtime_offset_ns() -> int:
    """CLOCK_REALTIME minus CLOCK_MONOTONIC, now."""
    return time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _create_map(
    ringbuf: bool | None, ring_bytes: int = RINGBUF_BYTES, queue_entries: int = QUEUE_ENTRIES
) -> tuple[int, bool]:
    """The map's descriptor, and whether it is a ring buffer (else a queue)."""
    if ringbuf is not False:
        try:
            return syscall.map_create(
                syscall.MAP_TYPE_RINGBUF, 0, 0, ring_bytes, "sysctl_writes"
            ), True
        except OSError as exc:
            if ringbuf or exc.errno != errno.EINVAL:  # EINVAL: a kernel before 5.8
                raise
    fd = syscall.map_create(
        syscall.MAP_TYPE_QUEUE, 0, program.EVENT_SIZE, queue_entries, "sysctl_writes"
    )
    return fd, False


def create_drops_map() -> int:
    """The array map of one u64 the program counts what it could not hand over in."""
    return syscall.map_create(syscall.MAP_TYPE_ARRAY, 4, 8, 1, "sysctl_drops")


def offsets() -> program.Offsets | None:
    """The struct offsets the program reads the parent and netns at; None without BTF."""
    try:
        types = btf.vmlinux()
        return program.Offsets(**{name: types.offset(p) for name, p in program.PATHS.items()})
    except btf.BTFError:
        return None


def load(
    map_fd: int, sink: str, drops_fd: int, at: program.Offsets | None = None
) -> tuple[int, frozenset[int]]:
    """The loaded program's descriptor and the optional helpers left out (refused by this
    kernel, or the parent's and netns's without BTF offsets)."""
    without: frozenset[int] = frozenset()
    while True:
        built = program.build(map_fd, sink, drops_fd, without, at)
        try:
            fd = syscall.prog_load(
                syscall.PROG_TYPE_CGROUP_SYSCTL, built.insns, syscall.CGROUP_SYSCTL, "sysctl_watch"
            )
            return fd, built.without
        except OSError as exc:
            match = _UNKNOWN_HELPER.search(str(exc))
            helper = int(match.group(1) or match.group(2)) if match else None
            if helper not in program.OPTIONAL_HELPERS or helper in without:
                raise
            without |= program.TASK_HELPERS if helper in program.TASK_HELPERS else {helper}


def attached(cgroup: str | Path) -> list[int]:
    """The ids of the sysctl programs attached to the cgroup directory itself."""
    fd = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return syscall.prog_query(fd, syscall.CGROUP_SYSCTL)
    finally:
        os.close(fd)


def attach(target: int, prog_fd: int) -> Callable[[], None]:
    """Attach the program to the cgroup, by a link where the kernel has them; the way to
    detach it."""
    try:
        link = syscall.link_create(prog_fd, target, syscall.CGROUP_SYSCTL)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # EINVAL: no BPF_LINK_CREATE, a kernel before 5.7
            raise
    else:
        return lambda: os.close(link)
    syscall.prog_attach(target, prog_fd, syscall.CGROUP_SYSCTL, syscall.F_ALLOW_MULTI)
    return lambda: syscall.prog_detach(target, prog_fd, syscall.CGROUP_SYSCTL)


def _events(
    ring: RingBuffer | None, map_fd: int, seconds: float, without: frozenset[int]
) -> Iterator[SysctlWrite]:
    offset = realtime_offset_ns()
    deadline = time.monotonic() + seconds
    while True:
        last = time.monotonic() >= deadline
        if ring is not None:
            records = list(ring.drain())
        else:
            records = list(iter(lambda: syscall.map_pop(map_fd, program.EVENT_SIZE), None))
        for record in records:
            yield parse(record, without, offset)
        if last:
            return
        remaining = max(0.0, deadline - time.monotonic())
        if ring is not None:
            ring.wait(min(remaining, 1.0))
        else:
            time.sleep(min(remaining, POLL_SECONDS))


class _Terminated(SystemExit):
    """SIGTERM, raised where the watch runs so that it unwinds and detaches."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated(128 + signum)


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises (in the main thread) for the watch's length, so that its cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Callable[[int, FrameType | None], object] | int | None = signal.signal(
        signal.SIGTERM, _raise_terminated
    )
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_HELD = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered after) while the program is detached."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextmanager
def watch(
    cgroup: int | str | Path,
    seconds: float,
    ringbuf: bool | None = None,
    ring_bytes: int = RINGBUF_BYTES,
    queue_entries: int = QUEUE_ENTRIES,
) -> Iterator[Events]:
    """The sysctl writes of the tasks under `cgroup` (a cgroup v2 directory, or a descriptor
    open on one, which stays the caller's) for `seconds`, as they come. `ringbuf` forces the
    ring buffer (True) or the queue (False); None takes the ring buffer where the kernel has one
    (`ring_bytes`: a power of two, whole pages; `queue_entries`: the queue's events).
    Unavailable when the watch cannot run here; nothing stays attached when the block ends."""
    closing: list[Callable[[], None]] = []
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # the caller's, restored at the end
    try:
        with _signals_held():
            if isinstance(cgroup, int):
                target = cgroup
            else:
                try:
                    target = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError as exc:
                    raise Unavailable(f"cannot open the cgroup {cgroup}: {exc.strerror}") from None
                closing.append(lambda: os.close(target))
            try:
                map_fd, is_ring = _create_map(ringbuf, ring_bytes, queue_entries)
                closing.append(lambda: os.close(map_fd))
                drops_fd = create_drops_map()
                closing.append(lambda: os.close(drops_fd))
                sink = "ring" if is_ring else "queue"
                prog_fd, without = load(map_fd, sink, drops_fd, offsets())
                closing.append(lambda: os.close(prog_fd))
                ring = RingBuffer(map_fd, ring_bytes) if is_ring else None
                if ring is not None:
                    closing.append(ring.close)
            except OSError as exc:
                raise Unavailable(f"the sysctl hook cannot be loaded: {exc.strerror}") from None
            events = Events(_events(ring, map_fd, seconds, without), drops_fd, without)
            closing.append(events.freeze)
        with _sigterm_unwinds():
            try:
                with _signals_held():
                    closing.append(attach(target, prog_fd))
            except OSError as exc:
                raise Unavailable(f"the sysctl hook cannot be attached: {exc.strerror}") from None
            try:
                yield events
            finally:  # held from here until everything is closed: SIGTERM's own handler is
                # put back before the detach, and a signal then would kill the process first
                signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            for close in reversed(closing):
                with suppress(OSError):
                    close()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
