"""`sysctl -a | sysctl-advisor check -` and `check - < file`: standard input is read
bounded as a file is, and reported under the name <stdin>."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import HANG_SECONDS, TESTS, Cli

DUMP = TESTS / "fixtures" / "dumps" / "sysctl-a-6.18.txt"


def test_a_file_on_standard_input_is_checked_as_stdin(cli: Cli) -> None:
    result = cli("check", "-", "-f", "json", input="net.ipv4.tcp_tw_recycle = 1\n")
    report = json.loads(result.stdout)
    assert result.exit_code == 1
    assert report["files"] == ["<stdin>"]
    assert {(f["file"], f["line"]) for f in report["findings"]} == {("<stdin>", 1)}


def test_a_dump_on_standard_input_is_judged_as_a_dump(cli: Cli) -> None:
    result = cli("check", "-", "-f", "json", input=DUMP.read_bytes())
    assert result.exit_code == 0, result.stdout
    ids = {f["id"] for f in json.loads(result.stdout)["findings"]}
    assert "check.unknown-key" not in ids  # a dump is the kernel's own


def test_standard_input_beyond_the_cap_is_one_error(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_MAX_INPUT", str(512 * 1024))
    big = "kernel.msgmax = 65536\n" * 30000  # 660,000 bytes
    result = cli("check", "-", input=big)
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "error: -: larger than" in lines[0]
    assert "Traceback" not in result.output


def test_a_pipe_from_another_process() -> None:
    """`producer | sysctl-advisor check -`, through a real pipe and the installed entry."""
    producer = subprocess.Popen(
        [sys.executable, "-c", "print('net.ipv4.tcp_keepalive_tim = 600')"],
        stdout=subprocess.PIPE,
    )
    checked = subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "check", "-"],
        stdin=producer.stdout,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert producer.stdout is not None
    producer.stdout.close()
    producer.wait(timeout=HANG_SECONDS)
    assert checked.returncode == 0, checked.stderr  # a warning only
    assert "<stdin>:1" in checked.stdout and "net.ipv4.tcp_keepalive_time" in checked.stdout


def test_a_closed_standard_input_and_a_second_dash_are_one_line_errors(cli: Cli) -> None:
    """`check - <&-` has no standard input to read (an internal error, exit 3, before), and
    `check - -` would read it twice (the second time empty, counted as a file)."""
    closed = subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "check", "-"],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.close(0),
    )
    assert closed.returncode == 2, closed.stderr
    assert closed.stderr.count("\n") == 1 and "standard input" in closed.stderr
    twice = cli("check", "-", "-", input="net.core.somaxconn = 4096\n")
    assert twice.exit_code == 2 and "standard input" in twice.stderr
