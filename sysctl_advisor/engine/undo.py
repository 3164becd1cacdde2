"""The undo of a plan: every key the plan changes, back to what was there before it.

What "before" is, for each setting of the plan:

* the value in force in the facts (`Setting.current`), as the kernel printed it, every element
  of a vector (whitespace made single spaces: the kernel splits a vector on any of it);
* else, when the facts do not show it, the kernel's own default for this host, as the catalog
  models it: `kernel_default`, or `modelled_default` where `kernel_default` is a host default
  someone set (the plan builder takes a host default only from a value in force, so with no
  value in force `kernel_default` is the kernel's own). This is exact only when no sysctl
  file or tool of the host sets the key: the undo says so;
* else (no value in force and no modelled default, or defaults modelled for a kernel the facts
  do not name) nothing can be restored exactly: no line is written, and a warning finding
  names the key and how to read it, never a guess.

A capacity is never restored below its floor (the catalog's `floor`: the least it may hold
and the host still work; the plan never writes less): a value in force that low is a broken
host or a facts file that lies, and root applying it would starve the host (`fs.file-max = 1`
fails every open() of every unprivileged process). No line is written, so the plan's value
stays, and a warning finding names the key, the value, the floor and why.

A setting whose plan value is already the value before (the plan leaves it as it is) needs no
undo line; the undo's notes count them. The undo plan keeps the plan's host and profile; its
settings cite no sources (they restore, they do not advise), keep the rules whose change they
undo, and carry the values in force as `current`. Companions (changes outside sysctl) are not
undone: a note names them.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from sysctl_advisor.knowledge.catalog import Catalog, Floor
from sysctl_advisor.knowledge.values import human, numbers, parse_current, same_value
from sysctl_advisor.model.diff import DiffEntry, DiffReport
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.kernel_write import kernel_write
from sysctl_advisor.model.plan import Finding, Plan, Setting

UNDO_FINDING = "undo.not-restorable"
BELOW_FLOOR_FINDING = "undo.below-floor"
REFUSED_FINDING = "undo.refused-by-kernel"
UNDO_RULE = "undo"
# a diff of an undo: CURRENT is the plan's value, RECOMMENDED the value the undo restores
UNDO_DIFF_KIND = "undo"


class Before(NamedTuple):
    """What a key held before the plan: its value and where that value comes from."""

    value: str
    from_facts: bool  # True: in force in the facts; False: the kernel default, as modelled


def value_before(setting: Setting, plan: Plan) -> Before | None:
    """The value the undo restores for `setting`, or None when it cannot be known exactly."""
    if setting.current is not None:
        return Before(" ".join(setting.current.split()), True)
    if plan.host.kernel is None:  # defaults modelled for a kernel the facts do not name
        return None
    own = setting.modelled_default if setting.default_set_by is not None else setting.kernel_default
    return None if own is None else Before(" ".join(own.split()), False)


def undo_plan(plan: Plan, catalog: Catalog, read_at: str | None = None) -> Plan:
    """The plan that restores what `plan` changes (see the module's docstring). `read_at`:
    when the facts' values in force were read (ISO 8601), said in each rationale."""
    settings: list[Setting] = []
    findings: list[Finding] = []
    kept = 0
    from_defaults: list[str] = []
    when = f" (read {read_at})" if read_at else ""
    for s in plan.settings:
        spec = catalog.keys.get(s.key)
        before = value_before(s, plan)
        if before is None:
            findings.append(_not_restorable(s, plan))
            continue
        if same_value(before.value, s.value, spec):
            kept += 1
            continue
        parsed = parse_current(before.value, spec) if spec is not None else None
        if spec is not None and spec.floor is not None and _below(before.value, spec.floor.value):
            findings.append(_below_floor(s, before, spec.floor))
            continue
        refused = _refused(s.key, parsed, catalog, plan)
        if refused is not None:
            findings.append(_refused_finding(s, before, refused))
            continue
        if before.from_facts:
            where = f"the value in force in the facts{when}"
        else:
            from_defaults.append(s.key)
            where = (
                f"the kernel default for Linux {plan.host.kernel_modelled_as} as modelled (the "
                "facts do not show the value in force; right if no file or tool of this host "
                "sets the key)"
            )
        shown = before.value if before.value else "an empty value"
        text = f"Restores {shown}, {where}, in place of the plan's {s.value or 'empty value'}."
        settings.append(
            dataclasses.replace(
                s,
                value=before.value,
                values=numbers(parsed) if parsed is not None else [],
                human=human(parsed, spec, plan.host.page_size)
                if parsed is not None and spec is not None
                else before.value,
                rationale=text,
                summary=text,
                references=[],
                capped_by=[],
                wanted=None,
                caps=[],
                cited={},
            )
        )
    return dataclasses.replace(
        plan,
        settings=settings,
        findings=findings,
        companions=[],
        unchanged=[],
        notes=_notes(plan, kept, from_defaults, when),
        applied_rules=[],
        references=[],
    )


def _below(value: str, floor: int) -> bool:
    """Whether writing `value` to a capacity would store less than its floor (what the kernel
    stores, as `sysctl -p` writes it: `1 2` stores 1)."""
    stored = kernel_write(value, 1).stored
    return bool(stored) and stored[0] < floor


def _refused(key: str, parsed: object, catalog: Catalog, plan: Plan) -> str | None:
    """Why the kernel the plan is for refuses the write of a value before the plan (one it
    reads back but no write may set: `vm.dirty_bytes = 0` while the ratio is in force), None
    when it takes it."""
    if parsed is None:
        return None
    bounds = catalog.bounds(key, KernelVersion.parse(plan.host.kernel_modelled_as), plan.host.bits)
    if bounds is None:
        return None
    values = numbers(parsed)  # type: ignore[arg-type]
    low, high = bounds["min"], bounds["max"]
    if any((low is not None and v < low) or (high is not None and v > high) for v in values):
        why = bounds["note"] or f"outside {low}..{high}"
        return f"{why}: {bounds['outside']}" if bounds["outside"] else why
    return None


def _not_restored(finding: str, s: Setting, before: Before, why: str, after: str) -> Finding:
    """A warning that the undo leaves `s` at the plan's value: `why` the value before it is
    not written back, `after` what to do instead."""
    where = "in force in the facts" if before.from_facts else "the modelled kernel default"
    return Finding(
        id=finding,
        severity="warning",
        key=s.key,
        message=(
            f"Not restored: {s.key} = {before.value}, {where}, {why}; the plan's {s.value} "
            f"stays. {after}"
        ),
        rule=UNDO_RULE,
    )


def _refused_finding(s: Setting, before: Before, why: str) -> Finding:
    return _not_restored(
        REFUSED_FINDING,
        s,
        before,
        f"is a value the kernel reads back but will not take from a write ({why.rstrip('.')}), "
        "so restoring it would fail or change nothing",
        "Restore what was in force another way (for a key with a twin, such as vm.dirty_bytes "
        "and vm.dirty_ratio, write the twin's value before the plan), or read `sysctl -a` on "
        f"the host before applying and add the lines by hand; {s.key} is left out.",
    )


def _below_floor(s: Setting, before: Before, floor: Floor) -> Finding:
    return _not_restored(
        BELOW_FLOOR_FINDING,
        s,
        before,
        f"is below its floor {floor.value}, and restoring it would {floor.breaks}",
        f"{floor.reason} A value in force this low is a broken host or a facts file that lies; "
        f"if the host really ran with it, read it with `sysctl {s.key}` and add the line to "
        "this file by hand.",
    )


def _not_restorable(s: Setting, plan: Plan) -> Finding:
    why = (
        "the facts name no kernel, so its default is not known"
        if s.current is None and plan.host.kernel is None
        else "the kernel default is not modelled for this kernel"
    )
    return Finding(
        id=UNDO_FINDING,
        severity="warning",
        key=s.key,
        message=(
            f"{s.key} cannot be restored: the facts do not show the value in force and {why}. "
            f"Before applying the plan, run `sysctl {s.key}` on the host and add its "
            f"`{s.key} = VALUE` line to this undo file."
        ),
        rule=UNDO_RULE,
    )


def _notes(plan: Plan, kept: int, from_defaults: list[str], when: str) -> list[str]:
    notes = [
        f"Undo of the {plan.profile.name} plan: each key it changes goes back to the value in "
        f"force in the facts{when}, or, where they do not show it, to the kernel default. To "
        "undo, remove the plan's file (e.g. /etc/sysctl.d/90-sysctl-advisor.conf) so boot no "
        "longer applies it, then apply this one once with `sysctl -p FILE`."
    ]
    if kept:
        notes.append(
            f"{kept} setting{'s' if kept != 1 else ''} of the plan leave{'s' if kept == 1 else ''}"
            " the value as it was: no undo line."
        )
    if from_defaults:
        one = len(from_defaults) == 1
        notes.append(
            f"{len(from_defaults)} {'key goes' if one else 'keys go'} back to the kernel default "
            f"({', '.join(from_defaults)}): the facts do not show "
            f"{'its' if one else 'their'} value in force. A host file that sets "
            f"{'it' if one else 'one'} sets it again with `sysctl --system` after this file."
        )
    if plan.companions:
        targets = ", ".join(dict.fromkeys(c.target for c in plan.companions))
        notes.append(
            f"The plan's {len(plan.companions)} change{'s' if len(plan.companions) != 1 else ''} "
            f"outside sysctl ({targets}) are not undone here."
        )
    return notes


def undo_diff(plan: Plan, undo: Plan, values_from: str) -> DiffReport:
    """What the undo would do, as a diff report: per key of the plan, the plan's value
    (`current`: in force once the plan is applied) and the value the undo restores
    (`recommended`); `change` where the undo moves it, `ok` where the plan leaves the value as
    it was. Keys the undo cannot restore are its findings. `values_from` says where the
    values in force came from (the diff's kind and label)."""
    restored = {s.key: s for s in undo.settings}
    lost = {f.key for f in undo.findings}
    entries: list[DiffEntry] = []
    for s in plan.settings:
        if s.key in lost:
            continue
        back = restored.get(s.key)
        entries.append(
            DiffEntry(
                key=s.key,
                current=s.value,
                recommended=back.value if back is not None else s.value,
                kernel_default=s.kernel_default,
                status="change" if back is not None else "ok",
                source=None,
                rationale=back.rationale if back is not None else "The plan leaves it as it was.",
                default_set_by=s.default_set_by,
                modelled_default=s.modelled_default,
            )
        )
    return DiffReport(
        hostname=plan.host.hostname,
        kernel=plan.host.kernel,
        profile=plan.profile.name,
        current_kind=UNDO_DIFF_KIND,
        current_label=values_from,
        entries=entries,
        findings=list(undo.findings),
    )
