"""What the sysctl watch costs each sysctl access: an open+write+close of a per-namespace key
(net.core.somaxconn, in a fresh network namespace: never the host's value) by a writer in a
throwaway cgroup, with nothing attached, with the watch's ring buffer and with the last-writer
map, in alternating rounds on the same machine. Root, cgroup v2.

    python benchmarks/sysctl_watch_cost.py                   # 7 rounds of 20,000 writes
    python benchmarks/sysctl_watch_cost.py --rounds 9 --writes 50000

Prints the median µs per write of each and the added cost against none.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sysctl_advisor.sources import sysctl_watch  # noqa: E402
from sysctl_advisor.sources.bpf import syscall  # noqa: E402
from sysctl_advisor.sources.mounts import own_cgroup  # noqa: E402
from sysctl_advisor.sources.sysctl_last_writes import load_last_writes  # noqa: E402

WRITER = """
import os, sys, time
n = int(sys.argv[1])
start = time.perf_counter_ns()
for _ in range(n):
    fd = os.open("/proc/sys/net/core/somaxconn", os.O_WRONLY)
    os.write(fd, b"4096")
    os.close(fd)
print((time.perf_counter_ns() - start) / n / 1000)
"""


def _write(cgroup: Path, writes: int) -> float:
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", WRITER, str(writes)],
        preexec_fn=lambda: (cgroup / "cgroup.procs").write_text("0"),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout)


@contextmanager
def _last(cgroup: Path) -> Iterator[None]:
    loaded = load_last_writes()
    target = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY)
    try:
        link = syscall.link_create(loaded.prog_fd, target, syscall.CGROUP_SYSCTL)
        try:
            yield
        finally:
            os.close(link)
    finally:
        os.close(target)
        loaded.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--writes", type=int, default=20_000)
    args = parser.parse_args()
    own = own_cgroup()
    if own is None:
        sys.exit("needs cgroup v2")
    cgroup = own / f"sysctl-advisor-bench-{uuid.uuid4().hex[:12]}"
    cgroup.mkdir()
    times: dict[str, list[float]] = {"none": [], "watch": [], "last": []}
    ring = 1 << 25  # 32 MiB: every event of a round fits, nothing drained meanwhile
    try:
        for _ in range(args.rounds):
            times["none"].append(_write(cgroup, args.writes))
            with sysctl_watch.watch(cgroup, 0, ringbuf=True, ring_bytes=ring) as events:
                times["watch"].append(_write(cgroup, args.writes))
            assert events.dropped == 0
            with _last(cgroup):
                times["last"].append(_write(cgroup, args.writes))
    finally:
        cgroup.rmdir()
    base = statistics.median(times["none"])
    for name, values in times.items():
        median = statistics.median(values)
        rounds = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name:6} {median:6.2f} µs per write (+{median - base:.2f}); rounds: {rounds}")


if __name__ == "__main__":
    main()
