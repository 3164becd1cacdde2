"""Application message families: which lines of an application's own log state a kernel
setting or a limit it found short at start-up (data in rules/catalog/app-messages.yaml).

Matched as the kernel message families are (`kernel_messages`): case-insensitive plain
substrings, never patterns. Each family also says where its lines are written (systemd units,
log files under the host's root), which sysctl it speaks of and how to read the figure a line
asks for. The application log reader (`sysctl_advisor.sources.app_log`) takes
`app_readers(families)`, plain data.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.kernel_messages import (
    MAX_FAMILIES,
    Family,
    Line,
    Paragraph,
    load_families,
    matchers,
)
from sysctl_advisor.model.model_base import After, Field, SpecModel, model
from sysctl_advisor.model.text_escape import plain_line
from sysctl_advisor.model.vocabulary import OneLine, SysctlKey

MAX_PLACES = 16  # units or log files per family
MAX_AFTER = 64
MAX_SCALE = 1 << 20
_UNIT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_.@*\\-]{0,254}$")
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


def _unit(value: str) -> str:
    """A systemd unit name or glob as `journalctl --unit=` takes it; never an option."""
    plain_line(value, "unit")
    if not _UNIT.match(value):
        raise ValueError(f"not a systemd unit name or glob: {value[:80]!r}")
    return value


def _log_path(value: str) -> str:
    """A path relative to the host's root: plain name parts, no `..`, no leading /."""
    plain_line(value, "log path")
    parts = value.split("/")
    if len(value) > 200 or len(parts) > 8 or not all(_PART.match(p) for p in parts):
        raise ValueError(f"not a relative path of plain names (e.g. var/log/x.log): {value[:80]!r}")
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"a log path may not hold . or ..: {value[:80]!r}")
    return value


def _after(value: str) -> str:
    if not value.strip() or len(value) > MAX_AFTER:
        raise ValueError(f"must be 1 to {MAX_AFTER} characters (not only spaces)")
    return value


Unit = Annotated[str, After(_unit)]
LogPath = Annotated[str, After(_log_path)]
AfterText = Annotated[OneLine, After(_after)]


@model
class Wants(SpecModel):
    """How to read the figure a line asks for: the first run of digits right after `after`
    (matched case-insensitively), times `scale` (1024 for kiB)."""

    after: AfterText
    scale: int = Field(default=1, ge=1, le=MAX_SCALE)


@model
class AppMessageFamily(Family):
    """One kind of application start-up message, in every wording its versions print."""

    application: Line
    key: SysctlKey | None = Field(default=None, description="the sysctl the line speaks of")
    wants: Wants | None = None
    asks: Line = Field(description="what the application asks for, in words")
    units: list[Unit] = Field(default_factory=list, max_length=MAX_PLACES)
    logs: list[LogPath] = Field(default_factory=list, max_length=MAX_PLACES)
    versions: Paragraph = Field(description="which versions print which wording")


@model
class AppMessageCatalog(SpecModel):
    families: list[AppMessageFamily] = Field(min_length=1, max_length=MAX_FAMILIES)


def load_app_families(path: Path, specs: SpecCache | None = None) -> list[AppMessageFamily]:
    """The families of an app-messages file, validated (one-line InputErrors naming the file,
    line and field), ids unique."""
    return load_families(path, AppMessageCatalog, "an application message catalog", specs)


def app_readers(families: list[AppMessageFamily]) -> dict[str, dict[str, Any]]:
    """Family id -> what the reader needs, as plain data: `match` (lowercase substrings),
    `wants` ({after (lowercase), scale} or None), `units`, `logs`."""
    found = matchers(families)
    return {
        f.id: {
            "match": found[f.id],
            "wants": (
                {"after": f.wants.after.lower(), "scale": f.wants.scale} if f.wants else None
            ),
            "units": tuple(f.units),
            "logs": tuple(f.logs),
        }
        for f in families
    }
