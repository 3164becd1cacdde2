"""`check --show-config`: the settings in force, as TOML a team can paste into
.sysctl-advisor.toml, each line with a comment saying where its value came from.

Every string is written by the JSON serializer with ASCII escapes, which TOML reads as the
same basic string: a hostile value cannot end its line or reach the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol


class _Setting(Protocol):
    @property
    def value(self) -> Any: ...
    @property
    def origin(self) -> str: ...


def _value(value: Any) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{_value(str(k))} = {_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return json.dumps(str(value))


def _origin(origin: str) -> str:
    return origin if origin in ("command line", "default") else _value(origin)


def show_settings(
    config: str | None, values: Mapping[str, _Setting], parameters: Mapping[str, _Setting]
) -> str:
    """The settings, one per line: `key = value  # origin`, or `# key: not set`."""
    head = f"# configuration: {_value(config)}" if config else "# configuration: none found"
    lines = ["# sysctl-advisor check: the settings in force", head]
    for key, setting in values.items():
        if setting.value is None:
            lines.append(f"# {key}: not set")
        else:
            lines.append(f"{key} = {_value(setting.value)}  # {_origin(setting.origin)}")
    if parameters:
        lines.append("[set]")
        lines += [
            f"{_value(name)} = {_value(s.value)}  # {_origin(s.origin)}"
            for name, s in parameters.items()
        ]
    return "\n".join(lines) + "\n"
