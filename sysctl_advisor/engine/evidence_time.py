"""Evidence has a time: a log line older than the value it argues against is not evidence
against that value.

The kernel log and the applications' logs keep their lines after the value they complained
about was raised, and the counters are cumulative since boot. A family of messages (the kernel
message catalog's `keys`, an application family's `key`) argues against the values in force of
its keys. Where the facts say when each of those values was set (facts.sysctl_file_settings:
the file that sets the value in force, and when it was last written) and every line of the
family was logged before (its `last_seen`), the lines speak of an earlier value: the rules do
not see them, and a finding says so. Where a time is missing on either side, the rules see the
lines as before (each rule then judges them against the value in force). A line that names what
the application needs (an app family's `wants`: Redis's backlog, Elasticsearch's map areas) is
no evidence against a value but a need, which its rule compares with the value in force: it is
not dated. The lines set aside
stay readable as `observed.earlier_events`: they are no evidence that the value in force is too
low, but they still show what the host needed, which a safety cap must not go below. What is
left is what rules read as `observed.logged`, one entry per kernel message family, whether the
facts carry the log reader's events, the kernel messages, or both.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from sysctl_advisor.knowledge.kernel_messages import logged
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.rules import FindingResult
from sysctl_advisor.knowledge.values import same_value
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.timestamps import moment

FINDING = "evidence.logged-before-value"


class SetAt(NamedTuple):
    """When the value in force of a key was set, and by what."""

    at: datetime
    by: str  # the file (and line) that sets it


def set_times(kb: KnowledgeBase, facts: HostFacts) -> dict[str, SetAt]:
    """Each key whose value in force is the one its file sets, with the file's time."""
    found: dict[str, SetAt] = {}
    files = facts.sysctl_files or {}
    for key, given in (facts.sysctl_file_settings or {}).items():
        at = moment(given.modified)
        held = facts.sysctl.get(key)
        if at is None or held is None or key not in files:
            continue
        if same_value(held, given.value, kb.catalog.keys.get(key)):
            found[key] = SetAt(at, files[key])
    return found


def date_evidence(
    kb: KnowledgeBase, facts: HostFacts, observed: dict[str, Any]
) -> list[FindingResult]:
    """Drop from `observed` (what rules see, plain data) the events whose every line was logged
    before the value in force of every key they argue against was set, and their lines from
    the kernel messages; a finding for each. Then `observed.logged`: each kernel message family
    the evidence left shows was logged, from the events and the messages alike."""
    findings = _set_aside(kb, facts, observed)
    observed["logged"] = logged(
        kb.message_matchers(),
        observed.get("kernel_messages") or [],
        observed.get("kernel_events") or [],
    )
    # A family's lines stay while any key they argue against was set before them; a rule that
    # reads one against another key asks whether that key was set after the last line
    # (`set_after`: the keys whose value in force a file set after it; unknown times: none).
    times = set_times(kb, facts)
    for entry in observed["logged"].values():
        last = moment(entry["last_seen"])
        entry["set_after"] = (
            sorted(k for k, t in times.items() if t.at > last) if last is not None else []
        )
    return findings


def _set_aside(
    kb: KnowledgeBase, facts: HostFacts, observed: dict[str, Any]
) -> list[FindingResult]:
    observed["earlier_events"] = []
    times = set_times(kb, facts)
    if not times:
        return []
    against: dict[str, list[str]] = {f.id: list(f.keys) for f in kb.message_families}
    # a family whose lines name what the application needs (`wants`: a backlog, map areas) is
    # not dated: the need is the application's, not the value's, and its rule compares it with
    # the value in force, whenever the line was logged
    against.update({a.id: [a.key] if a.key and a.wants is None else [] for a in kb.app_families})
    titles = {f.id: f.title for f in (*kb.message_families, *kb.app_families)}
    findings: list[FindingResult] = []
    stale: set[str] = set()  # families whose every line is older than the values
    earlier: list[dict[str, Any]] = []
    for field in ("kernel_events", "app_events"):
        events = observed.get(field)
        if not events:
            continue
        kept = []
        for event in events:
            keys = against.get(event["family"], [])
            last = moment(event.get("last_seen"))
            newer = [times[k] for k in keys if k in times]
            if (
                last is None
                or not keys
                or len(newer) < len(keys)
                or any(last >= t.at for t in newer)
            ):
                kept.append(event)
                continue
            title = titles.get(event["family"], event["family"])
            findings.append(_finding(event, title, keys, newer))
            stale.add(event["family"])
            earlier.append(event)
        observed[field] = kept
    # still what the host needed before the value in force: a cap's floor may read them
    observed["earlier_events"] = earlier
    matchers = kb.message_matchers()
    messages = observed.get("kernel_messages") or []
    if stale and messages:  # the same lines, as the facts' kernel_messages carry them
        gone = [m for family in stale for m in matchers.get(family, ())]
        observed["kernel_messages"] = [
            line for line in messages if not any(m in line.lower() for m in gone)
        ]
    return findings


def _finding(
    event: dict[str, Any], title: str, keys: list[str], times: list[SetAt]
) -> FindingResult:
    count = event["count"]
    set_words = "; ".join(
        f"{key} by {t.by} (written {t.at.isoformat(' ', 'seconds').removesuffix('+00:00')} UTC)"
        for key, t in zip(keys, times, strict=True)
    )
    return FindingResult(
        FINDING,
        "info",
        keys[0],
        f'"{title}" was logged {count:,} time{"s" if count != 1 else ""}, last at '
        f"{event['last_seen']}, before the value in force was set ({set_words}): the lines "
        "speak of the value before it, so they are not evidence against this one. New lines "
        "logged after it would be.",
        FINDING,
    )
