"""The programs the kernel runs as root that a sysctl names (rules/catalog/helpers.yaml):
kernel.core_pattern's pipe handler and kernel.modprobe. The table holds the directories
system programs live in, the programs that run whatever their arguments name (shells,
interpreters, wrappers) and, per key, the distributions' own handlers with their sources.

Rules never see this module: `judge` gives the checker, for a line of such a key, a plain
mapping (`helper`) that check rules read like any other value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.model.model_base import After, Constraints, Field, SpecModel, model
from sysctl_advisor.model.vocabulary import SysctlKey


def _program_directory(text: str) -> str:
    if not text.startswith("/") or not text.endswith("/") or not _plain(text[:-1]):
        raise ValueError("an absolute directory written plainly, ending in /")
    return text


def _program_path(text: str) -> str:
    if not _plain(text):
        raise ValueError("an absolute path written plainly (no '.', '..' or empty component)")
    return text


def _plain(path: str) -> bool:
    """An absolute path with no `.`, `..` or empty component (no `//`, no trailing `/`)."""
    parts = path.split("/")
    return path.startswith("/") and all(part not in ("", ".", "..") for part in parts[1:])


def _specifier(program: str) -> str | None:
    """The first % specifier in a core_pattern program, which the kernel fills in from the
    crashing process (format_corename() in fs/coredump.c, Linux 6.12); `%%` is a plain `%`
    there, not one."""
    at = 0
    while (at := program.find("%", at)) >= 0:
        if program[at + 1 : at + 2] != "%":
            return program[at : at + 2]
        at += 2
    return None


Directory = Annotated[str, After(_program_directory)]
ProgramPath = Annotated[str, After(_program_path)]


@model
class Handler(SpecModel):
    """A program a distribution installs as this key's helper."""

    path: ProgramPath
    by: str = Field(max_length=80, description="the program or package, as users know it")
    where: str = Field(max_length=200, description="the distributions that install it there")
    references: list[str] = Field(min_length=1)


@model
class HelperKey(SpecModel):
    """How the kernel reads a helper key's value, and its distributions' handlers."""

    command: Literal["pipe", "path"] = Field(
        description="pipe: a program only after a leading `|`, its arguments split at white "
        "space (core_pattern); path: the whole value is the program's path (modprobe)"
    )
    max_length: int = Field(
        ge=1, le=4096, description="characters the kernel keeps; a longer write is cut there"
    )
    handlers: list[Handler] = Field(min_length=1, max_length=50)
    references: list[str] = Field(min_length=1)


@model
class Runner(SpecModel):
    """Programs that run whatever their arguments name: as a helper, the arguments (any file)
    are what root runs."""

    kind: Literal["shell", "interpreter", "wrapper"]
    names: list[Annotated[str, Constraints(pattern=r"^[A-Za-z0-9._+-]+\*?$", max_length=40)]] = (
        Field(min_length=1, max_length=100, description="file names; a trailing * takes any suffix")
    )
    runs: str = Field(max_length=200, description="what it runs, as a clause")


@model
class HelpersSpec(SpecModel):
    system_directories: list[Directory] = Field(min_length=1, max_length=40)
    system_directories_references: list[str] = Field(min_length=1)
    runners: list[Runner] = Field(min_length=1, max_length=20)
    keys: dict[SysctlKey, HelperKey] = Field(min_length=1, max_length=20)


class Helpers:
    """The helper table, and the verdict on one value of a helper key."""

    FILE = "helpers.yaml"

    def __init__(self, path: Path, specs: SpecCache) -> None:
        self.path = path
        self.spec = specs.load(path, HelpersSpec, "the helper table")
        self._exact: dict[str, Runner] = {}
        self._prefixes: list[tuple[str, Runner]] = []
        for runner in self.spec.runners:
            for name in runner.names:
                if name.endswith("*"):
                    self._prefixes.append((name[:-1], runner))
                else:
                    self._exact[name] = runner

    def _runner(self, name: str) -> Runner | None:
        found = self._exact.get(name)
        if found is None:
            found = next((r for p, r in self._prefixes if name.startswith(p)), None)
        return found

    def judge(self, key: str, value: str) -> dict[str, Any] | None:
        """For a helper key's value: the program it names (None for a core_pattern that
        names none), its arguments, what is wrong with it (`problem`, None when nothing is;
        `detail` says which part; `runs`, what a runner runs), the distribution's handler it
        is (or None), every handler's path, and the value's length against what the kernel
        keeps."""
        entry = self.spec.keys.get(key)
        if entry is None:
            return None
        program: str | None
        arguments: list[str] = []
        if entry.command == "path":
            program = value or None  # empty: the kernel loads no module on demand
        elif value.startswith("|"):
            words = value[1:].split()  # the kernel splits at white space (isspace)
            # `|` alone: the kernel aborts every dump (format_corename() fails), runs nothing
            program, arguments = (words[0], words[1:]) if words else (None, [])
        else:
            program = None  # a file pattern: no program
        problem, detail = self._problem(entry, program) if program is not None else (None, "")
        runner = self._runner(detail) if problem == "runner" else None
        runs = runner.runs if runner is not None else None
        handler = next((h for h in entry.handlers if h.path == program), None)
        return {
            "program": program,
            "arguments": arguments,
            "problem": problem,
            "detail": detail,
            "runs": runs,
            "handler": {"path": handler.path, "by": handler.by} if handler else None,
            "handlers": [h.path for h in entry.handlers],
            "length": len(value),
            "max_length": entry.max_length,
        }

    def _problem(self, entry: HelperKey, program: str) -> tuple[str | None, str]:
        """Why root would run a program someone else chose: (code, the part that says so)."""
        specifier = _specifier(program) if entry.command == "pipe" else None
        if specifier is not None:
            return "specifier", specifier
        if not program.startswith("/"):
            return "relative", program
        parts = program.split("/")[1:]
        odd = next((p for p in parts if p in ("", ".", "..")), None)
        if odd is not None:
            return "not-normal", odd
        if self._runner(parts[-1]) is not None:
            return "runner", parts[-1]
        if not any(program.startswith(d) for d in self.spec.system_directories):
            return "outside", program.rpartition("/")[0] + "/"
        return None, ""
