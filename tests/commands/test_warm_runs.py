"""One definition per model. A one-shot run whose knowledge and facts files were
validated before takes the validated objects from the caches and never imports pydantic, and
writes byte for byte what the first (cold) run wrote, with the same exit code: every example
host and every profile (each pair in the deep run, `-m deep`), and every format of recommend,
diff and check.

Both sides run in fresh interpreters through the console entry point: the cold one with an
empty cache (it validates with pydantic and fills the caches), the warm one after it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysctl_advisor.outputs import formats
from tests.conftest import HANG_SECONDS, ROOT

EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml"))
PROFILES = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml"))
DUMP = ROOT / "tests" / "fixtures" / "dumps" / "sysctl-a-6.18.txt"
FIXTURES = ROOT / "tests" / "fixtures"
CHECKED = [
    FIXTURES / "check" / "annotated.conf",
    FIXTURES / "check" / "sysctl.d",
    FIXTURES / "sysctl-trees" / "layered",
]
TEAM = FIXTURES / "check" / "team" / "sysctl.d"  # under a .sysctl-advisor.toml with a baseline

# Runs every command line (each writing to its -o file) through the console entry point in
# one interpreter; prints the exit codes and the pydantic modules the process imported.
DRIVER = """
import json, sys
from sysctl_advisor.entry import main

codes = []
for argv in json.loads(sys.argv[1]):
    sys.argv = ["sysctl-advisor", *argv]
    try:
        main()
        codes.append(0)
    except SystemExit as exc:
        codes.append(exc.code)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core"))
print(json.dumps({"codes": codes, "pydantic": loaded}))
"""


def _pairs(every: bool) -> list[tuple[Path, str]]:
    """Every example under every profile (the deep run), or each example with a profile and
    each profile with an example, in turn (the suite)."""
    if every:
        return [(e, p) for e in EXAMPLES for p in PROFILES]
    pairs = {(e, PROFILES[i % len(PROFILES)]) for i, e in enumerate(EXAMPLES)}
    pairs |= {(EXAMPLES[i % len(EXAMPLES)], p) for i, p in enumerate(PROFILES)}
    return sorted(pairs)


def _command_lines(every: bool) -> list[list[str]]:
    lines = [["recommend", "--facts", str(e), "--profile", p] for e, p in _pairs(every)]
    dcache, nginx = str(ROOT / "examples" / "dcache-32bit.yaml"), str(EXAMPLES[-1])
    for fmt in formats.RECOMMEND:
        lines.append(["recommend", "--facts", nginx, "-p", "frontend-proxy", "-f", fmt])
        lines.append(
            ["recommend", "--facts", dcache, "-p", "gridftp", "-f", fmt, "-s", "rtt_ms=80"]
        )
    for fmt in formats.DIFF:
        lines.append(["diff", "--facts", dcache, "-p", "gridftp", "-f", fmt])
        lines.append(["diff", "--facts", nginx, "-p", "base", "--current", str(DUMP), "-f", fmt])
    for fmt in formats.CHECK:
        lines.append(["check", "-f", fmt, *map(str, CHECKED)])
        lines.append(["check", "-f", fmt, str(TEAM)])
        lines.append(["check", "-f", fmt, "--facts", dcache, "-p", "gridftp", str(CHECKED[0])])
    return lines


def _run_all(lines: list[list[str]], cache: Path) -> dict[str, list[object]]:
    env = {"SYSCTL_ADVISOR_CACHE": str(cache), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(lines)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS * 5,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, list[object]] = json.loads(done.stdout.splitlines()[-1])
    return report


def test_a_warm_run_never_imports_pydantic_and_writes_what_the_cold_run_wrote(
    tmp_path: Path,
) -> None:
    warm_equals_cold(tmp_path, _command_lines(every=False))


@pytest.mark.deep
def test_every_example_under_every_profile_warm_writes_what_cold_wrote(tmp_path: Path) -> None:
    warm_equals_cold(tmp_path, _command_lines(every=True))


def warm_equals_cold(tmp_path: Path, lines: list[list[str]]) -> None:
    cache = tmp_path / "cache"
    cold_lines = [[*argv, "-o", str(tmp_path / f"cold-{i}")] for i, argv in enumerate(lines)]
    warm_lines = [[*argv, "-o", str(tmp_path / f"warm-{i}")] for i, argv in enumerate(lines)]
    cold = _run_all(cold_lines, cache)
    assert "pydantic" in {m.split(".")[0] for m in cold["pydantic"]}  # it validated the files
    assert set(cold["codes"]) <= {0, 1}, cold["codes"]
    warm = _run_all(warm_lines, cache)
    assert warm["pydantic"] == ["pydantic.plugin._loader"]  # sysctl_advisor/__init__'s stand-in
    assert warm["codes"] == cold["codes"]
    for index, argv in enumerate(lines):
        cold_bytes = (tmp_path / f"cold-{index}").read_bytes()
        assert (tmp_path / f"warm-{index}").read_bytes() == cold_bytes, argv


def test_an_edited_facts_file_is_validated_afresh(tmp_path: Path) -> None:
    """The caches are keyed by content: a facts file edited between runs is validated again
    (pydantic imported) and its new value is what the run uses."""
    cache = tmp_path / "cache"
    facts = tmp_path / "host.yaml"
    facts.write_text("memory: {total: 8 GiB}\nkernel: 5.15.0\n")
    argv = ["recommend", "--facts", str(facts), "-p", "base", "-f", "json", "-o"]
    first = _run_all([[*argv, str(tmp_path / "first.json")]], cache)
    again = _run_all([[*argv, str(tmp_path / "again.json")]], cache)
    assert again["pydantic"] == ["pydantic.plugin._loader"] and first["codes"] == [0]
    facts.write_text("memory: {total: 16 GiB}\nkernel: 5.15.0\n")
    edited = _run_all([[*argv, str(tmp_path / "edited.json")]], cache)
    assert "pydantic.main" in edited["pydantic"] or "pydantic.type_adapter" in edited["pydantic"]
    plan = json.loads((tmp_path / "edited.json").read_text())
    assert plan["host"]["memory_total"] == 16 * 2**30
