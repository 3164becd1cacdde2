"""The measurement `sysctl-advisor calibrate` runs inside a private network namespace.

Run as `unshare -n -- python -m sysctl_advisor.sources.calibration_probe PAIRS SECONDS`: it
opens loopback connection pairs (the server side registered in epoll, as a real server would),
measures /proc/net/sockstat TCP `mem` (pages) and slab growth (/proc/meminfo Slab,
/proc/slabinfo per cache) with the sockets idle and again with a few bytes left unread in every
socket, and prints the raw figures as JSON. Everything it opens is closed before it exits, and
the namespace ends with the process. It reads /proc and never writes /proc/sys."""

from __future__ import annotations

import gc
import json
import resource
import select
import socket
import sys
import time
from pathlib import Path
from typing import Any

from sysctl_advisor.sources.proc_readers import parse_meminfo, parse_slabinfo, parse_sockstat

QUEUED = b"sysctl-advisor!!"  # 16 bytes left unread in every socket
PAIRS_PER_LISTENER = 20_000  # well inside the default ephemeral range (28,232 ports)


def _snapshot() -> dict[str, Any]:
    gc.collect()
    time.sleep(0.2)  # let deferred frees (RCU, per-CPU caches) settle
    sockstat = parse_sockstat(Path("/proc/net/sockstat").read_text()).get("TCP", {})
    slab = parse_meminfo(Path("/proc/meminfo").read_text()).get("Slab", 0)
    try:
        caches = parse_slabinfo(Path("/proc/slabinfo").read_text())
    except OSError:
        caches = {}
    return {"tcp_mem_pages": sockstat.get("mem", 0), "slab_bytes": slab, "caches": caches}


def _fd_budget(needed: int) -> int:
    """Raise the soft RLIMIT_NOFILE toward `needed`; returns the descriptors available (a
    hard limit this process may not raise caps the number of pairs, and the output says so)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def measure(pairs: int, seconds: float) -> dict[str, Any]:
    available = _fd_budget(2 * pairs + 256)
    pairs_wanted = pairs
    pairs = max(1, min(pairs, (available - 256) // 2))
    deadline = time.monotonic() + seconds
    listeners: list[socket.socket] = []
    clients: list[socket.socket] = []
    servers: list[socket.socket] = []
    poller = select.epoll()
    base = _snapshot()
    try:
        while len(clients) < pairs and time.monotonic() < deadline:
            if len(clients) % PAIRS_PER_LISTENER == 0:
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.bind(("127.0.0.1", 0))
                listener.listen(128)
                listeners.append(listener)
            client = socket.create_connection(listeners[-1].getsockname())
            server, _ = listeners[-1].accept()
            poller.register(server.fileno(), select.EPOLLIN)
            clients.append(client)
            servers.append(server)
        idle = _snapshot()
        for client, server in zip(clients, servers, strict=True):
            client.sendall(QUEUED)  # unread by the server: one queued skb per socket
            server.sendall(QUEUED)
        queued = _snapshot()
        sockstat = parse_sockstat(Path("/proc/net/sockstat").read_text()).get("TCP", {})
    finally:
        poller.close()
        for s in [*clients, *servers, *listeners]:
            s.close()
    return {
        "pairs": len(clients),
        "requested_pairs": pairs_wanted,
        "fd_limited": pairs < pairs_wanted,
        "timed_out": len(clients) < pairs,
        "inuse": sockstat.get("inuse", 0),
        "queued_bytes": len(QUEUED),
        "base": base,
        "idle": idle,
        "queued": queued,
    }


def main() -> None:
    pairs, seconds = int(sys.argv[1]), float(sys.argv[2])
    json.dump(measure(pairs, seconds), sys.stdout)


if __name__ == "__main__":
    main()
