"""What a team writes down for `check` once, instead of on every command line: the contract of
`.sysctl-advisor.toml` (or the `[tool.sysctl-advisor]` table of a `pyproject.toml`), and of
the baseline file `check --write-baseline` writes.

Keys are spelt as on the command line (`fail-on`, `per-file-ignores`). Paths in either file
are relative to the file's own directory and stay inside it; the files a baseline's entries
name are relative to its root (the configuration's directory, else the repository's top, else
the baseline's directory). Rule ids and prefixes are read
by `engine.check.selection`, which names the file and key of one that names no rule.
"""

from __future__ import annotations

import posixpath
from typing import Annotated, Any, ClassVar, Final, Literal

from sysctl_advisor.model.model_base import After, Before, Constraints, Field, Record, model
from sysctl_advisor.model.severity import FailOn
from sysctl_advisor.model.vocabulary import OneLine

CONFIG_FILE: Final = ".sysctl-advisor.toml"
PYPROJECT: Final = "pyproject.toml"
PYPROJECT_TABLE: Final = ("tool", "sysctl-advisor")
CONFIG_SCHEMA: Final = "sysctl-advisor/config/v1"
BASELINE_SCHEMA: Final = "sysctl-advisor/baseline/v2"
# What every baseline's `schema` starts with, this version's or an earlier one's.
BASELINE_SCHEMA_FAMILY: Final = "sysctl-advisor/baseline/"
# Earlier baselines, whose fingerprints hold the files' paths as the command line spelt them:
# refused when read (write it again), replaced when written over.
EARLIER_BASELINE_SCHEMAS: Final = frozenset({"sysctl-advisor/baseline/v1"})

_MAX_TEXT = 200


def inside_path(value: str) -> str:
    """A path relative to the file that names it, never leaving that file's directory."""
    if not value or len(value) > 4096 or "\0" in value or not value.isprintable():
        raise ValueError("must be a non-empty path of printable characters")
    normal = posixpath.normpath(value)
    if normal.startswith("/") or normal == ".." or normal.startswith("../"):
        raise ValueError(
            f"{value!r} leaves the directory of the file that names it; give a path inside it"
        )
    return value


MAX_PROFILES = 32  # as --profile takes (knowledge.workloads.MAX_WORKLOADS)


def _profiles(value: Any) -> Any:
    """A list of profiles holds one to MAX_PROFILES (an empty one would plan nothing, and
    say nothing of it); checked first, so the error says so rather than that a string was
    expected."""
    if isinstance(value, list) and not 1 <= len(value) <= MAX_PROFILES:
        raise ValueError(f"a list of 1 to {MAX_PROFILES} profile names, got {len(value)}")
    return value


def _finite(value: float) -> float:
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("must be a finite number")
    return value


InsidePath = Annotated[str, After(inside_path)]
Word = Annotated[OneLine, Constraints(min_length=1, max_length=_MAX_TEXT)]  # a name, a path
Selectors = Annotated[list[Word], Constraints(max_length=256)]


def _published(title: str, schema_id: str) -> dict[str, Any]:
    """pydantic's config for a file whose JSON Schema is published: unknown keys refused, its
    title and `$id` in the schema."""
    return {"extra": "forbid", "title": title, "json_schema_extra": {"$id": schema_id}}


# A profile parameter's value: as `--set NAME=VALUE` gives it, or a TOML boolean or number.
Parameter = Word | bool | int | Annotated[float, After(_finite)]


@model
class CheckConfig(Record):
    """The `check` settings of a repository; every key optional, command-line flags win."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _published(
        "sysctl-advisor check configuration", CONFIG_SCHEMA
    )

    select: Selectors | None = Field(
        None, description="run only these rules: ids or prefixes (check.glob, check.*)"
    )
    ignore: Selectors | None = Field(None, description="do not run these rules (after select)")
    warn: Selectors | None = Field(None, description="report these rules as warnings")
    error: Selectors | None = Field(None, description="report these rules as errors")
    per_file_ignores: dict[Word, Selectors] | None = Field(
        None,
        alias="per-file-ignores",
        max_length=1024,
        description="glob -> rules not reported in the files it matches; a glob with a `/` "
        "matches the path from this file's directory, one without it the file name",
    )
    fail_on: FailOn | None = Field(
        None,
        alias="fail-on",
        description="exit 1 at this severity or worse, or never (default: error)",
    )
    kernel: Word | None = Field(None, description="target kernel release, e.g. 5.14")
    facts: InsidePath | None = Field(None, description="host facts file, from this directory")
    profile: Annotated[
        Word | Annotated[list[Word], Constraints(min_length=1, max_length=MAX_PROFILES)] | None,
        Before(_profiles),
    ] = Field(
        None,
        description="workload profile (with facts); a list for a host that runs several",
    )
    set: dict[Word, Parameter] | None = Field(
        None, max_length=256, description="the profile's parameters, NAME = VALUE"
    )
    baseline: InsidePath | None = Field(
        None, description="findings already accepted (check --write-baseline), from here"
    )


@model
class BaselineEntry(Record):
    """One accepted finding: its rule, its file (from the baseline's root) and a fingerprint
    of what it says, which no line number nor path spelling enters (lines above may move, a
    tree may be given as `.` or as `etc/sysctl.d`)."""

    rule: Word
    file: Annotated[str, Constraints(min_length=1, max_length=4096)] = Field(
        description="from the root: the configuration's directory, else the repository's "
        "top (the directory holding .git), else the baseline's directory"
    )
    fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$")
    line: int | None = Field(None, ge=1, description="where it was when written; not matched")
    message: str = Field("", max_length=4096, description="what it said; not matched")


@model
class Baseline(Record):
    """What `check --write-baseline FILE` writes and `--baseline FILE` reads."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _published(
        "sysctl-advisor check baseline", BASELINE_SCHEMA
    )

    schema: Literal["sysctl-advisor/baseline/v2"] = Field(
        default=BASELINE_SCHEMA, description="this document's format and version"
    )
    findings: list[BaselineEntry] = Field(default_factory=list, max_length=1_000_000)
