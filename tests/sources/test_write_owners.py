"""Who a write belongs to: a cgroup id as a path (a directory tree's inodes stand for a cgroup
v2 mount), the path as a unit or a pod in each driver's naming, the pod's namespace, name and
container from the kubelet's log directories (tests/fixtures/writers), and a network
namespace's holder from a /proc tree. Every hostile input is bounded."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysctl_advisor.sources import write_owners
from sysctl_advisor.sources.write_owners import CgroupOwner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "writers" / "var" / "log"
UID = "0f2c3a4b-5d6e-4f70-8a9b-0c1d2e3f4a5b"
SYSTEMD_UID = UID.replace("-", "_")
CID = "aaaaaaaa" + "3c" * 28


@pytest.mark.parametrize(
    ("path", "owner"),
    [
        ("/system.slice/docker.service", CgroupOwner("docker.service")),
        ("/system.slice/systemd-networkd.service", CgroupOwner("systemd-networkd.service")),
        ("/user.slice/user-0.slice/session-3.scope", CgroupOwner("session-3.scope")),
        (
            "/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope",
            CgroupOwner("run-r1.scope"),
        ),
        (
            f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SYSTEMD_UID}.slice"
            f"/cri-containerd-{CID}.scope",
            CgroupOwner(f"cri-containerd-{CID}.scope", UID, CID),
        ),
        (
            f"/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/crio-{CID}.scope",
            CgroupOwner(f"crio-{CID}.scope", UID, CID),
        ),
        (
            f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{SYSTEMD_UID}"
            f".slice/docker-{CID}.scope",
            CgroupOwner(f"docker-{CID}.scope", UID, CID),
        ),
        (  # a kubelet with --cgroup-root (kind, k3s in a container)
            f"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod{SYSTEMD_UID}.slice",
            CgroupOwner(None, UID),
        ),
        (f"/kubepods/burstable/pod{UID}/{CID}", CgroupOwner(None, UID, CID)),
        (f"/kubepods/pod{UID}/{CID}", CgroupOwner(None, UID, CID)),
        (f"/kubepods/besteffort/pod{UID}", CgroupOwner(None, UID)),
        (f"/elsewhere/pod{UID}/{CID}", CgroupOwner()),  # not below kubepods
        ("/kubepods.slice/kubepods-podnot-a-uid.slice", CgroupOwner()),
        ("/system.slice/bad\nname.service", CgroupOwner()),  # no unit name the facts hold
        ("/", CgroupOwner()),
    ],
)
def test_a_cgroup_path_names_its_unit_and_pod(path: str, owner: CgroupOwner) -> None:
    assert write_owners.cgroup_owner(path) == owner


def _tree(base: Path, paths: list[str]) -> dict[str, int]:
    inodes = {}
    for path in paths:
        (base / path).mkdir(parents=True, exist_ok=True)
        inodes[path] = os.stat(base / path).st_ino
    return inodes


def _paths(base: Path, ids: list[int]) -> dict[int, str]:
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return write_owners.cgroup_paths(fd, ids)
    finally:
        os.close(fd)


def test_cgroup_ids_are_found_by_inode_and_a_gone_one_has_no_path(tmp_path: Path) -> None:
    inodes = _tree(
        tmp_path,
        ["system.slice/docker.service", "user.slice/user-0.slice/session-3.scope"],
    )
    found = _paths(tmp_path, [*inodes.values(), os.stat(tmp_path).st_ino, 999_999_999])
    assert found == {
        inodes["system.slice/docker.service"]: "/system.slice/docker.service",
        inodes[
            "user.slice/user-0.slice/session-3.scope"
        ]: "/user.slice/user-0.slice/session-3.scope",
        os.stat(tmp_path).st_ino: "/",
    }


def test_an_id_whose_inode_is_its_low_32_bits_is_found(tmp_path: Path) -> None:
    """In 5.4 and before (and on 32-bit machines) a cgroup's inode is its id's low 32 bits,
    a generation above."""
    inode = _tree(tmp_path, ["system.slice/tuned.service"])["system.slice/tuned.service"]
    old_id = (7 << 32) | (inode & 0xFFFFFFFF)
    assert _paths(tmp_path, [old_id]) == {old_id: "/system.slice/tuned.service"}


def test_links_are_not_followed_and_a_loop_ends(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _tree(outside, ["secret.service"])
    (tmp_path / "root").mkdir()
    (tmp_path / "root/loop").symlink_to(".")
    (tmp_path / "root/away").symlink_to(outside)
    assert _paths(tmp_path / "root", [os.stat(outside / "secret.service").st_ino]) == {}


def test_the_walk_is_bounded_in_depth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_owners, "MAX_DEPTH", 8)
    deep = "/".join(f"d{i}" for i in range(20))
    (tmp_path / deep).mkdir(parents=True)
    shallow = "/".join(f"d{i}" for i in range(5))
    ids = [os.stat(tmp_path / deep).st_ino, os.stat(tmp_path / shallow).st_ino]
    assert _paths(tmp_path, ids) == {ids[1]: "/" + shallow}


def test_a_tree_of_100k_cgroups_is_walked_within_the_bound(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(write_owners, "MAX_CGROUPS", 1_000)
    wide = scratch / "kubepods.slice"
    wide.mkdir()
    ids = []
    for index in range(100_000):
        os.mkdir(wide / f"c{index}.scope")
        ids.append(os.stat(wide / f"c{index}.scope").st_ino)
    assert 0 < len(_paths(scratch, ids)) <= 1_000


def test_pods_are_named_from_the_kubelets_log_directories() -> None:
    names = write_owners.pod_names(FIXTURES / "pods", [UID, "11111111-2222-4333-8444-555555555555"])
    assert names == {UID: ("default", "frontend-proxy")}  # the old layout names no pod
    assert write_owners.container_names(FIXTURES / "containers", [CID, "b" * 64]) == {CID: "nginx"}


def test_odd_pod_directory_names_are_skipped(tmp_path: Path) -> None:
    for name in (
        f"kube\x1b[31msystem_evil_{UID}",
        f"a_b_c_{UID}",
        f"UPPER_name_{UID}",
        f"ns_{'x' * 300}_{UID}",
    ):
        (tmp_path / name[:255]).mkdir()
    assert write_owners.pod_names(tmp_path, [UID]) == {}
    containers = tmp_path / "containers"
    containers.mkdir()
    (containers / f"pod_ns_bad\x07name-{CID}.log").symlink_to("/nowhere")
    assert write_owners.container_names(containers, [CID]) == {}


def test_a_huge_pod_log_directory_is_read_within_the_bound(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(write_owners, "MAX_LISTED", 100)
    uids = [f"00000000-0000-4000-8000-{index:012x}" for index in range(20_000)]
    for uid in uids:
        os.mkdir(scratch / f"ns_pod_{uid}")
    assert 0 < len(write_owners.pod_names(scratch, uids)) <= 100


def test_a_log_directory_that_is_a_link_loop_or_missing_gives_nothing(tmp_path: Path) -> None:
    (tmp_path / "pods").symlink_to("pods")
    assert write_owners.pod_names(tmp_path / "pods", [UID]) == {}
    assert write_owners.container_names(tmp_path / "missing", [CID]) == {}


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory for a test's large payloads: in memory (/dev/shm) where there is one, as
    making and removing 100k entries on a loaded disk takes minutes; else tmp_path."""
    if not os.access("/dev/shm", os.W_OK):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="sysctl-advisor-test-") as name:
        yield Path(name)


def _process(proc: Path, pid: int, netns: int, cgroup: str) -> None:
    (proc / str(pid) / "ns").mkdir(parents=True)
    (proc / str(pid) / "ns/net").symlink_to(f"net:[{netns}]")
    (proc / str(pid) / "cgroup").write_text(cgroup)


def test_a_network_namespace_is_a_pods_where_a_pods_process_holds_it(tmp_path: Path) -> None:
    pod_path = f"/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/cri-containerd-{CID}.scope"
    _process(tmp_path, 10, 4026532001, "0::/system.slice/containerd.service\n")  # CNI plugin
    _process(tmp_path, 11, 4026532001, f"0::{pod_path}\n")  # the pod's pause container
    _process(tmp_path, 12, 4026532002, "0::/system.slice/docker.service\n")
    _process(tmp_path, 13, 4026532003, f"4:memory:/kubepods/burstable/pod{UID}/{CID}\n0::/\n")
    (tmp_path / "self").mkdir()
    holders = write_owners.namespace_holders(tmp_path, [4026532001, 4026532002, 4026532003, 5])
    assert holders[4026532001] == write_owners.Holder(
        11, CgroupOwner(f"cri-containerd-{CID}.scope", UID, CID)
    )
    assert holders[4026532002] == write_owners.Holder(12, None)
    assert holders[4026532003].pod == CgroupOwner(None, UID, CID)  # a hybrid host's v1 line
    assert 5 not in holders


def test_the_scan_of_processes_is_bounded(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_owners, "MAX_PROCESSES", 50)
    for pid in range(1, 2_001):
        _process(scratch, pid, 4026532000 + pid, "0::/\n")
    holders = write_owners.namespace_holders(scratch, range(4026532001, 4026534001))
    assert 0 < len(holders) <= 50


def test_a_process_cgroup_file_that_is_a_fifo_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "20/ns").mkdir(parents=True)
    (tmp_path / "20/ns/net").symlink_to("net:[4026532009]")
    os.mkfifo(tmp_path / "20/cgroup")
    assert write_owners.namespace_holders(tmp_path, [4026532009]) == {
        4026532009: write_owners.Holder(20, None)
    }
