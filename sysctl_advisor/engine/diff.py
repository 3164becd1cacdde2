"""Current configuration against the plan: per key, what is set, what should be, and why.

Status per key:
* `ok`      — the value in force (or configured) is the recommendation;
* `change`  — it differs;
* `missing` — the recommendation differs from the kernel default and nothing sets it;
* `remove`  — the configuration sets a key this kernel does not have (sysctl -p fails on it).
Vectors compare after whitespace normalisation (the kernel prints them tab-separated), port
sets as sets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from sysctl_advisor import __version__
from sysctl_advisor.engine.owners import probable_owner
from sysctl_advisor.knowledge.catalog import Catalog
from sysctl_advisor.knowledge.values import same_value
from sysctl_advisor.model.current_config import CurrentConfig, Problem
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.plan import Finding, Plan

DIFF_SCHEMA = "sysctl-advisor/diff/v1"
STATUSES = ("ok", "change", "missing", "remove")


@dataclass(frozen=True)
class DiffEntry:
    key: str
    current: str | None
    recommended: str | None
    kernel_default: str | None
    status: str
    source: str | None
    rationale: str
    # as the plan's Setting: who set `kernel_default` when it is the host's default but not
    # the kernel's own, and the kernel's own as modelled
    default_set_by: str | None = None
    modelled_default: str | None = None
    # the probable writer of a value in force that is not the plan's (the writers catalog)
    owner: str | None = None


@dataclass
class DiffReport:
    hostname: str | None
    kernel: str | None
    profile: str
    current_kind: str
    current_label: str
    entries: list[DiffEntry]
    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def drift(self) -> int:
        return sum(1 for e in self.entries if e.status != "ok")

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for e in self.entries if e.status == s) for s in STATUSES}

    def to_json_data(self) -> dict[str, Any]:
        return {
            "schema": DIFF_SCHEMA,
            "version": __version__,
            "host": {"hostname": self.hostname, "kernel": self.kernel},
            "profile": self.profile,
            "current": {"kind": self.current_kind, "label": self.current_label},
            "entries": [dataclasses.asdict(e) for e in self.entries],
            "drift": self.drift,
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "problems": [dataclasses.asdict(p) for p in self.problems],
        }


def build_diff(
    plan: Plan, current: CurrentConfig, catalog: Catalog, version: KernelVersion
) -> DiffReport:
    """`version` is the kernel the plan was computed for (Catalog.kernel_for)."""
    entries: list[DiffEntry] = []
    for setting in plan.settings:
        found = current.values.get(setting.key)
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
        findings=list(plan.findings),
        problems=list(current.problems),
    )
