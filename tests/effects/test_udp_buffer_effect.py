"""A QUIC-sized UDP receive buffer, proved by a datagram burst to a receiver that does
not read.

UDP has no autotuning: a socket that asks nothing keeps net.core.rmem_default, and a burst that
arrives while the server is busy is dropped at the socket and counted in the namespace's own
/proc/net/snmp `Udp: RcvbufErrors`. Here, in a fresh network namespace, a receiver binds
127.0.0.1 and does not read while a sender in the same namespace writes BURST datagrams of a
QUIC packet's size (1,252 bytes of payload); then the namespace's Udp counters are read, and
the receiver drains what it holds. Cases: the socket's default buffer (rmem_default, of the new
namespace), and the advised buffer: udp.quic-buffers' rmem_max for frontend-proxy with
http3=true, taken from build_plan in-process (7 MiB, quic-go's request), granted doubled.

rmem_max cannot be raised inside the namespace: it is one global value, read-only in a
namespace other than the initial one on 6.18 (sysctl_core_net_init() clears the write bits) and
absent from it on 5.15 and 6.1. The test checks which holds on this kernel and says so, and asks
for the advised size with SO_RCVBUFFORCE (root), which skips only the rmem_max cap: the kernel
doubles the request exactly as it does for SO_RCVBUF under a large enough rmem_max
(__sock_set_rcvbuf()), and the test checks that doubling with getsockopt. A third case asks
with plain SO_RCVBUF and shows the cap: getsockopt gives twice the smaller of the request and
the host's rmem_max in force.

Loopback hands each datagram to the receiving socket in the sender's own system call (the
softirq runs when the transmit path re-enables bottom halves), so a burst written in a loop
does not queue in the per-CPU input backlog: every datagram is either held or counted in
RcvbufErrors (the test checks the sum; the host's softnet_stat dropped column, which other
namespaces share, is printed beside it). The outcome depends only on buffer accounting (the receiver
never reads during the burst), so it is deterministic. Each case prints one line (`pytest
-s`); the module takes well under a second. The host's own /proc/sys is compared before and
after.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.sources.local_host import collect
from tests.effects import netns_lab as lab
from tests.namespaces import host_sysctls

BURST = 4000
PAYLOAD = 1252  # a full-sized QUIC packet's UDP payload (quic-go's InitialPacketSize is 1252)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def softnet_dropped() -> int:
    """The host's per-CPU input-queue drops (softnet_stat column 2), summed (global counters)."""
    with open("/proc/net/softnet_stat") as handle:
        return sum(int(line.split()[1], 16) for line in handle if line.strip())


def rmem_max_in_namespace() -> str:
    """How this kernel shows net.core.rmem_max inside a namespace other than the initial one."""
    path = "/proc/sys/net/core/rmem_max"
    try:
        with open(path, "w") as handle:
            handle.write("1")  # never reaches the kernel: the open fails first where read-only
    except FileNotFoundError:
        return "absent"
    except PermissionError:
        return "read-only"
    return "writable"


# --------------------------------------------------------------------------- in the namespace
def burst(size: int | None, force: bool) -> dict[str, Any]:
    """A receiver with `size` asked for (None: the default), BURST datagrams, no reading."""
    seen = rmem_max_in_namespace() if size is None else "not probed"
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if size is not None:
        receiver.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE if force else socket.SO_RCVBUF, size)
    receiver.bind(("127.0.0.1", 0))
    granted = receiver.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE - 1, 64 * 1024 * 1024)  # SO_SNDBUFFORCE
    target, datagram = receiver.getsockname(), b"q" * PAYLOAD
    before, softnet_before = lab.counters(), softnet_dropped()
    for _ in range(BURST):
        sender.sendto(datagram, target)
    after, softnet_after = lab.counters(), softnet_dropped()
    receiver.setblocking(False)
    held = 0
    while True:
        try:
            receiver.recv(PAYLOAD + 1)
        except BlockingIOError:
            break
        held += 1
    return {
        "granted": granted,
        "rcvbuf_errors": after["Udp.RcvbufErrors"] - before["Udp.RcvbufErrors"],
        "in_errors": after["Udp.InErrors"] - before["Udp.InErrors"],
        "held": held,
        "softnet_dropped": softnet_after - softnet_before,
        "rmem_max_in_namespace": seen,
        "rmem_default": int(lab.read_sysctl("net.core.rmem_default")),
    }


# ----------------------------------------------------------------------------------- the cases
@pytest.fixture(scope="module")
def advised(kb: KnowledgeBase) -> int:
    """rmem_max the advisor wants for this host as an HTTP/3 frontend (udp.quic-buffers)."""
    plan = build_plan(kb, collect(list(kb.catalog.keys)), "frontend-proxy", {"http3": "true"})
    setting = {s.key: s for s in plan.settings}["net.core.rmem_max"]
    assert "udp.quic-buffers" in setting.rules, setting
    return int(setting.value)


@pytest.fixture(scope="module")
def runs(advised: int) -> dict[str, dict[str, Any]]:
    before = host_sysctls()
    cases = {
        "default": (None, False),
        "advised": (advised, True),
        "capped": (advised, False),
    }
    found: dict[str, dict[str, Any]] = {}
    for name, (size, force) in cases.items():
        with lab.start(f"udp burst, {name}", burst, size, force) as namespace:
            found[name] = namespace.result(timeout=30)
    lab.assert_host_unchanged(before)
    return found


def line(name: str, result: dict[str, Any]) -> str:
    return (
        f"\nudp burst of {BURST} x {PAYLOAD} B, {name}: buffer {result['granted']:,} B, "
        f"RcvbufErrors {result['rcvbuf_errors']:,}, held {result['held']:,}, "
        f"host softnet drops {result['softnet_dropped']}"
    )


@lab.needs_lab()
def test_the_default_buffer_drops_most_of_a_burst(runs: dict[str, dict[str, Any]]) -> None:
    result = runs["default"]
    seen = result["rmem_max_in_namespace"]
    print(line("default rmem_default", result), f"(rmem_max in the namespace: {seen})")
    assert result["granted"] == result["rmem_default"]  # asked nothing: rmem_default, not doubled
    # at most granted / PAYLOAD datagrams fit (each is charged more than its payload)
    assert result["rcvbuf_errors"] >= BURST - result["granted"] // PAYLOAD
    assert result["held"] + result["rcvbuf_errors"] == BURST
    assert result["in_errors"] >= result["rcvbuf_errors"]  # InErrors counts them too
    assert result["rmem_max_in_namespace"] in {"read-only", "absent"}


@lab.needs_lab()
def test_the_advised_buffer_holds_the_same_burst(
    runs: dict[str, dict[str, Any]], advised: int
) -> None:
    result = runs["advised"]
    print(line(f"advised rmem_max {advised:,} (SO_RCVBUFFORCE)", result))
    assert result["granted"] == 2 * advised  # the kernel doubles the request
    assert result["rcvbuf_errors"] == 0
    assert result["held"] == BURST


@lab.needs_lab()
def test_so_rcvbuf_is_cut_to_the_hosts_rmem_max(
    runs: dict[str, dict[str, Any]], advised: int
) -> None:
    """The same request with plain SO_RCVBUF: what an unprivileged server gets today."""
    result = runs["capped"]
    with open("/proc/sys/net/core/rmem_max") as handle:
        rmem_max = int(handle.read())
    print(line(f"SO_RCVBUF {advised:,} under the host's rmem_max {rmem_max:,}", result))
    assert result["granted"] == 2 * min(advised, rmem_max)
    assert result["held"] + result["rcvbuf_errors"] == BURST
