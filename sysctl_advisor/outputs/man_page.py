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
    lines += [
        ".SH SEE ALSO",
        ", ".join(
            f"{_bold(page)}({section})"
            for page, section in (("sysctl", 8), ("sysctl.d", 5), ("systemd-sysctl", 8))
        ),
    ]
    return "\n".join(lines) + "\n"
