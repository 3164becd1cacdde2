"""Which sysctl keys each Linux release has (rules/catalog/kernel-keys.yaml): the keys read from
the kernel's own sysctl tables at a few releases, the module a key needs loaded, and where a
key is read-only.

Rules never see this module: `judge` gives the checker, for a line's key on the target kernel,
a plain mapping (`kernel_key`) that check rules read like any other value. A release between
two read releases that agree takes their answer; between two that disagree, after the oldest
read or on a distribution's kernel that lacks an upstream key, the answer is "not verified"
(None), never a guess.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.model.kernel_version import KernelRange, KernelVersion
from sysctl_advisor.model.model_base import Field, SpecModel, model

# A release with nothing after its version numbers (and an -rc): mainline as its tag has it.
_PLAIN = re.compile(r"^\d+(?:\.\d+){1,3}(?:-rc\d+)?$")
_REMEMBERED = 20_000  # keys whose verdicts are kept per target release


@model
class ReadRelease(SpecModel):
    read: str = Field(pattern=r"^\d+(?:\.\d+){1,3}$", description="the exact release read")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    source: str = Field(max_length=120, description="the tree's entry in sources.yaml")


@model
class KernelKeysSpec(SpecModel):
    references: list[str] = Field(min_length=1)
    covered: list[str] = Field(min_length=1, max_length=100)
    not_covered: list[str] = Field(default_factory=list, max_length=100)
    vendor: dict[str, str] = Field(default_factory=dict, max_length=100)
    releases: dict[str, ReadRelease] = Field(min_length=1, max_length=100)
    keys: dict[str, str] = Field(min_length=1, max_length=100_000)
    modules: dict[str, str] = Field(default_factory=dict, max_length=100_000)
    read_only: dict[str, str] = Field(default_factory=dict, max_length=100_000)


def _series(version: KernelVersion) -> tuple[int, ...]:
    """The series a release belongs to: 2.6.32 below 3.0, major.minor after."""
    numbers = version.numbers
    return numbers[:3] if numbers[:2] == (2, 6) else numbers[:2]


def _under(parts: list[str], pattern: list[str]) -> bool:
    """Whether a key's components lie under a directory's (`*`: any one component)."""
    return len(parts) >= len(pattern) and all(
        p == "*" or p == q for p, q in zip(pattern, parts, strict=False)
    )


class KernelKeys:
    """The keys each read release has, and a target release's verdict on one key."""

    def __init__(self, path: Path, specs: SpecCache) -> None:
        self.path = path
        self.spec = specs.load(path, KernelKeysSpec, "the kernel keys table")
        order = sorted(self.spec.releases, key=lambda r: KernelVersion.parse(r).numbers)
        self.releases = order
        self._versions = [KernelVersion.parse(r) for r in order]
        self._series = [_series(v) for v in self._versions]
        self._verdicts: dict[tuple[str, str, bool], dict[str, Any]] = {}
        self._covered = [p.split(".") for p in self.spec.covered]
        self._not_covered = [p.split(".") for p in self.spec.not_covered]
        # the most components a listed key has: a longer key is none of them, whatever its `*`
        self._depth = max(name.count(".") for name in self.spec.keys) + 1

    def _runs(self, text: str) -> tuple[bool, ...]:
        """Which read releases a range text (runs joined by ' or ') holds."""
        ranges = [KernelRange.parse(run) for run in text.split(" or ")]
        return tuple(any(r.contains(v) for r in ranges) for v in self._versions)

    def entry(self, key: str) -> str | None:
        """The name the table lists the key under: itself, or with one component `*` (an
        interface's name), or None."""
        keys = self.spec.keys
        if key in keys:
            return key
        parts = key.split(".")
        if len(parts) > self._depth or "" in parts:  # (100,000 components cost nothing;
            return None  # an empty one names no interface)
        for i in range(2, len(parts)):
            name = ".".join([*parts[:i], "*", *parts[i + 1 :]])
            if name in keys:
                return name
        return None

    @functools.cached_property
    def interface_directories(self) -> frozenset[tuple[str, ...]]:
        """The per-interface trees: the directories whose next component the table writes
        `*` (net.ipv4.conf, net.ipv6.neigh, net.netfilter.nf_log, ...)."""
        found = set()
        for name in self.spec.keys:
            parts = name.split(".")
            if "*" in parts:
                found.add(tuple(parts[: parts.index("*")]))
        return frozenset(found)

    def covers(self, key: str) -> bool:
        """Whether the extraction covers the key's directory."""
        parts = key.split(".")
        return any(_under(parts, p) for p in self._covered) and not any(
            _under(parts, p) for p in self._not_covered
        )

    def vendor(self, key: str) -> str | None:
        return next(
            (who for p, who in self.spec.vendor.items() if key == p or key.startswith(p + ".")),
            None,
        )

    def verdict(self, key: str, version: KernelVersion, distro: bool) -> dict[str, Any]:
        """The target release's word on a key: `exists` (True, False, or None: not verified),
        `why` (a clause: the release that added or removed it, or why it is not verified),
        `release` (the read release the answer comes from), `module` (the module that must be
        loaded first) and `read_only` (True where the release's table makes it 0444)."""
        memo = (key, version.release, distro)
        found = self._verdicts.get(memo)
        if found is None:
            found = self._verdict(key, version, distro)
            if len(self._verdicts) < _REMEMBERED:
                self._verdicts[memo] = found
        return found

    def _verdict(self, key: str, version: KernelVersion, distro: bool) -> dict[str, Any]:
        name = self.entry(key)
        series, names = _series(version), self.releases
        oldest, newest = names[0], names[-1]
        result: dict[str, Any] = {
            "exists": None,
            "why": "",
            "release": None,
            "module": self.spec.modules.get(name) if name else None,
            "read_only": None,
            "vendor": self.vendor(key),
            "live": False,  # the running kernel's /proc/sys said (model.running_kernel)
            "shown": False,  # listed there now
            "late": None,  # the directory not listed there yet (a module, a mount)
        }
        covered = self.covers(key)
        if name is None and not covered:
            result["why"] = "its directory is not among those read from the kernel's tables"
            return result
        have = self._runs(self.spec.keys[name]) if name else (False,) * len(names)
        locked = self._runs(self.spec.read_only[name]) if name in self.spec.read_only else None
        if series < self._series[0]:
            result["why"] = f"releases before {oldest} were not read"
            return result
        if series in self._series:
            at = self._series.index(series)
        elif series > self._series[-1]:
            at = len(names) - 1
        else:
            after = next(i for i, s in enumerate(self._series) if s > series)
            if have[after - 1] != have[after]:
                change = "added" if have[after] else "removed"
                result["why"] = f"{change} between {names[after - 1]} and {names[after]}"
                return result
            at = after - 1 if locked is None or locked[after - 1] == locked[after] else -1
            if at < 0:  # present on both sides, writable on one only
                at = after - 1
                locked = None
        result["release"] = names[at]
        result["read_only"] = bool(locked[at]) if locked is not None else False
        if have[at]:
            result["exists"] = True
            return result
        if result["vendor"] is not None and not _PLAIN.match(version.release):
            result["why"] = f"a key of {result['vendor']}, not of mainline"
            return result
        if not covered:
            result["why"] = "its directory is not among those read whole from the kernel's tables"
            return result
        if distro:
            result["why"] = f"a distribution's kernel may carry it beyond {names[at]}"
            return result
        removed = any(have[:at])  # an earlier read release had it: backports add, never restore
        if not removed and series > self._series[-1]:
            # a release past the newest read may have added it: nothing was read there
            result["why"] = f"releases after {newest} were not read, and it may be new"
            return result
        if not removed and not _PLAIN.match(version.release):
            # a release with a suffix (5.15.0-91-generic, 3.10.0-1160.el7) is a distribution's
            # build, which may carry a key mainline added later or never had
            result["why"] = (
                f"mainline {names[at]} lacks it, and {version.release} is a distribution's "
                "build, which may carry it"
            )
            return result
        result["exists"] = False
        result["why"] = self._history(have, at, oldest, newest)
        return result

    def _history(self, have: tuple[bool, ...], at: int, oldest: str, newest: str) -> str:
        """Where a key missing at read release `at` comes and goes among the read releases."""
        names = self.releases
        later = next((i for i in range(at + 1, len(have)) if have[i]), None)
        if later is not None:
            return f"added between {names[later - 1]} and {names[later]}"
        earlier = next((i for i in range(at - 1, -1, -1) if have[i]), None)
        if earlier is not None:
            return f"removed between {names[earlier]} and {names[earlier + 1]}"
        return f"no release read from {oldest} to {newest} has it"

    def keys_of(self, version: KernelVersion) -> list[str]:
        """The keys the release has (interfaces as `*`), as far as the read releases say."""
        return [k for k in self.spec.keys if self.verdict(k, version, False)["exists"]]
