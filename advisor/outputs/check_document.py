"""The `check --format json` document: one model, from which both the output and its published
JSON Schema (advisor/schemas/check.schema.json) are produced, so the two cannot drift apart.

    python -m advisor.outputs.check_document > advisor/schemas/check.schema.json

Field names are a contract (CI scripts read them); a change that breaks a reader gets a new
schema version (`sysctl-advisor/check/v2`), never an edit of v1.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.knowledge.rules import Severity

CHECK_SCHEMA: Final = "sysctl-advisor/check/v1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CheckFindingDocument(_Model):
    """One finding: which rule fired, where, and what it means."""

    id: str = Field(description="the check rule's id, e.g. check.tw-recycle-enabled")
    severity: Severity
    file: str = Field(description="the file as given on the command line (or found in a tree)")
    line: int | None = Field(
        description="1-based line number; null for a finding about the whole file", ge=1
    )
    key: str | None = Field(description="the sysctl key the finding is about, if any")
    message: str
    help: str = Field(description="the rule's entry in the rules reference (docs/rules.md)")


class CheckDocument(_Model):
    """What `sysctl-advisor check --format json` prints."""

    model_config = ConfigDict(
        title="sysctl-advisor check report",
        json_schema_extra={"$id": CHECK_SCHEMA},
        json_schema_serialization_defaults_required=True,
    )

    schema_: Literal["sysctl-advisor/check/v1"] = Field(
        CHECK_SCHEMA, alias="schema", description="this document's format and version"
    )
    version: str = Field(description="the sysctl-advisor version that wrote it")
    files: list[str] = Field(description="every file that was read, in the order read")
    findings: list[CheckFindingDocument]

    def to_json(self) -> str:
        """The document as the CLI prints it (serialized by the model: always schema-valid)."""
        return json_text(self.to_data())

    def to_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def json_text(data: Any) -> str:
    """Indented JSON that is valid UTF-8 whatever the data holds: a file name's undecodable
    byte (a lone surrogate, as Python reads it) is written as its JSON escape (\\udcff), which
    decodes back to the same string (os.fsencode restores the name), instead of a raw byte
    that would make the whole document unreadable to a strict UTF-8 consumer."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_json_schema() -> dict[str, Any]:
    """The published JSON Schema of the check document (Draft 2020-12, as pydantic writes)."""
    schema = CheckDocument.model_json_schema(by_alias=True, mode="serialization")
    head = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema.pop("$id")}
    return {**head, **schema}


def main() -> None:
    sys.stdout.write(json.dumps(check_json_schema(), indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
