"""Issue 19: a warm one-shot run builds its models on plain records and never imports pydantic,
and writes byte for byte what the same command writes with pydantic models, with the same exit
code: every example host under every profile, every plain format of recommend, diff and check.

The pydantic side runs here, in the test process (which defined its models on pydantic long
ago) and fills the caches; the plain side runs every command line in one fresh interpreter
that chose plain models before defining any, as the console entry point does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sysctl_advisor.fast_path import parse, run
from sysctl_advisor.knowledge.warm_start import PLAIN_FORMATS, only_loads_validated
from tests.conftest import ROOT

EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml"))
PROFILES = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml"))
DUMP = ROOT / "tests" / "fixtures" / "dumps" / "sysctl-a-6.18.txt"
FIXTURES = ROOT / "tests" / "fixtures"
CHECKED = [
    FIXTURES / "check" / "annotated.conf",
    FIXTURES / "check" / "sysctl.d",
    FIXTURES / "sysctl-trees" / "layered",
]

# Runs every command line (each writing to its -o file) on plain models; prints the exit codes
# and the pydantic modules the process imported.
DRIVER = """
import json, sys
from sysctl_advisor.fast_path import parse, run
from sysctl_advisor.knowledge.warm_start import only_loads_validated
from sysctl_advisor.model.plain_models import choose_plain

lines = json.loads(sys.argv[1])
for argv in lines:
    command, _, options = parse(argv)
    assert only_loads_validated(command, options), argv
assert choose_plain()
codes = []
for argv in lines:
    command, _, options = parse(argv)
    codes.append(run(command, options))
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core"))
print(json.dumps({"codes": codes, "pydantic": loaded}))
"""


def _command_lines() -> list[list[str]]:
    lines = [["recommend", "--facts", str(e), "--profile", p] for e in EXAMPLES for p in PROFILES]
    dcache, nginx = str(ROOT / "examples" / "dcache-32bit.yaml"), str(EXAMPLES[-1])
    for fmt in PLAIN_FORMATS["recommend"]:
        lines.append(["recommend", "--facts", nginx, "-p", "frontend-proxy", "-f", fmt])
        lines.append(
            ["recommend", "--facts", dcache, "-p", "gridftp", "-f", fmt, "-s", "rtt_ms=80"]
        )
    for fmt in PLAIN_FORMATS["diff"]:
        lines.append(["diff", "--facts", dcache, "-p", "gridftp", "-f", fmt])
        lines.append(["diff", "--facts", nginx, "-p", "base", "--current", str(DUMP), "-f", fmt])
    for fmt in PLAIN_FORMATS["check"]:
        lines.append(["check", "-f", fmt, *map(str, CHECKED)])
        lines.append(["check", "-f", fmt, "--facts", dcache, "-p", "gridftp", str(CHECKED[0])])
    return lines


def test_a_warm_run_on_plain_models_writes_what_pydantic_models_write(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = workdir / "cache"
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(cache))
    lines = _command_lines()
    expected: list[tuple[int, bytes]] = []
    plain_lines: list[list[str]] = []
    for index, argv in enumerate(lines):
        parsed = parse([*argv, "-o", str(workdir / f"pydantic-{index}")])
        assert parsed is not None, argv
        code = run(parsed[0], parsed[2])  # fills the caches, with pydantic models
        expected.append((code, (workdir / f"pydantic-{index}").read_bytes()))
        plain_lines.append([*argv, "-o", str(workdir / f"plain-{index}")])
    assert {code for code, _ in expected} <= {0, 1}
    for argv in plain_lines:
        command, _, options = parse(argv)  # type: ignore[misc]
        assert only_loads_validated(command, options), argv
    env = {"SYSCTL_ADVISOR_CACHE": str(cache), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(plain_lines)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["pydantic"] == [
        "pydantic.plugin._loader"
    ]  # sysctl_advisor/__init__'s empty stand-in
    for index, argv in enumerate(lines):
        code, text = expected[index]
        assert report["codes"][index] == code, argv
        assert (workdir / f"plain-{index}").read_bytes() == text, argv


def test_the_console_command_chooses_plain_models_only_when_warm(workdir: Path) -> None:
    """The real entry point: cold (pydantic, and it fills the caches), then warm (plain)."""
    env = {"SYSCTL_ADVISOR_CACHE": str(workdir / "cache"), "PATH": "/usr/bin:/bin"}
    probe = (
        "import atexit, sys\n"
        "said = lambda: sys.stderr.write('PYDANTIC=%s' % ('pydantic.main' in sys.modules))\n"
        "atexit.register(said)\n"
        "sys.argv = ['sysctl-advisor', *sys.argv[1:]]\n"
        "from sysctl_advisor.entry import main\n"
        "main()\n"
    )
    argv = ["recommend", "--facts", str(ROOT / "examples" / "c1m-server.yaml"), "-p", "c1m-server"]
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, *argv], cwd=ROOT, env=env, capture_output=True, text=True
        )
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0]
    assert runs[0].stderr.endswith("PYDANTIC=True") and runs[1].stderr.endswith("PYDANTIC=False")
    assert runs[0].stdout == runs[1].stdout and "net." in runs[0].stdout
    json_run = subprocess.run(
        [sys.executable, "-c", probe, *argv, "-f", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert json_run.returncode == 0 and json_run.stderr.endswith("PYDANTIC=True")
