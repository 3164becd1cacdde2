"""Selection and severities, the phases of `check` that a team tunes: which rules run
(`--select`, `--ignore`: resolved before anything is judged, so a rule left out costs nothing
and a suppression comment naming it is not unused) and the severity each reports at
(`--warn`, `--error`: applied to the findings and to the suppressed findings, before the
per-file ignores and the baseline, and before --fail-on reads the report).

A rule is named by its id or by a prefix of it that ends at a `.` or `-` boundary, as ruff
reads rule codes: `check.glob` names check.glob, check.glob-unclosed and check.glob-unrelated;
`check.glob-` only the last two; `check` or `check.*` every rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from sysctl_advisor.engine.check.findings import CheckReport, report_order
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.near_names import did_you_mean

# A selector: an id or a prefix of one (ending at a boundary, or with `*` after it).
_SELECTOR = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*(?:[.-]\*?)?")
_MAX_SELECTOR = 100


@dataclass(frozen=True)
class Given:
    """Where a list of selectors was given, for the error that names one of them: the
    option (`--select`), or a configuration file and its key."""

    field: str
    path: str | None = None


def _selectors(values: Iterable[str] | None, where: Given) -> list[str]:
    """Each value split at commas, blanks trimmed; every part a well-formed selector."""
    found = []
    for value in values or ():
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if len(part) > _MAX_SELECTOR or _SELECTOR.fullmatch(part) is None:
                shown = part[:_MAX_SELECTOR].encode("unicode_escape").decode("ascii")
                raise InputError(
                    f"{shown!r} is not a rule id or prefix", path=where.path, field=where.field
                )
            found.append(part)
    return found


def _matches(selector: str, rule_id: str) -> bool:
    if selector.endswith("*"):
        return rule_id.startswith(selector[:-1])
    if selector.endswith((".", "-")):
        return rule_id.startswith(selector)
    return rule_id == selector or (rule_id.startswith(selector) and rule_id[len(selector)] in ".-")


def _named(selector: str, ids: Iterable[str], where: Given) -> set[str]:
    ids = list(ids)
    named = {rule_id for rule_id in ids if _matches(selector, rule_id)}
    if not named:
        raise InputError(
            f"{selector!r} names no check rule{did_you_mean(selector, ids)}",
            path=where.path,
            field=where.field,
        )
    return named


def named_rules(ids: Iterable[str], values: Iterable[str], where: Given) -> frozenset[str]:
    """The rules a list of selectors names (per-file-ignores' lists)."""
    ids = sorted(ids)
    return frozenset(r for s in _selectors(values, where) for r in _named(s, ids, where))


@dataclass(frozen=True)
class Tuning:
    """The rules that run, and the severity each changed one reports at."""

    selected: frozenset[str]
    severities: dict[str, str] = field(default_factory=dict)


def tuning(
    ids: Iterable[str],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    warn: list[str] | None = None,
    error: list[str] | None = None,
    given: dict[str, Given] | None = None,
) -> Tuning:
    """--select (default: every rule) less --ignore, then --warn and --error; a selector that
    names no rule, or a rule both warned and errored, is bad input, named by where it was
    `given` (by default the option: --select, ...)."""
    where = {name: Given(f"--{name}") for name in ("select", "ignore", "warn", "error")}
    where.update(given or {})
    ids = sorted(ids)
    selected: set[str] = set()
    chosen = _selectors(select, where["select"])
    for selector in chosen:
        selected |= _named(selector, ids, where["select"])
    if not chosen:
        selected = set(ids)
    for selector in _selectors(ignore, where["ignore"]):
        selected -= _named(selector, ids, where["ignore"])
    severities: dict[str, str] = {}
    for severity, values in (("warning", warn), ("error", error)):
        place = where["warn" if severity == "warning" else "error"]
        for selector in _selectors(values, place):
            for rule_id in _named(selector, ids, place):
                if severities.get(rule_id, severity) != severity:
                    message = f"{rule_id} is given both warn and error"
                    raise InputError(message, path=place.path, field=place.field)
                severities[rule_id] = severity
    return Tuning(frozenset(selected), severities)


def with_severities(report: CheckReport, severities: dict[str, str]) -> CheckReport:
    """The report with each finding of a rule --warn or --error names at that severity, in
    report order again; a suppressed finding too (SARIF keeps it at the severity it would
    have had)."""
    if not severities:
        return report
    severity = severities.get
    findings = [f._replace(severity=severity(f.id, f.severity)) for f in report.findings]
    suppressed = [
        s._replace(finding=s.finding._replace(severity=severity(s.finding.id, s.finding.severity)))
        for s in report.suppressed
    ]
    findings.sort(key=report_order)
    return replace(report, findings=findings, suppressed=suppressed)
