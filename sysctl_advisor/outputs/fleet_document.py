"""summary.json, the "sysctl-advisor/fleet/v1" document `fleet --out DIR` writes, defined once:
`fleet_summary.SummaryWriter` streams these models (`plain_data`), and the published schema
(sysctl_advisor/schemas/fleet-summary.schema.json) is generated from them (`python -m
tests.regenerate`). `node_format` and `node_pools` are written only with
--node-pools: absent from the summaries of other runs (and of earlier versions), which stay
valid.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from sysctl_advisor import __version__
from sysctl_advisor.model.model_base import Constraints, Field, Record, document_config, model
from sysctl_advisor.model.plan import VERSION
from sysctl_advisor.model.severity import Severity

FLEET_SCHEMA: Final = "sysctl-advisor/fleet/v1"
Count = Annotated[int, Constraints(ge=0)]


def _absent(value: Any) -> bool:
    return value is None


@model
class FleetFindingCount(Record):
    __pydantic_config__ = document_config("FleetFindingCount")

    id: str
    severity: Severity
    hosts: int = Field(ge=0, description="how many written hosts have this finding")


@model
class FleetChangeCount(Record):
    __pydantic_config__ = document_config("FleetChangeCount")

    key: str
    hosts: int = Field(ge=0, description="how many written hosts change this key from its default")


@model
class FleetWriterCount(Record):
    __pydantic_config__ = document_config("FleetWriterCount")

    key: str
    writer: str = Field(
        description="the writers catalog's name for it, else what its writes show (process, "
        "unit, parent)"
    )
    hosts: int = Field(ge=0, description="on how many written hosts the record shows it writing")


@model
class SkippedHost(Record):
    """An inventory host no file was written for."""

    __pydantic_config__ = document_config("SkippedHost")

    host: str = Field(description="the inventory name")
    facts_file: str = Field(description="the facts file that was read for it")
    reason: str = Field(description="why it was skipped: the one-line error")


@model
class SeverityCounts(Record):
    __pydantic_config__ = document_config("SeverityCounts")

    error: Count
    warning: Count
    info: Count


@model
class WrittenHost(Record):
    """An inventory host whose files were written."""

    __pydantic_config__ = document_config("WrittenHost")

    host: str = Field(description="the inventory name (host_files/<host>.conf)")
    hostname: str | None = Field(description="the hostname its facts give")
    kernel: str | None
    profile: str
    file: str = Field(description="its sysctl file, relative to the output directory")
    changes: list[str] = Field(description="keys changed from the kernel default")
    findings: SeverityCounts = Field(description="how many findings of each severity")
    finding_ids: list[str] = Field(description="the distinct finding ids, sorted")


@model(kw_only=False)
class KeyDifference(Record):
    __pydantic_config__ = document_config("PoolKeyDifference")

    key: str
    pool: str | None = Field(description="the pool's value; null: the pool's plan does not set it")
    host: str | None = Field(description="the host's own; null: its own plan does not set it")


@model(kw_only=False)
class PoolHost(Record):
    """A host of the pool whose own node plan differs from the pool's, key by key."""

    __pydantic_config__ = document_config("PoolDifferingHost")

    host: str = Field(description="the inventory name")
    profile: str | None = Field(description="the host's own profile")
    keys: tuple[KeyDifference, ...] = Field(description="each key where the two plans differ")


@model(kw_only=False)
class NodePoolOutcome(Record):
    """A node pool (an inventory group `--node-pools` names) with at least one written host."""

    __pydantic_config__ = document_config("NodePoolSummary")

    pool: str = Field(description="the inventory group")
    file: str = Field(description="its platform output, relative to the output directory")
    representative: str = Field(
        description="the host whose node plan the file holds: the plan most of the pool's "
        "hosts share, ties broken by the first name"
    )
    profile: str = Field(description="the representative's profile")
    hosts: int = Field(ge=0, description="the pool's written hosts")
    differing: tuple[PoolHost, ...] = Field(
        description="the pool's hosts whose own node plan differs from the pool's"
    )


@model
class FleetSummary(Record):
    """summary.json, written by `sysctl-advisor fleet --out DIR`."""

    __pydantic_config__ = document_config(
        "sysctl-advisor fleet summary",
        FLEET_SCHEMA,
        optional=("writers", "node_format", "node_pools"),
    )

    schema: Literal["sysctl-advisor/fleet/v1"] = Field(
        default=FLEET_SCHEMA, description="this document's format and version"
    )
    version: str = Field(default=__version__, description=VERSION)
    facts: str = Field(description="the facts directory or inventory the fleet was read from")
    profile: str | None = Field(description="the default profile; null with a profile map only")
    profile_map: str | None = Field(description="the profile map file, if one was given")
    hosts_total: int = Field(ge=0)
    hosts_written: int = Field(ge=0)
    hosts_skipped: int = Field(ge=0)
    profiles: dict[str, Count] = Field(description="written hosts per profile")
    findings: list[FleetFindingCount] = Field(description="per finding id, most severe first")
    changes: list[FleetChangeCount] = Field(description="per changed key, most hosts first")
    writers: list[FleetWriterCount] | None = Field(
        default=None,
        exclude_if=_absent,
        description="where hosts' facts carry a record of sysctl writes (`writers:`): per key, "
        "each writer seen writing it and on how many hosts; absent: no host's facts do",
    )
    node_format: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="with --node-pools: the node platform format (--node-format)",
    )
    node_pools: list[NodePoolOutcome] | None = Field(
        None, exclude_if=_absent, description="with --node-pools: each pool with a written host"
    )
    skipped: list[SkippedHost]
    hosts: list[WrittenHost]
