"""Which catalog keys tuned's active profile sets, and where: the facts' `sysctl_files`
entries for a tuning daemon (`path:line` under one of its profile directories).

tuned reads the profile names in its active-profile file (several, separated by blanks, are
merged in order), finds each as <dir>/<name>/tuned.conf in the last of its profile
directories that has it (tuned/profiles/locator.py), loads the profiles its [main] `include=`
names first (tuned/profiles/loader.py), and writes the [sysctl] section when it applies the
profile. Variables and conditions in values are not evaluated: only which keys are set, and
where, is recorded."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

MAX_PROFILES = 32  # profiles read, includes included (tuned itself has no limit)
# a profile directory's name, never a path (nor `.` or `..`)
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$")
_INCLUDES = re.compile(r"[\s,;]+")

Reader = Callable[[Path], "str | None"]


def tuned_sysctls(
    read: Reader,
    root: Path,
    active_profile: str,
    profile_dirs: Sequence[str],
    keys: Iterable[str],
) -> dict[str, str]:
    """Key -> "path:line" (the path as on the host) of what the active profiles set; empty
    when tuned is not installed or no profile is active."""
    wanted = set(keys)
    found: dict[str, str] = {}
    loaded: set[str] = set()  # profile files read: tuned's locator skips a file read already

    def text_of(host_path: str) -> str | None:
        return read(root / host_path.lstrip("/"))

    def load(name: str) -> None:
        name = name[1:] if name.startswith("-") else name  # include=-NAME: only if it exists
        if len(loaded) >= MAX_PROFILES or not _NAME.fullmatch(name):
            return
        # a later directory wins; one whose file is read already gives way to the next, so
        # /etc/tuned/X with include=X extends the shipped X (locator.get_config(skip_files))
        for directory in reversed(profile_dirs):
            path = posixpath.join(directory, name, "tuned.conf")
            if path in loaded:
                continue
            text = text_of(path)
            if text is not None:
                break
        else:
            return
        loaded.add(path)
        section = None
        includes: list[str] = []
        sets: list[tuple[str, str]] = []
        for number, line in enumerate(text.split("\n"), 1):  # lines as tuned reads them
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.startswith("[") and stripped.endswith("]"):
                section = stripped[1:-1].strip()
                continue
            key, equals, value = stripped.partition("=")
            if not equals:
                continue
            key = key.strip()
            if section == "main" and key == "include":
                includes += [n for n in _INCLUDES.split(value.strip()) if n]
            elif section == "sysctl" and key.replace("/", ".") in wanted:
                sets.append((key.replace("/", "."), f"{path}:{number}"))
        for parent in includes:  # a parent first: the profile's own lines win
            load(parent)
        found.update(sets)

    for name in (text_of(active_profile) or "").split():
        load(name)
    return found
