"""Current configuration against the plan: per key, what is set, what should be, and why (the
report, its statuses and its JSON document: `model.diff`). Vectors compare after whitespace
normalisation (the kernel prints them tab-separated), port sets as sets.
"""

from __future__ import annotations

from sysctl_advisor.engine.observed_owners import Observed
from sysctl_advisor.engine.owners import probable_owner
from sysctl_advisor.knowledge.catalog import Catalog
from sysctl_advisor.knowledge.values import same_value
from sysctl_advisor.model.current_config import CurrentConfig
from sysctl_advisor.model.diff import DiffEntry, DiffReport, DiffStatus, ObservedOwner
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.plan import Plan


def build_diff(
    plan: Plan,
    current: CurrentConfig,
    catalog: Catalog,
    version: KernelVersion,
    observed: Observed | None = None,
) -> DiffReport:
    """`version` is the kernel the plan was computed for (Catalog.kernel_for); `observed`,
    the writes the facts' record holds (engine.observed_owners), names each drifted key's
    observed owners."""
    entries: list[DiffEntry] = []
    for setting in plan.settings:
        found = current.values.get(setting.key)
        status: DiffStatus
        if found is None:
            status = "missing"
        elif same_value(found.value, setting.value, catalog.keys.get(setting.key)):
            status = "ok"
        else:
            status = "change"
        owner = (
            probable_owner(plan.owners, setting.key, found.value, found.source)
            if found is not None and status == "change"
            else None
        )
        entries.append(
            DiffEntry(
                key=setting.key,
                current=found.value if found else None,
                recommended=setting.value,
                kernel_default=setting.kernel_default,
                status=status,
                source=found.source if found else None,
                rationale=setting.rationale,
                default_set_by=setting.default_set_by,
                modelled_default=setting.modelled_default,
                owner=owner,
                observed=_observed(observed, setting.key) if status != "ok" else None,
            )
        )
    planned = {s.key for s in plan.settings}
    for key, found in current.values.items():
        spec = catalog.keys.get(key)
        if key in planned or spec is None or catalog.exists(key, version):
            continue
        entries.append(
            DiffEntry(
                key=key,
                current=found.value,
                recommended=None,
                kernel_default=None,
                status="remove",
                source=found.source,
                rationale=(
                    f"Linux {plan.host.kernel_modelled_as} has no {key} "
                    f"(it exists in {spec.exists or 'other kernels'}); writing it fails"
                    + (
                        ""
                        if found.ignore_failure
                        else ", and `sysctl -p` reports an error unless the line starts with '-'"
                    )
                    + "."
                ),
            )
        )
    return DiffReport(
        hostname=plan.host.hostname,
        kernel=plan.host.kernel,
        profile=plan.profile.name,
        current_kind=current.kind,
        current_label=current.label,
        entries=entries,
        findings=[*plan.findings, *(observed.findings if observed is not None else ())],
        problems=list(current.problems),
        provenance=observed.provenance if observed is not None else None,
    )


def _observed(observed: Observed | None, key: str) -> list[ObservedOwner] | None:
    """A drifted key's observed owners; None where the facts carry no record, or none made."""
    if observed is None or not observed.available:
        return None
    return list(observed.by_key.get(key, ()))
