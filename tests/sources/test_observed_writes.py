"""The one entry point: the writes a watch saw as the facts' `writers:` section records them,
resolved against fixture trees standing for the cgroup v2 mount, /proc and the kubelet's log
directories; every record validates as the model."""

from __future__ import annotations

import os
from pathlib import Path

from sysctl_advisor.model.model_base import plain_data, validate
from sysctl_advisor.model.sysctl_writers import WRITTEN_TEXT, ObservedWrite, WriterPod
from sysctl_advisor.sources.observed_writes import Places, escaped, observed_writes
from sysctl_advisor.sources.sysctl_watch import SysctlWrite, cgroup2_mount

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "writers" / "var" / "log"
UID = "0f2c3a4b-5d6e-4f70-8a9b-0c1d2e3f4a5b"
CID = "aaaaaaaa" + "3c" * 28
POD_CGROUP = (
    f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID.replace('-', '_')}"
    f".slice/cri-containerd-{CID}.scope"
)
HOST_NETNS = 4026531840
POD_NETNS = 4026532100


def _write(**fields: object) -> SysctlWrite:
    base: dict[str, object] = {
        "key": "net.core.somaxconn",
        "old": "4096\n",
        "new": "8192\n",
        "truncated": False,
        "pid": 4242,
        "tid": 4242,
        "comm": "sh",
        "uid": 0,
        "cgroup_id": None,
        "monotonic_ns": 1,
        "time": 1_800_000_000.25,
        "parent_pid": 1,
        "parent_comm": "systemd",
        "netns": HOST_NETNS,
    }
    return SysctlWrite(**{**base, **fields})  # type: ignore[arg-type]


def _places(tmp_path: Path) -> tuple[Places, dict[str, int]]:
    cgroups = tmp_path / "cgroup"
    inodes = {}
    for path in ("system.slice/docker.service", "system.slice/containerd.service", POD_CGROUP):
        (cgroups / path).mkdir(parents=True)
        inodes[path] = os.stat(cgroups / path).st_ino
    proc = tmp_path / "proc"
    (proc / "77/ns").mkdir(parents=True)
    (proc / "77/ns/net").symlink_to(f"net:[{POD_NETNS}]")
    (proc / "77/cgroup").write_text(f"0::/{POD_CGROUP}\n")
    (proc / "sys/net/core").mkdir(parents=True)
    (proc / "sys/net/core/somaxconn").write_text("8192\n")
    places = Places(
        cgroup_root=cgroups,
        own_netns=HOST_NETNS,
        proc=proc,
        pods=LOGS / "pods",
        containers=LOGS / "containers",
    )
    return places, inodes


def _valid(observed: list[ObservedWrite]) -> list[ObservedWrite]:
    return [validate(ObservedWrite, plain_data(w)) for w in observed]


def test_a_write_names_its_unit_time_and_the_host_namespace(tmp_path: Path) -> None:
    places, inodes = _places(tmp_path)
    [write] = _valid(
        observed_writes([_write(cgroup_id=inodes["system.slice/docker.service"])], places)
    )
    assert (write.key, write.value, write.old, write.applied) == (
        "net.core.somaxconn",
        "8192",
        "4096",
        True,  # read back from the fixture's /proc/sys
    )
    assert write.time == "2027-01-15T08:00:00.250000Z"
    assert (write.cgroup, write.unit, write.pod) == (
        "/system.slice/docker.service",
        "docker.service",
        None,
    )
    assert (write.comm, write.parent_pid, write.parent_comm) == ("sh", 1, "systemd")
    assert write.netns is not None and (write.netns.kind, write.netns.inode) == (
        "host",
        HOST_NETNS,
    )


def test_a_pods_write_names_the_pod_and_a_cni_plugins_the_pods_namespace(
    tmp_path: Path,
) -> None:
    places, inodes = _places(tmp_path)
    pod = WriterPod(
        uid=UID, namespace="default", name="frontend-proxy", container="nginx", container_id=CID
    )
    in_pod, by_plugin = _valid(
        observed_writes(
            [
                _write(cgroup_id=inodes[POD_CGROUP], netns=POD_NETNS),
                _write(
                    key="net.ipv4.ip_forward",
                    new="1\n",
                    old="0\n",
                    cgroup_id=inodes["system.slice/containerd.service"],
                    netns=POD_NETNS,
                ),
            ],
            places,
        )
    )
    assert in_pod.pod == pod
    assert in_pod.netns is not None and (in_pod.netns.kind, in_pod.netns.pod) == ("pod", pod)
    assert (by_plugin.unit, by_plugin.pod) == ("containerd.service", None)
    assert by_plugin.netns is not None and by_plugin.netns.pod == pod


def test_a_gone_cgroup_and_a_namespace_no_pod_holds(tmp_path: Path) -> None:
    places, _ = _places(tmp_path)
    [write] = _valid(observed_writes([_write(cgroup_id=123_456_789, netns=99)], places))
    assert (write.cgroup, write.unit, write.pod, write.applied) == (None, None, None, None)
    assert write.netns is not None and write.netns.kind == "other"


def test_hostile_texts_are_escaped_and_capped(tmp_path: Path) -> None:
    places, _ = _places(tmp_path)
    [write] = _valid(
        observed_writes(
            [
                _write(
                    new="1\x1b[2J\u2028\n",
                    old="4096\t131072\t6291456\n",
                    comm="\x1b\x1b\x1b\x1b\x1b",
                    parent_comm=None,
                    key="net.ipv4.tcp_rmem",
                )
            ],
            places,
        )
    )
    assert write.value == "1\\x1b[2J\\xe2\\x80\\xa8"
    assert write.old == "4096 131072 6291456"  # the kernel's tabs between fields as spaces
    assert write.comm == "\\x1b\\x1b\\x1b…"  # 15 characters at most, no escape cut
    assert write.parent_comm is None
    [long] = _valid(observed_writes([_write(new="9" * 5000 + "\n")], places))
    assert long.truncated and len(long.value) == WRITTEN_TEXT
    # a key the facts cannot name (an interface's odd characters) is left out
    assert observed_writes([_write(key="net.ipv4.conf.eth 0.rp_filter")], places) == []


def test_the_hosts_places_are_its_cgroup_mount_and_this_network_namespace() -> None:
    places = Places.of_host()
    assert places.cgroup_root == cgroup2_mount()  # as mountinfo says, where none is given
    assert places.own_netns == os.stat("/proc/self/ns/net").st_ino
    assert Places.of_host(Path("/sys/fs/cgroup")).cgroup_root == Path("/sys/fs/cgroup")


def test_escaping_never_cuts_an_escape() -> None:
    assert escaped("ab\x07", 4) == ("ab", True)
    assert escaped("ab\x07", 6) == ("ab\\x07", False)


def test_a_cgroup_of_odd_characters_is_escaped_and_names_no_unit(tmp_path: Path) -> None:
    places, _ = _places(tmp_path)
    odd = Path(str(places.cgroup_root)) / "system.slice" / "evil\x1b[2J.service"
    odd.mkdir()
    [write] = _valid(observed_writes([_write(cgroup_id=os.stat(odd).st_ino)], places))
    assert (write.cgroup, write.unit) == ("/system.slice/evil\\x1b[2J.service", None)
