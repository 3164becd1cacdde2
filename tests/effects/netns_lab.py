"""Throwaway network namespaces for the effect tests: run a function in one, read its result back.

`start(what, body, *args)` forks a child that unshares a new network namespace, brings lo up and
runs `body(*args)` there; `Namespace.result(timeout)` returns what the body returned (anything
JSON carries) or raises the child's error. Several namespaces can run at once: start them all,
then collect their results. The body sees a namespace of its own: its sysctls start at the
kernel's defaults for a new namespace (not the host's values), and its /proc/net counters
(netstat, snmp, sockstat's inuse and tw) count only its own sockets, while a few (sockstat's
orphan and mem) are global on Linux.

Safety. Nothing is written outside a namespace created here: `write_sysctl` refuses unless
this process is a lab child and /proc/self/ns/net differs from the namespace it left, and the
host-global sysctls (tcp_mem, tcp_max_orphans, netdev_max_backlog, ...) are not even present in
a non-initial namespace's /proc/sys. Each child leads a session of its own and dies with the
caller (PR_SET_PDEATHSIG); its helpers die with it (`die_with_parent`), and collecting a result
kills whatever the child's process group still holds, so a pass, a failure or a kill -9 of the
test leaves nothing running. No namespace is named (`ip netns`): it lives exactly as long as
its processes. Needs root and iproute2 `ip`; tests skip otherwise (`needs_lab`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from tests.namespaces import host_sysctls, needs_netns

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET, PR_SET_PDEATHSIG = 0x40000000, 1
_left_netns: tuple[int, int] | None = None  # in a lab child: the caller's namespace
F = TypeVar("F", bound=Callable[..., Any])


def needs_lab(*tools: str) -> Callable[[F], F]:
    """Skip the test, with the reason, without root and namespaces or without `ip` and `tools`."""

    def decorate(test: F) -> F:
        for tool in ("ip", *tools):
            test = pytest.mark.skipif(shutil.which(tool) is None, reason=f"needs {tool}")(test)
        marked: F = needs_netns(test)
        return marked

    return decorate


class Namespace:
    """A child running a body in a network namespace of its own."""

    def __init__(self, what: str, pid: int, fd: int) -> None:
        self.what, self.pid, self.fd = what, pid, fd
        self.done = False

    def result(self, timeout: float) -> Any:
        deadline, data = time.monotonic() + timeout, b""
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.what}: no result after {timeout:g} s")
                ready, _, _ = select.select([self.fd], [], [], left)
                if ready:
                    chunk = os.read(self.fd, 1 << 16)
                    if not chunk:
                        break
                    data += chunk
        finally:
            self.close()
        message: dict[str, Any] = json.loads(data) if data else {"error": "exited without a word"}
        if "error" in message:
            raise RuntimeError(f"{self.what}: {message['error']}")
        return message["result"]

    def close(self) -> None:
        """Kill what the child's process group still runs and reap the child (idempotent)."""
        if self.done:
            return
        self.done = True
        os.close(self.fd)
        with contextlib.suppress(ProcessLookupError):  # the unreaped child keeps its id ours
            os.killpg(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)

    def __enter__(self) -> Namespace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start(what: str, body: Callable[..., Any], *args: Any) -> Namespace:
    """Run body(*args) in a fresh network namespace, in a child that dies with the caller."""
    parent, caller = os.getpid(), netns()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_fd)
        return Namespace(what, pid, read_fd)
    os.close(read_fd)
    code, message = 0, {"error": "did not finish"}
    try:
        os.setsid()
        die_with_parent()
        if os.getppid() != parent:  # the caller died before prctl
            os._exit(1)
        message = {"result": _inside(caller, body, args)}
    except BaseException as error:
        code = 1
        message = {"error": f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=-4)}"}
    data = json.dumps(message).encode()
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(write_fd, data) :]
    os._exit(code)


def _inside(caller: tuple[int, int], body: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    global _left_netns
    if _libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWNET): {os.strerror(errno)}")
    if netns() == caller:
        raise RuntimeError("unshare left this process in the caller's network namespace")
    _left_netns = caller
    run("ip", "link", "set", "lo", "up")
    return body(*args)


def netns() -> tuple[int, int]:
    stat = os.stat("/proc/self/ns/net")
    return stat.st_dev, stat.st_ino


def die_with_parent() -> None:
    """This process gets SIGKILL when its parent ends (also as a subprocess preexec_fn)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _refuse_outside(what: str) -> None:
    if _left_netns is None or netns() == _left_netns:
        raise RuntimeError(f"refusing to {what}: this is not a namespace of the lab")


def write_sysctl(name: str, value: object) -> None:
    """Set a sysctl of this lab namespace; refuses anywhere else."""
    _refuse_outside(f"write {name}")
    text = " ".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
    path = "/proc/sys/" + name.replace(".", "/")
    with open(path, "w") as handle:
        handle.write(text)
    got = read_sysctl(name)
    if got.split() != text.split():
        raise RuntimeError(f"{name}: wrote {text!r}, reads {got!r}")


def add_address(address: str) -> None:
    """Add address/32 to this lab namespace's lo (an upstream that is not in 127/8)."""
    _refuse_outside(f"add {address}")
    run("ip", "addr", "add", f"{address}/32", "dev", "lo")


def read_sysctl(name: str) -> str:
    with open("/proc/sys/" + name.replace(".", "/")) as handle:
        return handle.read().strip()


def run(*command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")
    return done.stdout


def counters() -> dict[str, int]:
    """This namespace's /proc/net/netstat and snmp counters, as 'TcpExt.ListenOverflows' etc."""
    values: dict[str, int] = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        with open(path) as handle:
            lines = handle.read().splitlines()
        for head, data in zip(lines[0::2], lines[1::2], strict=True):
            prefix, names = head.split(":", 1)
            numbers = data.split(":", 1)[1].split()
            for name, number in zip(names.split(), numbers, strict=True):
                with contextlib.suppress(ValueError):
                    values[f"{prefix}.{name}"] = int(number)
    return values


def sockstat(path: str = "/proc/net/sockstat") -> dict[str, int]:
    """The TCP line of sockstat: inuse, orphan, tw, alloc, mem (pages)."""
    with open(path) as handle:
        for line in handle:
            if line.startswith("TCP:"):
                fields = line.split()[1:]
                return {fields[i]: int(fields[i + 1]) for i in range(0, len(fields), 2)}
    raise RuntimeError(f"{path} has no TCP line")


def host_changes(before: dict[str, str]) -> list[str]:
    """Keys of the host's own /proc/sys that no longer read as in `before` (host_sysctls())."""
    after = host_sysctls()
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def assert_host_unchanged(before: dict[str, str]) -> None:
    """The host's own /proc/sys reads as it did before the namespaces ran."""
    changed = host_changes(before)
    assert not changed, f"the host's own /proc/sys changed: {changed}"
