"""The settings `check` runs with: each from the command line when given there, else from the
repository's configuration (sources.check_config), else the default; with where each came
from, for `check --show-config` and for the error that names a bad value.

A list given on the command line (--select, --ignore, --warn, --error) replaces the
configuration's; --set parameters replace the configuration's one by one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from sysctl_advisor.commands.common import note, parse_overrides, shown_path
from sysctl_advisor.engine.check.selection import Given
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.sources.check_config import ConfigFile, config_for, read_config
from sysctl_advisor.sources.sysctl_files import SYSCTL_CONF, SYSCTL_D_DIRS

T = TypeVar("T")
COMMAND_LINE = "command line"
DEFAULT = "default"
RUNNING = "the running kernel"
# The host whose own sysctl files `check` may be given: its running kernel is their target.
HOST_ROOT = Path("/")
# Each setting: its key in the configuration, and the option that wins over it.
OPTIONS = {
    "select": "--select",
    "ignore": "--ignore",
    "warn": "--warn",
    "error": "--error",
    "per-file-ignores": None,
    "fail-on": "--fail-on",
    "kernel": "--kernel",
    "facts": "--facts",
    "profile": "--profile",
    "set": "--set",
    "baseline": "--baseline",
}
DEFAULTS: dict[str, Any] = {"fail-on": "error"}


@dataclass(frozen=True)
class Setting:
    value: Any  # None: not set
    origin: str  # COMMAND_LINE, DEFAULT, or the configuration file
    written: Any = None  # a path as the configuration wrote it (value: resolved from there)

    @property
    def shown(self) -> Any:
        """The value as --show-config prints it: as written in the configuration, or given."""
        if self.written is not None:
            return self.written
        return str(self.value) if isinstance(self.value, Path) else self.value


@dataclass
class CheckSettings:
    """What check runs with, each value with its origin."""

    config: ConfigFile | None
    values: dict[str, Setting] = field(default_factory=dict)
    parameters: dict[str, Setting] = field(default_factory=dict)  # --set / set, by name
    copy: Path | None = None  # --settings-from: the copy of the working directory's settings

    def standing(self, path: Path) -> Path:
        """Where a settings file stands among the files checked: one read from the copy
        (--settings-from) stands at the same place under the working directory."""
        if self.copy is None:
            return path
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(self.copy))
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            return path
        return Path(relative)

    def __getitem__(self, key: str) -> Any:
        return self.values[key].value

    def given(self, key: str) -> Given:
        """Where a list of rule selectors came from, for the error naming a bad one."""
        origin = self.values[key].origin
        if origin == COMMAND_LINE:
            return Given(OPTIONS[key] or key)
        table = self.config.table if self.config is not None else None
        return Given(f"{table}.{key}" if table else key, origin)

    @property
    def overrides(self) -> dict[str, str]:
        """The profile parameters as `--set` gives them (a TOML boolean as true/false)."""
        return {name: _text(setting.value) for name, setting in self.parameters.items()}

    def blame(self, exc: InputError) -> InputError:
        """An error about the profile or a parameter that came from the configuration, named
        by the configuration's file and key instead of an option never given."""
        if exc.field == "--profile" and self.values["profile"].origin != COMMAND_LINE:
            where = self.values["profile"].origin
            return InputError(exc.message, path=where, field=self._key("profile"))
        if exc.field is not None and exc.field.startswith("--set"):
            for name, setting in self.parameters.items():
                if setting.origin != COMMAND_LINE and name in f"{exc.field} {exc.message}":
                    field = self._key(f"set.{name}")
                    return InputError(exc.message, path=setting.origin, field=field)
        return exc

    def _key(self, key: str) -> str:
        table = self.config.table if self.config is not None else None
        return f"{table}.{key}" if table else key


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# The validated-files cache is one file every facts-reading command loads whole: a document
# larger than this (a baseline of thousands of findings) is validated each run instead.
CACHED_BYTES = 256 * 1024


def remember(kind: type[T], path: Path, text: str, validate: Callable[[], T]) -> T:
    """A configuration or baseline validated once per text, then taken from the cache (one
    up to CACHED_BYTES)."""
    if len(text) > CACHED_BYTES:
        return validate()
    from sysctl_advisor.cache.facts import ValidatedCache, cached

    return cached(path, text, ValidatedCache(kind), validate)


def find(
    paths: list[Path], config: Path | None, isolated: bool, settings_from: Path | None = None
) -> ConfigFile | None:
    """--config FILE, else the configuration found upward from the paths (in the copy
    `settings_from` stands for, with --settings-from); none with --isolated. A configuration
    the search does not use (another user may write it) is named in a note."""
    if isolated:
        if config is not None:
            raise InputError("--config and --isolated contradict each other", field="--config")
        return None
    if config is None:
        return config_for(paths or [Path(".")], remember, note, settings_from)
    found = read_config(config, remember=remember, found=False)  # the operator's own choice
    if found is None:
        if config.name == "pyproject.toml":
            raise InputError("has no [tool.sysctl-advisor] table", path=config, field="--config")
        raise InputError("no such file", path=config, field="--config")
    return found


def resolve(
    found: ConfigFile | None, given: dict[str, Any], copy: Path | None = None
) -> CheckSettings:
    """The settings in force: `given` holds the command line's values by configuration key
    (None or [] when not given); `copy` is --settings-from's directory."""
    settings = CheckSettings(found, copy=copy)
    config = found.config if found is not None else None
    for key in OPTIONS:
        value = given.get(key)
        if key == "set":
            continue
        if value not in (None, []):
            settings.values[key] = Setting(value, COMMAND_LINE)
            continue
        from_file = getattr(config, key.replace("-", "_"), None) if config else None
        if from_file is not None and found is not None:
            written = None
            if key in ("facts", "baseline"):  # from the configuration's directory
                written, from_file = from_file, found.directory / from_file
            if key == "per-file-ignores":
                from_file = dict(from_file)
            settings.values[key] = Setting(from_file, shown_path(found.path), written)
        else:
            settings.values[key] = Setting(DEFAULTS.get(key), DEFAULT)
    if config is not None and config.set and found is not None:
        for name, value in config.set.items():
            settings.parameters[name] = Setting(value, shown_path(found.path))
    for name, value in parse_overrides(given.get("set")).items():
        settings.parameters[name] = Setting(value, COMMAND_LINE)
    return settings


def needs(found: CheckSettings) -> None:
    """A profile needs facts; a parameter needs a profile; a kernel must be one."""
    if found["profile"] is not None and found["facts"] is None:
        where = found.values["profile"].origin
        raise InputError(
            "a profile needs facts (--facts, or facts in the configuration)",
            path=None if where == COMMAND_LINE else where,
            field="--profile" if where == COMMAND_LINE else "profile",
        )
    if found.parameters and found["profile"] is None:
        raise InputError(
            "a profile parameter needs a profile (--profile, or profile in the configuration)",
            field="--set",
        )
    if found["kernel"] is not None:
        try:
            KernelVersion.parse(found["kernel"])
        except ValueError as exc:
            where = found.values["kernel"].origin
            command_line = where == COMMAND_LINE
            raise InputError(
                str(exc),
                path=None if command_line else where,
                field="--kernel" if command_line else "kernel",
            ) from None


def running_release() -> str:
    """The running kernel's release (`uname -r`), "" off Linux: os.uname, as platform reads
    it, without importing platform for one call."""
    uname = os.uname()
    return uname.release if uname.sysname == "Linux" else ""


def target_kernel(found: CheckSettings, paths: Sequence[Path], newest: str) -> str | None:
    """The kernel the lines are judged for, when neither --kernel, --facts nor the
    configuration names one: the running kernel for this host's own sysctl files
    (/etc/sysctl.conf, /etc/sysctl.d, /run/sysctl.d, /usr/lib/sysctl.d, ..., or `/`).
    Returns the note that says which kernel the lines are judged for, or which era they are
    held to, the report's first line on standard error (None: the operator named it)."""
    if found["kernel"] is not None or found["facts"] is not None:
        return None
    release = running_release()
    if release and paths and all(_on_host(path) for path in paths):
        try:
            KernelVersion.parse(release)
        except ValueError:
            pass
        else:
            found.values["kernel"] = Setting(release, RUNNING)
            return (
                f"judging for Linux {release}, the running kernel, as these are this host's "
                "own sysctl files (--kernel or `kernel` in the configuration names another)"
            )
    return (
        f"no target kernel (--kernel, --facts or `kernel` in the configuration): judging by "
        f"Linux {newest}, the newest the catalog verified, on a 64-bit host, and reporting "
        "no key as missing"
    )


def _on_host(path: Path) -> bool:
    """Whether the path is this host's own sysctl configuration (`/`, /etc, /etc/sysctl.conf
    or inside a sysctl.d directory systemd-sysctl reads), as given (links not followed)."""
    if str(path) == "-":
        return False
    where = os.path.relpath(os.path.abspath(path), os.path.abspath(HOST_ROOT))
    if where in (os.curdir, "etc", SYSCTL_CONF):
        return True
    return any(where == d or where.startswith(d + os.sep) for d in SYSCTL_D_DIRS)


def shown(found: CheckSettings, as_json: bool) -> dict[str, Setting]:
    """The settings as --show-config prints them: a path as the configuration wrote it (TOML),
    or from here (JSON)."""
    return {
        key: replace(v, value=shown_path(v.value) if as_json else v.shown)
        if isinstance(v.value, Path)
        else v
        for key, v in found.values.items()
    }
