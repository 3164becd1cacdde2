"""`check --show-config`: the settings in force, as TOML a team can paste into
.sysctl-advisor.toml, each line with a comment saying where its value came from; with
`--format json`, the same as a JSON document (what the GitHub Action reads).

TOML strings are written here, character by character: printable characters as they are, `"`
and `\\` escaped, anything else (a control or format character, a bidi override) as a
`\\uXXXX`/`\\UXXXXXXXX` escape; a lone surrogate (a file name that is not UTF-8) cannot be
TOML at all, and the line says so as a comment. Floats are TOML's (`inf`, `nan`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Protocol

from sysctl_advisor.model.text_escape import double_quoted


class _Setting(Protocol):
    @property
    def value(self) -> Any: ...
    @property
    def origin(self) -> str: ...


class _NotToml(ValueError):
    pass


def _string(text: str) -> str:
    if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        raise _NotToml(text)  # a lone surrogate: no TOML string holds one
    return double_quoted(text)


def _value(value: Any) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{_value(str(k))} = {_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return _string(str(value))


def _origin(origin: str) -> str:
    try:
        return origin if origin in ("command line", "default") else _value(origin)
    except _NotToml:
        return json.dumps(origin)  # a comment: only its escapes matter


def _line(key: str, setting: _Setting) -> str:
    try:
        return f"{key} = {_value(setting.value)}  # {_origin(setting.origin)}"
    except _NotToml:
        shown = json.dumps(setting.value, default=str)
        return f"# {key}: {shown} is not a TOML string (a name that is not UTF-8)"


def show_settings(
    config: str | None,
    values: Mapping[str, _Setting],
    parameters: Mapping[str, _Setting],
    as_json: bool = False,
) -> str:
    """The settings, one per line: `key = value  # origin`, or `# key: not set`."""
    if as_json:
        document = {
            "configuration": config,
            "settings": {k: {"value": s.value, "origin": s.origin} for k, s in values.items()},
            "set": {k: {"value": s.value, "origin": s.origin} for k, s in parameters.items()},
        }
        return json.dumps(document, indent=2, default=str) + "\n"
    try:
        head = f"# configuration: {_value(config)}" if config else "# configuration: none found"
    except _NotToml:
        head = f"# configuration: {json.dumps(config)}"
    lines = ["# sysctl-advisor check: the settings in force", head]
    for key, setting in values.items():
        if setting.value is None:
            lines.append(f"# {key}: not set")
        else:
            lines.append(_line(key, setting))
    if parameters:
        lines.append("[set]")
        lines += [_line(_value(name), s) for name, s in parameters.items()]
    return "\n".join(lines) + "\n"
