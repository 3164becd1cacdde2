"""The baseline, the last phase of `check`: what a repository has already accepted, findings
recorded in a baseline, each known by a fingerprint that survives lines inserted above it.
The baseline is read before anything is judged (sources.check_config); here its entries accept
the findings the earlier phases left, each entry one finding.

A fingerprint is the rule, the file (as the caller names it: a SARIF URI, or the path from the
baseline's directory), the key and the message with every line number taken out ("set again
on line 7", "99-x.conf:12"), hashed with the finding's rank among identical ones in its file.
The same function gives SARIF's partialFingerprints, so code scanning and the baseline follow
a finding the same way.
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
_LINE_REFERENCE = re.compile(r"\bline \d+|(?<=\S):\d+\b")


def fingerprints(findings: Iterable[CheckFinding], names: Iterable[str]) -> list[str]:
    """Each finding's fingerprint, its file named by `names` (in the same order)."""
    seen: dict[str, int] = {}
    prints = []
    for f, name in zip(findings, names, strict=True):
        message = _LINE_REFERENCE.sub("#", f.message)
        identity = "\0".join((f.id, name, f.key or "", message))
        # Findings identical but for their line are told apart by their order in the file.
        occurrence = seen.get(identity, 0)
        seen[identity] = occurrence + 1
        digest = hashlib.sha256(f"{identity}\0{occurrence}".encode("utf-8", "surrogatepass"))
        prints.append(digest.hexdigest())
    return prints


def baseline_of(findings: list[CheckFinding], names: list[str]) -> Baseline:
    """The baseline that accepts exactly these findings (in report order)."""
    entries = [
        BaselineEntry(rule=f.id, file=name, fingerprint=print_, line=f.line, message=f.message)
        for f, name, print_ in zip(findings, names, fingerprints(findings, names), strict=True)
    ]
    return Baseline(findings=entries)


def in_baseline(
    findings: list[CheckFinding], names: list[str], baseline: Baseline
) -> tuple[list[bool], int]:
    """Which findings the baseline accepts (each entry accepts one finding), and how many of
    its entries accepted none (fixed since: the baseline can be written again, smaller)."""
    left = Counter((e.rule, e.file, e.fingerprint) for e in baseline.findings)
    accepted = []
    for f, name, print_ in zip(findings, names, fingerprints(findings, names), strict=True):
        entry = (f.id, name, print_)
        accepted.append(left[entry] > 0)
        if left[entry] > 0:
            left[entry] -= 1
    return accepted, sum(left.values())


@dataclass(frozen=True)
class BaselineInForce:
    """A baseline read, with how it names a finding's file (from the baseline's directory,
    in `/` form) and the reason its accepted findings are given."""

    baseline: Baseline
    name: Callable[[str], str]
    reason: str


def accept_baselined(report: CheckReport, accepted: BaselineInForce) -> CheckReport:
    """The findings the baseline holds moved to the suppressed findings; `stale` counts its
    entries that match nothing any more."""
    names = [accepted.name(f.file) for f in report.findings]
    held, stale = in_baseline(report.findings, names, accepted.baseline)
    pairs = list(zip(report.findings, held, strict=True))
    return replace(
        report,
        findings=[f for f, yes in pairs if not yes],
        suppressed=report.suppressed
        + [Suppressed(f, accepted.reason, "baseline") for f, yes in pairs if yes],
        stale=stale,
    )
