"""One command line, this tree against another checkout of the advisor, in alternating runs.

    python benchmarks/paired_trees.py --baseline DIR [--runs 15] [--floor CODE] -- ARGS...

Each round runs the floor (`python -c CODE`, by default `import jinja2.sandbox, yaml`), then
this tree's `python -m sysctl_advisor ARGS...`, then the baseline's, in a shuffled order, so a
slow moment of a shared machine falls on all three. Each tree runs from its own directory
(first on PYTHONPATH) with its own cache directory, byte-compiled first, after one run that
fills its caches. Prints, for wall time and CPU time (user + system, from wait4), the median
and the spread (lowest-highest) of each, and each tree's median over the floor's.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--floor", default="import jinja2.sandbox, yaml")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    args = [a for a in options.args if a != "--"]
    trees = {"this tree": ROOT, "baseline": options.baseline.resolve()}
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="paired-trees-") as tmp:
        commands: dict[str, tuple[list[str], dict[str, str], Path]] = {
            "floor": ([sys.executable, "-c", options.floor], base, Path(tmp))
        }
        for name, tree in trees.items():
            compileall.compile_dir(tree / "sysctl_advisor", quiet=1)
            env = dict(base, PYTHONPATH=str(tree), SYSCTL_ADVISOR_CACHE=str(Path(tmp) / name[:4]))
            commands[name] = ([sys.executable, "-m", "sysctl_advisor", *args], env, tree)
            timed(*commands[name])  # fills its caches
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        rng = random.Random(1)
        for _ in range(options.runs):
            order = list(commands)
            rng.shuffle(order)
            for name in order:
                samples[name].append(timed(*commands[name]))
    floor = {i: statistics.median(s[i] for s in samples["floor"]) for i in (0, 1)}
    for i, what in ((0, "wall"), (1, "CPU")):
        for name, taken in samples.items():
            values = sorted(s[i] * 1000 for s in taken)
            ratio = statistics.median(values) / (floor[i] * 1000)
            print(
                f"{what:4s} {name:9s} median {statistics.median(values):7.1f} ms"
                f" ({values[0]:.1f}-{values[-1]:.1f})  x floor {ratio:4.2f}"
            )


if __name__ == "__main__":
    main()
