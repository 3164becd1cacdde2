"""The Plan: what a host should run, why, and what else to change. Renderers only format it.

The plan is the "sysctl-advisor/plan/v1" document of `recommend --format json` (the JSON plan
contract), defined once: `to_json_data` writes these models field by field
(`plain_data`), and the published schema (sysctl_advisor/schemas/plan.schema.json) is
generated from them (`python -m tests.regenerate`). A field marked
`exclude=True` is the engine's own, in neither. The engine builds the plan from data it has
already validated, so nothing here is validated when a plan is built, and a run never imports
pydantic for it.

Field names are a contract: a change that breaks a reader gets a new schema version (`…/v2`),
never an edit of v1. Adding a field is an addition, not a break, but a v1 schema forbids
unknown fields so that the tests notice every addition and the schema is regenerated with it.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from sysctl_advisor import __version__
from sysctl_advisor.model.model_base import (
    Field,
    JsonValue,
    Record,
    document_config,
    model,
    plain_data,
)
from sysctl_advisor.model.severity import Severity

PLAN_SCHEMA: Final = "sysctl-advisor/plan/v1"
VERSION = "the sysctl-advisor version that wrote it (sysctl_advisor.__version__)"
SET_BY = (
    "who set kernel_default when it is this host's default but not the kernel's own: a tuning "
    'daemon and its profile file ("tuned (/usr/lib/tuned/network-throughput/tuned.conf:14)"), '
    "a sysctl file and line, or no sysctl file (a setter not known); null: the kernel's own"
)
MODELLED = "with default_set_by: the kernel's own default as modelled; null when not modelled"


@model
class PlanHost(Record):
    """The host the plan is for, as its facts describe it."""

    __pydantic_config__ = document_config("PlanHostDocument")

    hostname: str | None
    kernel: str | None = Field(description="uname -r as given; null when unknown")
    arch: str | None = Field(description="uname -m as given; null when unknown")
    bits: Literal[32, 64]
    memory_total: int = Field(ge=0, description="bytes")
    lowmem: int | None = Field(
        default=None, ge=0, description="bytes of lowmem (32-bit hosts); else null"
    )
    page_size: int = Field(default=4096, ge=1, description="bytes")
    kernel_modelled_as: str = Field(
        description="the kernel version whose defaults and keys the plan was computed for"
    )


# The workload: its name, its parameters and every profile it runs, the ones given and the ones
# they include (a docstring would be a new description in the published schema).
@model(kw_only=False)
class PlanProfile(Record):
    __pydantic_config__ = document_config("PlanProfileDocument")

    name: str = Field(description="the profiles given, joined by + (frontend-proxy+redis)")
    params: dict[str, JsonValue] = Field(
        description="every parameter's value for this host; PROFILE.NAME where two profiles "
        "declare NAME with different values"
    )
    workloads: list[str] = Field(
        default_factory=list,
        description="every profile the host runs: the ones given, then the ones they include",
    )

    @property
    def label(self) -> str:
        """The name as a Kubernetes label value or object name takes it (no `+`)."""
        return self.name.replace("+", ".")


@model(kw_only=False)
class Setting(Record):
    """One sysctl the host should set, with the arithmetic and sources behind it."""

    __pydantic_config__ = document_config("SettingDocument")

    key: str
    value: str = Field(
        description="exactly what the sysctl.conf line carries (vectors space-separated)"
    )
    values: list[int] = Field(description="the value's numbers")
    unit: str = Field(description="the catalog's unit: bytes, pages, count, seconds, boolean, …")
    current: str | None = Field(description="the value in force; null when unknown")
    kernel_default: str | None = Field(
        description="this host's default: the kernel's boot default, or the value a tuning "
        "daemon or a sysctl file set in its place (default_set_by says which); null when unknown"
    )
    rules: list[str] = Field(description="ids of the rules that set it")
    rationale: str
    references: list[str] = Field(
        description="the sources behind it: `ID` or `ID: where in it`, each ID one of the "
        "document's `references`"
    )
    section: str = Field(description="the catalog section it is listed under")
    human: str = Field(description="the value in human units (pages as GiB, …)")
    capped_by: list[str] = Field(
        default_factory=list, description="ids of the safety caps that lowered it"
    )
    # What a sysctl.conf prints by default.
    summary: str = Field(
        default="",
        description="the rationale short: each rule's one sentence, then how the values merged",
    )
    # `modelled_default` is the kernel's own, as the catalog models it (None: not modelled).
    # Both None: `kernel_default` is the kernel's.
    default_set_by: str | None = Field(default=None, description=SET_BY)
    modelled_default: str | None = Field(default=None, description=MODELLED)
    # What the rules asked for before caps, elements no rule is about filled from the value in
    # force (else the kernel default).
    wanted: list[int] | None = Field(default=None, compare=False, exclude=True)
    # Every safety cap that applied to the key on this host, binding or not: a capped key is
    # never written as tuned's "at least" (a higher value in force would stay).
    caps: list[str] = Field(default_factory=list, compare=False, exclude=True)
    # Each contributing rule's own citations (`references` holds them all, then the catalog
    # key's): a file prints each rule's sentence with the numbers of its sources.
    cited: dict[str, list[str]] = Field(default_factory=dict, compare=False, exclude=True)
    # A value in force the plan keeps although the rules ask for another, which a check rule
    # flags: (the check rule's id, the reason), written as the line's suppression comment so
    # the advisor's own file passes its own check.
    accepted: list[tuple[str, str]] = Field(default_factory=list, compare=False, exclude=True)
    workloads: list[str] = Field(
        default_factory=list, description="the profiles whose rules gave the value"
    )


@model(kw_only=False)
class PlanReference(Record):
    """A public source the settings cite."""

    __pydantic_config__ = document_config("ReferenceDocument")

    id: str = Field(description="its id in the advisor's sources catalog")
    citation: str = Field(description="author, title, site and date; or a Linux file or commit")
    url: str | None = Field(description="an address a browser opens; null for a work cited by name")


@model(kw_only=False)
class Finding(Record):
    __pydantic_config__ = document_config("FindingDocument")

    id: str
    severity: Severity
    key: str | None = Field(description="the sysctl the finding is about, if any")
    message: str
    rule: str = Field(description="id of the rule that raised it")


@model(kw_only=False)
class Companion(Record):
    """A setting outside sysctl that the sysctl values depend on."""

    __pydantic_config__ = document_config("CompanionDocument")

    target: str = Field(description="what to change: nginx, ethtool, limits.conf, systemd, …")
    setting: str = Field(description="the line or command to apply")
    rationale: str
    rule: str


@model(kw_only=False)
class Unchanged(Record):
    """A key a rule wanted, where the kernel default already gives as much, or a cap holds it
    there."""

    __pydantic_config__ = document_config("UnchangedDocument")

    key: str
    kernel_default: str
    wanted: str
    rules: list[str]
    default_set_by: str | None = Field(default=None, description=SET_BY)
    modelled_default: str | None = Field(default=None, description=MODELLED)
    capped_by: list[str] = Field(
        default_factory=list,
        description="the caps that hold it at the kernel default, below what the rules "
        "wanted; empty: the default already gives as much",
    )


@model(kw_only=False)
class OwnerNote(Record):
    """Another writer on the host that writes a catalog key (the writers catalog): what it
    writes and when, in words, and the value (None: it depends; `file`: a boot write's
    sysctl.d file). The engine's own: the JSON plan says it in findings."""

    key: str
    says: str
    value: str | None
    file: str | None = None
    forbids: bool = False  # no other value lasts
    target: str | None = None  # the configuration that makes another value last
    note: str = ""
    writer: str = ""  # its id in the writers catalog, and the write's place in its `writes`
    index: int = 0


@model
class Plan(Record):
    """What `sysctl-advisor recommend --format json` prints."""

    __pydantic_config__ = document_config("sysctl-advisor plan", PLAN_SCHEMA)

    schema: Literal["sysctl-advisor/plan/v1"] = Field(
        default=PLAN_SCHEMA, description="this document's format and version"
    )
    version: str = Field(default=__version__, description=VERSION)
    host: PlanHost
    profile: PlanProfile
    settings: list[Setting]
    findings: list[Finding]
    companions: list[Companion]
    unchanged: list[Unchanged] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    applied_rules: list[str] = Field(
        default_factory=list, description="rules whose `when` held for this host, in order"
    )
    references: list[PlanReference] = Field(
        default_factory=list,
        description="every source the settings cite, in the order first cited",
    )
    # the other writers of catalog keys on this host (diff names them)
    owners: list[OwnerNote] = Field(default_factory=list, compare=False, exclude=True)

    def to_json_data(self) -> dict[str, Any]:
        """The document, as `recommend --format json` writes it."""
        data: dict[str, Any] = plain_data(self)
        return data
