"""Who wrote it, end to end: `facts --watch 5s` over throwaway cgroups named like the real
owners (docker.service, systemd-networkd.service, tuned.service, a login scope, a Kubernetes
pod's container scope with a /var/log/pods tree), writer processes in them renamed with
prctl(PR_SET_NAME) that write per-namespace keys, each in a network namespace of its own or
in the one the facts run reads its values in (which is then its `host`); one write is refused.
The facts list each write with its writer, unit or pod, namespace and time, the refused one
marked; `diff` names the observed owner of somaxconn and the fix in its configuration; nothing
stays attached, and the host's /proc/sys is as it was.

The facts run in their own mount and network namespaces: /var/log there is the fixture tree,
and the values they read are their namespace's, never the host's."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.sources import sysctl_provenance, sysctl_watch
from tests.namespaces import host_sysctls
from tests.sources.test_sysctl_watch import _attached_soon, _own_cgroup, _problem

POD_UID = "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
CONTAINER_ID = "4c3f" * 16
LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
PR_SET_NAME = 15
# a writer: its name set with prctl, then one write(2); a refused write is the kernel's answer
WRITE = (
    "import ctypes, sys\n"
    "ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\n"
    "import os\n"
    "fd = os.open(sys.argv[2], os.O_WRONLY)\n"
    "try:\n"
    "    os.write(fd, sys.argv[3].encode())\n"
    "except OSError:\n"
    "    pass\n"
)
HOLD = "import ctypes, sys, time\nctypes.CDLL(None).prctl(15, b'pause', 0, 0, 0)\ntime.sleep(60)\n"


PROBLEM = _problem() or sysctl_provenance.why_not(os.uname().release)
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM))

UNITS = {
    "docker": "system.slice/docker.service",
    "networkd": "system.slice/systemd-networkd.service",
    "tuned": "system.slice/tuned.service",
    "login": "user.slice/user-1000.slice/session-7.scope",
    "pod": (
        "kubepods.slice/kubepods-besteffort.slice/"
        f"kubepods-besteffort-pod{POD_UID.replace('-', '_')}.slice/"
        f"cri-containerd-{CONTAINER_ID}.scope"
    ),
}


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """The throwaway cgroups under this test's own; removed afterwards, the host unchanged."""
    own = _own_cgroup()
    assert own is not None
    top = own / f"sysctl-advisor-accept-{uuid.uuid4().hex[:8]}"
    for path in UNITS.values():
        (top / path).mkdir(parents=True)
    before = host_sysctls()
    try:
        yield top
    finally:
        for directory, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            os.rmdir(directory)
    assert host_sysctls() == before, "the host's /proc/sys changed"


def _logs(root: Path) -> Path:
    """/var/log as a node's kubelet leaves it for the pod (the directory names only matter)."""
    pod = root / "pods" / f"default_frontend-7d9c_{POD_UID}" / "sysctl-init"
    pod.mkdir(parents=True)
    (pod / "0.log").write_text("")
    containers = root / "containers"
    containers.mkdir()
    (containers / f"frontend-7d9c_default_sysctl-init-{CONTAINER_ID}.log").symlink_to(pod / "0.log")
    return root


def _spawn(cgroup: Path, netns: int | None, script: str, *args: str) -> subprocess.Popen[bytes]:
    """A process in `cgroup`, in the network namespace open on `netns` (None: a fresh one)."""

    def enter() -> None:
        (cgroup / "cgroup.procs").write_text("0")
        done = LIBC.setns(netns, CLONE_NEWNET) if netns is not None else LIBC.unshare(CLONE_NEWNET)
        if done != 0:
            raise OSError(ctypes.get_errno(), "setns/unshare")

    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        preexec_fn=enter,
        pass_fds=() if netns is None else (netns,),
    )


def _write(cgroup: Path, netns: int | None, comm: str, key: str, value: str) -> None:
    path = f"/proc/sys/{key.replace('.', '/')}"
    assert _spawn(cgroup, netns, WRITE, comm, path, value).wait(timeout=20) == 0


def test_who_wrote_it(tree: Path, tmp_path: Path) -> None:
    logs = _logs(tmp_path / "log")
    out = tmp_path / "facts.yaml"
    facts = subprocess.Popen(
        [
            "unshare", "-m", "-n", "sh", "-c",
            'mount --bind "$0" /var/log && exec "$1" -m sysctl_advisor facts --watch 5s '
            '--cgroup "$2" -o "$3"',
            str(logs), sys.executable, str(tree), str(out),
        ],
    )  # fmt: skip
    deadline = time.monotonic() + 15
    while not sysctl_watch.attached(tree):
        assert facts.poll() is None and time.monotonic() < deadline, "the watch never attached"
        time.sleep(0.05)
    host = os.open(f"/proc/{facts.pid}/ns/net", os.O_RDONLY)  # the facts run's namespace
    pod = tree / UNITS["pod"]
    holder = _spawn(pod, None, HOLD)  # the pod's sandbox, holding its network namespace
    try:
        while Path(f"/proc/{holder.pid}/comm").read_text().strip() != "pause":
            time.sleep(0.01)
        pod_netns = os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY)
        _write(tree / UNITS["tuned"], host, "tuned", "net.core.somaxconn", "8192")
        _write(tree / UNITS["docker"], None, "dockerd", "net.ipv4.ip_forward", "1")
        _write(
            tree / UNITS["networkd"],
            None,
            "systemd-network",
            "net.ipv4.conf.all.src_valid_mark",
            "1",
        )
        _write(tree / UNITS["login"], host, "sysctl", "net.ipv4.tcp_keepalive_time", "600")
        _write(pod, pod_netns, "sysctl-init", "net.ipv4.tcp_fin_timeout", "bogus")
        _write(pod, pod_netns, "sysctl-init", "net.core.somaxconn", "1024")
        assert facts.wait(timeout=30) == 0
    finally:
        holder.kill()
        holder.wait()
        os.close(host)
    assert _attached_soon(tree) == []  # nothing stays attached

    writers = yaml.safe_load(out.read_text())["writers"]
    assert writers["provenance"].startswith("watch 5s")
    by_key = {(w["key"], w.get("comm")): w for w in writers["writes"]}
    me = Path("/proc/self/comm").read_text().strip()
    for write in writers["writes"]:
        assert write["time"] and write["pid"] > 1
        assert write["parent_pid"] == os.getpid() and write["parent_comm"] == me
        assert write["cgroup"].endswith(
            next(path for path in UNITS.values() if write["cgroup"].endswith(path))
        )
    tuned = by_key["net.core.somaxconn", "tuned"]
    assert (tuned["value"], tuned["unit"], tuned["netns"]["kind"]) == (
        "8192",
        "tuned.service",
        "host",
    )
    assert tuned["applied"] is True
    docker = by_key["net.ipv4.ip_forward", "dockerd"]
    assert (docker["unit"], docker["netns"]["kind"]) == ("docker.service", "other")
    networkd = by_key["net.ipv4.conf.all.src_valid_mark", "systemd-network"]
    assert networkd["unit"] == "systemd-networkd.service"
    login = by_key["net.ipv4.tcp_keepalive_time", "sysctl"]
    assert (login["unit"], login["value"], login["applied"]) == ("session-7.scope", "600", True)
    refused = by_key["net.ipv4.tcp_fin_timeout", "sysctl-init"]
    assert refused["value"] == "bogus" and refused["applied"] is False
    assert refused["pod"] == {
        "uid": POD_UID,
        "namespace": "default",
        "name": "frontend-7d9c",
        "container": "sysctl-init",
        "container_id": CONTAINER_ID,
    }
    assert refused["netns"]["kind"] == "pod"
    assert by_key["net.core.somaxconn", "sysctl-init"]["applied"] is True

    diff = subprocess.run(
        [
            sys.executable,
            "-m",
            "sysctl_advisor",
            "diff",
            "--facts",
            str(out),
            "-p",
            "frontend-proxy",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert diff.returncode == 1, diff.stderr
    somaxconn = diff.stdout[diff.stdout.index("net.core.somaxconn") :]
    assert "tuned" in somaxconn and "tuned.service" in somaxconn
    assert "[sysctl]" in somaxconn  # the fix, in tuned's own profile
