"""A long fat path for one TCP stream: a user-space delay line between two throwaway namespaces.

Method. Two forked children each unshare a new network namespace (A sends, B receives), create a
TUN device there, give it a point-to-point address and the sysctls of the case, and pass the TUN
fd back over SCM_RIGHTS. A third child, the relay, stays in the caller's namespace with both fds
and writes every packet it reads from one to the other RTT/2 later; the delay is constant, so a
FIFO per direction keeps the order. tc tbf on A's TUN sets the link rate. One TCP stream runs
from A to B for `send_s` seconds, and goodput is what B's application reads after `warm_s`.
B samples SO_RCVBUF and TCP_WINDOW_CLAMP, whose ratio is the share of the buffer the kernel
offers as window (the prediction is tcp_rmem max x that share ÷ RTT).

Why no netem: sch_netem is often not there (kernels built without CONFIG_NET_SCH_NETEM, as on the
VMs this was written on); the delay line needs only TUN and tbf. Why MTU 65535: the relay is Python,
and 64 KiB frames keep 1 Gbit/s at about 2,000 data packets and 1,000 ACKs a second, a small share
of one core (on 6.6+ the frame size also sets the window fraction). Why a tbf burst of 512 KiB: with
a burst of one or two 64 KiB frames every frame waits for tbf's watchdog timer and the timer slack
adds up (96-97% of the link instead of 99.9%); 512 KiB is about 4 ms at 1 Gbit/s. The TUN orphans
its skbs, but TCP Small Queues still bounds what the socket parks in tbf, so tbf does not drop and
the RTT grows by only a few ms. Why cubic is set per socket: a new namespace starts with the host's
default (bbr where this was written), and writing tcp_congestion_control=cubic there fails with
EPERM when the host's tcp_allowed_congestion_control lacks cubic; TCP_CONGESTION on the socket is
allowed with CAP_NET_ADMIN. Why the sender's tcp_wmem is set too: a namespace inherits the host's,
and a small send buffer would cap the flight before the receive window does.

Safety. Nothing is written outside the two new namespaces: every sysctl write first checks that
/proc/self/ns/net is not the caller's namespace and refuses otherwise. The children die with the
caller (PR_SET_PDEATHSIG) and no namespace is named (`ip netns`), so the namespaces, TUNs and
qdiscs exist only as long as those processes and fds: a pass, a failure or a kill -9 of the
test leaves nothing behind. Needs root, /dev/net/tun, ip(8) and tc(8) with tbf.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import select
import signal
import socket
import struct
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET, PR_SET_PDEATHSIG, TUNSETIFF = 0x40000000, 1, 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
DEV, SENDER, RECEIVER, PORT = "bdp0", "10.200.0.1", "10.200.0.2", 5201
HEADERS = 52  # IPv4 20 + TCP 20 + timestamps option 12
# struct tcp_info (include/uapi/linux/tcp.h): name -> (offset, format)
TCP_INFO_FIELDS = {
    "srtt_us": (68, "I"),
    "total_retrans": (100, "I"),
    "busy_us": (168, "Q"),
    "rwnd_limited_us": (176, "Q"),
}


@dataclass(frozen=True)
class Link:
    """The emulated path (rate_mbit 0: no rate limit) and how long to measure it."""

    rate_mbit: int
    rtt_ms: float
    mtu: int = 65535
    send_s: float = 6.0
    warm_s: float = 2.0
    tbf_burst: int = 512 * 1024
    tbf_limit: int = 4 * 1024 * 1024
    cc: str = "cubic"

    @property
    def goodput_mbit(self) -> float:
        """The most payload the link carries: its rate less the IP and TCP headers."""
        return self.rate_mbit * (self.mtu - HEADERS) / self.mtu


@dataclass(frozen=True)
class Transfer:
    """What one stream achieved, and the receive buffer and window the kernel settled on."""

    goodput_mbit: float
    sk_rcvbuf: int
    window_clamp: int
    srtt_ms: float
    retrans: int
    rwnd_limited: float  # share of the sender's busy time limited by the receive window
    relay_late_ms: float  # mean delay of the relay behind its schedule
    cc: str

    @property
    def window_fraction(self) -> float:
        """The kernel's share of the buffer offered as window, in 1/256 as the kernel keeps it."""
        return round(self.window_clamp * 256 / self.sk_rcvbuf) / 256

    def window_mbit(self, tcp_rmem_max: int, rtt_ms: float) -> float:
        """window ÷ RTT, the window being tcp_rmem max times this kernel's fraction."""
        return tcp_rmem_max * self.window_fraction * 8 / (rtt_ms / 1000) / 1e6


def run_transfer(link: Link, rx_sysctls: dict[str, str], tx_sysctls: dict[str, str]) -> Transfer:
    """One stream from a fresh namespace A to a fresh namespace B over the delay line."""
    parent, host_ns = os.getpid(), _netns()
    pids: list[int] = []
    fds: dict[str, int] = {}
    ctl: dict[str, _Lines] = {}
    socks: list[socket.socket] = []
    try:
        for role, sysctls in (("rx", rx_sysctls), ("tx", tx_sysctls)):
            ours, theirs = socket.socketpair()
            socks.append(ours)
            pids.append(_fork(parent, theirs, _endpoint, role, theirs, link, sysctls, host_ns))
            theirs.close()
            ours.settimeout(30)
            first, got, _, _ = socket.recv_fds(ours, 1, 1)
            ctl[role] = _Lines(ours, f"namespace {role}", b"" if got else first)
            if not got:
                ctl[role].get(5)  # the child's error
                raise RuntimeError(f"{role} namespace sent no TUN fd")
            fds[role] = got[0]
        ours, theirs = socket.socketpair()
        socks.append(ours)
        relay_args = (fds["tx"], fds["rx"], theirs, link.rtt_ms / 2000, link.mtu)
        pids.append(_fork(parent, theirs, _relay, *relay_args))
        theirs.close()
        for role in list(fds):  # the relay holds them now
            os.close(fds.pop(role))
        relay = _Lines(ours, "relay")
        ctl["rx"].get(30)  # listening
        _send(ctl["tx"].sock, {"go": True})
        tx = ctl["tx"].get(link.send_s + 30)
        rx = ctl["rx"].get(30)
        ours.sendall(b"stop\n")
        return _analyse(link, tx, rx, relay.get(10))
    finally:
        for fd in fds.values():
            os.close(fd)
        for sock in socks:
            sock.close()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def relay_ceiling_mbit(seconds: float = 1.0, mtu: int = 65535) -> float:
    """Goodput through the relay with no delay and no rate limit: the fastest link it emulates."""
    link, big = Link(0, 0.0, mtu, send_s=seconds, warm_s=seconds / 4), "4096 131072 33554432"
    return run_transfer(link, {"net.ipv4.tcp_rmem": big}, {"net.ipv4.tcp_wmem": big}).goodput_mbit


def _fork(parent: int, ctl: socket.socket, body: Callable[..., None], *args: Any) -> int:
    """Run body(*args) in a child that dies with `parent` and reports any error on `ctl`."""
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl
            os._exit(1)
        body(*args)
    except BaseException as error:
        code = 1
        with contextlib.suppress(OSError):
            _send(ctl, {"error": f"{type(error).__name__}: {error}"})
    os._exit(code)


def _endpoint(
    role: str, ctl: socket.socket, link: Link, sysctls: dict[str, str], host_ns: tuple[int, int]
) -> None:
    if _libc.unshare(CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"unshare(CLONE_NEWNET): {os.strerror(errno)}")
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH14x", DEV.encode(), IFF_TUN | IFF_NO_PI))
    me, peer = (SENDER, RECEIVER) if role == "tx" else (RECEIVER, SENDER)
    _run("ip link set lo up")
    _run(f"ip link set {DEV} mtu {link.mtu} up")
    _run(f"ip addr add {me}/32 peer {peer}/32 dev {DEV}")
    for name, value in sysctls.items():
        _write_sysctl(name, value, host_ns)
    if role == "tx" and link.rate_mbit:
        _run(
            f"tc qdisc replace dev {DEV} root tbf rate {link.rate_mbit}mbit "
            f"burst {link.tbf_burst} limit {link.tbf_limit}"
        )
    socket.send_fds(ctl, [b"F"], [fd])
    os.close(fd)
    (_sender if role == "tx" else _receiver)(ctl, link)


def _receiver(ctl: socket.socket, link: Link) -> None:
    with socket.create_server((RECEIVER, PORT)) as listener:
        _send(ctl, {"listening": True})
        listener.settimeout(30)
        conn, _ = listener.accept()
    buffer = memoryview(bytearray(4 << 20))
    total, samples, windows = 0, [(time.monotonic(), 0)], []
    next_sample = next_window = 0.0
    while n := conn.recv_into(buffer):
        now, total = time.monotonic(), total + n
        if now >= next_sample:
            samples.append((now, total))
            next_sample = now + 0.05
        if now >= next_window:
            rcvbuf = conn.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
            clamp = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP)
            windows.append((now, rcvbuf, clamp))
            next_window = now + 0.2
    samples.append((time.monotonic(), total))
    conn.close()
    _send(ctl, {"samples": samples, "windows": windows})


def _sender(ctl: socket.socket, link: Link) -> None:
    _Lines(ctl, "parent").get(60)  # go
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, link.cc.encode())
    start = time.monotonic()
    end = start + link.send_s
    sock.connect((RECEIVER, PORT))
    data = memoryview(bytearray(1 << 20))
    sock.settimeout(0.5)
    while time.monotonic() < end:
        with contextlib.suppress(TimeoutError):
            sock.send(data)
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    info = {
        name: struct.unpack_from(kind, raw, offset)[0]
        for name, (offset, kind) in TCP_INFO_FIELDS.items()
        if len(raw) >= offset + struct.calcsize(kind)
    }
    cc = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0]
    sock.shutdown(socket.SHUT_WR)
    sock.settimeout(10)
    with contextlib.suppress(OSError):
        sock.recv(1)  # the receiver has read everything and closed
    sock.close()
    _send(ctl, {"start": start, "end": end, "cc": cc.decode(), **info})


def _relay(fd_a: int, fd_b: int, ctl: socket.socket, delay_s: float, mtu: int) -> None:
    """Copy packets both ways, each `delay_s` after it was read, until `ctl` is readable."""
    for fd in (fd_a, fd_b):
        os.set_blocking(fd, False)
    queues: dict[int, deque[tuple[float, bytes]]] = {fd_a: deque(), fd_b: deque()}
    peer = {fd_a: fd_b, fd_b: fd_a}
    late, sent, stop = 0.0, 0, ctl.fileno()
    while True:
        now = time.monotonic()
        for fd, queue in queues.items():
            while queue and queue[0][0] <= now:
                due, packet = queue.popleft()
                late, sent = late + now - due, sent + 1
                with contextlib.suppress(OSError):  # a lost packet shows as a retransmission
                    os.write(peer[fd], packet)
        due_next = min((queue[0][0] for queue in queues.values() if queue), default=None)
        timeout = None if due_next is None else max(0.0, due_next - time.monotonic())
        ready, _, _ = select.select([fd_a, fd_b, stop], [], [], timeout)
        now = time.monotonic()
        if stop in ready:
            _send(ctl, {"late_ms": 1000 * late / max(sent, 1)})
            return
        for fd in ready:
            for _ in range(64):
                try:
                    packet = os.read(fd, mtu + 1)
                except BlockingIOError:
                    break
                queues[fd].append((now + delay_s, packet))


def _netns() -> tuple[int, int]:
    stat = os.stat("/proc/self/ns/net")
    return stat.st_dev, stat.st_ino


def _write_sysctl(name: str, value: str, host_ns: tuple[int, int]) -> None:
    if _netns() == host_ns:
        raise RuntimeError(f"refusing to write {name}: this is the caller's network namespace")
    path = "/proc/sys/" + name.replace(".", "/")
    try:
        with open(path, "w") as handle:
            handle.write(value)
    except OSError as error:
        raise RuntimeError(f"cannot write {name} = {value!r}: {error}") from error
    with open(path) as handle:
        got = handle.read().split()
    if got != value.split():
        raise RuntimeError(f"{name}: wrote {value!r}, reads {' '.join(got)!r}")


def _run(command: str) -> None:
    done = subprocess.run(command.split(), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{command}: {done.stderr.strip()}")


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


class _Lines:
    """JSON messages, one a line, from a child; a child's error is raised here."""

    def __init__(self, sock: socket.socket, who: str, start: bytes = b"") -> None:
        self.sock, self.who, self.buffer = sock, who, start

    def get(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"delay line: {self.who} exited without a word")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        if "error" in message:
            raise RuntimeError(f"delay line, {self.who}: {message['error']}")
        return message


def _bytes_at(samples: list[list[float]], when: float) -> float:
    """Bytes read by `when`, interpolated between (time, cumulative bytes) samples."""
    before_t, before_b = samples[0]
    for now, total in samples:
        if now >= when:
            if now == before_t:
                return total
            return before_b + (total - before_b) * (when - before_t) / (now - before_t)
        before_t, before_b = now, total
    return before_b


def _analyse(link: Link, tx: dict[str, Any], rx: dict[str, Any], relay: dict[str, Any]) -> Transfer:
    start, end = tx["start"] + link.warm_s, tx["end"]
    samples = rx["samples"]
    goodput = (_bytes_at(samples, end) - _bytes_at(samples, start)) * 8 / (end - start) / 1e6
    steady = [w for w in rx["windows"] if w[0] >= start] or rx["windows"]
    _, rcvbuf, clamp = max(steady, key=lambda window: window[1])
    busy = tx.get("busy_us") or 0
    return Transfer(
        goodput_mbit=goodput,
        sk_rcvbuf=rcvbuf,
        window_clamp=clamp,
        srtt_ms=tx["srtt_us"] / 1000,
        retrans=tx["total_retrans"],
        rwnd_limited=tx.get("rwnd_limited_us", 0) / busy if busy else 0.0,
        relay_late_ms=relay["late_ms"],
        cc=tx["cc"],
    )
