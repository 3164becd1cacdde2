"""The check engine as one pipeline, `run`: the files judged one configuration at a time, each
file's suppression comments applied to its findings (the directives); then the severities
--warn and --error give; then what accepts a finding after its file's comments, in order
(`acceptance`): the configuration's per-file ignores, then the baseline. Which rules run
(--select, --ignore) is settled before, and decides what the judge runs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from sysctl_advisor.engine.check.baseline import ACROSS_FILES, BaselineInForce, accept_baselined
from sysctl_advisor.engine.check.directives import accept_by_comments, read_comments
from sysctl_advisor.engine.check.findings import (
    CheckContext,
    CheckFinding,
    CheckReport,
    Reach,
    Suppressed,
    report_order,
    suppressed_order,
)
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.check.per_file import PerFileIgnores, accept_per_file
from sysctl_advisor.engine.check.selection import Tuning, with_severities
from sysctl_advisor.model.errors import InputError

if TYPE_CHECKING:
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
    from sysctl_advisor.model.check_input import CheckInput
    from sysctl_advisor.model.current_config import CurrentConfig

Phase = Callable[[CheckReport], CheckReport]


@dataclass(frozen=True)
class CheckPolicy:
    """What a team set for this check: the rules that run and their severities, what is
    known of the target, and the configuration's per-file ignores."""

    tuning: Tuning
    context: CheckContext
    per_file: PerFileIgnores | None = None


def run(
    kb: KnowledgeBase,
    policy: CheckPolicy,
    inputs: Iterable[CheckInput],
    baseline: BaselineInForce | None = None,
) -> CheckReport:
    """Check what `inputs` read; `baseline` is read before (a bad one fails before any file
    is judged)."""
    rules = {i: rule for i, rule in kb.check_rules.items() if i in policy.tuning.selected}
    checker = Checker(kb, rules, policy.context)
    alone: list[str] = []
    report = judged(checker, _noting_alone(inputs, alone))
    across = {rule.id for code, rule in checker.reported_by.items() if code in ACROSS_FILES}
    reach = Reach(frozenset(checker.rules_in_force()), tuple(alone), frozenset(across))
    report = with_severities(replace(report, reach=reach), policy.tuning.severities)
    for phase in acceptance(policy, baseline):
        report = phase(report)
    return report


def acceptance(policy: CheckPolicy, baseline: BaselineInForce | None) -> list[Phase]:
    """What accepts a finding its file's comments left, in order: the per-file ignores, then
    the baseline (an entry for a finding a per-file ignore accepts is stale)."""
    phases: list[Phase] = []
    per_file = policy.per_file
    if per_file is not None:
        phases.append(lambda report: accept_per_file(report, per_file))
    if baseline is not None:
        phases.append(lambda report: accept_baselined(report, baseline))
    return phases


def _noting_alone(inputs: Iterable[CheckInput], alone: list[str]) -> Iterator[CheckInput]:
    """The inputs as they come, each file read on its own (not as part of a directory) noted
    in `alone`, for the baseline phase."""
    for given in inputs:
        if given.config is not None and given.config.base is None:
            alone.append(given.path)
        yield given


def judged(checker: Checker, inputs: Iterable[CheckInput]) -> CheckReport:
    """The judge and the directives over each input, its names shown as a reviewer reads
    them; a line a tree reached through a link, and that was also checked on its own, said
    once."""
    findings: list[CheckFinding] = []
    suppressed: list[Suppressed] = []
    files: list[str] = []
    usable = 0
    linked: set[str] = set()  # files a tree reached through a link (99-sysctl.conf)
    for given in inputs:
        config = given.config
        if config is None:
            rule = checker.reported_by.get("unreadable")
            if rule is not None:
                findings.append(
                    CheckFinding(rule.id, rule.spec.severity, given.path, None, None, "not found")
                )
            continue
        usable += len(config.documents)
        found, accepted = judge_config(checker, config)
        shown = given.shown
        findings += [
            f if f.file == (name := shown(f.file)) else f._replace(file=name) for f in found
        ]
        suppressed += [
            s._replace(finding=s.finding._replace(file=shown(s.finding.file))) for s in accepted
        ]
        tree = config.base is not None
        files += [shown(f.split(" -> ")[0] if tree else f) for f in config.files]
        if tree:
            linked.update(shown(f.split(" -> ")[1]) for f in config.files if " -> " in f)
    if not usable:
        first = findings[0] if findings else None
        reason = f"{first.file}: {first.message}" if first else "no sysctl files to check"
        raise InputError(f"nothing could be checked ({reason})")
    if linked:  # `check /etc/sysctl.d /etc/sysctl.conf`: a linked file's line is said once
        findings = _once_per_link(findings, linked)
        suppressed = _once_per_link(suppressed, linked)
    findings.sort(key=report_order)
    suppressed.sort(key=suppressed_order)
    return CheckReport(findings, files, suppressed, checker.uncompared)


def judge_config(
    checker: Checker, config: CurrentConfig
) -> tuple[list[CheckFinding], list[Suppressed]]:
    """One configuration judged, then its files' suppression comments applied (a dump of
    the kernel's values has none)."""
    if not config.advisor_comments or config.kind == "dump":
        return checker.check_config(config), []
    comments = read_comments(
        config, checker.kb.check_rules, checker.reported_by.get("suppression-malformed")
    )
    found = checker.check_config(config, comments.addressed())
    unused = checker.reported_by.get("suppression-unused")
    return accept_by_comments(comments, found, checker.rules_in_force(), unused)


_Found = TypeVar("_Found", CheckFinding, Suppressed)


def _once_per_link(findings: list[_Found], linked: set[str]) -> list[_Found]:
    """The findings (or suppressed findings), less the second of two identical ones about a
    file that a tree read through a link and that was also checked on its own (a file named
    twice on the command line is still checked twice)."""
    kept: list[_Found] = []
    seen: set[_Found] = set()
    for found in findings:
        finding = found if isinstance(found, CheckFinding) else found.finding
        if finding.file in linked and found in seen:
            continue
        seen.add(found)
        kept.append(found)
    return kept
