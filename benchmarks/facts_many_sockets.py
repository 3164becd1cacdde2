"""`facts` on a network namespace that holds many sockets against an idle one (target: the
same time, within the noise).

    sudo python benchmarks/facts_many_sockets.py [--sockets 18000] [--runs 15]

Needs root, unshare(1), nsenter(1) and ip(8). Two network namespaces are made with `unshare
-n` and held by a sleeping process each: one idle, one where several processes (each below
the per-process descriptor limit) hold a listener and connections to it over loopback, two
sockets a connection, until the namespace holds `--sockets` sockets. `facts` then runs in each
namespace through `nsenter --net`, alternating, whole processes, medians of wall and CPU time
(user + system: the steadier figure on a machine other work keeps busy), on the package
byte-compiled. The reader asks the kernel only for listening sockets (sock_diag) and looks for
their owners in /proc, so the connections should cost it nothing.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PER_PROCESS = 4000  # sockets one holder opens (two a connection), under its descriptor limit

HOLDER = """
import socket, sys, time
count = int(sys.argv[1])
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(4096)
held = [listener]
for _ in range(count // 2):
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    held += [client, server]
print("ready", flush=True)
time.sleep(3600)
"""


def namespace() -> subprocess.Popen[bytes]:
    """A new network namespace, held by a sleeping process (its /proc/PID/ns/net)."""
    return subprocess.Popen(["unshare", "-n", "sleep", "3600"])


def enter(holder: subprocess.Popen[bytes], command: list[str]) -> list[str]:
    return ["nsenter", f"--net=/proc/{holder.pid}/ns/net", *command]


def fill(ns: subprocess.Popen[bytes], sockets: int) -> list[subprocess.Popen[str]]:
    """Processes in the namespace holding `sockets` sockets between them."""
    subprocess.run(enter(ns, ["ip", "link", "set", "lo", "up"]), check=True)
    holders = []
    left = sockets
    while left > 0:
        count = min(PER_PROCESS, left)
        holder = subprocess.Popen(
            enter(ns, [sys.executable, "-c", HOLDER, str(count)]),
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: resource.setrlimit(
                resource.RLIMIT_NOFILE, (PER_PROCESS + 64, PER_PROCESS + 64)
            ),
        )
        holders.append(holder)
        left -= count
    for holder in holders:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    return holders


def counted(ns: subprocess.Popen[bytes]) -> str:
    """What the namespace's sockstat says it holds (`TCP: inuse N ...`)."""
    out = subprocess.run(
        enter(ns, ["cat", "/proc/net/sockstat"]), capture_output=True, text=True, check=True
    ).stdout
    return next((line for line in out.splitlines() if line.startswith("TCP:")), "?")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = 0
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=18_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if os.geteuid() != 0 or missing:
        print(f"skipped: needs root and {', '.join(missing) or 'unshare, nsenter, ip'}")
        return
    compileall.compile_dir(ROOT / "sysctl_advisor", quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    facts = [sys.executable, "-m", "sysctl_advisor", "facts"]
    idle, busy = namespace(), namespace()
    holders: list[subprocess.Popen[str]] = []
    try:
        time.sleep(0.2)  # the namespaces exist once unshare has exec'd sleep
        holders = fill(busy, args.sockets)
        print(f"busy namespace: {counted(busy)}; idle namespace: {counted(idle)}")
        sides = {"idle": (enter(idle, facts), []), "busy": (enter(busy, facts), [])}
        for command, _ in sides.values():
            timed(command, env)  # warm the caches
        for i in range(args.runs):
            for name in ("idle", "busy") if i % 2 == 0 else ("busy", "idle"):
                command, samples = sides[name]
                samples.append(timed(command, env))
        idle_s, busy_s = sides["idle"][1], sides["busy"][1]
        for index, what in ((0, "wall"), (1, "CPU")):
            a = statistics.median(s[index] for s in idle_s)
            b = statistics.median(s[index] for s in busy_s)
            print(f"facts, {what:4s}: idle {a * 1000:7.1f} ms, {args.sockets:,} sockets "
                  f"{b * 1000:7.1f} ms, ratio {b / a:.2f} (median of {args.runs})")  # fmt: skip
    finally:
        for process in [*holders, idle, busy]:
            process.kill()
            process.wait()


if __name__ == "__main__":
    socket.setdefaulttimeout(None)
    main()
