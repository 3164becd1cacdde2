"""The JSON documents of `recommend --format json`, `diff --format json` and the fleet's
summary.json, as models: the published JSON Schemas (sysctl_advisor/schemas/) are generated
from them (`python -m sysctl_advisor.outputs.json_schemas`), and the test suite validates every
JSON output it produces against those schemas.

The outputs themselves are built by Plan.to_json_data, DiffReport.to_json_data and the fleet's
streaming SummaryWriter (a plan is built without pydantic, and summary.json is streamed).
Field names are a contract: the plan's are fixed by the design (DESIGN.md, "JSON plan"); a
change that breaks a reader gets a new schema version (`…/v2`), never an edit of v1. Adding a
field is an addition, not a break, but a v1 schema forbids unknown fields so that the tests
notice every addition and the schema is regenerated with it.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from annotated_types import Ge
from pydantic import JsonValue  # the type of a profile parameter's value, in the schema

from sysctl_advisor.model.model_base import Field, Record, model
from sysctl_advisor.model.severity import Severity
from sysctl_advisor.outputs.check_document import document_config

PLAN_SCHEMA: Final = "sysctl-advisor/plan/v1"
DIFF_SCHEMA: Final = "sysctl-advisor/diff/v1"
FLEET_SCHEMA: Final = "sysctl-advisor/fleet/v1"

_VERSION = "the sysctl-advisor version that wrote it (sysctl_advisor.__version__)"
Count = Annotated[int, Ge(0)]


# -- plan --------------------------------------------------------------------------------------


SET_BY = (
    "who set kernel_default when it is this host's default but not the kernel's own: a tuning "
    'daemon and its profile file ("tuned (/usr/lib/tuned/network-throughput/tuned.conf:14)"), '
    "a sysctl file and line, or no sysctl file (a setter not known); null: the kernel's own"
)
MODELLED = "with default_set_by: the kernel's own default as modelled; null when not modelled"


@model
class PlanHostDocument(Record):
    """The host the plan is for, as its facts describe it."""

    hostname: str | None
    kernel: str | None = Field(description="uname -r as given; null when unknown")
    arch: str | None = Field(description="uname -m as given; null when unknown")
    bits: Literal[32, 64]
    memory_total: Count = Field(description="bytes")
    lowmem: Count | None = Field(description="bytes of lowmem (32-bit hosts); else null")
    page_size: int = Field(ge=1, description="bytes")
    kernel_modelled_as: str = Field(
        description="the kernel version whose defaults and keys the plan was computed for"
    )


@model
class PlanProfileDocument(Record):
    name: str = Field(description="the profiles given, joined by + (frontend-proxy+redis)")
    params: dict[str, JsonValue] = Field(
        description="every parameter's value for this host; PROFILE.NAME where two profiles "
        "declare NAME with different values"
    )
    workloads: list[str] = Field(
        description="every profile the host runs: the ones given, then the ones they include"
    )


@model
class SettingDocument(Record):
    """One sysctl the host should set, with the arithmetic and sources behind it."""

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
    capped_by: list[str] = Field(description="ids of the safety caps that lowered it")
    default_set_by: str | None = Field(description=SET_BY)
    modelled_default: str | None = Field(description=MODELLED)
    summary: str = Field(
        description="the rationale short: each rule's one sentence, then how the values merged"
    )
    workloads: list[str] = Field(description="the profiles whose rules gave the value")


@model
class ReferenceDocument(Record):
    """A public source the settings cite."""

    id: str = Field(description="its id in the advisor's sources catalog")
    citation: str = Field(description="author, title, site and date; or a Linux file or commit")
    url: str | None = Field(description="an address a browser opens; null for a work cited by name")


@model
class FindingDocument(Record):
    id: str
    severity: Severity
    key: str | None = Field(description="the sysctl the finding is about, if any")
    message: str
    rule: str = Field(description="id of the rule that raised it")


@model
class CompanionDocument(Record):
    """A setting outside sysctl that the sysctl values depend on."""

    target: str = Field(description="what to change: nginx, ethtool, limits.conf, systemd, …")
    setting: str = Field(description="the line or command to apply")
    rationale: str
    rule: str


@model
class UnchangedDocument(Record):
    """A key a rule wanted, where the kernel default already gives as much, or a cap holds it
    there."""

    key: str
    kernel_default: str
    wanted: str
    rules: list[str]
    default_set_by: str | None = Field(description=SET_BY)
    modelled_default: str | None = Field(description=MODELLED)
    capped_by: list[str] = Field(
        description="the caps that hold it at the kernel default, below what the rules "
        "wanted; empty: the default already gives as much"
    )


@model
class PlanDocument(Record):
    """What `sysctl-advisor recommend --format json` prints."""

    __pydantic_config__ = document_config(PLAN_SCHEMA, "sysctl-advisor plan")

    schema: Literal["sysctl-advisor/plan/v1"] = Field(
        default=PLAN_SCHEMA, description="this document's format and version"
    )
    version: str = Field(description=_VERSION)
    host: PlanHostDocument
    profile: PlanProfileDocument
    settings: list[SettingDocument]
    findings: list[FindingDocument]
    companions: list[CompanionDocument]
    unchanged: list[UnchangedDocument]
    notes: list[str]
    applied_rules: list[str] = Field(description="rules whose `when` held for this host, in order")
    references: list[ReferenceDocument] = Field(
        description="every source the settings cite, in the order first cited"
    )


# -- diff --------------------------------------------------------------------------------------


@model
class DiffHostDocument(Record):
    hostname: str | None
    kernel: str | None


@model
class DiffCurrentDocument(Record):
    """Where the current values came from."""

    kind: str = Field(
        description="what was read: facts, dump, file or tree; undo: the values an undo restores"
    )
    label: str = Field(description="the path read, or the facts file")


@model
class DiffEntryDocument(Record):
    key: str
    current: str | None = Field(description="the value in force or configured; null if unset")
    recommended: str | None = Field(description="null for a key to remove")
    kernel_default: str | None
    status: Literal["ok", "change", "missing", "remove"]
    source: str | None = Field(description="where the current value is set: path:line")
    rationale: str
    default_set_by: str | None = Field(description=SET_BY)
    modelled_default: str | None = Field(description=MODELLED)
    owner: str | None = Field(
        default=None,
        description="the probable writer of a value in force unlike the plan's: a program of "
        "the writers catalog that runs on the host (what it writes and when); null: a file, "
        "or a writer not known",
    )


@model
class ProblemDocument(Record):
    """Something wrong in the current configuration itself (a broken link, a bad line)."""

    source: str = Field(description="path:line, or path")
    message: str
    severity: Severity
    code: str = Field(description="the kind of problem: syntax, broken-link, unreadable, …")


@model
class DiffDocument(Record):
    """What `sysctl-advisor diff --format json` prints."""

    __pydantic_config__ = document_config(DIFF_SCHEMA, "sysctl-advisor diff")

    schema: Literal["sysctl-advisor/diff/v1"] = Field(
        default=DIFF_SCHEMA, description="this document's format and version"
    )
    version: str = Field(description=_VERSION)
    host: DiffHostDocument
    profile: str
    current: DiffCurrentDocument
    entries: list[DiffEntryDocument]
    drift: Count = Field(description="entries whose status is not ok")
    findings: list[FindingDocument]
    problems: list[ProblemDocument]


# -- fleet summary -----------------------------------------------------------------------------


@model
class FleetFindingCount(Record):
    id: str
    severity: Severity
    hosts: Count = Field(description="how many written hosts have this finding")


@model
class FleetChangeCount(Record):
    key: str
    hosts: Count = Field(description="how many written hosts change this key from its default")


@model
class SkippedHost(Record):
    """An inventory host no file was written for."""

    host: str = Field(description="the inventory name")
    facts_file: str = Field(description="the facts file that was read for it")
    reason: str = Field(description="why it was skipped: the one-line error")


@model
class SeverityCounts(Record):
    error: Count
    warning: Count
    info: Count


@model
class WrittenHost(Record):
    """An inventory host whose files were written."""

    host: str = Field(description="the inventory name (host_files/<host>.conf)")
    hostname: str | None = Field(description="the hostname its facts give")
    kernel: str | None
    profile: str
    file: str = Field(description="its sysctl file, relative to the output directory")
    changes: list[str] = Field(description="keys changed from the kernel default")
    findings: SeverityCounts = Field(description="how many findings of each severity")
    finding_ids: list[str] = Field(description="the distinct finding ids, sorted")


@model
class PoolKeyDifference(Record):
    key: str
    pool: str | None = Field(description="the pool's value; null: the pool's plan does not set it")
    host: str | None = Field(description="the host's own; null: its own plan does not set it")


@model
class PoolDifferingHost(Record):
    """A host of the pool whose own node plan differs from the pool's, key by key."""

    host: str = Field(description="the inventory name")
    profile: str | None = Field(description="the host's own profile")
    keys: list[PoolKeyDifference] = Field(description="each key where the two plans differ")


@model
class NodePoolSummary(Record):
    """A node pool (an inventory group `--node-pools` names) with at least one written host."""

    pool: str = Field(description="the inventory group")
    file: str = Field(description="its platform output, relative to the output directory")
    representative: str = Field(
        description="the host whose node plan the file holds: the plan most of the pool's "
        "hosts share, ties broken by the first name"
    )
    profile: str = Field(description="the representative's profile")
    hosts: Count = Field(description="the pool's written hosts")
    differing: list[PoolDifferingHost] = Field(
        description="the pool's hosts whose own node plan differs from the pool's"
    )


_FLEET_OPTIONAL = ("node_format", "node_pools")
"""Written only with --node-pools: absent from the summaries of other runs (and of earlier
versions), which stay valid."""


def _fleet_schema_extra(schema: dict[str, Any]) -> None:
    schema["$id"] = FLEET_SCHEMA
    schema["required"] = [r for r in schema.get("required", []) if r not in _FLEET_OPTIONAL]


def _fleet_config() -> dict[str, Any]:
    config = document_config(FLEET_SCHEMA, "sysctl-advisor fleet summary")
    config["json_schema_extra"] = _fleet_schema_extra  # $id, and the optional fields
    return config


@model
class FleetSummaryDocument(Record):
    """summary.json, written by `sysctl-advisor fleet --out DIR`."""

    __pydantic_config__ = _fleet_config()

    schema: Literal["sysctl-advisor/fleet/v1"] = Field(
        default=FLEET_SCHEMA, description="this document's format and version"
    )
    version: str = Field(description=_VERSION)
    facts: str = Field(description="the facts directory or inventory the fleet was read from")
    profile: str | None = Field(description="the default profile; null with a profile map only")
    profile_map: str | None = Field(description="the profile map file, if one was given")
    hosts_total: Count
    hosts_written: Count
    hosts_skipped: Count
    profiles: dict[str, Count] = Field(description="written hosts per profile")
    findings: list[FleetFindingCount] = Field(description="per finding id, most severe first")
    changes: list[FleetChangeCount] = Field(description="per changed key, most hosts first")
    node_format: str | None = Field(
        default=None, description="with --node-pools: the node platform format (--node-format)"
    )
    node_pools: list[NodePoolSummary] | None = Field(
        default=None, description="with --node-pools: each pool with a written host"
    )
    skipped: list[SkippedHost]
    hosts: list[WrittenHost]
