"""The Plan: what a host should run, why, and what else to change. Renderers only format it.

Plain frozen dataclasses: the engine builds the plan from data it has already validated, so
there is nothing to check here, and a run should not pay for building validators it never uses.
`to_json_data` gives the "sysctl-advisor/plan/v1" document (the JSON plan contract in DESIGN.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from sysctl_advisor import __version__

PLAN_SCHEMA = "sysctl-advisor/plan/v1"


@dataclass(frozen=True)
class PlanHost:
    hostname: str | None
    kernel: str | None
    arch: str | None
    bits: int
    memory_total: int
    kernel_modelled_as: str
    lowmem: int | None = None
    page_size: int = 4096


@dataclass(frozen=True)
class PlanProfile:
    """The workload: its name (the profiles given, joined by +), its parameters (PROFILE.NAME
    where two profiles declare NAME with different values) and every profile it runs, the
    ones given and the ones they include."""

    name: str
    params: dict[str, Any]
    workloads: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The name as a Kubernetes label value or object name takes it (no `+`)."""
        return self.name.replace("+", ".")


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    values: list[int]
    unit: str
    current: str | None
    kernel_default: str | None
    rules: list[str]
    rationale: str
    references: list[str]
    section: str
    human: str
    capped_by: list[str] = field(default_factory=list)
    # The rationale short: each rule's one sentence (its `summary`, else its rationale), then
    # the merge's own lines; what a sysctl.conf prints by default.
    summary: str = ""
    # Who set the value `kernel_default` holds when it is the host's default but not the
    # kernel's own: a tuning daemon and its profile file, a sysctl file and line, or (no sysctl
    # file sets it) a setter not known; `modelled_default` is then the kernel's own, as the
    # catalog models it (None: not modelled). Both None: `kernel_default` is the kernel's.
    default_set_by: str | None = None
    modelled_default: str | None = None
    # What the rules asked for before caps, elements no rule is about filled from the value in
    # force (else the kernel default). Internal: not part of the JSON plan.
    wanted: list[int] | None = field(default=None, compare=False)
    # Every safety cap that applied to the key on this host, binding or not. Internal: a
    # capped key is never written as tuned's "at least" (a higher value in force would stay).
    caps: list[str] = field(default_factory=list, compare=False)
    # Each contributing rule's own citations (`references` holds them all, then the catalog
    # key's): a file prints each rule's sentence with the numbers of its sources. Internal.
    cited: dict[str, list[str]] = field(default_factory=dict, compare=False)
    # A value in force the plan keeps although the rules ask for another, which a check rule
    # flags: (the check rule's id, the reason), written as the line's suppression comment so
    # the advisor's own file passes its own check. Internal.
    accepted: list[tuple[str, str]] = field(default_factory=list, compare=False)
    # The workloads (profiles) whose rules gave the value.
    workloads: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PlanReference:
    """A source the plan cites: its id in the sources catalog, the citation in words and its
    address (None: a work with no stable address, cited by author, title and site)."""

    id: str
    citation: str
    url: str | None


@dataclass(frozen=True)
class Finding:
    id: str
    severity: str
    key: str | None
    message: str
    rule: str


@dataclass(frozen=True)
class Companion:
    target: str
    setting: str
    rationale: str
    rule: str


@dataclass(frozen=True)
class Unchanged:
    """A key some rule wanted, where the kernel default already gives as much, or where a cap
    holds it there (`capped_by`: somaxconn held to the kernel default by the memory a full
    queue takes)."""

    key: str
    kernel_default: str
    wanted: str
    rules: list[str]
    default_set_by: str | None = None  # as Setting's
    modelled_default: str | None = None
    capped_by: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OwnerNote:
    """Another writer on the host that writes a catalog key (the writers catalog): what it
    writes and when, in words, and the value (None: it depends; `file`: a boot write's
    sysctl.d file)."""

    key: str
    says: str
    value: str | None
    file: str | None = None
    forbids: bool = False  # no other value lasts
    target: str | None = None  # the configuration that makes another value last
    note: str = ""
    writer: str = ""  # its id in the writers catalog, and the write's place in its `writes`
    index: int = 0


@dataclass(frozen=True)
class Plan:
    host: PlanHost
    profile: PlanProfile
    settings: list[Setting]
    findings: list[Finding]
    companions: list[Companion]
    unchanged: list[Unchanged] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # rules whose `when` held for this host, in order
    applied_rules: list[str] = field(default_factory=list)
    # every source the settings cite, in the order first cited
    references: list[PlanReference] = field(default_factory=list)
    # the other writers of catalog keys on this host (diff names them). Internal: the JSON plan
    # says it in findings.
    owners: list[OwnerNote] = field(default_factory=list, compare=False)

    def to_json_data(self) -> dict[str, Any]:
        host = dataclasses.asdict(self.host)
        ordered_host = {
            name: host[name]
            for name in (
                "hostname",
                "kernel",
                "arch",
                "bits",
                "memory_total",
                "lowmem",
                "page_size",
                "kernel_modelled_as",
            )
        }
        return {
            "schema": PLAN_SCHEMA,
            "version": __version__,
            "host": ordered_host,
            "profile": _jsonable(dataclasses.asdict(self.profile)),
            "settings": [_setting_data(s) for s in self.settings],
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "companions": [dataclasses.asdict(c) for c in self.companions],
            "unchanged": [dataclasses.asdict(u) for u in self.unchanged],
            "notes": list(self.notes),
            "applied_rules": list(self.applied_rules),
            "references": [dataclasses.asdict(r) for r in self.references],
        }


def _setting_data(setting: Setting) -> dict[str, Any]:
    data = dataclasses.asdict(setting)
    del data["wanted"], data["caps"], data["cited"], data["accepted"]
    return data


def _jsonable(value: Any) -> Any:
    """Profile parameters hold only JSON scalars and lists; tuples become lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
