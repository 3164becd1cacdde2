"""The baseline, the last phase of `check`: what a repository has already accepted, findings
recorded in a baseline, each known by a fingerprint that survives lines inserted above it and
any spelling of the files' paths. The baseline is read before anything is judged
(sources.check_config); here its entries accept the findings the earlier phases left, each
entry one finding.

A fingerprint is the rule, the file (as the caller names it: a SARIF URI, or the path from the
baseline's root), the key and the message with every line number taken out ("set again on
line 7", "99-x.conf:12") and every path cut to its last part (a message names another file as
its tree was given: `sysctl.d/99-x.conf` from `check etc/sysctl.d`, `etc/sysctl.d/99-x.conf`
from `check .`), hashed with the finding's rank among identical ones in its file. The same
function gives SARIF's partialFingerprints, so code scanning and the baseline follow a finding
the same way.

A run judges only what it was given (pre-commit passes the changed files): an entry is gone,
counted stale, only when this run could have found it again (its `Scope`), and a baseline
written again keeps the entries outside the run's scope.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sysctl_advisor.engine.check.findings import CheckReport, Suppressed
from sysctl_advisor.model.check_config import Baseline, BaselineEntry

if TYPE_CHECKING:
    from sysctl_advisor.engine.check.findings import CheckFinding

# Line numbers inside a message move when lines are inserted above; a fingerprint leaves them
# out so a finding is the same finding after such an edit.
_LINE_REFERENCE = r"\bline \d+|(?<=\S):\d+\b"
# The directories of a path a message names, spelt as the tree was given on the command line:
# a fingerprint keeps the file's own name only.
_DIRECTORIES = r"(?<!\S)\S*/(?=[^\s/])"
# What the file reader reports about a line from the other files read with it (a later file
# that replaces the value): a file checked without its directory cannot show it.
ACROSS_FILES = frozenset({"override"})


def fingerprints(findings: Iterable[CheckFinding], names: Iterable[str]) -> list[str]:
    """Each finding's fingerprint, its file named by `names` (in the same order)."""
    seen: dict[str, int] = {}
    prints = []
    for f, name in zip(findings, names, strict=True):
        message = re.sub(_DIRECTORIES, "", re.sub(_LINE_REFERENCE, "#", f.message))
        identity = "\0".join((f.id, name, f.key or "", message))
        # Findings identical but for their line are told apart by their order in the file.
        occurrence = seen.get(identity, 0)
        seen[identity] = occurrence + 1
        digest = hashlib.sha256(f"{identity}\0{occurrence}".encode("utf-8", "surrogatepass"))
        prints.append(digest.hexdigest())
    return prints


@dataclass(frozen=True)
class Scope:
    """What a run could have found again, its files named from the baseline's root: the
    findings of the rules that ran (`rules`) in the files it checked (`files`) and in the
    files that are no more (`gone`: deleted or renamed since), except, in a file it read on
    its own (`alone`), the findings that come from the other files read with it
    (`across_files`: check.overridden)."""

    rules: frozenset[str]
    files: frozenset[str]
    gone: frozenset[str] = frozenset()
    alone: frozenset[str] = frozenset()
    across_files: frozenset[str] = frozenset()

    def holds(self, entry: BaselineEntry) -> bool:
        if entry.rule not in self.rules:
            return False
        if entry.file in self.gone:
            return True
        if entry.file not in self.files:
            return False
        return entry.file not in self.alone or entry.rule not in self.across_files


def scope_of(report: CheckReport, name: Callable[[str], str], gone: frozenset[str]) -> Scope | None:
    """The scope of the run that made `report`, its files named by `name`; `gone`, the
    baseline's files that are no more. None for a report that says not what it reached: every
    entry within its scope."""
    reach = report.reach
    if reach is None:
        return None
    return Scope(
        reach.rules,
        frozenset(name(f) for f in report.files),
        gone,
        frozenset(name(f) for f in reach.alone),
        reach.across_files,
    )


def baseline_of(
    findings: list[CheckFinding], names: list[str], kept: Iterable[BaselineEntry] = ()
) -> Baseline:
    """The baseline that accepts exactly these findings (in report order), with the entries
    `kept` (another baseline's, outside the run's scope) in their files' places."""
    entries = [
        BaselineEntry(rule=f.id, file=name, fingerprint=print_, line=f.line, message=f.message)
        for f, name, print_ in zip(findings, names, fingerprints(findings, names), strict=True)
    ]
    entries += kept
    entries.sort(key=lambda e: (e.file, e.line or 0))  # stable: each run's order kept
    return Baseline(findings=entries)


def outside(baseline: Baseline, scope: Scope | None) -> list[BaselineEntry]:
    """The entries of `baseline` the run of `scope` could not have found again."""
    return [e for e in baseline.findings if scope is not None and not scope.holds(e)]


def in_baseline(
    findings: list[CheckFinding], names: list[str], baseline: Baseline, scope: Scope | None = None
) -> tuple[list[bool], int]:
    """Which findings the baseline accepts (each entry accepts one finding), and how many of
    its entries within `scope` (all without one) accepted none (fixed since: the baseline can
    be written again, smaller)."""
    left = Counter((e.rule, e.file, e.fingerprint) for e in baseline.findings)
    accepted = []
    for f, name, print_ in zip(findings, names, fingerprints(findings, names), strict=True):
        entry = (f.id, name, print_)
        accepted.append(left[entry] > 0)
        if left[entry] > 0:
            left[entry] -= 1
    if scope is None:
        return accepted, sum(left.values())
    stale = 0
    for e in baseline.findings:
        key = (e.rule, e.file, e.fingerprint)
        if left[key] > 0 and scope.holds(e):
            left[key] -= 1
            stale += 1
    return accepted, stale


@dataclass(frozen=True)
class BaselineInForce:
    """A baseline read, with how it names a finding's file (from the baseline's root, in `/`
    form) and the reason its accepted findings are given."""

    baseline: Baseline
    name: Callable[[str], str]
    reason: str
    gone: frozenset[str] = frozenset()  # its files that are no more


def accept_baselined(report: CheckReport, accepted: BaselineInForce) -> CheckReport:
    """The findings the baseline holds moved to the suppressed findings; `stale` counts its
    entries that match nothing any more, among those the run could have found again."""
    names = [accepted.name(f.file) for f in report.findings]
    scope = scope_of(report, accepted.name, accepted.gone)
    held, stale = in_baseline(report.findings, names, accepted.baseline, scope)
    pairs = list(zip(report.findings, held, strict=True))
    return replace(
        report,
        findings=[f for f, yes in pairs if not yes],
        suppressed=report.suppressed
        + [Suppressed(f, accepted.reason, "baseline") for f, yes in pairs if yes],
        stale=stale,
    )
