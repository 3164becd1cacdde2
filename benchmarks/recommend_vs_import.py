"""One `recommend` run against importing its own libraries, as a ratio of medians.

    python benchmarks/recommend_vs_import.py [--runs 15] [--breakdown]

Target: ratio <= 1.3. Both sides are whole interpreter processes, so
startup counts on both. The first recommend run (which fills the caches) is reported
separately, and so is a run on a facts file the advisor has not seen before (the knowledge
cached, the facts validated: that imports pydantic and builds the facts model's schema).

The package is byte-compiled first, as `pip install` does, so a checkout under
PYTHONDONTWRITEBYTECODE is not charged for compiling its own sources on every run.

Two floors are measured beside it. A warm run (everything it validates already in the caches)
takes the validated objects (the advisor's dataclass models) from the caches and never imports
pydantic: its floor is `import jinja2.sandbox, yaml` (the Jinja2 sandbox for rule expressions,
PyYAML for the files). A run that validates a file (a facts file not seen before, an edited
rule) also imports pydantic and validates through a TypeAdapter; its floor adds that for one
small dataclass. typer is in neither: the common command lines skip it
(sysctl_advisor/fast_path.py, built from the same table as the typer CLI).

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
    "sysctl_advisor",
    "recommend",
    "--facts",
    str(ROOT / "examples" / "dcache-32bit.yaml"),
    "--profile",
    "gridftp",
]


WARM_FLOOR = [sys.executable, "-c", "import jinja2.sandbox, yaml"]
FLOOR_SCRIPT = """
import dataclasses, jinja2.sandbox, yaml
from pydantic import TypeAdapter
@dataclasses.dataclass(frozen=True)
class Facts:
    total: int = 0
TypeAdapter(Facts).validate_python({"total": 1})
"""
FLOOR = [sys.executable, "-c", FLOOR_SCRIPT]


BREAKDOWN_SCRIPT = """
import contextlib, io, sys, time
import sysctl_advisor.commands.recommend as command, sysctl_advisor.engine.plan_builder as engine
import sysctl_advisor.outputs.plan_render as render
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
        __import__("sysctl_advisor.entry").entry.main()
    except SystemExit:
        pass
mark("end")
previous, spent = marks[0][1], {}
for name, at in marks[1:]:
    between = name.startswith("before ") or name == "end"
    label = "the CLI (fast path), the rest of the run" if between else name
    spent[label] = spent.get(label, 0.0) + (at - previous) * 1000
    previous = at
print(";".join(f"{name}={ms:.3f}" for name, ms in spent.items()))
"""
STAGES = [
    ("interpreter start", [sys.executable, "-c", "pass"]),
    ("+ import pydantic, jinja2, yaml, typer", IMPORTS),
    ("the warm floor (see above)", WARM_FLOOR),
    (
        "+ the advisor's modules",
        [
            sys.executable,
            "-c",
            "import jinja2.sandbox, yaml, sysctl_advisor.entry, sysctl_advisor.fast_path, "
            "sysctl_advisor.engine.plan_builder, sysctl_advisor.outputs.plan_render, "
            "sysctl_advisor.commands.common",
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
    compileall.compile_dir(ROOT / "sysctl_advisor", quiet=1)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYSCTL_ADVISOR_CACHE=cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cold = timed(RECOMMEND, env)
        if args.breakdown:
            breakdown(args.runs, env)
            return
        timed(IMPORTS, env)  # warm the OS page cache for the libraries
        imports, recommends, floors, warm_floors, new_facts = [], [], [], [], []
        text = Path(RECOMMEND[5]).read_text()
        for i in range(args.runs):  # interleaved, so drift affects all sides alike
            imports.append(timed(IMPORTS, env))
            recommends.append(timed(RECOMMEND, env))
            floors.append(timed(FLOOR, env))
            warm_floors.append(timed(WARM_FLOOR, env))
            unseen = Path(cache) / f"host-{i}.yaml"  # a facts file not validated before
            unseen.write_text(text)
            new_facts.append(timed([*RECOMMEND[:5], str(unseen), *RECOMMEND[6:]], env))
    imp, rec = statistics.median(imports), statistics.median(recommends)
    floor, unseen_run = statistics.median(floors), statistics.median(new_facts)
    warm_floor = statistics.median(warm_floors)
    runs = f"over {args.runs} runs"
    print(f"import pydantic, jinja2, yaml, typer:   median {imp * 1000:.0f} ms {runs}")
    print(f"recommend (dcache-32bit, gridftp):      median {rec * 1000:.0f} ms {runs}")
    print(f"  the same, a facts file not seen yet:  median {unseen_run * 1000:.0f} ms {runs}")
    print(f"warm floor (jinja2.sandbox, yaml):      median {warm_floor * 1000:.0f} ms {runs}")
    print(f"pydantic floor (+ pydantic, a validation): median {floor * 1000:.0f} ms {runs}")
    print(f"first recommend (empty cache):          {cold * 1000:.0f} ms")
    print(
        f"ratio: {rec / imp:.2f} (target <= 1.3); a new facts file {unseen_run / imp:.2f}; "
        f"the warm floor {warm_floor / imp:.2f}; the pydantic floor {floor / imp:.2f}"
    )


if __name__ == "__main__":
    main()
