"""Find and read what a repository says about `check`: its configuration file, searched upward
from the files checked as users of ruff or pytest expect, and a baseline file.

The search goes from each checked path's directory (a file's parent, a directory itself, the
working directory for standard input) upward, and in each directory takes the first of

    .sysctl-advisor.toml             the whole file is the configuration
    pyproject.toml                   only with a [tool.sysctl-advisor] table

It stops at the first found, and after the directory that holds `.git` (the repository's top:
a checkout's parents are not the repository's to configure) or at `/`. Every file is read
once, bounded, as a regular file whose real path is in the directory it was found in (a link
out of it is refused, not followed): the name is never checked first and opened after.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sysctl_advisor.model.check_config import (
    CONFIG_FILE,
    PYPROJECT,
    PYPROJECT_TABLE,
    Baseline,
    CheckConfig,
)
from sysctl_advisor.model.documents import parse_json, read_bytes
from sysctl_advisor.model.errors import InputError, NotFound
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources.tree_paths import inside


@dataclass(frozen=True)
class ConfigFile:
    """A configuration found: the file, its directory (paths in it are from there) and what
    it says."""

    path: Path
    directory: Path
    config: CheckConfig
    table: str | None = None  # "tool.sysctl-advisor" in a pyproject.toml


def _toml(text: str, path: Path) -> dict[str, Any]:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not TOML: {exc}", path=path) from None
    except RecursionError:
        raise InputError("nested too deeply", path=path) from None


def _read(path: Path, directory: Path) -> str | None:
    """The file's text, None if there is none (anything else wrong with it is an error: a
    configuration that cannot be read must not be silently skipped)."""
    try:
        data = read_bytes(path, lambda real: inside(directory, real))
    except NotFound:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None


# How a caller keeps what was validated: (model, path, text, validate) -> the document. The
# commands pass the cache's (pydantic costs as much as the rest of a check); a pyproject's
# other tables are part of the text, so any edit to the file validates it again.
T = TypeVar("T")


class Remember(Protocol):
    def __call__(self, kind: type[T], path: Path, text: str, validate: Callable[[], T]) -> T: ...


def read_config(
    path: Path, directory: Path | None = None, remember: Remember | None = None
) -> ConfigFile | None:
    """The configuration in `path` (a .sysctl-advisor.toml, or any file read as one; a
    pyproject.toml's table): None when the file does not exist or, for a pyproject.toml,
    holds no [tool.sysctl-advisor] table."""
    directory = directory if directory is not None else path.parent
    text = _read(path, directory)
    if text is None:
        return None
    data: Any = _toml(text, path)
    table = None
    if path.name == PYPROJECT:
        for part in PYPROJECT_TABLE:
            data = data.get(part) if isinstance(data, dict) else None
        if data is None:
            return None
        table = ".".join(PYPROJECT_TABLE)
        if not isinstance(data, dict):
            raise InputError("must be a table", path=path, field=table)
    checked = data

    def validated() -> CheckConfig:
        try:
            return validate(CheckConfig, checked, path)
        except InputError as exc:
            if table is not None and exc.field is not None:
                exc.field = f"{table}.{exc.field}"
            raise

    config = remember(CheckConfig, path, text, validated) if remember else validated()
    return ConfigFile(path, directory, config, table)


def find_config(start: Path, remember: Remember | None = None) -> ConfigFile | None:
    """The configuration for files in `start` (a directory): the nearest one upward."""
    directory = Path(os.path.abspath(start))
    while True:
        for name in (CONFIG_FILE, PYPROJECT):
            found = read_config(directory / name, directory, remember)
            if found is not None:
                return found
        if os.path.lexists(directory / ".git") or directory.parent == directory:
            return None
        directory = directory.parent


def config_for(paths: list[Path], remember: Remember | None = None) -> ConfigFile | None:
    """The one configuration for every checked path (`-` searches from the working
    directory): the one found from any of them applies to all, as a project's settings apply
    to a file outside it checked in the same run; two different ones are bad input."""
    found: dict[Path, ConfigFile | None] = {}
    for path in paths:
        start = Path(".") if str(path) == "-" else path if path.is_dir() else path.parent
        start = Path(os.path.abspath(start))
        if start not in found:
            found[start] = find_config(start, remember)
    configs = {c.path: c for c in found.values() if c is not None}
    if len(configs) > 1:
        names = ", ".join(sorted(str(name) for name in configs))
        raise InputError(
            f"the files checked are under different configurations ({names}): check them in "
            "separate runs, or name one with --config"
        )
    return next(iter(configs.values()), None)


def read_baseline(path: Path, remember: Remember | None = None) -> Baseline:
    """A baseline file, validated (once per text, with `remember`)."""
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None

    def validated() -> Baseline:
        return validate(Baseline, parse_json(text, path), path, text)

    return remember(Baseline, path, text, validated) if remember else validated()
