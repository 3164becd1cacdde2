"""One `recommend` run against importing its own libraries, as a ratio of medians.

    python benchmarks/recommend_vs_import.py [--runs 15] [--breakdown]

Target: ratio <= 1.5. Both sides are whole interpreter processes, so startup counts on both.
The first recommend run (which fills the expression cache) is reported separately.

The package is byte-compiled first, as `pip install` does, so a checkout under
PYTHONDONTWRITEBYTECODE is not charged for compiling its own sources on every run.

A third line measures the floor: a do-nothing typer command with the same options that
validates one pydantic model. Typer >= 0.25 builds a pydantic TypeAdapter per option at run
time and the first BaseModel pulls in pydantic's schema machinery, so any CLI built on these
libraries pays that much before doing any work of its own. The same floor was measured with
typer 0.24.2, which builds no adapters (ratio 1.51 both ways): the cost is pydantic's first
model, which imports the schema machinery that `import pydantic` leaves lazy.

`--breakdown` times one recommend run in a fresh interpreter stage by stage (medians), so the
part that is the advisor's own can be told from the part that is its libraries'.
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


BREAKDOWN_SCRIPT = """
import contextlib, io, sys, time
import advisor.commands.recommend as command, advisor.engine.plan_builder as engine
import advisor.outputs.plan_render as render
marks = []
def mark(name):
    marks.append((name, time.perf_counter()))
def timed(module, name, label):
    function = getattr(module, name)
    def wrapper(*args, **kwargs):
        mark("before " + label)
        try:
            return function(*args, **kwargs)
        finally:
            mark(label)
    setattr(module, name, wrapper)
timed(command, "load_knowledge", "knowledge base (cached)")
timed(command, "read_facts", "facts file")
timed(engine, "build_plan", "build_plan")
timed(render.Renderer, "render", "render")
sys.argv = ["sysctl-advisor", *sys.argv[1:]]
mark("start")
with contextlib.redirect_stdout(io.StringIO()):
    try:
        __import__("advisor.cli").cli.main()
    except SystemExit:
        pass
mark("end")
previous, spent = marks[0][1], {}
for name, at in marks[1:]:
    between = name.startswith("before ") or name == "end"
    label = "typer (commands, parsing), the CLI" if between else name
    spent[label] = spent.get(label, 0.0) + (at - previous) * 1000
    previous = at
print(";".join(f"{name}={ms:.3f}" for name, ms in spent.items()))
"""
STAGES = [
    ("interpreter start", [sys.executable, "-c", "pass"]),
    ("+ import pydantic, jinja2, yaml, typer", IMPORTS),
    (
        "+ first pydantic model",
        [
            sys.executable,
            "-c",
            "import pydantic, jinja2, yaml, typer\n"
            "class M(pydantic.BaseModel):\n    x: int\nM(x=1)",
        ],
    ),
    (
        "+ the advisor's modules",
        [
            sys.executable,
            "-c",
            "import pydantic, jinja2, yaml, typer, advisor.cli, advisor.engine.plan_builder",
        ],
    ),
]


def breakdown(runs: int, env: dict[str, str]) -> None:
    """Cumulative process times per stage, then the in-process split of the run itself."""
    previous = 0.0
    for label, cmd in STAGES:
        total = statistics.median(timed(cmd, env) for _ in range(runs))
        print(f"{label:40s} {total * 1000:6.1f} ms  (+{(total - previous) * 1000:5.1f})")
        previous = total
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", BREAKDOWN_SCRIPT, *RECOMMEND[3:]],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout.strip()
        for part in out.split(";"):
            name, value = part.split("=")
            samples.setdefault(name, []).append(float(value))
    print("inside the run (after the imports above):")
    for name, values in samples.items():
        print(f"  {name:38s} {statistics.median(values):6.1f} ms")


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--breakdown", action="store_true", help="time each stage of one run instead"
    )
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "advisor", quiet=1)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYSCTL_ADVISOR_CACHE=cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cold = timed(RECOMMEND, env)
        if args.breakdown:
            breakdown(args.runs, env)
            return
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
