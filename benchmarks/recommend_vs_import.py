"""One `recommend` run against importing its own libraries, as a ratio of medians.

    python benchmarks/recommend_vs_import.py [--runs 15]

Target: ratio <= 1.5. Both sides are whole interpreter processes, so startup counts on both.
The first recommend run (which fills the expression cache) is reported separately.

The package is byte-compiled first, as `pip install` does, so a checkout under
PYTHONDONTWRITEBYTECODE is not charged for compiling its own sources on every run.

A third line measures the floor: a do-nothing typer command with the same options that
validates one pydantic model. Typer >= 0.25 builds a pydantic TypeAdapter per option at run
time and the first BaseModel pulls in pydantic's schema machinery, so any CLI built on these
libraries pays that much before doing any work of its own.
"""

from __future__ import annotations

import argparse
import compileall
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


FLOOR_SCRIPT = """
from pathlib import Path
from typing import Annotated, Optional
import jinja2, pydantic, typer, yaml
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
@app.callback()
def root() -> None: pass
@app.command()
def recommend(
    profile: Annotated[str, typer.Option("--profile")],
    facts: Annotated[Optional[Path], typer.Option("--facts")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set")] = None,
    fmt: Annotated[str, typer.Option("--format")] = "conf",
    output: Annotated[Optional[Path], typer.Option("--output")] = None,
    rules_dir: Annotated[Optional[list[Path]], typer.Option("--rules-dir")] = None,
    profiles_dir: Annotated[Optional[list[Path]], typer.Option("--profiles-dir")] = None,
) -> None:
    class Facts(pydantic.BaseModel):
        total: int
    Facts(total=1)
app()
"""
FLOOR = [sys.executable, "-c", FLOOR_SCRIPT, "recommend", "--profile", "gridftp", "--facts", "x"]


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "advisor", quiet=1)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYSCTL_ADVISOR_CACHE=cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cold = timed(RECOMMEND, env)
        timed(IMPORTS, env)  # warm the OS page cache for the libraries
        imports, recommends, floors = [], [], []
        for _ in range(args.runs):  # interleaved, so drift affects all sides alike
            imports.append(timed(IMPORTS, env))
            recommends.append(timed(RECOMMEND, env))
            floors.append(timed(FLOOR, env))
    imp, rec = statistics.median(imports), statistics.median(recommends)
    floor = statistics.median(floors)
    runs = f"over {args.runs} runs"
    print(f"import pydantic, jinja2, yaml, typer:   median {imp * 1000:.0f} ms {runs}")
    print(f"recommend (dcache-32bit, gridftp):      median {rec * 1000:.0f} ms {runs}")
    print(f"floor (empty typer command + 1 model):  median {floor * 1000:.0f} ms {runs}")
    print(f"first recommend (empty cache):          {cold * 1000:.0f} ms")
    print(f"ratio: {rec / imp:.2f} (target <= 1.5); floor ratio {floor / imp:.2f}")


if __name__ == "__main__":
    main()
