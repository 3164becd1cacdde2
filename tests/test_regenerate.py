"""Every generated file is what its one function makes (`python -m tests.regenerate`), and the
tool names each stale file under --check and rewrites it otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import golden_files, regenerate


@pytest.mark.parametrize("group", list(regenerate.GROUPS))
def test_every_generated_file_is_current(group: str) -> None:
    stale = regenerate.stale(group)
    assert not stale, f"regenerate: {regenerate.REGENERATE} ({'; '.join(stale)})"


def test_check_names_each_stale_file_and_writing_mends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    made, kept = tmp_path / "made.md", tmp_path / "kept.md"
    made.write_text("old\n")
    kept.write_text("same\n")
    group = {made: regenerate._whole(lambda: "new\n"), kept: regenerate._whole(lambda: "same\n")}
    monkeypatch.setattr(regenerate, "GROUPS", {"test": lambda: group})
    monkeypatch.setattr(regenerate, "goldens", lambda check: [])
    assert regenerate.main(["--check"]) == 1
    assert capsys.readouterr().err == f"{made}: stale\n"
    assert made.read_text() == "old\n"  # --check changes nothing
    assert regenerate.main([]) == 0
    assert made.read_text() == "new\n"
    assert regenerate.main(["--check"]) == 0
    assert regenerate.main(["--bogus"]) == 2


def test_a_stale_golden_file_is_reported_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, golden = tmp_path / "report", tmp_path / "x.conf"
    golden.write_text("old\n")
    monkeypatch.setenv(golden_files.REPORT, str(report))
    with pytest.raises(AssertionError):
        golden_files.assert_golden(golden, "new\n")
    assert report.read_text() == f"{golden}\n"
    golden_files.assert_golden(tmp_path / "x.conf", "old\n")  # a current one is not reported
    assert report.read_text() == f"{golden}\n"


@pytest.mark.skipif(bool(os.environ.get(golden_files.REPORT)), reason="inside a regenerate run")
def test_the_golden_tests_are_found_and_current() -> None:
    found = {path.name for path in regenerate.golden_tests()}
    assert {"test_golden.py", "test_undo_golden.py", "test_node_daemonset.py"} <= found
    assert regenerate.goldens(check=True) == []


def test_the_worked_example_is_cut_from_the_golden_file() -> None:
    excerpt = regenerate.worked_example(regenerate.WORKED_EXAMPLE.read_text())
    lines = excerpt.split("\n")
    assert lines[0].startswith("# sysctl.conf for dcache-07")
    assert "net.ipv4.tcp_rmem = 4096 87380 1048576" in lines
    assert lines.count("# ...") == 3 and lines[-1] == "# ..."
    assert f"```\n{excerpt}\n```\n" in regenerate.README.read_text()
