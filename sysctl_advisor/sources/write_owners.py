"""Who a sysctl write belongs to: the writer's cgroup id as a path below the cgroup v2 root,
that path as a systemd unit or a Kubernetes pod, and the network namespace written in as the
host's, a pod's or another.

* A cgroup's id is the inode of its cgroup v2 directory (kernfs: `cgroup_id()` is the node's
  id, which `dir_emit` and the inode carry, Linux 5.10 to 6.18; in 5.4 and before, and on
  32-bit machines, the inode is the id's low 32 bits and a generation fills the high ones:
  include/linux/kernfs.h, `union kernfs_node_id` in 5.4, `kernfs_id_ino` in 5.10). The tree is
  walked once by descriptor, links never followed, mounts never crossed, within a depth and a
  count of directories, stopping once every id asked for is found.
* A unit is the innermost `*.service` or `*.scope` of the path (`system.slice/docker.service`,
  `user.slice/user-0.slice/session-3.scope`).
* A pod: the kubelet names a pod's cgroup `pod<UID>` below `kubepods[/burstable|/besteffort]`
  (pkg/kubelet/cm/pod_container_manager_linux.go `podCgroupNamePrefix`); the systemd driver
  joins the parts with `-` after writing each `-` of a part as `_`, and ends the name
  `.slice` (pkg/kubelet/cm/cgroup_manager_linux.go `escapeSystemdCgroupName`, `ToSystemd`:
  `kubepods-burstable-pod1234_abcd….slice`,
  https://github.com/kubernetes/kubernetes/blob/afd5df58bd7dcb7b8c3f00e2065936bd0c508b77/pkg/kubelet/cm/cgroup_manager_linux.go).
  A container is runc's systemd scope `<prefix>-<id>.scope` (libcontainer's `getUnitName`:
  the cgroups path `<slice>:<prefix>:<id>`) with the prefix `cri-containerd`
  (https://github.com/containerd/containerd/blob/301026e58c619e63d09c0ec411012e54c0124b03/internal/cri/server/helpers.go),
  `crio` (https://github.com/cri-o/cri-o/blob/f954a17e505f8931e91004403b5f5eac71ab6085/internal/config/cgmgr/systemd_linux.go)
  or `docker` (https://github.com/moby/moby/blob/b985e2313a8676e18072b442911fc8f64f17d440/daemon/oci_linux.go),
  or the bare id below the pod's directory with the cgroupfs driver.
* The pod's namespace and name: the kubelet's log directory of a pod is
  `/var/log/pods/<namespace>_<name>_<uid>` (pkg/kubelet/kuberuntime/helpers.go
  `BuildPodLogsDirectory`, one directory per container below it, `BuildContainerLogsDirectory`;
  before 1.14 it was `/var/log/pods/<uid>`, which names neither,
  https://github.com/kubernetes/kubernetes/blob/v1.32.0/pkg/kubelet/kuberuntime/helpers.go), and
  its link for each container `/var/log/containers/<name>_<namespace>_<container>-<id>.log`,
  cut to 255 bytes (pkg/kubelet/kuberuntime/legacy.go `logSymlink`,
  https://github.com/kubernetes/kubernetes/blob/16913111deb1a4c4ff76f4ba7ffd9ebef397a303/pkg/kubelet/kuberuntime/legacy.go).
  Only the directories' listings are read, never a log.
* A network namespace is a pod's where a process whose cgroup is a pod's holds it
  (/proc/PID/ns/net, `net:[N]`): the pause container holds the pod's, so a CNI plugin writing
  into it from containerd's cgroup is found writing in the pod.

Every name read is hostile: odd names are skipped, listings and scans are bounded.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from sysctl_advisor.model.directories import read_at
from sysctl_advisor.model.model_base import After
from sysctl_advisor.model.sysctl_writers import ContainerId, KubernetesName, PodUid, Unit
from sysctl_advisor.sources.tree_paths import listed_names

MAX_DEPTH = 32  # cgroup levels below the root (a pod's container is at 4 or 5)
MAX_CGROUPS = 200_000  # directories visited: a node holds a few thousand
MAX_LISTED = 20_000  # entries of /var/log/pods or /var/log/containers read
MAX_PROCESSES = 200_000  # /proc entries scanned for the holders of namespaces
CGROUP_FILE = 64 * 1024  # bytes of /proc/PID/cgroup read

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_UNIT_NAME = re.compile(r".+\.(?:service|scope)")
_SYSTEMD_POD = re.compile(
    r"(?:[A-Za-z0-9_.]+-)?kubepods(?:-burstable|-besteffort)?-pod([0-9a-f_]{36})\.slice"
)
_CGROUPFS_POD = re.compile(r"pod([0-9a-f-]{36})")
_QOS = ("burstable", "besteffort")
_CONTAINER = re.compile(r"(?:cri-containerd-|crio-|docker-)?([0-9a-f]{12,64})(?:\.scope)?")
_NETNS = re.compile(r"net:\[([0-9]+)\]")


def fits(kind: Any, value: str) -> bool:
    """Whether `value` passes the model's checks of `kind` (an Annotated type of the model):
    the one grammar of a unit, a pod UID, a name."""
    for check in get_args(kind)[1:]:
        if isinstance(check, After):
            try:
                check.function(value)
            except ValueError:
                return False
    return True


# cgroup id -> path


def cgroup_paths(root: int, ids: Iterable[int]) -> dict[int, str]:
    """The paths (`/system.slice/docker.service`, the root `/`) below the cgroup v2 root open
    at `root` of the cgroup ids asked for; an id whose cgroup is gone, or lies past the walk's
    bounds, has none. The descriptor stays the caller's."""
    wanted = {i for i in ids if i > 0}
    found: dict[int, str] = {}
    low: dict[int, str] = {}  # inodes that are the low 32 bits of an id (kernels before 5.5)
    lows = {i & 0xFFFFFFFF: i for i in wanted if i >> 32}
    try:
        top = os.fstat(root)
    except OSError:
        return {}
    budget = [MAX_CGROUPS]

    def note(inode: int, path: str) -> None:
        if inode in wanted:
            found[inode] = path
        if inode in lows:
            low[lows[inode]] = path

    def walk(fd: int, path: str, depth: int) -> None:
        try:
            with os.scandir(fd) as entries:
                children = []
                for entry in entries:
                    if budget[0] <= 0:
                        return
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                    budget[0] -= 1
                    info = entry.stat(follow_symlinks=False)
                    if info.st_dev != top.st_dev:
                        continue  # another filesystem mounted here
                    child = f"{path.rstrip('/')}/{entry.name}"
                    note(info.st_ino, child)
                    children.append((entry.name, child))
        except OSError:
            return
        if depth >= MAX_DEPTH:
            return
        for name, child in children:
            if len(found) == len(wanted) or budget[0] <= 0:
                return
            try:
                at = os.open(name, _DIRECTORY, dir_fd=fd)
            except OSError:
                continue  # gone since it was listed
            try:
                walk(at, child, depth + 1)
            finally:
                os.close(at)

    note(top.st_ino, "/")
    if len(found) < len(wanted):
        walk(root, "/", 1)
    return {i: found.get(i) or low[i] for i in wanted if i in found or i in low}


# path -> unit, pod


@dataclass(frozen=True)
class CgroupOwner:
    unit: str | None = None
    pod_uid: str | None = None
    container_id: str | None = None


def cgroup_owner(path: str) -> CgroupOwner:
    """The unit, pod and container a cgroup path names (each None where it names none)."""
    parts = [p for p in path.split("/") if p]
    unit = next((p for p in reversed(parts) if _UNIT_NAME.fullmatch(p) and fits(Unit, p)), None)
    for index in range(len(parts)):
        uid = _pod_uid(parts, index)
        if uid is None:
            continue
        container = None
        if index + 1 < len(parts) and (match := _CONTAINER.fullmatch(parts[index + 1])):
            container = match.group(1) if fits(ContainerId, match.group(1)) else None
        return CgroupOwner(unit, uid, container)
    return CgroupOwner(unit)


def _pod_uid(parts: list[str], index: int) -> str | None:
    part = parts[index]
    if match := _SYSTEMD_POD.fullmatch(part):
        uid = match.group(1).replace("_", "-")
    elif (match := _CGROUPFS_POD.fullmatch(part)) and (
        parts[index - 1 : index] == ["kubepods"]
        or (index >= 2 and parts[index - 1] in _QOS and parts[index - 2] == "kubepods")
    ):
        uid = match.group(1)
    else:
        return None
    return uid if fits(PodUid, uid) else None


def pod_cgroup(text: str) -> CgroupOwner | None:
    """The pod of a process, from its /proc/PID/cgroup (any hierarchy's line: a hybrid host's
    kubelet may manage pods in the v1 ones), or None."""
    for line in text.splitlines():
        fields = line.split(":", 2)
        if len(fields) == 3:
            owner = cgroup_owner(fields[2])
            if owner.pod_uid is not None:
                return owner
    return None


# /var/log/pods, /var/log/containers


def pod_names(pods: Path, uids: Iterable[str]) -> dict[str, tuple[str, str]]:
    """(namespace, name) of the pods asked for, from the kubelet's log directories
    (`<namespace>_<name>_<uid>`); a listing past MAX_LISTED entries is read that far."""
    wanted = set(uids)
    if not wanted:
        return {}
    found: dict[str, tuple[str, str]] = {}
    for entry in listed_names(pods, None, MAX_LISTED) or []:
        parts = entry.split("_")
        if len(parts) != 3 or parts[2] not in wanted:
            continue
        namespace, name, uid = parts
        if fits(KubernetesName, namespace) and fits(KubernetesName, name):
            found[uid] = (namespace, name)
    return found


def container_names(containers: Path, ids: Iterable[str]) -> dict[str, str]:
    """The container name of each container id asked for, from the kubelet's links
    `<pod>_<namespace>_<container>-<id>.log` (listed, never followed)."""
    wanted = set(ids)
    if not wanted:
        return {}
    found: dict[str, str] = {}
    for entry in listed_names(containers, None, MAX_LISTED) or []:
        parts = entry.removesuffix(".log").split("_")
        if len(parts) != 3 or "-" not in parts[2]:
            continue
        name, _, container_id = parts[2].rpartition("-")
        if container_id in wanted and fits(KubernetesName, name):
            found[container_id] = name
    return found


# network namespace -> holder


@dataclass(frozen=True)
class Holder:
    """A process holding a network namespace, and the pod of the first one found whose cgroup
    is a pod's (None: no pod's process holds it)."""

    pid: int
    pod: CgroupOwner | None = None


def namespace_holders(proc: Path, inodes: Iterable[int]) -> dict[int, Holder]:
    """For each network namespace inode asked for, a process that holds it, preferring a pod's
    (its /proc/PID/cgroup under a kubepods path); inodes no process holds are left out. One
    bounded scan of `proc`, by descriptor."""
    wanted = set(inodes)
    found: dict[int, Holder] = {}
    if not wanted:
        return found
    try:
        top = os.open(proc, _DIRECTORY)
    except OSError:
        return found
    try:
        with os.scandir(top) as entries:
            for scanned, entry in enumerate(entries):
                if scanned >= MAX_PROCESSES:
                    break
                if not entry.name.isdigit():
                    continue
                inode = _netns_of(top, entry.name)
                if inode not in wanted or (inode in found and found[inode].pod is not None):
                    continue
                pod = _pod_of(top, entry.name)
                if pod is not None or inode not in found:
                    found[inode] = Holder(int(entry.name), pod)
    except OSError:
        pass
    finally:
        os.close(top)
    return found


def _netns_of(proc: int, pid: str) -> int | None:
    try:
        match = _NETNS.fullmatch(os.readlink(f"{pid}/ns/net", dir_fd=proc))
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _pod_of(proc: int, pid: str) -> CgroupOwner | None:
    try:
        at = os.open(pid, _DIRECTORY, dir_fd=proc)
    except OSError:
        return None
    try:
        if not stat.S_ISDIR(os.fstat(at).st_mode):
            return None
        data = read_at(at, "cgroup", CGROUP_FILE)
    finally:
        os.close(at)
    return None if data is None else pod_cgroup(data.decode("utf-8", "replace"))
