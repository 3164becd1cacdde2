"""`sysctl-advisor calibrate`: measure what a TCP socket costs on this kernel.

The probe (sysctl_advisor/sources/calibration_probe.py) runs in a private network namespace made by
util-linux `unshare -n`, so its thousands of loopback connections never touch the host's own
namespace, and the namespace with everything in it is gone when the probe exits. This module
checks that it may run, starts it, and turns the raw figures into per-socket costs
(outputs/calibration_report.py writes them into a facts file).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from sysctl_advisor.model.calibration_run import Measurement
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import Calibration
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources.system_tools import system_env, system_program

MAX_PAIRS = 100_000
MIN_PAIRS = 2_000  # fewer sockets measure slab noise, not per-socket cost
MAX_SECONDS = 600.0
# Root runs the probe: tools come from the system directories only, never from $PATH
# (system_tools), and the interpreter runs isolated (-I: no current directory, PYTHONPATH or
# user site on sys.path).


def refusal() -> str | None:
    """Why calibrate cannot run here (one line), or None."""
    if sys.platform != "linux" or not Path("/proc/net/sockstat").exists():
        return "calibrate measures a Linux kernel: /proc/net/sockstat is missing"
    if os.geteuid() != 0:
        return "calibrate needs root: it opens its connections in a private network namespace"
    if system_program("unshare") is None:
        return "calibrate needs util-linux `unshare` (in /usr/bin or /bin) for a private namespace"
    return None


def run_probe(pairs: int, seconds: float) -> dict[str, Any]:
    """Start the probe in a fresh network namespace (loopback up) and return its figures."""
    unshare = system_program("unshare")
    shell = system_program("sh")
    if unshare is None or shell is None:
        raise InputError("calibrate needs `unshare` and `sh` in /usr/bin or /bin")
    script = 'ip link set lo up 2>/dev/null || true\nexec "$@"'
    command = [
        unshare, "-n", "--", shell, "-c", script, "sh",
        sys.executable, "-I", "-m", "sysctl_advisor.sources.calibration_probe",
        str(pairs), str(seconds),
    ]  # fmt: skip
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=seconds + 120,
            env=system_env(),
            cwd="/",
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"the probe did not finish within {seconds + 120:.0f} s") from None
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError(f"the probe failed in its namespace: {last}")
    try:
        data: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise InputError("the probe's output was not understood") from None
    return data


def summarise(data: dict[str, Any], kernel: str) -> Measurement:
    pairs = int(data["pairs"])
    sockets = 2 * pairs
    if pairs < MIN_PAIRS // 2:
        raise InputError(
            f"only {pairs} connection pairs could be opened (time or descriptor limit): "
            f"too few to measure (at least {MIN_PAIRS // 2:,}); raise `ulimit -n` or --timeout"
        )
    base, idle, queued = data["base"], data["idle"], data["queued"]

    def per_socket(after: dict[str, Any], name: str) -> float:
        return float(after[name] - base[name]) / sockets

    growth = {
        name: (size - base["caches"].get(name, 0)) / sockets
        for name, size in idle["caches"].items()
    }
    top = sorted(((n, g) for n, g in growth.items() if g >= 16), key=lambda x: (-x[1], x[0]))
    figures = {
        "kernel": kernel,
        "sockets": sockets,
        # /proc/meminfo's Slab is the whole kernel's: another process freeing memory meanwhile
        # can hide the sockets' growth, which the per-cache growth (when readable) still shows.
        "slab_bytes_per_socket": max(
            256, round(per_socket(idle, "slab_bytes")), round(sum(g for _, g in top))
        ),
        "tcp_mem_pages_per_idle_socket": round(max(0.0, per_socket(idle, "tcp_mem_pages")), 3),
        "tcp_mem_pages_per_queued_socket": round(max(0.0, per_socket(queued, "tcp_mem_pages")), 3),
        "queued_bytes": int(data["queued_bytes"]),
    }
    calibration = validate(Calibration, figures)
    queued_slab = round(per_socket(queued, "slab_bytes") - per_socket(idle, "slab_bytes"))
    return Measurement(
        calibration=calibration,
        pairs=pairs,
        requested_pairs=int(data["requested_pairs"]),
        fd_limited=bool(data["fd_limited"]),
        timed_out=bool(data["timed_out"]),
        slab_caches=top[:8],
        queued_slab_bytes_per_socket=queued_slab,
    )


def calibrate(pairs: int, seconds: float) -> Measurement:
    problem = refusal()
    if problem is not None:
        raise InputError(problem)
    if not MIN_PAIRS <= pairs <= MAX_PAIRS:
        raise InputError(
            f"must be between {MIN_PAIRS:,} and {MAX_PAIRS:,}: fewer connections measure noise",
            field="--pairs",
        )
    if not 1 <= seconds <= MAX_SECONDS:
        raise InputError(f"must be between 1 and {MAX_SECONDS:.0f} seconds", field="--timeout")
    return summarise(run_probe(pairs, seconds), platform.release())
