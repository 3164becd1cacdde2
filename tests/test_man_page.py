"""The man page: generated from the command-line table (cli_options) by cli.man_page, committed
as package data, installed under share/man/man1, rendered by groff without a warning; help text
reaches roff escaped, whatever it holds."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sysctl_advisor.cli import man_page
from sysctl_advisor.cli_options import COMMANDS, QUIET, REQUIRED, VERSION, Command, Option
from sysctl_advisor.outputs.man_page import MAN_PAGE
from tests.conftest import ROOT

GROFF = shutil.which("groff")
needs_groff = pytest.mark.skipif(GROFF is None, reason="groff is not installed to render it")


def test_the_page_names_every_command_and_option() -> None:
    page = man_page()
    for command in COMMANDS:
        assert f".SS {command.name}\n" in page
        assert "\\fBsysctl\\-advisor " + command.name.replace("-", "\\-") + "\\fR" in page
        for option in (*command.options.values(), VERSION, QUIET):
            for name in option.names:
                assert "\\fB" + name.replace("-", "\\-") + "\\fR" in page, name
            for choice in option.choices:
                assert f"\\fB{choice}\\fR" in page, choice


def _render(page: str) -> tuple[str, str]:
    """The page as man shows it (groff, man macros, UTF-8), and groff's warnings (all of
    them on)."""
    assert GROFF is not None
    result = subprocess.run(
        [GROFF, "-man", "-Tutf8", "-ww", "-b"],
        input=page.encode("ascii"),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = re.sub(r".\x08", "", result.stdout.decode("utf-8"))  # overstrike: bold, underline
    return text, result.stderr.decode("utf-8", "replace")


@needs_groff
def test_groff_renders_the_page_without_a_warning() -> None:
    text, warnings = _render(man_page())
    assert warnings == ""
    assert "SYSCTL-ADVISOR(1)" in text
    flat = " ".join(text.split()).replace("\u2010 ", "").replace("- ", "-")  # lines joined
    for command in COMMANDS:
        for option in command.options.values():
            for name in option.names:
                assert name in flat, name


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_reads_the_committed_page() -> None:
    shown = subprocess.run(
        ["man", "-l", str(MAN_PAGE)],
        capture_output=True,
        text=True,
        check=False,
        env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin", "MAN_KEEP_STDERR": "1"},
    )
    assert shown.returncode == 0, shown.stderr
    assert "--fail-on" in shown.stdout.replace("\u2010", "-")


# The variables the package reads: os.environ.get("NAME"), os.environ["NAME"], os.getenv("NAME"),
# or the same through a module constant NAME_VARIABLE = "NAME".
_READ = re.compile(r"""(?:environ\.get|environ\[|getenv)\(?\s*(["'][A-Z_]+["']|[A-Z_]+)""")
_CONSTANT = re.compile(r"""^([A-Z_]+) = ["']([A-Z_]+)["']""", re.MULTILINE)


def _variables_read() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "sysctl_advisor").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        constants = dict(_CONSTANT.findall(text))
        for word in _READ.findall(text):
            names.add(word.strip("\"'") if word[0] in "\"'" else constants.get(word, word))
    return names


def _section(page: str, title: str) -> str:
    return page.split(f".SH {title}\n")[1].split("\n.SH ")[0]


def test_the_page_lists_every_variable_the_advisor_reads() -> None:
    """ENVIRONMENT names every SYSCTL_ADVISOR_* variable the package reads, and names none it
    does not: a variable added to the code without a word on the page fails here."""
    read = {name for name in _variables_read() if name.startswith("SYSCTL_ADVISOR_")}
    assert {"SYSCTL_ADVISOR_CACHE", "SYSCTL_ADVISOR_DOCS_URL", "SYSCTL_ADVISOR_DEBUG"} <= read
    environment = _section(man_page(), "ENVIRONMENT").replace("\\-", "-")
    listed = set(re.findall(r"\\fB([A-Z_]+)\\fR", environment))
    assert read <= listed, read - listed
    assert listed <= _variables_read(), listed - _variables_read()


def test_the_page_has_exit_status_files_and_examples() -> None:
    from tests.test_readme_commands import undeclared

    page = man_page()
    sections = re.findall(r"^\.SH (.+)$", page, re.MULTILINE)
    assert sections == [
        "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT",
        "FILES", "EXAMPLES", "SEE ALSO",
    ]  # fmt: skip
    codes = re.findall(r"^\.TP\n\\fB(\d+)\\fR$", _section(page, "EXIT STATUS"), re.MULTILINE)
    assert codes == ["0", "1", "2", "3", "130"]
    files = _section(page, "FILES").replace("\\-", "-")
    for name in (".sysctl-advisor.toml", "pyproject.toml", "[tool.sysctl-advisor]", "cache"):
        assert name in files, name
    examples = re.findall(r"^\\fB(sysctl.+)\\fR$", _section(page, "EXAMPLES"), re.MULTILINE)
    assert len(examples) >= 4
    for example in examples:  # each runs as the command line declares it
        argv = example.replace("\\-", "-").split()
        assert argv[0] == "sysctl-advisor" and undeclared(argv[1:]) is None, example


HOSTILE = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=80
).filter(lambda t: t.strip() != "")
LEADS = st.sampled_from([".", "'", ".TH x", "'br", "\\", '.\\"', "`.SH`", "\\fB", ""])


@st.composite
def tables(draw: st.DrawFn) -> tuple[Command, ...]:
    def text() -> str:
        return draw(LEADS) + draw(HOSTILE)

    option = Option(
        ("--x-" + draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True)),),
        text(),
        default=draw(st.sampled_from([None, REQUIRED, text()])),
        metavar=draw(st.none() | st.just(text())),
        choices=tuple(draw(st.lists(HOSTILE, max_size=3))),
        many=draw(st.booleans()),
    )
    return (Command("x", text(), "x:x", {"x": option, "arg": Option((), text(), many=True)}),)


@settings(max_examples=150, deadline=None)
@given(table=tables(), summary=st.builds(lambda a, b: a + b, LEADS, HOSTILE))
def test_help_text_is_escaped_whatever_it_holds(table: tuple[Command, ...], summary: str) -> None:
    """Every line of the page is a request this generator wrote or plain text: help text
    starting with `.` or `'`, holding backslashes, control or non-ASCII characters never
    becomes a request or an escape of its own."""
    page = man_page(table, summary)
    assert page.isascii()
    requests = {line.split()[0] for line in page.splitlines() if line.startswith((".", "'"))}
    assert requests <= {
        '.\\"',
        ".TH",
        ".SH",
        ".SS",
        ".TP",
        ".PP",
        ".br",
        ".RS",
        ".RE",
        ".nf",
        ".fi",
    }, requests
    for line in page.splitlines():
        assert all(" " <= c <= "~" for c in line), line
        # a backslash only as an escape the generator writes
        escapes = re.findall(r"\\(\(rs|\[u[0-9A-F]{4,6}\]|f[BIR]|-|&|\")", line)
        assert line.count("\\") == len(escapes), line


@needs_groff
@settings(max_examples=60, deadline=None)
@given(table=tables())
def test_groff_shows_hostile_help_as_written(table: tuple[Command, ...]) -> None:
    command = table[0]
    text, warnings = _render(man_page(table, "Summary."))
    assert warnings == ""
    flat = "".join(text.split()).replace("\u2010", "").replace("\u2212", "-")
    words = "".join(command.help.split())
    if words.isascii() and words.isprintable():
        # groff may print a backquote as itself or as a left quote: compare without either
        seen = flat.replace("-", "").replace("`", "").replace("\u2018", "")
        assert words.replace("-", "").replace("`", "") in seen, command.help


def test_the_page_ships_in_the_wheel(tmp_path: Path) -> None:
    """Inside the package (sysctl_advisor/man/) and as data for <prefix>/share/man/man1."""
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "-w", str(tmp_path), "--no-deps",
         "--no-build-isolation", "-q"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if build.returncode != 0 and (
        "hatchling" in build.stderr or "No module named pip" in build.stderr
    ):
        pytest.skip("pip or hatchling is not installed for an offline wheel build")
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("sysctl_advisor-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        data = [n for n in names if n.endswith(".data/data/share/man/man1/sysctl-advisor.1")]
        assert "sysctl_advisor/man/sysctl-advisor.1" in names
        assert len(data) == 1
        assert archive.read(data[0]) == MAN_PAGE.read_bytes()
