"""The common one-shot invocations without typer: an exact parser for `recommend`, `diff` and
`check` with the options they take, calling the same command functions as the typer CLI.

typer (with click and rich) costs about as much to import and to build its parameter adapters
as the whole run of a command. Anything this parser is not sure of — help, completion, a
version flag, an unknown or repeated option, a bad choice, an option glued to its value, `--`,
an empty value — returns None and the typer CLI handles the command line from the start, so
every message, error and exit code of the CLI stays typer's. What the parser accepts it hands
to the command exactly as typer would: paths as Path, repeatable options as lists, absent
options as None.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FORMATS = {
    "recommend": ("conf", "json", "markdown", "tuned", "ansible", "kubernetes"),
    "diff": ("text", "markdown", "json"),
    "check": ("text", "json", "github", "sarif", "markdown"),
}
_SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class _Option:
    dest: str
    kind: str  # "str", "path", "strs", "paths", "flag", "format", "severity"


_COMMON = {"--output": _Option("output", "path"), "-o": _Option("output", "path")}
_PLAN = {
    "--profile": _Option("profile", "str"),
    "-p": _Option("profile", "str"),
    "--facts": _Option("facts", "path"),
    "--set": _Option("set_", "strs"),
    "-s": _Option("set_", "strs"),
    "--format": _Option("fmt", "format"),
    "-f": _Option("fmt", "format"),
    "--nginx-conf": _Option("nginx_conf", "path"),
    "--rules-dir": _Option("rules_dir", "paths"),
    "--profiles-dir": _Option("profiles_dir", "paths"),
    **_COMMON,
}
_OPTIONS: dict[str, dict[str, _Option]] = {
    "recommend": {**_PLAN, "--kubernetes-version": _Option("kubernetes_version", "str")},
    "diff": {**_PLAN, "--current": _Option("current", "path")},
    "check": {
        "--facts": _Option("facts", "path"),
        "--kernel": _Option("kernel", "str"),
        "--profile": _Option("profile", "str"),
        "-p": _Option("profile", "str"),
        "--format": _Option("fmt", "format"),
        "-f": _Option("fmt", "format"),
        "--fail-on": _Option("fail_on", "severity"),
        "--whole-directory": _Option("whole_directory", "flag"),
        **_COMMON,
    },
}
_DEFAULTS: dict[str, dict[str, Any]] = {
    "recommend": {"fmt": "conf"},
    "diff": {"fmt": "text"},
    "check": {"fmt": "text", "fail_on": "error", "whole_directory": False},
}


def parse(argv: list[str]) -> tuple[str, bool, dict[str, Any]] | None:
    """(command, quiet, options) for a command line this parser is sure of, else None."""
    quiet = False
    args = list(argv)
    while args and args[0] in ("-q", "--quiet"):
        quiet = True
        args.pop(0)
    if not args or args[0] not in _OPTIONS:
        return None
    command, args = args[0], args[1:]
    table = _OPTIONS[command]
    values: dict[str, Any] = {}
    paths: list[Path] = []
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("-") or token == "-":
            if command != "check" or not token:
                return None
            paths.append(Path(token))
            i += 1
            continue
        option = table.get(token)
        if option is None:
            return None  # --help, --opt=value, -fjson, --, an unknown option: typer's job
        if option.kind == "flag":
            if option.dest in values:
                return None
            values[option.dest] = True
            i += 1
            continue
        if i + 1 >= len(args):
            return None
        value = args[i + 1]
        if not value or (value.startswith("-") and value != "-"):
            return None  # click may read it otherwise (an option, a negative number)
        i += 2
        if option.kind in ("strs", "paths"):
            item: Any = Path(value) if option.kind == "paths" else value
            values.setdefault(option.dest, []).append(item)
            continue
        if option.dest in values:
            return None  # repeated: typer decides which wins
        if option.kind == "format" and value not in _FORMATS[command]:
            return None
        if option.kind == "severity" and value not in _SEVERITIES:
            return None
        values[option.dest] = Path(value) if option.kind == "path" else value
    if command == "check":
        if not paths:
            return None
        values["paths"] = paths
    elif "profile" not in values:
        return None
    return command, quiet, {**_DEFAULTS[command], **values}


# Option names (as typer's parameters are named in cli.py) to the command functions' names.
_RENAMED = {"set_": "settings"}


def run(command: str, options: dict[str, Any]) -> int:
    """The command, as the typer CLI calls it (the same function, the same arguments)."""
    from sysctl_advisor.commands.common import guarded

    kwargs: dict[str, Any] = {_RENAMED.get(k, k): v for k, v in options.items()}
    if command == "recommend":
        from sysctl_advisor.commands.recommend import recommend

        return guarded(lambda: recommend(**kwargs))
    if command == "diff":
        from sysctl_advisor.commands.diff import diff

        return guarded(lambda: diff(**kwargs))
    from sysctl_advisor.commands.check import check

    return guarded(lambda: check(**kwargs))
