"""The Plan: what a host should run, why, and what else to change. Renderers only format it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PLAN_SCHEMA = "sysctl-advisor/plan/v1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanHost(_Model):
    hostname: str | None
    kernel: str | None
    arch: str | None
    bits: int
    memory_total: int
    lowmem: int | None = None
    page_size: int = 4096
    kernel_modelled_as: str


class PlanProfile(_Model):
    name: str
    params: dict[str, Any]


class Setting(_Model):
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
    capped_by: list[str] = Field(default_factory=list)


class Finding(_Model):
    id: str
    severity: str
    key: str | None
    message: str
    rule: str


class Companion(_Model):
    target: str
    setting: str
    rationale: str
    rule: str


class Unchanged(_Model):
    """A key some rule wanted, where the kernel default already gives as much."""

    key: str
    kernel_default: str
    wanted: str
    rules: list[str]


class Plan(_Model):
    schema_: str = Field(PLAN_SCHEMA, alias="schema")
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

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json_data(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")
