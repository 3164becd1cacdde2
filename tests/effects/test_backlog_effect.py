"""The listen backlog, proved by a connection burst on real nginx.

Chartbeat's lesson: raising somaxconn does nothing while nginx still asks for its default
backlog of 511, and a large `backlog=` is silently cut to somaxconn; only both together hold a
burst. Here nginx runs in a fresh network namespace with one listener on 127.0.0.1:8080 and
its accepting process paused (SIGSTOP: a busy worker that accepts nothing), and a client in
the same namespace fires a burst of 5,000 non-blocking connect()s. 0.5 s after it starts,
before the first SYN retransmission (1 s), the namespace's own TcpExt ListenOverflows and
ListenDrops (/proc/net/netstat read inside it) count every SYN dropped because the accept queue
was full.
The queue holds backlog + 1 connections, so the prototype measured exactly 5,000 − 512 = 4,488
for the stock `listen` and 5,000 − 4,097 = 903 for the directive alone.

The advice is computed in-process, as `recommend --profile frontend-proxy --nginx-conf` does it
(tests/sources/test_nginx_backlog.py): this host's facts plus the test's nginx.conf give
somaxconn, tcp_max_syn_backlog and the companion `listen 127.0.0.1:8080 backlog=N;`. Cases:
the stock listen with the namespace's defaults (somaxconn 4096 since 5.4), the advised sysctls
only, the directive only, and the whole advice, which must see no overflow and every handshake
complete before the worker resumes; then the worker accepts them all. tcp_max_syn_backlog never
binds here (with syncookies on it is ignored since 4.4, and the SYN queue is bounded by the
backlog first); it is written because the advice includes it. A case that overflows is torn
down before the dropped clients retransmit: their retransmissions all fire in the same tick and
overrun the host-global per-CPU input queue (netdev_max_backlog), which is shared with every
other namespace (the prototype saw 2,000-5,000 such drops per case; torn down at 0.5 s, the
module causes none, /proc/net/softnet_stat unchanged). The module takes about 5 s.

nginx runs with `master_process off`, a single process that listens and accepts: pausing it
pauses "the worker", and, keeping root, it keeps the PR_SET_PDEATHSIG that makes it die with the
test (a master-mode worker would drop it when it switches user, and outlive a killed test).

Era: kernels through 4.0 keep sk_max_ack_backlog in 16 bits, so a backlog of 65536 wraps to 0.
That is not reproducible on a modern kernel; the last tests show it with the arithmetic and check
that the advisor never advises a somaxconn or backlog above 65535 for a 3.10 or 2.6.32 host
(rules/listen-backlog/u16-cap.yaml, kernel-model listen_backlog_max).

The cases meant to overflow run with tcp_syncookies 2 in their namespace. With 1 (the default)
a SYN queue that reaches the backlog makes the kernel log "Possible SYN flooding on port
127.0.0.1:8080" (tcp_syn_flood_action(), once per listener, for any value but 2, since 3.12
added 2), and the kernel log is not per namespace: the line would land in the host's log,
where the advisor's plan for the host running the suite cites it as evidence
(rules/catalog/kernel-messages.yaml). With 2 every SYN is answered with a cookie and no SYN
queue forms; the accept queue alone decides, and the counts are the same (measured on 6.18:
4,488 ListenOverflows for the stock listen with 1 and with 2).

Each case prints one line (`pytest -s`). The host's own /proc/sys is compared before and after.
"""

from __future__ import annotations

import errno
import os
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.engine.plan_builder import build_plan, host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts, facts_from_data
from sysctl_advisor.sources.local_host import collect
from sysctl_advisor.sources.service_configs import with_service_configs
from tests.conftest import EXAMPLES, load_facts
from tests.effects import netns_lab as lab
from tests.namespaces import NGINX_SCRATCH_PATHS, host_sysctls

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
needs_nginx = pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed")
ADDRESS, PORT = "127.0.0.1", 8080
STOCK = f"listen {ADDRESS}:{PORT};"
NGINX_DEFAULT_BACKLOG = 511  # NGX_LISTEN_BACKLOG on Linux
BURST = 5000
STALL_S = 0.5  # after the burst starts; the first SYN retransmission is at 1 s
SYSCTLS = ("net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_syncookies")
QUIET = {"net.ipv4.tcp_syncookies": "2"}  # cookies always: no SYN flood line in the host's log
CONFIG = (
    """\
master_process off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 15000; multi_accept on; }}
http {{
    access_log off;
"""
    + NGINX_SCRATCH_PATHS
    + """\
    server {{ {listen} return 204; }}
}}
"""
)


@dataclass(frozen=True)
class Advice:
    somaxconn: str
    syn_backlog: str
    directive: str

    @property
    def backlog(self) -> int:
        found = re.search(r"backlog=(\d+)", self.directive)
        assert found, f"the companion names no backlog: {self.directive!r}"
        return int(found.group(1))

    @property
    def sysctls(self) -> dict[str, str]:
        return {
            "net.core.somaxconn": self.somaxconn,
            "net.ipv4.tcp_max_syn_backlog": self.syn_backlog,
        }


@pytest.fixture(scope="module")
def prefix() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="backlog-effect-") as directory:
        yield Path(directory)


@pytest.fixture(scope="module")
def advice(kb: KnowledgeBase, prefix: Path) -> Advice:
    """What the advisor recommends for this host running the test's nginx.conf."""
    config = prefix / "nginx.conf"
    config.write_text(CONFIG.format(prefix=prefix, listen=STOCK))
    facts = with_service_configs(collect(list(kb.catalog.keys)), None, config)
    plan = build_plan(kb, facts, "frontend-proxy")
    settings = {setting.key: setting.value for setting in plan.settings}
    directive = next(
        c.setting
        for c in plan.companions
        if c.target == "nginx" and c.setting.startswith(f"listen {ADDRESS}:{PORT} ")
    )
    found = Advice(
        settings["net.core.somaxconn"], settings["net.ipv4.tcp_max_syn_backlog"], directive
    )
    assert found.backlog <= int(found.somaxconn), found
    assert found.backlog >= BURST, f"{found.directive!r} would not hold a {BURST} burst"
    return found


# --------------------------------------------------------------------------- in the namespace
def burst(prefix: str, listen: str, sysctls: dict[str, str], resume: bool) -> dict[str, Any]:
    """nginx on `listen`, paused; BURST connects; counters at STALL_S (and after resuming)."""
    for name, value in sysctls.items():
        lab.write_sysctl(name, value)
    in_force = {name: lab.read_sysctl(name) for name in SYSCTLS}
    resource.setrlimit(resource.RLIMIT_NOFILE, (3 * BURST, 3 * BURST))  # root may raise it
    Path(prefix, "nginx.conf").write_text(CONFIG.format(prefix=prefix, listen=listen))
    nginx = subprocess.Popen(
        [NGINX, "-p", prefix, "-c", f"{prefix}/nginx.conf", "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lab.die_with_parent,
    )
    clients: list[socket.socket] = []
    try:
        limit = _listener(prefix, nginx)[1]
        os.kill(nginx.pid, signal.SIGSTOP)
        before = lab.counters()
        start = time.monotonic()
        for _ in range(BURST):
            client = socket.socket()
            client.setblocking(False)
            clients.append(client)
            code = client.connect_ex((ADDRESS, PORT))
            if code not in (0, errno.EINPROGRESS):
                raise OSError(code, os.strerror(code))
        burst_s = time.monotonic() - start
        time.sleep(max(0.0, start + STALL_S - time.monotonic()))
        stalled = lab.counters()
        queued = _listener(prefix, nginx)[0]
        result: dict[str, Any] = {
            "in_force": in_force,
            "limit": limit,
            "burst_s": burst_s,
            "queued": queued,
            "connected": _connected(clients),
            "stall": {k: stalled[k] - before[k] for k in stalled if k.startswith("TcpExt.")},
        }
        if resume:
            os.kill(nginx.pid, signal.SIGCONT)
            deadline = time.monotonic() + 3.0
            while queued and time.monotonic() < deadline:
                time.sleep(0.05)
                queued = _listener(prefix, nginx)[0]
            after = lab.counters()
            result["left_in_queue"] = queued
            result["total"] = {k: after[k] - before[k] for k in after if k.startswith("TcpExt.")}
        return result
    finally:
        for client in clients:  # before the dropped SYNs are retransmitted
            client.close()
        nginx.kill()
        nginx.wait()


def _listener(prefix: str, nginx: subprocess.Popen[bytes]) -> tuple[int, int]:
    """Recv-Q and Send-Q of nginx's listener: the accept queue now and its limit."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in lab.run("ss", "-Hltn", f"sport = :{PORT}").splitlines():
            fields = line.split()  # State Recv-Q Send-Q Local Peer
            if fields[0] == "LISTEN" and fields[3] == f"{ADDRESS}:{PORT}":
                return int(fields[1]), int(fields[2])
        if nginx.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("nginx is not listening: " + Path(prefix, "error.log").read_text()[-2000:])


def _connected(clients: list[socket.socket]) -> int:
    """Clients whose handshake has completed (writable without an error)."""
    poller = select.poll()
    for client in clients:
        poller.register(client, select.POLLOUT)
    ready = {fd for fd, events in poller.poll(0) if events & select.POLLOUT}
    return sum(
        1
        for client in clients
        if client.fileno() in ready and client.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
    )


# --------------------------------------------------------------------------- the cases
def run_case(prefix: Path, name: str, listen: str, sysctls: dict[str, str], resume: bool) -> Any:
    case_prefix = prefix / name.replace(" ", "-")
    case_prefix.mkdir()
    before = host_sysctls()
    child = lab.start(f"backlog {name}", burst, str(case_prefix), listen, sysctls, resume)
    result = child.result(60)
    lab.assert_host_unchanged(before)
    return result


def overflows(result: dict[str, Any], phase: str = "stall") -> int:
    return int(result[phase]["TcpExt.ListenOverflows"])


@lab.needs_lab("ss")
@needs_nginx
@pytest.mark.parametrize("case", ["stock", "sysctls only", "directive only"])
def test_without_the_whole_advice_a_burst_overflows_the_accept_queue(
    case: str, advice: Advice, prefix: Path
) -> None:
    listen = advice.directive if case == "directive only" else STOCK
    sysctls = {**(advice.sysctls if case == "sysctls only" else {}), **QUIET}
    result = run_case(prefix, case, listen, sysctls, resume=False)
    somaxconn, limit = result["in_force"]["net.core.somaxconn"], result["limit"]
    overflowed = overflows(result)
    label = {
        "stock": f"stock listen ({NGINX_DEFAULT_BACKLOG}), somaxconn {somaxconn}",
        "sysctls only": (
            f"stock listen ({NGINX_DEFAULT_BACKLOG}), advised somaxconn {somaxconn} and "
            f"tcp_max_syn_backlog {advice.syn_backlog} only"
        ),
        "directive only": f"advised backlog={advice.backlog} only, somaxconn {somaxconn}",
    }[case]
    print(
        f"\nbacklog: {label}: accept queue {limit}, {overflowed} ListenOverflows in a "
        f"{BURST}-connection burst ({BURST} − ({limit} + 1) = {BURST - limit - 1}; "
        f"{result['connected']} connected, {result['stall']['TcpExt.ListenDrops']} ListenDrops)"
    )
    expected_limit = (
        min(advice.backlog, int(somaxconn)) if case == "directive only" else NGINX_DEFAULT_BACKLOG
    )
    assert limit == expected_limit, (
        f"{case}: the listener's accept queue holds {limit}, not {expected_limit} "
        f"(somaxconn {somaxconn} in the namespace)"
    )
    assert overflowed > 0, (
        f"{case}: a {BURST}-connection burst into an accept queue of {limit} overflowed 0 "
        f"times in {STALL_S} s; {result}"
    )
    assert result["in_force"]["net.ipv4.tcp_syncookies"] == "2", result["in_force"]


@lab.needs_lab("ss")
@needs_nginx
def test_with_the_advice_the_burst_fits(advice: Advice, prefix: Path) -> None:
    result = run_case(prefix, "advice", advice.directive, advice.sysctls, resume=True)
    limit, total = result["limit"], result["total"]
    print(
        f"\nbacklog: advice (backlog={advice.backlog}, somaxconn {advice.somaxconn}, "
        f"tcp_max_syn_backlog {advice.syn_backlog}): accept queue {limit}, "
        f"{overflows(result)} ListenOverflows in a {BURST}-connection burst; "
        f"{result['connected']} of {BURST} connected before the worker resumed, "
        f"{BURST - result['left_in_queue']} accepted after"
    )
    assert limit == advice.backlog, f"the listener holds {limit}, not the advised {advice.backlog}"
    for phase in ("stall", "total"):
        dropped = {k: result[phase][k] for k in ("TcpExt.ListenOverflows", "TcpExt.ListenDrops")}
        assert not any(dropped.values()), f"with the advice, {phase}: {dropped}; {result}"
    assert result["connected"] == BURST, (
        f"only {result['connected']} of {BURST} handshakes completed in {STALL_S} s"
    )
    assert result["left_in_queue"] == 0, f"nginx left {result['left_in_queue']} unaccepted"
    assert total["TcpExt.TCPSynRetrans"] == 0, f"{total['TcpExt.TCPSynRetrans']} SYNs resent"


# --------------------------------------------------------------------------- kernels through 4.0
U16 = 0xFFFF
RHEL7 = EXAMPLES / "haproxy-frontend-rhel7.yaml"  # 3.10, HAProxy, somaxconn 128 in force
RHEL6: dict[str, Any] = {
    "hostname": "rhel6-nginx",
    "kernel": "2.6.32-754.35.1.el6.x86_64",
    "arch": "x86_64",
    "memory": {"total": "16 GiB"},
    "cpu": {"threads": 8},
    "services": {"nginx": {}},
}
REQUESTS = {
    "default": {},
    "65536": {"listen_backlog": "65536"},
    "2^31-1": {"listen_backlog": "2147483647"},
}


def stored_backlog(backlog: int, somaxconn: int, listen_backlog_max: int) -> int:
    """sk_max_ack_backlog after listen(fd, backlog): min(backlog, somaxconn), in the field's
    width (an unsigned short through 4.0, so modulo 65536; 32 bits from 4.1)."""
    wanted = min(backlog, somaxconn)
    return wanted & U16 if listen_backlog_max == U16 else wanted


def old_host(name: str, somaxconn: str | None) -> HostFacts:
    data: dict[str, Any] = yaml.safe_load(RHEL7.read_text()) if name == "3.10" else dict(RHEL6)
    if somaxconn is None:
        return load_facts(RHEL7) if name == "3.10" else facts_from_data(data)
    data["sysctl"] = {**data.get("sysctl", {}), "net.core.somaxconn": somaxconn}
    return facts_from_data(data)


def test_through_4_0_a_backlog_of_65536_wraps_to_0(kb: KnowledgeBase) -> None:
    """The arithmetic, and the advisor's finding quoting it for a value in force on 3.10."""
    assert 65536 & U16 == 0 and 70000 & U16 == 4464 and 65535 & U16 == 65535
    for in_force in (65536, 70000, 100000):
        plan = build_plan(kb, old_host("3.10", str(in_force)), "frontend-proxy")
        text = f"gets {in_force & U16} (modulo 65536)"
        assert any(text in f.message for f in plan.findings), (text, plan.findings)
    print(
        "\nbacklog ≤ 4.0: 65536 & 0xFFFF = 0, 70000 → 4464, 100000 → 34464 "
        "(a somaxconn in force above 65535 on 3.10 is named and cut to 65535)"
    )


@pytest.mark.parametrize("request_name", list(REQUESTS))
@pytest.mark.parametrize("in_force", [None, "100000"], ids=["as-found", "somaxconn-100000"])
@pytest.mark.parametrize("kernel", ["3.10", "2.6.32"])
def test_through_4_0_the_advisor_never_advises_a_backlog_that_wraps(
    kb: KnowledgeBase, kernel: str, in_force: str | None, request_name: str
) -> None:
    facts = old_host(kernel, in_force)
    assert host_variables(kb, facts)[0]["kernel"].listen_backlog_max == U16
    plan = build_plan(kb, facts, "frontend-proxy", REQUESTS[request_name])
    somaxconn = int(next(s.value for s in plan.settings if s.key == "net.core.somaxconn"))
    backlogs = [
        int(number)
        for companion in plan.companions
        for number in re.findall(r"\bbacklog[= ](\d+)", companion.setting)
    ]
    assert backlogs, f"no backlog companion for {kernel}: {plan.companions}"
    assert somaxconn <= U16, f"{kernel}, listen_backlog {request_name}: somaxconn {somaxconn}"
    for backlog in backlogs:
        assert backlog <= U16, f"{kernel}, listen_backlog {request_name}: backlog {backlog}"
        stored = stored_backlog(backlog, somaxconn, U16)
        assert stored == min(backlog, somaxconn) > 0, (backlog, somaxconn, stored)
    print(
        f"\nbacklog ≤ 4.0: {kernel} host, somaxconn in force {in_force or 'as found'}, "
        f"listen_backlog {request_name}: advised somaxconn {somaxconn}, companion backlog "
        f"{max(backlogs)}, stored as {stored_backlog(max(backlogs), somaxconn, U16)}"
    )


def test_the_same_request_on_4_1_is_not_capped_and_would_wrap_through_4_0(
    kb: KnowledgeBase,
) -> None:
    facts = facts_from_data({**RHEL6, "kernel": "4.1.3"})
    assert host_variables(kb, facts)[0]["kernel"].listen_backlog_max > U16
    plan = build_plan(kb, facts, "frontend-proxy", REQUESTS["65536"])
    somaxconn = int(next(s.value for s in plan.settings if s.key == "net.core.somaxconn"))
    directive = next(c.setting for c in plan.companions if "backlog=" in c.setting)
    backlog = int(re.search(r"backlog=(\d+)", directive).group(1))  # type: ignore[union-attr]
    assert (somaxconn, backlog) == (65536, 65536), (somaxconn, directive)
    assert stored_backlog(backlog, somaxconn, 2**31 - 1) == 65536
    assert stored_backlog(backlog, somaxconn, U16) == 0
    print(
        f"\nbacklog ≤ 4.0: 4.1 advice for 65536 (somaxconn {somaxconn}, {directive!r}) "
        f"is stored as {stored_backlog(backlog, somaxconn, U16)} by a 3.10 kernel"
    )
