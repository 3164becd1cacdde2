"""Whether the kernel took a write: the chain of one key's writes (the next one's value before
is the value written), values compared as the kernel reads them, and the last one read back in
the namespace it was written in, entered from a process that still holds it. The root tests
write only inside `unshare -n` and check the host's /proc/sys is unchanged."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysctl_advisor.sources import write_readback
from sysctl_advisor.sources.observed_writes import Places, observed_writes
from sysctl_advisor.sources.sysctl_watch import SysctlWrite
from tests.conftest import HANG_SECONDS
from tests.namespaces import host_sysctls, namespace_problem


@pytest.mark.parametrize(
    ("written", "printed", "same"),
    [
        ("8192\n", "8192\n", True),
        ("8192", "4096\n", False),
        ("0x2000", "8192\n", True),  # strtoul, base 0
        ("  8192  ", "8192\n", True),
        ("4096 131072 6291456\n", "4096\t131072\t6291456\n", True),
        ("4096 131072", "4096\t131072\t6291456\n", True),  # fewer fields set only those
        ("4096 131072 6291456 # note", "4096\t131072\t6291456\n", True),  # the rest dropped
        ("4096 x 6291456", "4096\t87380\t6291456\n", False),  # refused from the x
        ("bogus\n", "60\n", False),
        ("", "60\n", False),
        ("bbr\n", "bbr\n", True),
        ("bbr", "cubic\n", False),
        ("fq_codel  ", "fq_codel\n", True),
    ],
)
def test_values_compare_as_the_kernel_reads_them(written: str, printed: str, same: bool) -> None:
    assert write_readback.same_value(written, printed) is same


def test_a_write_is_applied_where_the_next_ones_value_before_is_its_value() -> None:
    writes = [("600\n", "7200\n"), ("bogus\n", "600\n"), ("900\n", "600\n"), ("1200\n", None)]
    assert write_readback.chained(writes) == [True, False, None, None]
    assert write_readback.chained([]) == []


def test_keys_of_other_namespaces_than_the_network_one_are_unknowable() -> None:
    assert not write_readback.knowable("kernel.hostname")
    assert not write_readback.knowable("kernel.shmmax")
    assert not write_readback.knowable("fs.mqueue.msg_max")
    assert not write_readback.knowable("user.max_net_namespaces")
    assert write_readback.knowable("vm.swappiness")
    assert write_readback.knowable("net.core.somaxconn")


def _write(key: str, new: str, old: str | None, netns: int | None, when: int) -> SysctlWrite:
    return SysctlWrite(
        key=key,
        old=old,
        new=new,
        truncated=False,
        pid=4242,
        tid=4242,
        comm="sh",
        uid=0,
        cgroup_id=None,
        monotonic_ns=when,
        time=1_800_000_000.0,
        netns=netns,
    )


def test_writes_in_other_namespaces_chain_apart_and_an_unheld_one_is_unknown(
    tmp_path: Path,
) -> None:
    """Two namespaces' writes of one key do not chain together; the last of a namespace no
    process holds any more, and a write whose namespace is not given, are unknown."""
    (tmp_path / "sys/net/core").mkdir(parents=True)
    places = Places(cgroup_root=None, own_netns=1, proc=tmp_path)
    writes = [
        _write("net.core.somaxconn", "8192\n", "4096\n", 7, 1),
        _write("net.core.somaxconn", "1024\n", "4096\n", 8, 2),
        _write("net.core.somaxconn", "2048\n", "8192\n", 7, 3),
        _write("net.core.somaxconn", "512\n", "4096\n", None, 4),
    ]
    assert [w.applied for w in observed_writes(writes, places)] == [True, None, None, None]


def _problem() -> str | None:
    return namespace_problem()


@pytest.fixture
def writer() -> Iterator[int]:
    """A shell in a fresh network namespace that writes an accepted and a refused value, then
    stays alive (holding the namespace) until the test ends."""
    before = host_sysctls()
    child = subprocess.Popen(
        [
            "unshare",
            "-n",
            "sh",
            "-c",
            "echo 8192 > /proc/sys/net/core/somaxconn; "
            "echo bogus > /proc/sys/net/ipv4/tcp_fin_timeout 2>/dev/null; "
            "echo ready; exec sleep 600",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        yield child.pid
    finally:
        child.kill()
        child.wait(timeout=HANG_SECONDS)
    assert host_sysctls() == before, "the host's /proc/sys changed"


@pytest.mark.skipif(_problem() is not None, reason=str(_problem()))
def test_a_refused_write_reads_back_not_applied_and_an_accepted_one_applied(
    writer: int,
) -> None:
    netns = os.stat(f"/proc/{writer}/ns/net").st_ino
    own = os.stat("/proc/self/ns/net").st_ino
    assert netns != own
    writes = [
        _write("net.core.somaxconn", "8192\n", "4096\n", netns, 1),
        _write("net.ipv4.tcp_fin_timeout", "bogus\n", "60\n", netns, 2),
    ]
    places = Places(cgroup_root=None, own_netns=own)
    observed = observed_writes(writes, places)
    assert [(w.key, w.applied) for w in observed] == [
        ("net.core.somaxconn", True),
        ("net.ipv4.tcp_fin_timeout", False),
    ]
    assert [w.netns.kind if w.netns else None for w in observed] == ["other", "other"]
    # read in the writer's namespace, by a thread of its own: this one's stays the host's
    mine = os.readlink("/proc/thread-self/ns/net")
    keys = ["net.core.somaxconn", "net.ipv4.tcp_fin_timeout"]
    read = write_readback.read_in_namespace(Path("/proc"), writer, netns, keys)
    assert read == {"net.core.somaxconn": "8192\n", "net.ipv4.tcp_fin_timeout": "60\n"}
    assert os.readlink("/proc/thread-self/ns/net") == mine


@pytest.mark.skipif(_problem() is not None, reason=str(_problem()))
def test_a_namespace_no_process_holds_any_more_is_unknown() -> None:
    child = subprocess.Popen(
        ["unshare", "-n", "sh", "-c", "echo ready; exec sleep 600"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        netns = os.stat(f"/proc/{child.pid}/ns/net").st_ino
    finally:
        child.kill()
        child.wait(timeout=HANG_SECONDS)
    assert netns != os.stat("/proc/self/ns/net").st_ino
    write = _write("net.core.somaxconn", "8192\n", "4096\n", netns, 1)
    places = Places(cgroup_root=None, own_netns=os.stat("/proc/self/ns/net").st_ino)
    assert observed_writes([write], places)[0].applied is None


@pytest.mark.skipif(_problem() is not None, reason=str(_problem()))
def test_a_holder_whose_pid_now_holds_another_namespace_is_not_entered(writer: int) -> None:
    """A pid handed out again holds another namespace: the read is refused, not misread."""
    keys = ["net.core.somaxconn"]
    assert write_readback.read_in_namespace(Path("/proc"), writer, 1, keys) == {
        "net.core.somaxconn": None
    }
