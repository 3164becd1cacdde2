"""How fast `recommend` would be if a warm run never imported pydantic: a measured prototype.

    python benchmarks/pydantic_free_prototype.py [--runs 15]

Every warm run of the advisor imports pydantic's model machinery and defines its model classes
because the specs and facts it takes from its caches are pydantic objects, although nothing is
validated on that path. This script measures what the run would cost without that: it writes a
stand-in `pydantic` package (about 50 lines, below) into a temporary directory, fills the
advisor's caches with the real pydantic, then runs the same `recommend` with the stand-in
first on PYTHONPATH, so the same cached objects are loaded into the same classes built on a
plain base. The output must be byte-identical to the real run's (checked), and the three lines
are timed interleaved: the four-library import line, recommend, recommend on the stand-in.

The stand-in validates nothing (it refuses to), so it is a measuring device, never something to
run the advisor with: the real change is a warm path whose specs and facts are plain objects,
with pydantic imported only to validate a file the caches do not hold.
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
    *[sys.executable, "-m", "advisor", "recommend"],
    *["--facts", str(ROOT / "examples" / "dcache-32bit.yaml"), "--profile", "gridftp"],
]
STAND_IN = """
class ValidationError(Exception):
    pass


def ConfigDict(**settings):
    return settings


class _Factory:
    def __init__(self, factory):
        self.factory = factory


def Field(default=None, *args, default_factory=None, **constraints):
    if default is ...:
        return None
    return _Factory(default_factory) if default_factory is not None else default


class _Annotation:
    def __init__(self, *args, **kwargs):
        pass


AfterValidator = BeforeValidator = PlainValidator = WrapValidator = _Annotation
JsonValue = object


def field_validator(*args, **kwargs):
    return lambda function: function


def model_validator(*args, **kwargs):
    return lambda function: function


class BaseModel:
    model_config = {}

    def __setstate__(self, state):
        object.__setattr__(self, "__dict__", dict(state["__dict__"]))

    def model_copy(self, update=None, deep=False):
        copy = object.__new__(type(self))
        object.__setattr__(copy, "__dict__", {**self.__dict__, **(update or {})})
        return copy

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    @classmethod
    def model_validate(cls, data):
        raise RuntimeError("the pydantic stand-in validates nothing")
"""


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "advisor", quiet=1)
    with tempfile.TemporaryDirectory() as work:
        stand_in = Path(work) / "stand-in" / "pydantic"
        stand_in.mkdir(parents=True)
        (stand_in / "__init__.py").write_text(STAND_IN)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["SYSCTL_ADVISOR_CACHE"] = str(Path(work) / "cache")
        stubbed = {**env, "PYTHONPATH": str(stand_in.parent)}
        real = subprocess.run(RECOMMEND, env=env, capture_output=True, check=True).stdout
        again = subprocess.run(RECOMMEND, env=env, capture_output=True, check=True).stdout
        light = subprocess.run(RECOMMEND, env=stubbed, capture_output=True, check=True).stdout
        if not real == again == light:
            raise SystemExit("the stand-in run's output differs from the real one: no figure")
        probe = [sys.executable, "-c", "import pydantic, sys; print(pydantic.__file__)"]
        loaded = subprocess.run(probe, env=stubbed, capture_output=True, text=True).stdout
        if not loaded.startswith(str(stand_in)):
            raise SystemExit(f"the stand-in was not the pydantic imported ({loaded.strip()})")
        samples: dict[str, list[float]] = {"imports": [], "recommend": [], "stand-in": []}
        for _ in range(args.runs):  # interleaved, so drift affects all sides alike
            samples["imports"].append(timed(IMPORTS, env))
            samples["recommend"].append(timed(RECOMMEND, env))
            samples["stand-in"].append(timed(RECOMMEND, stubbed))
    imports = statistics.median(samples["imports"])
    labels = {
        "imports": "import pydantic, jinja2, yaml, typer",
        "recommend": "recommend (warm caches)",
        "stand-in": "the same, pydantic never imported",
    }
    for key, label in labels.items():
        value = statistics.median(samples[key])
        print(f"{label:38s} {value * 1000:7.1f} ms  ratio {value / imports:.2f}")
    print("outputs byte-identical: yes")


if __name__ == "__main__":
    main()
