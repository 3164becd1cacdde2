"""What `check` of a dump pays for at start-up: no module it does not use (`platform`, for
the running kernel's release), and no pattern for lines the dump does not have (a suppression
comment's grammar, whose bounded list of ids takes milliseconds to compile)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import HANG_SECONDS, ROOT
from tests.knowledge.test_lazy_knowledge import DUMP

# Runs one command line through the console entry point; prints the modules it imported and
# the source of every pattern the re module compiled (the advisor's and its libraries').
DRIVER = """
import json, re, sys

compiled = []
_compile = re._compile

def recording(pattern, flags):
    if isinstance(pattern, str) and (type(pattern), pattern, flags) not in re._cache:
        compiled.append(pattern)
    return _compile(pattern, flags)

re._compile = recording
from sysctl_advisor.entry import main

sys.argv = ["sysctl-advisor", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print(json.dumps({"modules": sorted(sys.modules), "patterns": compiled}))
"""


def _run(tmp_path: Path, *argv: str) -> dict[str, list[str]]:
    env = {"SYSCTL_ADVISOR_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    for _ in range(2):  # cold, then warm
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, json.dumps(argv)],
            cwd=ROOT,
            env={**env, "LC_ALL": "C.UTF-8"},
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
        )
        assert done.returncode == 0, done.stderr
    found: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_check_of_a_dump_compiles_no_suppression_grammar_and_imports_no_platform(
    tmp_path: Path,
) -> None:
    found = _run(tmp_path, "check", "-o", str(tmp_path / "out"), str(DUMP))
    assert "platform" not in found["modules"]
    assert [p for p in found["patterns"] if "sysctl-advisor:" in p] == []


def test_a_suppression_comment_is_still_read(tmp_path: Path) -> None:
    """The grammar compiled on first use reads a comment as before."""
    conf = tmp_path / "99-site.conf"
    conf.write_text(
        "# sysctl-advisor: ignore[check.tw-recycle-enabled] kept until the migration\n"
        "net.ipv4.tcp_tw_recycle = 1\n"
    )
    found = _run(tmp_path, "check", "--kernel", "4.9", "-o", str(tmp_path / "out"), str(conf))
    assert [p for p in found["patterns"] if "sysctl-advisor:" in p] != []
