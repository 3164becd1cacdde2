"""The manual page (roff, man macros) of the command line: every command, its help and its
options with their names, values, choices, bounds and defaults, from the table the CLI is built
from (cli_options, handed in by cli.man_page). No date: the same table gives the same page.

Help text is the project's own, but is escaped as any text would be: a line never starts with
a control character, a backslash is written as a character, anything outside printable ASCII
as its code point (a control character or a bidi override is dropped), and an option's dashes
are minus signs, so that an option copied from the page works.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from sysctl_advisor import __version__
from sysctl_advisor.model.documents import DEFAULT_MAX_INPUT


class ManOption(Protocol):
    """An option of the table, as the page reads it (cli_options.Option)."""

    @property
    def names(self) -> tuple[str, ...]: ...
    @property
    def help(self) -> str: ...
    @property
    def type(self) -> type[Any]: ...
    @property
    def default(self) -> Any: ...
    @property
    def metavar(self) -> str | None: ...
    @property
    def choices(self) -> tuple[str, ...]: ...
    @property
    def many(self) -> bool: ...
    @property
    def min(self) -> float | None: ...
    @property
    def max(self) -> float | None: ...
    @property
    def argument(self) -> bool: ...


class ManCommand(Protocol):
    """A command of the table (cli_options.Command)."""

    @property
    def name(self) -> str: ...
    @property
    def help(self) -> str: ...
    @property
    def options(self) -> Mapping[str, ManOption]: ...


MAN_PAGE = Path(__file__).parent.parent / "man" / "sysctl-advisor.1"
_TYPE_NAMES = {str: "TEXT", Path: "PATH", int: "INTEGER", float: "NUMBER"}
_OPTION_WORD = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
_CODE = re.compile(r"`([^`]+)`")


def _roff_text(text: str, code: bool = False) -> str:
    """Text for a roff text line: the escape character written as a character, every
    character outside printable ASCII as its code point (no control character reaches the
    formatter, and the page reads the same in any input encoding), the dashes of an option (of
    all `code`) as minus signs, so that `--profile` copied from the page still works."""
    out = []
    for char in re.sub(r"\s+", " ", text):
        if char == "\\":
            out.append("\\(rs")
        elif char == "-" and code:
            out.append("\\-")
        elif " " <= char <= "~":
            out.append(char)
        elif char.isprintable():
            out.append(f"\\[u{ord(char):04X}]")
    line = "".join(out)
    return line if code else _OPTION_WORD.sub(lambda m: m.group(0).replace("-", "\\-"), line)


def _bold(text: str) -> str:
    return f"\\fB{_roff_text(text, code=True)}\\fR"


def _italic(text: str) -> str:
    return f"\\fI{_roff_text(text, code=True)}\\fR"


def _line(text: str) -> str:
    """A text line, never read as a request: one starting with `.` or `'` is made plain."""
    return "\\&" + text if text.startswith((".", "'")) else text


def _prose(text: str) -> str:
    """Help text on one line: `code` in bold, the rest as written."""
    parts = _CODE.split(text)
    return "".join(_bold(p) if i % 2 else _roff_text(p) for i, p in enumerate(parts)).strip()


def _paragraphs(text: str) -> list[str]:
    """A help text's paragraphs (blank-line separated), each a roff paragraph."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        out += [".PP", _line(_prose(paragraph))]
    return out[1:]


def _metavar(option: ManOption) -> str:
    if option.type is bool:
        return ""
    if option.choices:
        return "|".join(_bold(choice) for choice in option.choices)
    return _italic(option.metavar or _TYPE_NAMES.get(option.type, "VALUE"))


def _default(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# What the exit code says, for every command.
EXIT_STATUS: tuple[tuple[str, str], ...] = (
    ("0", "Success: for `diff`, no drift; for `check`, nothing at `--fail-on` or worse; for "
     "`fleet`, every host written."),
    ("1", "For `diff`, drift (with `--undo`: the undo changes keys); for `check`, findings at "
     "`--fail-on` or worse; for `fleet`, some hosts skipped."),
    ("2", "Bad input or usage, with one line on standard error naming the file, line or "
     "field; for `fleet`, nothing could be done."),
    ("3", "An internal error, with one line on standard error (`SYSCTL_ADVISOR_DEBUG=1` "
     "shows the traceback)."),
    ("130", "Interrupted."),
)  # fmt: skip
# Every variable the advisor reads (tests/test_man_page.py finds each one the package reads).
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("SYSCTL_ADVISOR_CACHE", "The cache directory, an absolute path; `off`, `0`, `no` or "
     "`false`: no cache."),
    ("XDG_CACHE_HOME", "The caches are in its `sysctl-advisor` directory when it is absolute "
     "and `SYSCTL_ADVISOR_CACHE` is unset."),
    ("SYSCTL_ADVISOR_MAX_INPUT", "The largest input file read, in bytes (default "
     f"{DEFAULT_MAX_INPUT}, at least 1024); knowledge files keep their own bounds."),
    ("SYSCTL_ADVISOR_DOCS_URL", "The https address of the rules reference (`docs/rules.md`) "
     "that `check`'s help links point at, for a fork or a mirror; by default the project's "
     "repository at the installed version's tag."),
    ("SYSCTL_ADVISOR_DEBUG", "When set, an internal error shows its traceback."),
    ("NO_COLOR, FORCE_COLOR, TERM", "`check`'s text in colour: never with `NO_COLOR` or "
     "`TERM=dumb`, always with `FORCE_COLOR`, else on a terminal."),
    ("COLUMNS", "The width of `diff`'s text table (100 when unset and not a terminal)."),
)  # fmt: skip
FILES: tuple[tuple[str, str], ...] = (
    (".sysctl-advisor.toml", "`check`'s configuration for a repository, looked for from each "
     "file checked upward to the repository's top."),
    ("pyproject.toml", "Its `[tool.sysctl-advisor]` table, when no `.sysctl-advisor.toml` "
     "stands beside it."),
    ("$XDG_CACHE_HOME/sysctl-advisor/private/", "The caches (else under "
     "`~/.cache/sysctl-advisor`): compiled expressions, template bytecode, validated knowledge "
     "files, facts files, configurations and baselines; `sysctl-advisor cache` lists them, "
     "`sysctl-advisor cache --clear` removes them."),
)  # fmt: skip
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Collect this host's facts, then recommend for a reverse proxy:",
     "sysctl-advisor facts -o host.yaml"),
    ("", "sysctl-advisor recommend --facts host.yaml -p frontend-proxy -o 90-tuning.conf"),
    ("How far the values in force are from the recommendation:",
     "sysctl-advisor diff --facts host.yaml -p frontend-proxy"),
    ("Lint a sysctl.d directory for code scanning:",
     "sysctl-advisor check etc/sysctl.d -f sarif -o check.sarif"),
    ("Why a key gets its value:", "sysctl-advisor explain net.core.somaxconn"),
)  # fmt: skip


def _tagged(entries: Sequence[tuple[str, str]]) -> list[str]:
    lines: list[str] = []
    for tag, text in entries:
        lines += [
            ".TP",
            _line(", ".join(_bold(word) for word in tag.split(", "))),
            _line(_prose(text)),
        ]
    return lines


def _examples() -> list[str]:
    lines: list[str] = []
    for said, command in EXAMPLES:
        if said:
            lines += [".PP", _line(_prose(said))]
        lines += [".RS", ".nf", _line(_bold(command)), ".fi", ".RE"]
    return lines


def _option_entry(option: ManOption, required: object) -> list[str]:
    """One option as a tagged paragraph: its names and value, then its help, its bounds, its
    default, and whether it may be given again."""
    value = _metavar(option)
    if option.argument:
        tag = value + (" ..." if option.many else "")
    else:
        tag = f"{', '.join(_bold(name) for name in option.names)} {value}".rstrip()
    said = [_prose(option.help)]
    if option.min is not None and option.max is not None:
        said.append(f"From {_default(option.min)} to {_default(option.max)}.")
    elif option.min is not None:
        said.append(f"At least {_default(option.min)}.")
    if option.default is required:
        said.append("Required.")
    elif option.default is not None and option.default is not False:  # 0 is a default too
        said.append(f"Default: {_bold(_default(option.default))}.")
    if option.many and not option.argument and "repeatable" not in option.help.lower():
        said.append("Repeatable.")
    return [".TP", _line(tag), _line(" ".join(said))]


def _synopsis(command: ManCommand, required: object) -> str:
    words = [_bold(f"sysctl-advisor {command.name}")]
    for option in command.options.values():
        if option.default is required and not option.argument:
            words.append(f"{_bold(option.names[0])} {_metavar(option)}")
    words.append(f"[{_italic('OPTIONS')}]")
    for option in command.options.values():
        if option.argument:
            value = _metavar(option) + (" ..." if option.many else "")
            words.append(value if option.default is required else f"[{value}]")
    return _line(" ".join(words))


def render_man_page(
    commands: Sequence[ManCommand],
    root_options: Sequence[ManOption],
    summary: str,
    required: object,
) -> str:
    """The page: `root_options` come before the command; `required` is the default that
    marks an option that must be given."""
    name = summary.split(", with ")[0].rstrip(".")
    lines = [
        '.\\" Generated from sysctl_advisor/cli_options.py by python -m tests.regenerate',
        f'.TH SYSCTL\\-ADVISOR 1 "" "{_roff_text(f"sysctl-advisor {__version__}", code=True)}" '
        '"User Commands"',
        ".SH NAME",
        _line(f"sysctl\\-advisor \\- {_roff_text(name[:1].lower() + name[1:])}"),
        ".SH SYNOPSIS",
        f"{_bold('sysctl-advisor')} [{_bold('-q')}] {_italic('COMMAND')} [{_italic('OPTIONS')}]",
        ".br",
        f"{_bold('sysctl-advisor')} [{_italic('COMMAND')}] {_bold('--help')}",
        ".SH DESCRIPTION",
        *_paragraphs(summary),
        ".SH OPTIONS",
        f"Before the command (and {_bold('-q')} after it too):",
    ]
    for option in root_options:
        lines += _option_entry(option, required)
    lines += [".SH COMMANDS"]
    for command in commands:
        lines += [f".SS {_roff_text(command.name, code=True)}", _synopsis(command, required)]
        lines += [".PP", *_paragraphs(command.help)]
        for option in command.options.values():
            lines += _option_entry(option, required)
    lines += [".SH EXIT STATUS", *_tagged(EXIT_STATUS)]
    lines += [".SH ENVIRONMENT", *_tagged(ENVIRONMENT)]
    lines += [".SH FILES", *_tagged(FILES)]
    lines += [".SH EXAMPLES", *_examples()]
    lines += [
        ".SH SEE ALSO",
        ", ".join(
            f"{_bold(page)}({section})"
            for page, section in (("sysctl", 8), ("sysctl.d", 5), ("systemd-sysctl", 8))
        ),
    ]
    return "\n".join(lines) + "\n"
