"""A warm run that loads only the rules its profile runs (from the index of the last whole
load) writes byte for byte what a run with an empty cache writes, which loads and checks every
rule and profile: every example host, every profile, a map, a JSON and a node output.

Each cold run has a cache directory of its own, empty; the warm runs share one, filled first,
and run in another interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import HANG_SECONDS, ROOT

EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml"))
PROFILES = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml"))
FORMATS = ("conf", "json", "kubernetes")

# Runs each command line, each with its own cache directory (SYSCTL_ADVISOR_CACHE), through
# the console entry point in one interpreter; prints the exit codes.
DRIVER = """
import json, os, sys
from sysctl_advisor.entry import main

codes = []
for cache, argv in json.loads(sys.argv[1]):
    os.environ["SYSCTL_ADVISOR_CACHE"] = cache
    sys.argv = ["sysctl-advisor", *argv]
    try:
        main()
        codes.append(0)
    except SystemExit as exc:
        codes.append(exc.code)
print(json.dumps(codes))
"""


def _pairs() -> list[tuple[Path, str]]:
    """Every example with a profile, and every profile with an example (in turn)."""
    pairs = {(e, PROFILES[i % len(PROFILES)]) for i, e in enumerate(EXAMPLES)}
    pairs |= {(EXAMPLES[i % len(EXAMPLES)], p) for i, p in enumerate(PROFILES)}
    return sorted(pairs)


def _run(runs: list[tuple[Path, list[str]]]) -> list[object]:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps([(str(c), a) for c, a in runs])],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS * 5,
    )
    assert done.returncode == 0, done.stderr
    codes: list[object] = json.loads(done.stdout.splitlines()[-1])
    return codes


def test_a_warm_lazy_run_writes_what_a_run_with_an_empty_cache_writes(tmp_path: Path) -> None:
    lines = [
        ["recommend", "--facts", str(example), "-p", profile, "-f", FORMATS[i % len(FORMATS)]]
        for i, (example, profile) in enumerate(_pairs())
    ]
    cold = _run(
        [
            (tmp_path / f"cold-cache-{i}", [*a, "-o", str(tmp_path / f"cold-{i}")])
            for i, a in enumerate(lines)
        ]
    )
    warm_cache = tmp_path / "warm-cache"
    _run([(warm_cache, [*lines[0], "-o", str(tmp_path / "fill")])])  # the whole load, once
    warm = _run(
        [(warm_cache, [*a, "-o", str(tmp_path / f"warm-{i}")]) for i, a in enumerate(lines)]
    )
    assert warm == cold
    for i, argv in enumerate(lines):
        cold_out, warm_out = tmp_path / f"cold-{i}", tmp_path / f"warm-{i}"
        assert cold_out.exists() == warm_out.exists(), argv
        if cold_out.exists():
            assert warm_out.read_bytes() == cold_out.read_bytes(), argv
