"""Where sending starts: the send buffer the kernel gives an established connection.

tcp_wmem[1] is the send buffer a socket is created with, not the one it sends from: when the
connection is established, tcp_init_buffer_space() raises sk_sndbuf (tcp_sndbuf_expand() since
3.13) to room for twice the initial window, unless the application set SO_SNDBUF. The kernel
model's send_buffer_start holds the least that raise gives, over a 1500- and a 9000-byte path;
rules (tcp-buffers.frontend-initial, small-defaults, initial-ramp) reason from it.

Here, in a fresh network namespace, lo runs each MTU, tcp_wmem is `4096 START 16 MiB`, and a
client and a server that set nothing but TCP_CONGESTION (Reno: built into every kernel, and
with no sndbuf_expand of its own, so the kernel's factor 2, the least) connect; SO_SNDBUF is
read on both ends after connect and accept. A start below the raise gets the raise, at least
the model's figure; a start above it is kept. Each case prints one line (`pytest -s`). The
host's own /proc/sys is compared before and after.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from sysctl_advisor.engine.plan_builder import host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.sources.local_host import collect
from tests.effects import netns_lab as lab
from tests.namespaces import host_sysctls

MTUS = (1500, 9000)
LARGE_START = 1024 * 1024  # above the raise at either MTU


def connected(mtu: int, start: int) -> dict[str, Any]:
    """SO_SNDBUF of both ends of one loopback connection, lo at `mtu`, tcp_wmem[1] `start`."""
    lab.run("ip", "link", "set", "lo", "mtu", str(mtu))
    lab.write_sysctl("net.ipv4.tcp_wmem", [4096, start, 16 * 1024 * 1024])
    listener = socket.socket()
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.socket()
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
    created = client.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    return {
        "created": created,
        "client": client.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
        "server": server.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
        "mss": client.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG),
    }


@pytest.fixture(scope="module")
def floor(kb: KnowledgeBase) -> list[int]:
    """The kernel model's send_buffer_start for the kernel this runs on."""
    variables, _, _ = host_variables(kb, collect(list(kb.catalog.keys)))
    figure = variables["kernel"].send_buffer_start
    if figure is None:
        pytest.skip("the kernel model does not give the send buffer start of this kernel")
    return list(figure)


@pytest.fixture(scope="module")
def runs() -> dict[tuple[int, int], dict[str, Any]]:
    before = host_sysctls()
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for mtu in MTUS:
        for start in (4096, LARGE_START):
            with lab.start(f"send buffer, MTU {mtu}, start {start}", connected, mtu, start) as ns:
                found[mtu, start] = ns.result(timeout=30)
            result = found[mtu, start]
            print(
                f"\nMTU {mtu} (MSS {result['mss']}), tcp_wmem[1] {start:,}: created with "
                f"{result['created']:,} B, established {result['client']:,} B (client) / "
                f"{result['server']:,} B (server)"
            )
    lab.assert_host_unchanged(before)
    return found


@lab.needs_lab()
@pytest.mark.parametrize("index", range(len(MTUS)), ids=[f"mtu{m}" for m in MTUS])
def test_an_established_connection_sends_from_at_least_the_models_start(
    runs: dict[tuple[int, int], dict[str, Any]], floor: list[int], index: int
) -> None:
    result = runs[MTUS[index], 4096]
    assert result["created"] == 4096, result  # the socket is created with tcp_wmem[1]
    assert result["client"] >= floor[index] and result["server"] >= floor[index], (result, floor)


@lab.needs_lab()
@pytest.mark.parametrize("mtu", MTUS)
def test_a_start_above_the_raise_is_kept(
    runs: dict[tuple[int, int], dict[str, Any]], mtu: int
) -> None:
    result = runs[mtu, LARGE_START]
    assert result["client"] == LARGE_START and result["server"] == LARGE_START, result
