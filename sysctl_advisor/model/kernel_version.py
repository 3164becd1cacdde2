"""Kernel releases as `uname -r` prints them, and version ranges such as ">=3.4,<4.2"."""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Major, minor, patch (stable) and a fourth number (2.6.32.28) as Linux numbers them: at most
# 2, 3, 4 and 5 digits; a longer number is not a kernel release.
_RELEASE_RE = re.compile(r"^\s*(\d{1,2})\.(\d{1,3})(?:\.(\d{1,4}))?(?:\.(\d{1,5}))?(?!\d)(.*)$")
_CLAUSE_RE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([0-9][0-9.]*)\s*$")


@functools.total_ordering
@dataclass(frozen=True)
class KernelVersion:
    """A comparable kernel version: 2.6.32-642.el6.i686 -> (2, 6, 32, 0).

    Compares with other versions and with strings, so rule expressions can say `kernel < "4.12"`.
    """

    numbers: tuple[int, int, int, int]
    release: str

    @classmethod
    def parse(cls, release: str) -> KernelVersion:
        match = _RELEASE_RE.match(release)
        if not match:
            raise ValueError(
                f"cannot read a kernel version from {release!r} (e.g. 5.15.0-91-generic)"
            )
        major, minor, patch, sub, _rest = match.groups()
        return cls((int(major), int(minor), int(patch or 0), int(sub or 0)), release.strip())

    @staticmethod
    def _coerce(other: object) -> tuple[int, int, int, int] | None:
        if isinstance(other, KernelVersion):
            return other.numbers
        if isinstance(other, str):
            return KernelVersion.parse(other).numbers
        return None

    def __eq__(self, other: object) -> bool:
        numbers = self._coerce(other)
        return NotImplemented if numbers is None else self.numbers == numbers

    def __lt__(self, other: object) -> bool:
        numbers = self._coerce(other)
        if numbers is None:
            return NotImplemented
        return self.numbers < numbers

    def __hash__(self) -> int:
        return hash(self.numbers)

    @property
    def short(self) -> str:
        """2.6.32, 6.1 (the fourth number only when it is set)."""
        parts = list(self.numbers)
        if parts[3] == 0:
            parts = parts[:3]
        return ".".join(str(p) for p in parts)

    def __str__(self) -> str:
        return self.release


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}


@dataclass(frozen=True)
class KernelRange:
    """A conjunction of clauses: ">=3.4,<4.2". The empty string matches every kernel."""

    text: str
    clauses: tuple[tuple[str, tuple[int, int, int, int]], ...]

    @classmethod
    def parse(cls, text: str) -> KernelRange:
        clauses = []
        for part in text.split(","):
            if not part.strip():
                continue
            match = _CLAUSE_RE.match(part)
            if not match:
                raise ValueError(
                    f"bad kernel range clause {part.strip()!r} (write e.g. '>=3.4,<4.2')"
                )
            op, version = match.groups()
            clauses.append((op, KernelVersion.parse(version).numbers))
        return cls(text, tuple(clauses))

    def contains(self, version: KernelVersion) -> bool:
        v = version.numbers
        return all(_COMPARE[op](v, bound) for op, bound in self.clauses)
