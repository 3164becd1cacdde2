"""What `check` reads: the files, sysctl.d directories and trees it is given, and standard
input (`-`), each read as it is reached (sources.sysctl_files); and how a file checked is named
from a directory (a baseline's root, a configuration's), the same wherever check is run from
and however the files were spelt."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from sysctl_advisor.model.check_input import CheckInput
from sysctl_advisor.model.directories import beneath
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.sysctl_files import STDIN_NAME, read_file, read_stdin, read_tree


def read_inputs(
    paths: list[Path],
    known_keys: Iterable[str],
    stdin: BinaryIO | None,
    shown: Callable[[Path], str],
    whole_directory: bool = False,
) -> Iterator[CheckInput]:
    """Each path read when the judge reaches it (`stdin`: standard input's bytes, None when
    closed); a name read there shown with `shown`. With `whole_directory`, a *.conf file is
    read together with the sysctl.d directory it is in, as that directory is applied
    (pre-commit passes only the files that changed: an override of an unchanged file by a
    changed one is still found)."""
    if whole_directory:
        paths = _with_directories(paths)
    if sum(str(path) == "-" for path in paths) > 1:
        raise InputError("standard input can be read once: give `-` once", path="-")
    keys = tuple(known_keys)
    return (_read(path, keys, stdin, shown) for path in paths)


def _read(
    path: Path, keys: tuple[str, ...], stdin: BinaryIO | None, shown: Callable[[Path], str]
) -> CheckInput:
    if str(path) == "-":  # `sysctl -a | sysctl-advisor check -`
        if stdin is None:  # started with standard input closed
            raise InputError("no standard input to read", path="-")
        config = read_stdin(stdin, keys)
    elif path.is_dir():
        config = read_tree(path, keys)
    elif path.exists():
        config = read_file(path, keys)
    else:
        return CheckInput(str(path), None, str)
    return CheckInput(str(path), config, _FromHere(config.base, shown))


class _FromHere:
    """Names read in a tree (relative to its base) or given, as a reviewer reads them; one
    file's findings share its name, which is worked out once."""

    def __init__(self, base: Path | None, shown: Callable[[Path], str]) -> None:
        self.base = base
        self.path_shown = shown
        self.shown: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name not in self.shown:
            path = self.base / name if self.base is not None else Path(name)
            self.shown[name] = self.path_shown(path)
        return self.shown[name]


def _with_directories(paths: list[Path]) -> list[Path]:
    """Each *.conf file in a directory named sysctl.d replaced by that directory (once); other
    paths as they are (an Ansible role's files/ holds more than sysctl settings)."""
    chosen: list[Path] = []
    for path in paths:
        if str(path) == "-":
            pass
        elif path.suffix == ".conf" and path.parent.name == "sysctl.d" and path.is_file():
            path = path.parent
        if path not in chosen:
            chosen.append(path)
    return chosen


def baseline_root(config_directory: Path | None, baseline: Path | None) -> Path:
    """The one directory a baseline names files from: the configuration's, else the
    repository's top (the directory holding `.git`) above the baseline (the working
    directory for `-`), else the baseline's own directory."""
    if config_directory is not None:
        return config_directory
    start = Path(os.path.dirname(os.path.abspath(baseline))) if baseline else Path.cwd()
    for directory in (start, *start.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return start


def names_from(root: Path) -> Callable[[str], str]:
    """A checked file named from the directory `root` (a baseline's), in `/` form, its
    directories' links resolved, so the baseline holds the same names wherever check is run
    from and however a path was spelt (`.`, `./etc/sysctl.d/`, absolute, through a link to
    the checkout); standard input as <stdin>."""
    base = os.path.realpath(root)
    shown: dict[str, str] = {}
    real_parent: dict[str, str] = {}  # a tree's files share a few directories

    def name(file: str) -> str:
        if file not in shown:
            if file == STDIN_NAME:
                shown[file] = file
            else:
                parent, own = os.path.split(os.path.abspath(file))
                if parent not in real_parent:
                    real_parent[parent] = os.path.realpath(parent)
                real = os.path.join(real_parent[parent], own)
                shown[file] = os.path.relpath(real, base).replace(os.sep, "/")
        return shown[file]

    return name


def gone_files(root: Path, names: Iterable[str]) -> frozenset[str]:
    """Which of these files (named from `root`, as a baseline holds them) are no more:
    deleted or renamed since. Each is looked for from `root` one component at a time, never
    through a link (a baseline names directories as they really are): a name that leaves
    `root` in its text or through a link, or holds a NUL, is never looked at, and nothing
    outside `root` is opened or stat'ed."""
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return frozenset()
    gone = set()
    try:
        for name in set(names):
            normal = posixpath.normpath(name)
            if (
                name == STDIN_NAME
                or "\0" in normal
                or normal.startswith(("/", "../"))
                or normal in ("..", ".")
            ):
                continue
            if _missing_beneath(top, normal.split("/")):
                gone.add(name)
    finally:
        os.close(top)
    return frozenset(gone)


def _missing_beneath(top: int, parts: list[str]) -> bool:
    """Whether the file `parts` names below the directory open at `top` is missing; False
    where the way to it passes a link or anything but a directory (not looked at further)."""
    try:
        with beneath(top, parts[:-1]) as at:
            os.stat(parts[-1], dir_fd=at, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def names_inside(directory: Path) -> Callable[[str], tuple[str | None, str]]:
    """A checked file named for per-file-ignores: its path from `directory` in `/` form (None
    outside it, and for standard input), and its own name."""
    base = os.path.abspath(directory)

    def name(file: str) -> tuple[str | None, str]:
        relative = os.path.relpath(os.path.abspath(file), base)
        inside = not (relative == ".." or relative.startswith("../"))
        path = relative.replace(os.sep, "/") if inside and file != STDIN_NAME else None
        return path, os.path.basename(file)

    return name
