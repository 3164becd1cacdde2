"""Reading the running kernel's keys (sources.running_kernel): by descriptor, links not
followed, one interface of each per-interface tree, within a bound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sysctl_advisor.sources import running_kernel
from sysctl_advisor.sources.running_kernel import read_running_kernel

INTERFACES = frozenset({("net", "ipv4", "conf")})


def _tree(root: Path) -> None:
    sys = root / "proc/sys"
    for key, mode in [
        ("kernel/pid_max", 0o644),
        ("net/core/netdev_max_backlog", 0o644),
        ("net/ipv4/tcp_available_congestion_control", 0o444),
        ("net/ipv4/conf/all/rp_filter", 0o644),
        ("net/ipv4/conf/eth0/mc_forwarding", 0o444),
        ("net/ipv4/conf/eth1/only_here", 0o644),  # a second other interface is not walked
    ]:
        path = sys / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("reno cubic\n" if "congestion" in key else "1\n")
        path.chmod(mode)
    outside = root / "elsewhere"
    (outside / "secret").mkdir(parents=True)
    (outside / "secret" / "key").write_text("1\n")
    (sys / "vm").symlink_to(outside)  # a link is not followed


def test_keys_modes_and_what_is_offered_are_read(tmp_path: Path) -> None:
    _tree(tmp_path)
    found = read_running_kernel("6.18.0", INTERFACES, tmp_path)
    assert found is not None
    assert found.keys == {
        "kernel.pid_max",
        "net.core.netdev_max_backlog",
        "net.ipv4.tcp_available_congestion_control",
        "net.ipv4.conf.all.rp_filter",
        "net.ipv4.conf.*.mc_forwarding",
    }
    assert found.read_only == {  # the file's mode, whoever reads it
        "net.ipv4.tcp_available_congestion_control",
        "net.ipv4.conf.*.mc_forwarding",
    }
    assert found.whole_net and found.offered == ("reno", "cubic") and found.modules is None


def test_a_listing_past_the_bound_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    monkeypatch.setattr(running_kernel, "MAX_NAMES", 2)
    assert read_running_kernel("6.18.0", INTERFACES, tmp_path) is None
    assert read_running_kernel("6.18.0", INTERFACES, tmp_path / "absent") is None


@pytest.mark.skipif(not Path("/proc/sys/kernel/osrelease").is_file(), reason="no /proc/sys here")
def test_this_hosts_proc_sys_is_read_whole() -> None:
    found = read_running_kernel(os.uname().release, INTERFACES)
    assert found is not None and "kernel.osrelease" in found.keys
    assert "kernel.osrelease" in found.read_only
    assert all("." in key for key in found.keys)


def test_an_empty_directory_is_a_mount_point_waiting_not_a_listed_one(tmp_path: Path) -> None:
    """fs/binfmt_misc is an empty directory until binfmt_misc is mounted there: its keys are
    not missing, they are not there yet."""
    _tree(tmp_path)
    (tmp_path / "proc/sys/fs/binfmt_misc").mkdir(parents=True)
    found = read_running_kernel("6.18.0", INTERFACES, tmp_path)
    assert found is not None
    assert "fs.binfmt_misc" not in found.directories and "kernel" in found.directories


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="no /proc/self/smaps here")
def test_a_proc_file_longer_than_one_read_is_read_whole() -> None:
    """One read of a /proc seq_file gives about a page: the reader every source shares reads on
    to the end (or the limit), so /proc/net/dev of a node with many veths is not cut short."""
    from sysctl_advisor.sources.tree_paths import read_regular

    whole = read_regular(Path("/proc/self/smaps"), None, 16 << 20)
    assert whole is not None and len(whole) > 8192 and whole.endswith(b"\n")
    assert read_regular(Path("/proc/self/smaps"), None, 100) is not None
    assert len(read_regular(Path("/proc/self/smaps"), None, 100) or b"") == 100
