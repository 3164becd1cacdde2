"""The common one-shot command lines without typer, read from the same table as the typer CLI
(cli_options): `recommend`, `diff` and `check` (the commands marked `fast`) with their options,
calling the same command functions.

typer (with its click and rich) costs about as much to import and to build its parameters as
the whole run of a command. Anything this reader is not sure of — help, completion, a version
flag, an unknown or repeated option, a bad choice, an option glued to its value, `--`, an
empty value — returns None and the typer CLI reads the command line from the start, so every
message, error and exit code of the CLI stays typer's. What it accepts it hands to the command
exactly as typer would: paths as Path, repeatable options as lists, absent options as their
defaults; `-q` before the command or anywhere after it, as typer reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sysctl_advisor.cli_options import QUIET, REQUIRED, Command, Option, command


def parse(argv: list[str]) -> tuple[Command, bool, dict[str, Any]] | None:
    """(command, quiet, options) for a command line this reader is sure of, else None."""
    quiet = False
    args = list(argv)
    while args and args[0] in QUIET.names:  # -q before the command, and after it (below)
        quiet = True
        args.pop(0)
    found = command(args[0]) if args else None
    if found is None or not found.fast:
        return None
    by_name = {name: (dest, o) for dest, o in found.options.items() for name in o.names}
    arguments = [(dest, o) for dest, o in found.options.items() if o.argument]
    values: dict[str, Any] = {}
    positional: list[str] = []
    args = args[1:]
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("-") or token == "-":
            if not arguments or not token:
                return None
            positional.append(token)
            i += 1
            continue
        if token in QUIET.names:
            quiet = True
            i += 1
            continue
        if token not in by_name:
            return None  # --help, --opt=value, -fjson, --, an unknown option: typer's job
        dest, option = by_name[token]
        if option.type is bool:
            if dest in values:
                return None
            values[dest] = True
            i += 1
            continue
        if i + 1 >= len(args):
            return None
        value = args[i + 1]
        if not value or (value.startswith("-") and value != "-"):
            return None  # click may read it otherwise (an option, a negative number)
        i += 2
        if option.many:
            values.setdefault(dest, []).append(_typed(option, value))
            continue
        if dest in values or (option.choices and value not in option.choices):
            return None  # repeated (typer decides which wins), or not a choice
        if option.type not in (str, Path):
            return None  # numbers: typer's conversion and bounds
        values[dest] = _typed(option, value)
    if positional:
        if len(arguments) != 1 or not arguments[0][1].many:
            return None
        values[arguments[0][0]] = [_typed(arguments[0][1], p) for p in positional]
    for dest, option in found.options.items():
        if dest not in values:
            if option.default is REQUIRED:
                return None
            values[dest] = option.default
    return found, quiet, values


def _typed(option: Option, value: str) -> Any:
    return Path(value) if option.type is Path else value
