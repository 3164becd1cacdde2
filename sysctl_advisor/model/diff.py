"""The diff: per key, what is set, what the plan says and why; and the "sysctl-advisor/diff/v1"
document of `diff --format json`, defined once: `DiffReport.to_json_data` writes these models
field by field (`plain_data`), and the published schema (sysctl_advisor/schemas/diff.schema.json)
is generated from them (`python -m tests.regenerate`). `engine.diff` builds
the report.

Status per key: `ok`, the value in force (or configured) is the recommendation; `change`, it
differs; `missing`, the recommendation differs from the kernel default and nothing sets it;
`remove`, the configuration sets a key this kernel does not have (sysctl -p fails on it).
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from sysctl_advisor import __version__
from sysctl_advisor.model.current_config import Problem
from sysctl_advisor.model.model_base import Field, Record, document_config, model, plain_data
from sysctl_advisor.model.plan import MODELLED, SET_BY, VERSION, Finding

DIFF_SCHEMA: Final = "sysctl-advisor/diff/v1"
DiffStatus = Literal["ok", "change", "missing", "remove"]
STATUSES: tuple[DiffStatus, ...] = get_args(DiffStatus)


def _absent(value: Any) -> bool:
    return value is None


@model
class ObservedOwner(Record):
    """A writer the host was seen writing a key with (the facts' `writers:` section), its
    writes of the key in one network namespace gathered: who, where, when last, how often."""

    __pydantic_config__ = document_config("ObservedOwnerDocument")

    writer: str | None = Field(description="its id in the writers catalog; null: not known")
    name: str = Field(description="the catalog writer's name, else what the write shows")
    named_by: str | None = Field(
        description="what names the catalog writer: its process, unit or parent; or a pod"
    )
    comm: str | None = Field(description="the process name (/proc/PID/comm) of the last write")
    pid: int | None
    parent: str | None = Field(description="the parent's process name")
    parent_pid: int | None
    unit: str | None = Field(description="the systemd unit of the writer's cgroup")
    pod: str | None = Field(description="the pod it ran in: namespace/name, else its UID")
    namespace: str = Field(
        description="the network namespace written in: host, pod NAME, other net:[N], or not given"
    )
    in_force: bool | None = Field(
        description="whether its writes were made where the value in force is: in the host's "
        "network namespace, or of a key that is not per namespace; null: the kernel does not "
        "say which namespace (before 5.10)"
    )
    explains: bool = Field(
        description="whether it made the last applied write (by time) of those in force: the "
        "writer that explains the value in force; the others in force wrote earlier"
    )
    value: str = Field(description="the value it wrote last")
    values: list[str] = Field(description="the distinct values it wrote, in order (at most 8)")
    applied: bool | None = Field(
        description="whether the kernel took its last write; null: not known"
    )
    last: str = Field(description="when it wrote last")
    count: int = Field(ge=1, description="how many writes of the key")
    fix: str | None = Field(
        description="what to change in the writer's configuration for the plan's value"
    )
    fix_target: str | None = Field(description="the configuration the fix goes in")


@model(kw_only=False)
class DiffEntry(Record):
    __pydantic_config__ = document_config("DiffEntryDocument", optional=("owner", "observed"))

    key: str
    current: str | None = Field(description="the value in force or configured; null if unset")
    recommended: str | None = Field(description="null for a key to remove")
    kernel_default: str | None
    status: DiffStatus
    source: str | None = Field(description="where the current value is set: path:line")
    rationale: str
    default_set_by: str | None = Field(default=None, description=SET_BY)
    modelled_default: str | None = Field(default=None, description=MODELLED)
    owner: str | None = Field(
        default=None,
        description="the probable writer of a value in force unlike the plan's: a program of "
        "the writers catalog that runs on the host (what it writes and when); null: a file, "
        "or a writer not known",
    )
    observed: list[ObservedOwner] | None = Field(
        default=None,
        exclude_if=_absent,
        description="the writers the host was seen writing the key with (facts' `writers:`), "
        "those that explain the value in force first; absent: the facts carry no record",
    )


@model
class DiffHost(Record):
    __pydantic_config__ = document_config("DiffHostDocument")

    hostname: str | None
    kernel: str | None


@model
class DiffCurrent(Record):
    """Where the current values came from."""

    __pydantic_config__ = document_config("DiffCurrentDocument")

    kind: str = Field(
        description="what was read: facts, dump, file or tree; undo: the values an undo restores"
    )
    label: str = Field(description="the path read, or the facts file")


@model
class DiffDocument(Record):
    """What `sysctl-advisor diff --format json` prints."""

    __pydantic_config__ = document_config(
        "sysctl-advisor diff", DIFF_SCHEMA, optional=("provenance",)
    )

    schema: Literal["sysctl-advisor/diff/v1"] = Field(
        default=DIFF_SCHEMA, description="this document's format and version"
    )
    version: str = Field(default=__version__, description=VERSION)
    host: DiffHost
    profile: str
    current: DiffCurrent
    entries: list[DiffEntry]
    drift: int = Field(ge=0, description="entries whose status is not ok")
    findings: list[Finding]
    problems: list[Problem]
    provenance: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="where the observed writes come from (the facts' writers.provenance); "
        "`unavailable (reason)`: the static tier only; absent: the facts carry no record",
    )


@model(kw_only=False)
class DiffReport(Record):
    """The diff as the engine builds it and the renderers read it; `to_json_data` its document."""

    hostname: str | None
    kernel: str | None
    profile: str
    current_kind: str
    current_label: str
    entries: list[DiffEntry]
    findings: list[Finding] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)
    provenance: str | None = None  # facts' writers.provenance, where the facts carry it

    @property
    def drift(self) -> int:
        return sum(1 for e in self.entries if e.status != "ok")

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for e in self.entries if e.status == s) for s in STATUSES}

    def to_json_data(self) -> dict[str, Any]:
        """The document, as `diff --format json` writes it."""
        document = DiffDocument(
            host=DiffHost(hostname=self.hostname, kernel=self.kernel),
            profile=self.profile,
            current=DiffCurrent(kind=self.current_kind, label=self.current_label),
            entries=self.entries,
            drift=self.drift,
            findings=self.findings,
            problems=self.problems,
            provenance=self.provenance,
        )
        data: dict[str, Any] = plain_data(document)
        return data
