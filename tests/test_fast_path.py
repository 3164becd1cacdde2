"""sysctl_advisor.fast_path: the command lines it accepts, it reads exactly as the typer CLI
does (the same options to the same command function), and it leaves every other one to typer.
Both are built from one table (cli_options).

The comparison uses the CLI's own click command (`make_context`) to parse, so any command line
hypothesis builds from the options' vocabulary is checked against the parser it stands in for.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from sysctl_advisor.cli import app
from sysctl_advisor.cli_options import Command
from sysctl_advisor.fast_path import parse
from tests.conftest import EXAMPLES, Cli

COMMAND = typer.main.get_command(app)
FACTS = str(EXAMPLES / "dcache-32bit.yaml")


def _typer_reads(argv: list[str]) -> tuple[str, bool, dict[str, Any]] | None:
    """What the typer CLI reads from argv (None where it refuses it)."""
    import click

    quiet = False
    args = list(argv)
    while args and args[0] in ("-q", "--quiet"):
        quiet, args = True, args[1:]
    if not args:
        return None
    sub = COMMAND.commands.get(args[0])  # type: ignore[attr-defined]
    if sub is None:
        return None
    try:
        ctx = sub.make_context(args[0], args[1:])
    except (click.exceptions.Exit, click.UsageError, click.BadParameter):
        return None
    params = {}
    quiet = bool(ctx.params.pop("quiet")) or quiet  # -q after the command: its own flag
    for name, value in ctx.params.items():
        if isinstance(value, Enum):
            value = value.value
        if isinstance(value, tuple | list):
            value = list(value) or None
        params[name] = value
    return args[0], quiet, params


def _same(
    fast: tuple[Command, bool, dict[str, Any]], slow: tuple[str, bool, dict[str, Any]]
) -> None:
    command, quiet, options = fast
    assert (command.name, quiet) == slow[:2]
    expected = {k: v for k, v in slow[2].items() if v not in (None, False) or k in options}
    got = {k: v for k, v in options.items() if v not in (None, False) or k in expected}
    assert got == expected


ACCEPTED = [
    ["recommend", "--facts", FACTS, "--profile", "gridftp"],
    ["-q", "recommend", "-p", "gridftp", "--facts", FACTS, "-s", "rtt_ms=50", "--set", "streams=4"],
    ["recommend", "-p", "c1m-server", "-f", "kubernetes", "--kubernetes-version", "1.29"],
    ["recommend", "-p", "frontend-proxy", "--facts", FACTS, "-p", "c1m-server"],
    ["recommend", "-p", "gridftp", "--rules-dir", "r1", "--rules-dir", "r2", "-o", "-"],
    ["diff", "--profile", "base", "--current", "x.conf", "--format", "json"],
    ["recommend", "-p", "gridftp", "--facts", FACTS, "--undo", "-f", "json"],
    ["diff", "-p", "base", "--undo", "--current", "x.conf"],
    ["check", "a.conf", "--format", "sarif", "b", "--fail-on", "warning", "--whole-directory"],
    ["check", "--kernel", "5.15", "-f", "markdown", "x.conf", "-p", "base", "--facts", FACTS],
    ["check", "x.conf", "-p", "gridftp", "--facts", FACTS, "-s", "rtt_ms=200", "--set", "x=4"],
    ["check", "x.conf", "-q"],
    ["check", "-q", "x.conf", "--quiet"],
    ["-q", "diff", "-p", "base", "--quiet", "-f", "json"],
    ["--quiet", "recommend", "-p", "gridftp", "-q", "-q"],
    ["check"],  # no path: the command says what to give (or --show-config needs none)
    ["check", "--show-config"],
    ["check", "a.conf", "--baseline", "b.json", "--config", "c.toml"],
]
REFUSED = [
    ["recommend", "--help"],
    ["recommend", "-p", "gridftp", "--format=json"],
    ["recommend", "-p", "gridftp", "-fjson"],
    ["recommend", "-p", "gridftp", "-f", "xml"],
    ["recommend", "-p", "gridftp", "-f", "conf", "-f", "json"],
    ["recommend", "--facts", FACTS],  # no profile
    ["recommend", "-p", ""],
    ["recommend", "-p", "gridftp", "--", "x"],
    ["recommend", "-p", "gridftp", "extra"],
    ["recommend", "-p", "-x"],
    ["check", "a.conf", "--fail-on", "sometimes"],
    ["facts"],
    ["-V"],
    [],
    ["--install-completion"],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=lambda a: " ".join(a)[:40])
def test_accepted_command_lines_read_as_typer_reads_them(argv: list[str]) -> None:
    fast = parse(argv)
    slow = _typer_reads(argv)
    assert fast is not None and slow is not None
    _same(fast, slow)


@pytest.mark.parametrize("argv", REFUSED, ids=lambda a: " ".join(a)[:40] or "(none)")
def test_anything_else_is_typers(argv: list[str]) -> None:
    assert parse(argv) is None


VOCABULARY = st.sampled_from(
    [
        "recommend", "diff", "check", "-q", "--profile", "-p", "--facts", "--set", "-s",
        "--format", "-f", "conf", "json", "markdown", "sarif", "text", "kubernetes", "--output",
        "-o", "-", "--rules-dir", "--profiles-dir", "--nginx-conf", "--current", "--kernel",
        "--fail-on", "error", "info", "--whole-directory", "--kubernetes-version", "1.30",
        "gridftp", "a.conf", "x=1", "--help", "--", "", "-x", "--format=json", "--quiet",
        "-q",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(argv=st.lists(VOCABULARY, max_size=9))
def test_whatever_the_fast_path_accepts_typer_reads_the_same(argv: list[str]) -> None:
    fast = parse(argv)
    if fast is None:
        return
    slow = _typer_reads(argv)
    assert slow is not None, argv
    _same(fast, slow)


CASES = [
    ["recommend", "--facts", FACTS, "--profile", "gridftp"],
    ["recommend", "--facts", FACTS, "-p", "gridftp", "-f", "json", "-s", "rtt_ms=80"],
    ["recommend", "--facts", FACTS, "-p", "gridftp", "-s", "nope=1"],  # exit 2
    ["recommend", "--facts", "/nonexistent.yaml", "-p", "gridftp"],
    ["diff", "--facts", FACTS, "-p", "gridftp", "--format", "markdown"],
    ["check", str(EXAMPLES.parent / "tests" / "fixtures" / "check" / "annotated.conf")],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a[:1] + a[-2:]))
def test_the_same_output_and_exit_code_either_way(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sysctl_advisor import cli, entry

    def run(main: Any) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["sysctl-advisor", *argv])
        with pytest.raises(SystemExit) as stopped:
            main()
        out = capsys.readouterr()
        return int(stopped.value.code or 0), out.out, out.err

    assert parse(argv) is not None
    assert run(entry.main) == run(cli.main)


def test_the_entry_point_does_not_import_typer() -> None:
    import subprocess

    code = (
        "import sys, runpy\n"
        f"sys.argv = ['sysctl-advisor', 'recommend', '--facts', {FACTS!r}, '-p', 'gridftp']\n"
        "try:\n    runpy.run_module('sysctl_advisor', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('typer', 'click', 'rich') or m == 'importlib.metadata'), file=sys.stderr)\n"
        "print(sorted(m for m in sys.modules if m.startswith('sysctl_advisor.commands.')), "
        "file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(FACTS).parent
    )
    assert result.stderr.strip().splitlines()[-2] == "[]"
    # only the command the run calls (and what every command shares) is loaded
    assert result.stderr.strip().splitlines()[-1] == str(
        ["sysctl_advisor.commands.common", "sysctl_advisor.commands.recommend"]
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["-q", "check", "{missing}"],
        ["check", "{missing}", "-q"],
        ["--quiet", "recommend", "-p", "gridftp", "--facts", "{missing}"],
        ["recommend", "-p", "gridftp", "--facts", "{missing}", "--quiet"],
        ["diff", "-q", "-p", "nope", "--facts", FACTS],
        ["facts", "--root", "{missing}", "-q"],  # typer's alone: not a fast command
        ["check", "-q", "--usage-error"],  # typer's, before the command runs: one line too
        ["-q", "check", "-q", "-f", "nope", "x.conf", "--usage-error"],
    ],
    ids=lambda a: " ".join(a)[:40],
)
def test_quiet_before_or_after_the_command_never_hides_an_error(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """-q drops notes and progress, never the one line that says why the run failed: read by
    the fast path and by typer, wherever it stands."""
    from sysctl_advisor import cli, entry
    from sysctl_advisor.commands.common import Quiet

    argv = [a.replace("{missing}", str(tmp_path / "missing")) for a in argv]
    runs = "--usage-error" not in argv  # else the command never starts to be quiet
    argv = [a for a in argv if a != "--usage-error"]
    for main in (entry.main, cli.main):
        monkeypatch.setattr(sys, "argv", ["sysctl-advisor", *argv])
        monkeypatch.setattr(Quiet, "on", False)  # restored after the test
        with pytest.raises(SystemExit) as stopped:
            main()
        err = capsys.readouterr().err
        assert Quiet.on or not runs, main
        assert stopped.value.code == 2 and len(err.strip().splitlines()) == 1, err
        assert err.startswith("sysctl-advisor: error: "), err


def test_quiet_after_the_command_drops_notes(cli: Cli, tmp_path: Path) -> None:
    """`fleet ... -q` is `-q fleet ...`: the same files, no lines about skipped hosts."""
    tree = str(Path(__file__).parent / "fixtures" / "ansible" / "tree")
    fleet = ["fleet", "--ansible-facts", tree, "-p", "base", "--out"]
    runs = {
        "loud": cli(*fleet, str(tmp_path / "a")),
        "after": cli(*fleet, str(tmp_path / "b"), "-q"),
    }
    assert runs["loud"].exit_code == runs["after"].exit_code
    assert "hosts written to" in runs["loud"].stderr
    assert runs["after"].stderr == ""
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        p.name for p in (tmp_path / "b").iterdir()
    )


def test_no_command_takes_quiet_for_its_own() -> None:
    """-q is the root's flag, offered after every command's name too: no command may declare
    an option of the same name (one declaration, QUIET in cli_options)."""
    from sysctl_advisor.cli_options import COMMANDS, QUIET

    for command in COMMANDS:
        names = {n for option in command.options.values() for n in option.names}
        assert not names & set(QUIET.names), command.name
        assert "quiet" not in command.options, command.name
