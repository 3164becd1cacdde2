"""What a repository has already accepted: findings recorded in a baseline, each known by a
fingerprint that survives lines inserted above it, and the rules a configuration turns off
for some files (`per-file-ignores`).

A fingerprint is the rule, the file (as the caller names it: a SARIF URI, or the path from the
baseline's directory), the key and the message with every line number taken out ("set again
on line 7", "99-x.conf:12"), hashed with the finding's rank among identical ones in its file.
The same function gives SARIF's partialFingerprints, so code scanning and the baseline follow
a finding the same way.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from sysctl_advisor.model.check_config import Baseline, BaselineEntry

if TYPE_CHECKING:
    from sysctl_advisor.engine.lint import CheckFinding

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
