"""The kernel `check` judges for when none is named: the running kernel for the host's own
sysctl files, else the newest the catalog verified; either is said in the report's first line
on standard error, and a key the target kernel lacks is an error (`sysctl -p` exits 1 on it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.commands import check_settings
from tests.conftest import Cli, assert_one_line_error

RECYCLE = "net.ipv4.tcp_tw_recycle = 0\n"  # removed in 4.12
RUNNING = "5.15.0-91-generic"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A host root (its etc/sysctl.d holding a removed key) running Linux 5.15."""
    monkeypatch.setattr(check_settings, "HOST_ROOT", tmp_path, raising=False)
    monkeypatch.setattr(check_settings, "running_release", lambda: RUNNING)
    conf = tmp_path / "etc" / "sysctl.d" / "10-old.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(RECYCLE)
    (tmp_path / "etc" / "sysctl.conf").write_text(RECYCLE)
    return tmp_path


@pytest.mark.parametrize(
    "given",
    ["etc/sysctl.d/10-old.conf", "etc/sysctl.d", "etc/sysctl.conf", "etc", "."],
)
def test_the_hosts_own_files_are_judged_for_the_running_kernel(
    cli: Cli, host: Path, given: str
) -> None:
    result = cli("check", host / given)
    first = result.stderr.splitlines()[0]
    assert f"Linux {RUNNING}, the running kernel" in first, result.stderr
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "[error]" in result.stdout and "(check.key-not-in-kernel)" in result.stdout


def test_the_configurations_kernel_decides_over_the_running_one(cli: Cli, host: Path) -> None:
    """In CI the repository's configuration names the fleet's kernel: 4.9 has the key."""
    (host / "etc" / ".sysctl-advisor.toml").write_text('kernel = "4.9"\n')
    result = cli("check", host / "etc" / "sysctl.d")
    assert "running kernel" not in result.stderr and "target kernel" not in result.stderr
    assert "check.key-not-in-kernel" not in result.stdout, result.stdout


def test_the_command_lines_kernel_decides(cli: Cli, host: Path) -> None:
    result = cli("check", host / "etc" / "sysctl.d", "--kernel", "4.9")
    assert "note:" not in result.stderr and "check.key-not-in-kernel" not in result.stdout


def test_other_files_say_which_era_they_are_held_to(cli: Cli, host: Path, tmp_path: Path) -> None:
    """A repository's file is not this host's: the newest verified kernel's ranges, and no
    key called missing, which the first line says."""
    other = tmp_path / "repo"
    other.mkdir()
    (other / "a.conf").write_text(RECYCLE)
    result = cli("check", other / "a.conf")
    first = result.stderr.splitlines()[0]
    assert "no target kernel" in first and "newest the catalog verified" in first, first
    assert "check.key-not-in-kernel" not in result.stdout


def test_a_running_release_not_a_version_is_no_target(
    cli: Cli, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check_settings, "running_release", lambda: "not-a-release")
    result = cli("check", host / "etc" / "sysctl.d")
    assert "no target kernel" in result.stderr.splitlines()[0]
    assert "check.key-not-in-kernel" not in result.stdout


def test_a_refusal_is_still_one_line(cli: Cli, host: Path) -> None:
    """The note belongs to a report: an input refused gets its one line alone."""
    (host / "baseline.json").write_text("not json")
    result = cli("check", host / "etc" / "sysctl.d", "--baseline", host / "baseline.json")
    assert_one_line_error(result.exit_code, result.stderr, "baseline.json")
