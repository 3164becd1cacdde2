"""Inputs at their caps: `check` of sysctl files as large as it reads (the 16 MiB input cap,
and the line cap within it: 131,072 lines) and `recommend` of facts files at and above the
facts bounds (4 MiB, 200,000 YAML nodes): wall time and peak RSS of each run, on this tree
and, with --baseline, on a commit before it (checked out with `git worktree`).

    python benchmarks/inputs_at_the_cap.py
    python benchmarks/inputs_at_the_cap.py --baseline a30283a --timeout 1800

Targets: every run under 200 MiB of peak RSS; a file judged in seconds, its cost linear in its
lines (the half-size file takes about half the time). The files are generated at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAP = 16 * 1024 * 1024  # SYSCTL_ADVISOR_MAX_INPUT's default
LINES = CAP // 128  # the line cap within it


def _lines(path: Path, line: Callable[[int], str], count: int | None = None) -> None:
    """`line(i)` for i = 0, 1, ...: `count` lines, or as many as fit in CAP bytes."""
    size = 0
    with path.open("w") as out:
        for i in range(count if count is not None else CAP):
            text = line(i)
            if count is None and size + len(text) > CAP:
                break
            out.write(text)
            size += len(text)


def _long(i: int) -> str:
    """A distinct key and six numbers, 127 bytes: the line cap holds 16 MiB of them."""
    return f"net.ipv4.tcp_rmem_{i:08d}_{'x' * 38} = {' '.join(['1234567890'] * 6)}"[:126] + "\n"


CHECKS: list[tuple[str, Callable[[int], str], int | None]] = [
    ("distinct keys not in the catalog, 16 MiB", lambda i: f"net.ipv4.foo{i} = 1\n", None),
    ("the same, 131,072 lines (the line cap)", lambda i: f"net.ipv4.foo{i} = 1\n", LINES),
    ("the same, 65,536 lines", lambda i: f"net.ipv4.foo{i} = 1\n", LINES // 2),
    ("near misses of a key, 131,072 lines",
     lambda i: f"net.ipv4.tcp_rmen{i} = 4096 87380 6291456\n", LINES),
    ("one key, each value different, 131,072 lines",
     lambda i: f"net.core.somaxconn = {i}\n", LINES),
    ("lines without '=', 131,072 lines", lambda i: f"junk line {i}\n", LINES),
    ("long distinct lines, 131,072 lines (16 MiB)", _long, LINES),
]  # fmt: skip


def _facts(path: Path, kind: str) -> None:
    head = "hostname: big\nkernel: 5.15.0-91-generic\nmemory: {total: 64 GiB}\n"
    if kind == "dense":  # one flow sequence of one-letter names: a node every 3 bytes
        path.write_text(head + "processes: [" + "a, " * ((13 * 1024 * 1024) // 3) + "a]\n")
    elif kind == "dense-4":
        path.write_text(head + "processes: [" + "a, " * ((4 * 1024 * 1024 - 200) // 3) + "a]\n")
    elif kind == "mapping":  # a key and a value a line, 43 bytes
        lines = (f"  net.ipv4.conf.veth{i:07}.rp_filter: '1'\n" for i in range(317_000))
        path.write_text(head + "sysctl:\n" + "".join(lines))
    elif kind == "json":
        names = ["ab"] * ((11 * 1024 * 1024) // 5)
        path.write_text(json.dumps({"memory": {"total": "64 GiB"}, "processes": names}))
    else:  # the largest lists the facts contract allows, at once: a legitimate file
        nics = "".join(
            f"  - {{name: ens{i}, driver: mlx5_core, speed_mbps: 100000}}\n" for i in range(4096)
        )
        links = "".join(f"  - veth{i:08x}\n" for i in range(65536))
        processes = "".join(f"  - worker-{i}\n" for i in range(65536))
        path.write_text(head + f"nics:\n{nics}links:\n{links}processes:\n{processes}")


FACTS = [
    ("13 MiB of one flow sequence (4.5 million nodes)", "dense", "facts.yaml"),
    ("4 MiB of one flow sequence (1.4 million nodes)", "dense-4", "facts.yaml"),
    ("13 MiB of a block mapping (634,000 nodes)", "mapping", "facts.yaml"),
    ("11 MiB of JSON (2.3 million values)", "json", "facts.json"),
    ("the largest lists allowed, 2 MiB YAML (160,000 nodes)", "largest", "facts.yaml"),
]


def measure(command: list[str], env: dict[str, str], cwd: Path, timeout: float) -> str:
    """Wall time, peak RSS (wait4's rusage: the child's own) and exit code of one run; a run
    past `timeout` is killed and says so."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    timer = threading.Timer(timeout, lambda: os.kill(process.pid, signal.SIGKILL))
    timer.start()
    _, status, usage = os.wait4(process.pid, 0)
    timer.cancel()
    process.returncode = 0
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    ending = f"exit {code}" if code >= 0 else f"killed after {timeout:.0f} s"
    return f"{wall:8.2f} s {usage.ru_maxrss / 1024:8.1f} MiB  {ending}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a commit to measure beside this tree")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run may take")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="inputs-at-the-cap-") as tmp:
        work = Path(tmp)
        trees = {"this tree": ROOT}
        if args.baseline:
            old = work / "baseline"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.baseline],
                check=True, capture_output=True,
            )  # fmt: skip
            trees[args.baseline] = old
        try:
            runs: list[tuple[str, list[str]]] = []
            for index, (label, line, count) in enumerate(CHECKS):
                path = work / f"check-{index}.conf"
                _lines(path, line, count)
                runs.append((f"check: {label}", ["check", str(path)]))
            for label, kind, name in FACTS:
                path = work / kind / name
                path.parent.mkdir()
                _facts(path, kind)
                runs.append(
                    (f"recommend: {label}", ["recommend", "--facts", str(path), "-p", "base"])
                )
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            warm = work / "warm.conf"
            warm.write_text("net.core.somaxconn = 4096\n")
            for tree in trees.values():  # each tree's caches filled before it is measured
                subprocess.run(
                    [sys.executable, "-m", "sysctl_advisor", "check", str(warm)],
                    env={**env, "PYTHONPATH": str(tree)}, cwd=tree, capture_output=True,
                )  # fmt: skip
            for label, command in runs:
                print(label)
                for name, tree in trees.items():
                    tree_env = {**env, "PYTHONPATH": str(tree)}
                    full = [sys.executable, "-m", "sysctl_advisor", *command]
                    print(f"  {name:12s} {measure(full, tree_env, tree, args.timeout)}", flush=True)
        finally:
            if args.baseline:
                remove = ["worktree", "remove", "--force", str(work / "baseline")]
                subprocess.run(["git", "-C", str(ROOT), *remove], capture_output=True)


if __name__ == "__main__":
    main()
