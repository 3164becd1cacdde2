"""One `recommend` run against importing its own libraries, as a ratio of medians.

    python benchmarks/recommend_vs_import.py [--runs 15]

Target: ratio <= 1.5. Both sides are whole interpreter processes, so startup counts on both.
The first recommend run (which fills the expression cache) is reported separately.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORTS = [sys.executable, "-c", "import pydantic, jinja2, yaml, typer"]
RECOMMEND = [
    sys.executable,
    "-m",
    "advisor",
    "recommend",
    "--facts",
    str(ROOT / "examples" / "dcache-32bit.yaml"),
    "--profile",
    "gridftp",
]


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYSCTL_ADVISOR_CACHE=cache)
        cold = timed(RECOMMEND, env)
        timed(IMPORTS, env)  # warm the OS page cache for the libraries
        imports, recommends = [], []
        for _ in range(args.runs):  # interleaved, so drift affects both sides alike
            imports.append(timed(IMPORTS, env))
            recommends.append(timed(RECOMMEND, env))
    imp, rec = statistics.median(imports), statistics.median(recommends)
    print(f"import pydantic, jinja2, yaml, typer: median {imp * 1000:.0f} ms over {args.runs} runs")
    print(f"recommend (dcache-32bit, gridftp):    median {rec * 1000:.0f} ms over {args.runs} runs")
    print(f"first recommend (empty cache):        {cold * 1000:.0f} ms")
    print(f"ratio: {rec / imp:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
