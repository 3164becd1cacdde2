"""The system programs the advisor runs (journalctl, dmesg; unshare and sh for calibrate) are
the system's own, with the system's environment: root runs the advisor, the caller's PATH and
environment are not root's to trust."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sysctl_advisor.sources import kernel_log, kernel_log_input

LOG_COMMANDS = ("journalctl", "dmesg")


def fake_programs(directory: Path, body: str) -> None:
    directory.mkdir()
    for name in LOG_COMMANDS:
        program = directory / name
        program.write_text(body)
        program.chmod(0o755)


def test_fake_log_commands_earlier_in_path_are_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "ran"
    fake_programs(tmp_path / "bin", f'#!/bin/sh\necho "$0" >> {ran}\necho "[ 1.0] Out of memory"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ.get('PATH', '')}")
    kernel_log_input.journal_output(None)
    kernel_log_input.journal_output(0.0)
    kernel_log_input.units_journal_output(("redis*.service",))
    kernel_log_input.dmesg_output()
    kernel_log.read_kernel_log({}, since_seconds=60)  # the live host's chain of sources
    assert not ran.exists(), ran.read_text()


def test_a_system_program_runs_with_the_system_environment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing of the caller's environment reaches the program (LD_PRELOAD, PAGER, SYSTEMD_*),
    and it starts in /, not in the caller's directory."""
    script = (
        f"#!{sys.executable}\nimport json, os\n"
        "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))\n"
    )
    fake_programs(tmp_path / "system", script)
    monkeypatch.setattr("sysctl_advisor.sources.system_tools.SYSTEM_PATH", str(tmp_path / "system"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'system'}:{os.environ.get('PATH', '')}")
    monkeypatch.setenv("SYSTEMD_PAGER", "sh -c reboot")
    monkeypatch.setenv("SYSCTL_ADVISOR_CALLER", "1")
    monkeypatch.chdir(tmp_path)
    for output in (kernel_log_input.journal_output(None), kernel_log_input.dmesg_output()):
        assert output is not None
        seen = json.loads(output)
        assert seen["env"] == {"PATH": str(tmp_path / "system"), "LC_ALL": "C"}
        assert seen["cwd"] == "/"
