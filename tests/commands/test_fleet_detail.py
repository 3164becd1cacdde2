"""`fleet --detail`: every host's conf at the level asked for, the same option `recommend`
takes (one declaration in cli_options.py), and its rebuild line says it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import TESTS, Cli

TREE = TESTS / "fixtures" / "ansible" / "tree"


@pytest.mark.parametrize("detail", ["normal", "brief", "none"])
def test_each_host_file_is_written_at_the_level_asked_for(
    cli: Cli, tmp_path: Path, detail: str
) -> None:
    out = tmp_path / "out"
    args = ["fleet", "--ansible-facts", str(TREE), "-p", "frontend-proxy", "--out", str(out)]
    result = cli(*args, "--detail", detail)
    assert result.exit_code == 1, result.stderr  # the tree's three broken hosts are skipped
    confs = sorted((out / "host_files").glob("*.conf"))
    assert len(confs) == 3
    for conf in confs:
        text = conf.read_text()
        rebuild = next(line for line in text.splitlines() if line.startswith("# rebuild:"))
        assert ("--detail" in rebuild) == (detail != "normal")
        body = text.split(rebuild, 1)[1]
        assert ("# References:" in body) == (detail == "normal")
        comments = [line for line in body.splitlines() if line.startswith("#")]
        settings = [line for line in body.splitlines() if line and not line.startswith("#")]
        if detail == "none":
            assert comments == [] and settings
        if detail == "brief":
            assert len(comments) >= len(settings) > 0


def test_an_unknown_level_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the installed command runs: the fast path's reader and typer's both."""
    from sysctl_advisor import cli, entry

    args = ["fleet", "--ansible-facts", str(TREE), "-p", "base", "--out", str(tmp_path / "o")]
    for main in (entry.main, cli.main):
        monkeypatch.setattr(sys, "argv", ["sysctl-advisor", *args, "--detail", "terse"])
        with pytest.raises(SystemExit) as stopped:
            main()
        err = capsys.readouterr().err
        assert stopped.value.code == 2 and len(err.strip().splitlines()) == 1, err
        assert "terse" in err and "Traceback" not in err
