"""The sysctl writes a watch saw, as the facts' `writers:` section records them: each with
its writer's cgroup as a path, systemd unit or Kubernetes pod (sources/write_owners.py), the
network namespace it wrote in (the host's, a pod's or another), whether the kernel took it
(sources/write_readback.py), and its texts made fit for the facts. Called once, after the
watch ended; it reads the host (the cgroup tree, /proc, the kubelet's log directories) and
writes nothing."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from sysctl_advisor.model.sysctl_writers import (
    WRITTEN_TEXT,
    ObservedWrite,
    WriteNamespace,
    WriterPod,
)
from sysctl_advisor.model.vocabulary import SysctlKey
from sysctl_advisor.sources import write_owners, write_readback
from sysctl_advisor.sources.sysctl_watch import SysctlWrite, cgroup2_mount
from sysctl_advisor.sources.write_owners import CgroupOwner, Holder

READBACK_NAMESPACES = 1024  # other network namespaces read back (about a millisecond each)
READBACK_SECONDS = 10.0  # reading them back ends past this; the rest are not known
COMM_CHARS = 15  # /proc/PID/comm: TASK_COMM_LEN 16, with its NUL
CGROUP_CHARS = 4096
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PARTIAL_ESCAPE = re.compile(r"\\x[0-9a-f]?$")  # a byte the kernel's name held, cut


@dataclass(frozen=True)
class Places:
    """Where the writes are resolved: the cgroup v2 mount (a path, or a descriptor open on it
    that stays the caller's; None: no cgroup v2), /proc, the kubelet's log directories, and
    the network namespace the facts read their values in (`host`)."""

    cgroup_root: Path | int | None
    own_netns: int | None
    proc: Path = Path("/proc")
    pods: Path = Path("/var/log/pods")
    containers: Path = Path("/var/log/containers")

    @classmethod
    def of_host(cls, mount: Path | None = None) -> Places:
        """This host's: its cgroup v2 mount (`mount`, else as /proc/self/mountinfo says), and
        this process's network namespace as `host`."""
        try:
            own: int | None = os.stat("/proc/self/ns/net").st_ino
        except OSError:
            own = None
        return cls(cgroup_root=mount if mount is not None else cgroup2_mount(), own_netns=own)


def escaped(text: str, limit: int) -> tuple[str, bool]:
    """`text` as one printable line of at most `limit` characters, and whether it was cut:
    each character that is not printable becomes its UTF-8 bytes as \\xNN, never cut inside."""
    out: list[str] = []
    size = 0
    for char in text:
        piece = (
            char
            if char.isprintable()
            else "".join(f"\\x{b:02x}" for b in char.encode("utf-8", "surrogateescape"))
            if "\udc80" <= char <= "\udcff"  # a byte a name decoded with surrogateescape
            else "".join(f"\\x{b:02x}" for b in char.encode("utf-8", "surrogatepass"))
        )
        if size + len(piece) > limit:
            return "".join(out), True
        out.append(piece)
        size += len(piece)
    return "".join(out), False


def _value(text: str) -> tuple[str, bool]:
    return escaped(text.removesuffix("\n"), WRITTEN_TEXT)


def _printed(text: str) -> tuple[str, bool]:
    """A value as the kernel printed it: a vector's tabs between its fields as single spaces
    (as values are shown), any other byte that is not printable escaped."""
    return _value(text.replace("\t", " "))


def iso_time(seconds: float) -> str:
    """An instant as ISO 8601 in UTC, to the microsecond (`2027-01-15T08:00:00.250000Z`)."""
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _when(seconds: float | None, now: float) -> str:
    """A write's time; `now` where it has none or one no date can hold (a record's map is
    root's to rewrite)."""
    if seconds is not None:
        try:
            return iso_time(seconds)
        except (OverflowError, ValueError, OSError):
            pass
    return iso_time(now)


def _cgroup_paths(root: Path | int | None, ids: set[int]) -> dict[int, str]:
    if root is None or not ids:
        return {}
    if isinstance(root, int):
        return write_owners.cgroup_paths(root, ids)
    try:
        fd = os.open(root, _DIRECTORY)
    except OSError:
        return {}
    try:
        return write_owners.cgroup_paths(fd, ids)
    finally:
        os.close(fd)


class _Pods:
    """The pods and containers named, with their namespaces and names where the kubelet's
    log directories give them."""

    def __init__(self, owners: Iterable[CgroupOwner], places: Places) -> None:
        owners = list(owners)
        uids = {o.pod_uid for o in owners if o.pod_uid is not None}
        ids = {o.container_id for o in owners if o.container_id is not None}
        self.names = write_owners.pod_names(places.pods, uids)
        self.containers = write_owners.container_names(places.containers, ids)

    def pod(self, owner: CgroupOwner | None) -> WriterPod | None:
        if owner is None or owner.pod_uid is None:
            return None
        namespace, name = self.names.get(owner.pod_uid, (None, None))
        container_id = owner.container_id
        return WriterPod(
            uid=owner.pod_uid,
            namespace=namespace,
            name=name,
            container=self.containers.get(container_id) if container_id else None,
            container_id=container_id,
        )


def _scope(write: SysctlWrite, own: int | None) -> tuple[str, int | None] | None:
    """The namespace a key's value lives in for this write (its network namespace for net.*,
    the host for the rest), None where it cannot be told."""
    if not write_readback.knowable(write.key):
        return None
    if not write_readback.per_network_namespace(write.key):
        return ("host", None)
    if write.netns is None:
        return None
    return ("host", None) if write.netns == own else ("netns", write.netns)


def _applied(
    writes: list[SysctlWrite], places: Places, holders: dict[int, Holder]
) -> list[bool | None]:
    applied: list[bool | None] = [None] * len(writes)
    groups: dict[tuple[str, tuple[str, int | None]], list[int]] = {}
    for index, write in enumerate(writes):
        scope = _scope(write, places.own_netns)
        if scope is not None:
            groups.setdefault((write.key, scope), []).append(index)
    last: dict[tuple[str, tuple[str, int | None]], int] = {}
    for group, indexes in groups.items():
        indexes.sort(key=lambda i: (writes[i].monotonic_ns or 0, i))
        chain = write_readback.chained([(writes[i].new, writes[i].old) for i in indexes])
        for index, verdict in zip(indexes, chain, strict=True):
            applied[index] = None if writes[index].truncated else verdict
        if not writes[indexes[-1]].truncated:
            last[group] = indexes[-1]
    now = _read_back({group: writes[i].key for group, i in last.items()}, places, holders)
    for group, index in last.items():
        value = now.get(group)
        if value is not None:
            applied[index] = write_readback.same_value(writes[index].new, value)
    return applied


def _read_back(
    keys: dict[tuple[str, tuple[str, int | None]], str],
    places: Places,
    holders: dict[int, Holder],
) -> dict[tuple[str, tuple[str, int | None]], str | None]:
    """Each key's value now where it was written: here for the host's, in one worker thread
    per other network namespace that a process still holds, one after another, for so many
    namespaces and so long (a host can make a namespace per write)."""
    values: dict[tuple[str, tuple[str, int | None]], str | None] = {}
    elsewhere: dict[int, list[str]] = {}
    for group, key in keys.items():
        where, inode = group[1]
        if where == "host":
            values[group] = write_readback.read_here(places.proc, key)
        elif inode is not None and inode in holders:
            elsewhere.setdefault(inode, []).append(key)
    deadline = time.monotonic() + READBACK_SECONDS
    for count, (inode, names) in enumerate(elsewhere.items()):
        if count >= READBACK_NAMESPACES or time.monotonic() > deadline:
            break  # the writes of the namespaces left are not known to be applied
        read = write_readback.read_in_namespace(places.proc, holders[inode].pid, inode, names)
        for key, value in read.items():
            values[(key, ("netns", inode))] = value
    return values


def _namespace(
    inode: int | None, places: Places, holders: dict[int, Holder], pods: _Pods
) -> WriteNamespace | None:
    if inode is None:
        return None
    shown = inode if 1 <= inode <= 2**32 - 1 else None
    if inode == places.own_netns:
        return WriteNamespace(kind="host", inode=shown)
    holder = holders.get(inode)
    if holder is not None and holder.pod is not None:
        return WriteNamespace(kind="pod", inode=shown, pod=pods.pod(holder.pod))
    return WriteNamespace(kind="other", inode=shown)


def _comm(text: str | None) -> str | None:
    """A process name as the facts hold one (15 characters): escaped, and where that is longer,
    cut visibly (`…`), never inside an escape, so that what is left names no other process."""
    if not text:
        return None
    shown, cut = escaped(text, COMM_CHARS)
    if cut:
        shown = _PARTIAL_ESCAPE.sub("", escaped(text, COMM_CHARS - 1)[0]) + "…"
    return shown or None


def _id(value: int | None, low: int, high: int) -> int | None:
    return value if value is not None and low <= value <= high else None


def nameable(write: SysctlWrite) -> bool:
    """Whether the facts can name the write's key: an interface's name may hold what a key
    cannot (anything but `/`, `:` and blanks); such writes are left out, and counted with
    those the watch could not keep (`dropped`)."""
    return write_owners.fits(SysctlKey, write.key)


def observed_writes(writes: Iterable[SysctlWrite], places: Places) -> list[ObservedWrite]:
    """Each write as the facts record it, in the order given (but one whose key the facts
    cannot name: `nameable`)."""
    writes = list(writes)
    paths = _cgroup_paths(places.cgroup_root, {w.cgroup_id for w in writes if w.cgroup_id})
    owners = {cid: write_owners.cgroup_owner(path) for cid, path in paths.items()}
    foreign = {w.netns for w in writes if w.netns is not None and w.netns != places.own_netns}
    holders = write_owners.namespace_holders(places.proc, foreign)
    pods = _Pods(
        [*owners.values(), *(h.pod for h in holders.values() if h.pod is not None)], places
    )
    applied = _applied(writes, places, holders)
    now = datetime.now(timezone.utc).timestamp()
    observed = []
    for write, verdict in zip(writes, applied, strict=True):
        if not nameable(write):
            continue  # a name the facts cannot hold (an interface's odd characters)
        value, value_cut = _value(write.new)
        old, old_cut = _printed(write.old) if write.old is not None else (None, False)
        path = paths.get(write.cgroup_id) if write.cgroup_id else None
        owner = owners.get(write.cgroup_id) if write.cgroup_id else None
        cgroup = escaped(path, CGROUP_CHARS)[0] if path is not None else None
        observed.append(
            ObservedWrite(
                key=write.key,
                value=value,
                old=old,
                applied=verdict,
                time=_when(write.time, now),
                truncated=write.truncated or value_cut or old_cut,
                pid=_id(write.pid, 1, 2**22),
                comm=_comm(write.comm),
                parent_pid=_id(write.parent_pid, 0, 2**22),
                parent_comm=_comm(write.parent_comm),
                uid=_id(write.uid, 0, 2**32 - 1),
                cgroup=cgroup,
                unit=owner.unit if owner is not None else None,
                pod=pods.pod(owner),
                netns=_namespace(write.netns, places, holders, pods),
            )
        )
    return observed
