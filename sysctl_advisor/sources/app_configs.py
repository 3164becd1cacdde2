"""The few settings the application profiles read from Redis's (Valkey's) and PostgreSQL's own
configuration files: Redis `tcp-backlog`, PostgreSQL `max_connections` and `shared_buffers`.

A config named by a facts file is hostile input, read as nginx's is (`nginx_conf.py`): found
O_PATH and opened only if it is a regular file inside the facts file's directory as the
descriptor resolves, at most MAX_CONFIG_BYTES, decoded leniently, and every number bounded.
Includes are not followed (a note says so): their settings are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sysctl_advisor.model.documents import read_bytes
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.text_escape import as_fact
from sysctl_advisor.sources.tree_paths import inside

MAX_CONFIG_BYTES = 1 << 20  # redis.conf and postgresql.conf are tens of KiB
MAX_PROBLEMS = 3
INT_MAX = 2**31 - 1
PG_MAX_BACKENDS = 262143  # MAX_BACKENDS, 2^18 - 1
PG_BLOCK = 8192  # BLCKSZ: a shared_buffers without a unit counts blocks
PG_UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_DIGITS = re.compile(r"[0-9]{1,20}")
_PG_MEMORY = re.compile(r"([0-9]{1,20})\s*(B|kB|MB|GB|TB)?")


@dataclass
class AppSettings:
    """What a config sets (None: not set there) and the first problems met."""

    values: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        shown = self.problems[:MAX_PROBLEMS]
        more = len(self.problems) - len(shown)
        text = "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")
        return as_fact(text) if text else None


def read_redis(config: Path, confine: Path | None = None) -> AppSettings:
    """`tcp-backlog` from redis.conf or valkey.conf (the last one wins, as Redis reads it)."""
    settings = AppSettings()
    text = _read(config, confine, settings)
    if text is None:
        return settings
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        name = words[0].lower()
        if name == "include":
            settings.problems.append(f"{config}:{number}: include not followed; not read")
        elif name == "tcp-backlog":
            value = _bounded(words[1] if len(words) == 2 else "", 1, INT_MAX)
            if value is None:
                settings.problems.append(
                    f"{config}:{number}: tcp-backlog not a number 1..{INT_MAX}"
                )
                settings.values.pop("listen_backlog", None)
            else:
                settings.values["listen_backlog"] = value
    return settings


def read_postgresql(config: Path, confine: Path | None = None) -> AppSettings:
    """`max_connections` and `shared_buffers` (bytes) from postgresql.conf (the last one wins,
    as the server reads it); ALTER SYSTEM's postgresql.auto.conf and includes are not read."""
    settings = AppSettings()
    text = _read(config, confine, settings)
    if text is None:
        return settings
    for number, line in enumerate(text.splitlines(), 1):
        name, value = _pg_line(line)
        if name is None:
            continue
        where = f"{config}:{number}"
        if name in ("include", "include_dir", "include_if_exists"):
            settings.problems.append(f"{where}: {name} not followed; not read")
        elif name == "max_connections":
            connections = _bounded(value, 1, PG_MAX_BACKENDS)
            _store(settings, "max_connections", connections, where, f"1..{PG_MAX_BACKENDS}")
        elif name == "shared_buffers":
            size = _pg_memory(value)
            _store(settings, "shared_buffers", size, where, "a size of 128kB .. 16TB")
    return settings


def _store(settings: AppSettings, name: str, value: int | None, where: str, what: str) -> None:
    if value is None:
        settings.problems.append(f"{where}: {name} is not {what}")
        settings.values.pop(name, None)  # the server refuses to start: no figure is known
    else:
        settings.values[name] = value


def _pg_line(line: str) -> tuple[str | None, str]:
    """`name [=] value [# comment]`, the value unquoted ('...' with '' for a quote)."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None, ""
    match = re.match(r"([A-Za-z_][A-Za-z0-9_.]{0,62})\s*=?\s*(.*)", line)
    if match is None:
        return None, ""
    name, rest = match.group(1).lower(), match.group(2)
    if rest.startswith("'"):
        end = re.match(r"'((?:[^']|'')*)'", rest)
        return name, (end.group(1).replace("''", "'") if end else "")
    return name, rest.split("#", 1)[0].strip()


def _pg_memory(value: str) -> int | None:
    match = _PG_MEMORY.fullmatch(value.strip())
    if match is None:
        return None
    number, unit = int(match.group(1)), match.group(2)
    size = number * (PG_UNITS[unit] if unit else PG_BLOCK)
    return size if 131072 <= size <= 2**44 else None


def _bounded(text: str, low: int, high: int) -> int | None:
    text = text.strip().strip('"')
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def _read(config: Path, confine: Path | None, settings: AppSettings) -> str | None:
    """The file's text, or None with the reason among the problems (outside `confine`, as the
    opened descriptor resolves, included)."""
    allowed = None if confine is None else (lambda real: inside(confine, real))
    try:
        data = read_bytes(config, allowed, limit=MAX_CONFIG_BYTES)
    except InputError as exc:
        settings.problems.append(f"{config}: {exc.message}; not read")
        return None
    return data.decode("utf-8", errors="replace")
