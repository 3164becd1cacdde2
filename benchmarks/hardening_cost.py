"""What the input hardening costs: `recommend` and `fleet`, this tree against a
baseline commit, in alternating runs on the same machine.

    python benchmarks/hardening_cost.py                      # against the commit before it
    python benchmarks/hardening_cost.py --baseline HEAD~3 --rounds 9 --hosts 3000

The baseline is checked out with `git worktree` into a temporary directory and run with
PYTHONPATH pointing at it, each tree with its own warm cache directory. `recommend` is timed
as a whole process (median of --rounds pairs); `fleet` as hosts/s over the same synthetic
facts (benchmarks/fleet_throughput.py's generator). Target: each ratio <= 1.05.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = "25c8509"  # "Cases: ...", the last commit before the hardening
sys.path.insert(0, str(HERE))

from fleet_throughput import generate, profile_map  # noqa: E402


def _env(tree: Path, cache: Path) -> dict[str, str]:
    # Bytecode is written as on any installed system: with PYTHONDONTWRITEBYTECODE set, every
    # run would compile the tree's changed modules from source and time the compiler.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree), "SYSCTL_ADVISOR_CACHE": str(cache)}


def _recommend(tree: Path, cache: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "recommend", "--facts",
         str(ROOT / "examples/dcache-32bit.yaml"), "--profile", "gridftp"],
        env=_env(tree, cache), check=True, stdout=subprocess.DEVNULL, cwd=tree,
    )  # fmt: skip
    return time.perf_counter() - started


def _fleet(tree: Path, cache: Path, facts: Path, mapping: Path, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "fleet", "--ansible-facts", str(facts),
         "--profile", "frontend-proxy", "--profile-map", str(mapping), "--out", str(out)],
        env=_env(tree, cache), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd=tree,
    )  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hosts", type=int, default=2000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hardening-bench-"))
    old = work / "baseline"
    try:
        checkout = subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.baseline],
            capture_output=True, text=True,
        )  # fmt: skip
        if checkout.returncode != 0:
            print(f"skipped: cannot check out {args.baseline}: {checkout.stderr.strip()}")
            return
        trees = {"baseline": old, "hardened": ROOT}
        caches = {name: work / f"cache-{name}" for name in trees}
        facts = work / "facts"
        facts.mkdir()
        generate(facts, args.hosts)
        mapping = profile_map(work)
        for name, tree in trees.items():  # warm each tree's caches
            _recommend(tree, caches[name])
        times: dict[str, list[float]] = {name: [] for name in trees}
        rates: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                times[name].append(_recommend(tree, caches[name]))
        for _ in range(max(3, args.rounds // 2)):
            for name, tree in trees.items():
                wall = _fleet(tree, caches[name], facts, mapping, work / f"out-{name}")
                rates[name].append(args.hosts / wall)
        rec = {n: statistics.median(v) for n, v in times.items()}
        fleet = {n: statistics.median(v) for n, v in rates.items()}
        print(f"baseline {args.baseline}, {args.rounds} rounds, {args.hosts} fleet hosts")
        print(f"recommend: baseline {rec['baseline'] * 1000:.0f} ms, "
              f"hardened {rec['hardened'] * 1000:.0f} ms, "
              f"ratio {rec['hardened'] / rec['baseline']:.3f} (target <= 1.05)")  # fmt: skip
        print(f"fleet:     baseline {fleet['baseline']:.0f} hosts/s, "
              f"hardened {fleet['hardened']:.0f} hosts/s, "
              f"slowdown {fleet['baseline'] / fleet['hardened']:.3f} (target <= 1.05)")  # fmt: skip
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                       capture_output=True)  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
