"""The configuration in force, wherever it was read from: each key's value and the file and line
(or /proc/sys path) it came from, what later assignments hid, and the problems noticed on the
way. `sources.sysctl_files` reads these from files; `from_values` builds one from values read
elsewhere (the live kernel, a facts file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from sysctl_advisor.model.model_base import Field, Record, document_config, model
from sysctl_advisor.model.severity import Severity
from sysctl_advisor.model.sysctl_conf import Assignment


@model(kw_only=False)
class Problem(Record):
    """Something wrong in the current configuration itself (a broken link, a bad line)."""

    __pydantic_config__ = document_config("ProblemDocument")

    source: str = Field(description="path:line, or path")
    message: str
    # error: the kernel would reject it; warning; info
    severity: Severity = "warning"
    # syntax | byte-order-mark | broken-link | outside-link | unreadable | note
    code: str = Field(
        default="note", description="the kind of problem: syntax, broken-link, unreadable, …"
    )

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


class CurrentValue(NamedTuple):
    """Immutable, as a frozen dataclass would be; a tuple because a 100,000-line file makes
    one per line, and a tuple is built in half the time."""

    key: str
    value: str
    source: str  # "path:line", "/proc/sys/...", "facts file …"
    ignore_failure: bool = False
    # for a file's line: the file as shown and the line number (`source` joins them)
    file: str | None = None
    line: int | None = None


class Override(NamedTuple):
    """An assignment that a later one replaced: both places, for the `check` report."""

    key: str
    hidden: CurrentValue
    winner: CurrentValue


@dataclass
class CurrentConfig:
    kind: str  # live | dump | file | tree | facts
    label: str
    values: dict[str, CurrentValue] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # applied, in order
    masked: list[str] = field(default_factory=list)
    # (shown path, its assignments in file order), for each file applied: read once, here
    documents: list[tuple[str, list[Assignment]]] = field(default_factory=list)
    base: Path | None = None  # tree paths are shown relative to this directory
    # shown path -> when the file read was last modified (epoch seconds)
    modified: dict[str, float] = field(default_factory=dict)
    # (shown path, [(line, text)]) of the comment lines that address the advisor
    # (`# sysctl-advisor: ...`), for each file that has any; `check` reads them
    advisor_comments: list[tuple[str, list[tuple[int, str]]]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """A dump or the live kernel lists every key; files list only what they set."""
        return self.kind in ("live", "dump", "facts")


def from_values(
    values: dict[str, str],
    kind: str,
    label: str,
    source: str,
    files: dict[str, str] | None = None,
) -> CurrentConfig:
    """Current values that did not come from files: the live kernel or a facts file's sysctl.

    `source` may contain `{path}` (the key as a /proc/sys path) or `{key}`. `files` names the
    sysctl.d file and line that sets a key at boot, where known; that is shown instead."""
    config = CurrentConfig(kind, label)
    config.values = {
        key: CurrentValue(
            key,
            value,
            (files or {}).get(key)
            or source.format(key=key, path="/proc/sys/" + key.replace(".", "/")),
        )
        for key, value in sorted(values.items())
    }
    return config
