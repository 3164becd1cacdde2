"""Per-file ignores, the phase of `check` after the severities: the rules a repository's
configuration turns off for some files (`per-file-ignores`), their findings accepted with the
configuration named as the reason."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from sysctl_advisor.engine.check.findings import CheckFinding, CheckReport, Suppressed
from sysctl_advisor.engine.check.selection import Given, named_rules


@dataclass(frozen=True)
class PerFileIgnores:
    """The rules each pattern turns off; how a finding's file is named for the patterns (its
    path from the configuration's directory, None outside it, and its own name); the reason
    its accepted findings are given."""

    patterns: dict[str, frozenset[str]]
    name: Callable[[str], tuple[str | None, str]]
    reason: str


def ignore_patterns(
    ids: Iterable[str], table: Mapping[str, list[str]], where: Given
) -> dict[str, frozenset[str]]:
    """The rules each pattern of a `per-file-ignores` table names; a selector naming no rule
    is bad input, named by the table's key for the pattern."""
    ids = list(ids)
    return {
        pattern: named_rules(ids, selectors, replace(where, field=f"{where.field}.{pattern}"))
        for pattern, selectors in table.items()
    }


def ignored_for_file(
    patterns: dict[str, frozenset[str]], name: str | None, base_name: str
) -> Callable[[str], bool]:
    """Whether a rule is turned off for a file by `per-file-ignores`: a pattern with a `/` is
    matched (fnmatch, case-sensitive) against `name`, the file's path from the
    configuration's directory (None: the file is outside it), one without against the file's
    own name."""
    rules: set[str] = set()
    for pattern, ids in patterns.items():
        target = base_name if "/" not in pattern else name
        if target is not None and fnmatch.fnmatchcase(target, pattern.removeprefix("./")):
            rules |= ids
    return rules.__contains__


def accept_per_file(report: CheckReport, ignores: PerFileIgnores) -> CheckReport:
    """The findings of rules turned off for their file moved to the suppressed findings."""
    kept: list[CheckFinding] = []
    accepted: list[Suppressed] = []
    tests: dict[str, Callable[[str], bool]] = {}
    for f in report.findings:
        if f.file not in tests:
            tests[f.file] = ignored_for_file(ignores.patterns, *ignores.name(f.file))
        if tests[f.file](f.id):
            accepted.append(Suppressed(f, ignores.reason, "config"))
        else:
            kept.append(f)
    return replace(report, findings=kept, suppressed=report.suppressed + accepted)
