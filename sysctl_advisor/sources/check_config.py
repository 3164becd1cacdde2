"""Find and read what a repository says about `check`: its configuration file, searched upward
from the files checked as users of ruff or pytest expect, and a baseline file.

The search goes from each checked path's directory (a file's parent, a directory itself, the
working directory for standard input) upward, and in each directory takes the first of

    .sysctl-advisor.toml             the whole file is the configuration
    pyproject.toml                   only with a [tool.sysctl-advisor] table

It stops at the first found, after the directory that holds `.git` (the repository's top:
a checkout's parents are not the repository's to configure) and at `/`. Only what no user but
the running one and root may write is trusted (sources.strict_modes, OpenSSH's StrictModes):
a directory another user owns or may write to (/tmp: a file planted there must not configure
another user's run) ends the search without being looked in, and a file found is read once,
bounded (MAX_CONFIG_BYTES), as a regular file whose real path is in the directory it was
found in (a link out of it is refused, not followed) and that no other user may write: the
name is never checked first and opened after. A configuration the search does not use for
those reasons is named to the caller (`skipped`), which says so; it is never an error, since
the user running `check` cannot remove another user's file.

With `top` (check --settings-from DIR), the search runs in DIR, a copy of the working
directory's settings: from DIR/PATH for each checked PATH up to DIR itself, the top.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sysctl_advisor.model.check_config import (
    CONFIG_FILE,
    EARLIER_BASELINE_SCHEMAS,
    PYPROJECT,
    PYPROJECT_TABLE,
    Baseline,
    CheckConfig,
)
from sysctl_advisor.model.documents import parse_json, parse_toml, read_bytes
from sysctl_advisor.model.errors import InputError, NotFound, NotTrusted
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources.strict_modes import others_may_write
from sysctl_advisor.sources.tree_paths import inside


@dataclass(frozen=True)
class ConfigFile:
    """A configuration found: the file, its directory (paths in it are from there) and what
    it says."""

    path: Path
    directory: Path
    config: CheckConfig
    table: str | None = None  # "tool.sysctl-advisor" in a pyproject.toml


MAX_CONFIG_BYTES = 1 << 20  # a configuration, or a pyproject.toml it may live in


def _read(path: Path, directory: Path, trusted: bool) -> str | None:
    """The file's text, None if there is none (anything else wrong with it is an error: a
    configuration that cannot be read must not be silently skipped). With `trusted`, only a
    file no user but the running one and root may write (else NotTrusted)."""
    try:
        data = read_bytes(
            path,
            lambda real: inside(directory, real),
            others_may_write if trusted else None,
            MAX_CONFIG_BYTES,
        )
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
    path: Path,
    directory: Path | None = None,
    remember: Remember | None = None,
    found: bool = True,
) -> ConfigFile | None:
    """The configuration in `path` (a .sysctl-advisor.toml, or any file read as one; a
    pyproject.toml's table): None when the file does not exist or, for a pyproject.toml,
    holds no [tool.sysctl-advisor] table. A file `found` by the search must be one no other
    user may write (else NotTrusted); one the operator names (--config) may be anyone's."""
    directory = directory if directory is not None else path.parent
    text = _read(path, directory, trusted=found)
    if text is None:
        return None
    data: Any = parse_toml(text, path)
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


# What the search tells its caller of a configuration it does not use: one line naming it.
Skipped = Callable[[str], None]
_MISSING = "missing"  # a directory of the copy (--settings-from) the change has, the copy not


def _others_may_write_directory(directory: Path) -> str | None:
    """Why other users may write to `directory` (sources.strict_modes), _MISSING when it does
    not exist, or None."""
    try:
        return others_may_write(os.stat(directory))
    except FileNotFoundError:
        return _MISSING
    except OSError as exc:
        return f"it cannot be looked at ({exc.strerror or exc})"


class _Search:
    """One run's search: each directory looked in once, each configuration read once, each
    one not used named once."""

    def __init__(
        self, remember: Remember | None, skipped: Skipped | None, top: Path | None
    ) -> None:
        self.remember = remember
        self.skipped = skipped or (lambda line: None)
        self.top = Path(os.path.abspath(top)) if top is not None else None
        self.seen: dict[Path, ConfigFile | None] = {}

    def upward(self, start: Path) -> ConfigFile | None:
        """The configuration for files in `start` (a directory): the nearest one upward."""
        passed: list[Path] = []
        directory = Path(os.path.abspath(start))
        found: ConfigFile | None = None
        while True:
            if directory in self.seen:
                found = self.seen[directory]
                break
            passed.append(directory)
            why = _others_may_write_directory(directory)
            if why is not None and why != _MISSING:
                self._not_searched(directory, why)
                break
            stop = False
            if why is None:
                found, stop = self._look_in(directory)
            if stop or directory == self.top or directory.parent == directory:
                break
            if self.top is None and os.path.lexists(directory / ".git"):
                break
            directory = directory.parent
        for directory in passed:
            self.seen[directory] = found
        return found

    def _look_in(self, directory: Path) -> tuple[ConfigFile | None, bool]:
        """The configuration in `directory`, and whether the search ends here: at one found,
        or at one other users may write (skipped, and named)."""
        for name in (CONFIG_FILE, PYPROJECT):
            try:
                found = read_config(directory / name, directory, self.remember)
            except NotTrusted as exc:
                self.skipped(f"{exc}; the search for a configuration stops there")
                return None, True
            if found is not None:
                return found, True
        return None, False

    def _not_searched(self, directory: Path, why: str) -> None:
        """The search ends at a directory other users may write to, unread; a configuration
        there is named."""
        for name in (CONFIG_FILE, PYPROJECT):
            if os.path.lexists(directory / name):
                self.skipped(
                    f"{directory / name}: not read: other users may write to its directory "
                    f"({why}), so any of them may put a file of theirs there; the search for a "
                    "configuration stops there"
                )


def find_config(
    start: Path, remember: Remember | None = None, skipped: Skipped | None = None
) -> ConfigFile | None:
    """The configuration for files in `start` (a directory): the nearest one upward."""
    return _Search(remember, skipped, None).upward(start)


def config_for(
    paths: list[Path],
    remember: Remember | None = None,
    skipped: Skipped | None = None,
    top: Path | None = None,
) -> ConfigFile | None:
    """The one configuration for every checked path (`-` searches from the working
    directory): the one found from any of them applies to all, as a project's settings apply
    to a file outside it checked in the same run; two different ones are bad input. Each
    directory is looked in, and each configuration read, once. With `top`, the search runs
    in that copy of the working directory's settings, from the place each path has there."""
    search = _Search(remember, skipped, top)
    configs: dict[Path, ConfigFile] = {}
    for path in paths:
        start = Path(".") if str(path) == "-" else path if path.is_dir() else path.parent
        if top is not None:
            start = _in_copy(start, top)
        found = search.upward(start)
        if found is not None:
            configs.setdefault(found.path, found)
    if len(configs) > 1:
        names = ", ".join(sorted(str(name) for name in configs))
        raise InputError(
            f"the files checked are under different configurations ({names}): check them in "
            "separate runs, or name one with --config"
        )
    return next(iter(configs.values()), None)


def _in_copy(start: Path, top: Path) -> Path:
    """Where the directory `start` (under the working directory) stands in the copy `top`."""
    relative = os.path.relpath(os.path.abspath(start))
    if relative == ".." or relative.startswith(f"..{os.sep}"):
        raise InputError(
            "with --settings-from, the paths checked must be under the working directory, "
            "which the settings copy stands for",
            path=start,
        )
    return top / relative


def read_baseline(
    path: Path, remember: Remember | None = None, inside_of: Path | None = None
) -> Baseline:
    """A baseline file, validated (once per text, with `remember`); with `inside_of` (the
    directory of the configuration that names it), only a file whose real path is in it."""
    allowed = None if inside_of is None else (lambda real: inside(inside_of, real))
    return baseline_from(read_bytes(path, allowed), path, remember)


def baseline_from(data: bytes, path: Path, remember: Remember | None = None) -> Baseline:
    """A baseline from the bytes read of `path`, validated (see read_baseline)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None

    def validated() -> Baseline:  # no line lookup: a baseline may be megabytes of JSON
        data = parse_json(text, path)
        if isinstance(data, dict) and data.get("schema") in EARLIER_BASELINE_SCHEMAS:
            raise InputError(
                f"written by an earlier sysctl-advisor ({data['schema']}), whose fingerprints "
                "depend on how the files were named: write it again with --write-baseline, "
                "from a check of all the files it covers",
                path=path,
            )
        return validate(Baseline, data, path)

    return remember(Baseline, path, text, validated) if remember else validated()
