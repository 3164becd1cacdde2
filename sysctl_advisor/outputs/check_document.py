"""The `check --format json` document: one model, from which both the output and its published
JSON Schema (sysctl_advisor/schemas/check.schema.json, written by `python -m
sysctl_advisor.outputs.json_schemas`) are produced, so the two cannot drift apart.

Field names are a contract (CI scripts read them); a change that breaks a reader gets a new
schema version (`sysctl-advisor/check/v2`), never an edit of v1.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from sysctl_advisor.model.documents import dump_json
from sysctl_advisor.model.model_base import Field, Record, document_config, model, plain_data
from sysctl_advisor.model.severity import Severity

CHECK_SCHEMA: Final = "sysctl-advisor/check/v1"


@model
class CheckFindingDocument(Record):
    """One finding: which rule fired, where, and what it means."""

    __pydantic_config__ = document_config("CheckFindingDocument")

    id: str = Field(description="the check rule's id, e.g. check.tw-recycle-enabled")
    severity: Severity
    file: str = Field(description="the file as given on the command line (or found in a tree)")
    line: int | None = Field(
        description="1-based line number; null for a finding about the whole file", ge=1
    )
    key: str | None = Field(description="the sysctl key the finding is about, if any")
    message: str
    help: str = Field(description="the rule's entry in the rules reference (docs/rules.md)")


@model
class CheckDocument(Record):
    """What `sysctl-advisor check --format json` prints."""

    __pydantic_config__ = document_config("sysctl-advisor check report", CHECK_SCHEMA)

    schema: Literal["sysctl-advisor/check/v1"] = Field(
        default=CHECK_SCHEMA, description="this document's format and version"
    )
    version: str = Field(description="the sysctl-advisor version that wrote it")
    files: list[str] = Field(description="every file that was read, in the order read")
    findings: list[CheckFindingDocument]

    def to_json(self) -> str:
        """The document as the CLI prints it (serialized by the model: always schema-valid)."""
        return dump_json(self.to_data())

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = plain_data(self)
        return data
