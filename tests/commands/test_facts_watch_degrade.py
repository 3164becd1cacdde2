"""`facts --watch` degrades, never fails: without root, without cgroup v2, on a kernel before
5.2, or where the kernel refuses the program, the facts say `provenance: unavailable (reason)`
in one line, stderr says it once, and every other fact is written as without --watch."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.sources import sysctl_provenance, sysctl_record, sysctl_watch
from sysctl_advisor.sources.bpf import syscall
from sysctl_advisor.sources.mounts import own_cgroup
from tests.conftest import Cli, assert_one_line_error


def _watched(cli: Cli, *more: str) -> tuple[dict[str, object], str]:
    result = cli("facts", "--watch", "1s", *more)
    assert result.exit_code == 0, result.stderr
    facts = yaml.safe_load(result.stdout)
    assert facts["memory"]["total"]  # the rest of the facts are there
    writers = facts["writers"]
    assert set(writers) <= {"provenance", "dropped", "writes"}
    assert not writers.get("writes")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and writers["provenance"] in lines[0], result.stderr
    return writers, lines[0]


def test_without_root(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysctl_provenance.os, "geteuid", lambda: 1000)
    writers, _ = _watched(cli)
    assert writers["provenance"].startswith("unavailable (not root")


def test_without_cgroup_v2(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysctl_provenance.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sysctl_watch, "cgroup2_mount", lambda *_: None)
    writers, _ = _watched(cli)
    assert writers["provenance"] == "unavailable (no cgroup v2 hierarchy is mounted)"


def test_on_a_kernel_before_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysctl_provenance.os, "geteuid", lambda: 0)
    reason = sysctl_provenance.why_not("4.19.0-27-amd64")
    assert reason is not None and "5.2" in reason and "4.19.0-27-amd64" in reason


@pytest.mark.skipif(sysctl_watch.cgroup2_mount() is None, reason="needs a cgroup v2 hierarchy")
def test_where_the_kernel_refuses_the_program(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lockdown, a seccomp filter or an LSM refusing bpf(2): EPERM at load."""

    def refused(*_: object, **__: object) -> int:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(sysctl_provenance.os, "geteuid", lambda: 0)
    monkeypatch.setattr(syscall, "map_create", refused)
    monkeypatch.setattr(syscall, "prog_load", refused)
    writers, line = _watched(cli)
    assert writers["provenance"].startswith("unavailable (the sysctl hook cannot be loaded")
    assert "Operation not permitted" in line


def test_a_cgroup_outside_the_hierarchy_is_bad_input(cli: Cli, tmp_path: Path) -> None:
    if sysctl_watch.cgroup2_mount() is None or sysctl_provenance.why_not("6.1") is not None:
        pytest.skip("needs root and a cgroup v2 hierarchy")
    result = cli("facts", "--watch", "1s", "--cgroup", str(tmp_path))
    assert_one_line_error(result.exit_code, result.stderr, "--cgroup", "cgroup v2")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--watch", "0s"), "--watch"),
        (("--watch", "2d"), "--watch"),
        (("--watch", "soon"), "--watch"),
        (("--cgroup", "/sys/fs/cgroup"), "--cgroup"),
        (("--watch", "5s", "--root", "."), "--root"),
        (("--install", "--uninstall"), "not both"),
        (("--yes",), "--install or --uninstall"),
    ],
)
def test_bad_options_are_one_line(cli: Cli, args: tuple[str, ...], fragment: str) -> None:
    result = cli("facts", *args)
    assert_one_line_error(result.exit_code, result.stderr, fragment)


@pytest.mark.parametrize(
    ("plan", "shown"),
    [
        ([sysctl_record.NOT_INSTALLED], [sysctl_record.NOT_INSTALLED]),
        (["would remove /sys/fs/bpf/sysctl-advisor/link"], None),
    ],
)
def test_uninstall_shows_what_it_would_remove_and_that_it_did_nothing(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, plan: list[str], shown: list[str] | None
) -> None:
    monkeypatch.setattr(sysctl_record, "uninstall_plan", lambda _: plan)
    monkeypatch.setattr(sysctl_record, "uninstall", lambda _: pytest.fail("removed without --yes"))
    result = cli("facts", "--uninstall")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == (shown or [*plan, "(nothing done: --yes removes it)"])


def test_a_cgroup_named_with_an_escape_is_watched_and_shown_escaped(cli: Cli) -> None:
    """The path given goes into the provenance line escaped: the watch's writes are kept."""
    from tests.sources.test_sysctl_watch import _problem

    if (problem := _problem()) is not None:
        pytest.skip(problem)
    own = own_cgroup()
    assert own is not None
    odd = own / f"sysctl-advisor-test-\x1b[31m{os.getpid()}"
    odd.mkdir()
    try:
        result = cli("facts", "--watch", "1s", "--cgroup", str(odd))
    finally:
        odd.rmdir()
    assert result.exit_code == 0, result.stderr
    provenance = yaml.safe_load(result.stdout)["writers"]["provenance"]
    assert provenance == f"watch 1s of {own}/sysctl-advisor-test-\\x1b[31m{os.getpid()}"
