"""The published JSON Schemas: one per JSON document, generated from the models that write it
(`model_base.document_config`), shipped in the package as sysctl_advisor/schemas/<name>.schema.json.

    python -m tests.regenerate          # rewrites every generated file, these among them
    python -m tests.regenerate --check  # exit 1 naming each one that differs

tests/outputs/test_json_contracts.py checks that the shipped files are the generated ones and
validates every JSON output of the suite against them with jsonschema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from sysctl_advisor.model.check_config import Baseline, CheckConfig
from sysctl_advisor.model.diff import DiffDocument
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.check_document import CheckDocument
from sysctl_advisor.outputs.fleet_document import FleetSummary

SCHEMAS: dict[str, type[Any]] = {
    "plan": Plan,  # recommend --format json
    "diff": DiffDocument,  # diff --format json
    "check": CheckDocument,  # check --format json
    "fleet-summary": FleetSummary,  # fleet --out DIR: summary.json
    "config": CheckConfig,  # .sysctl-advisor.toml, [tool.sysctl-advisor] (as TOML)
    "baseline": Baseline,  # check --write-baseline FILE
}
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"  # sysctl_advisor/schemas


def model_schema(document: type[Any]) -> dict[str, Any]:
    """A document's published JSON Schema (Draft 2020-12, as pydantic writes it), `$id` first,
    each of its parts in `$defs` under its title (its `document_config`'s, else its class's)."""
    schema = TypeAdapter(document).json_schema(by_alias=True, mode="serialization")
    head = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema.pop("$id")}
    return _named_by_title({**head, **schema})


def _named_by_title(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each `$defs` entry, and every `$ref` to it, under the entry's title."""
    defs = schema.get("$defs", {})
    names = {name: part.get("title", name) for name, part in defs.items()}
    if len(set(names.values())) != len(names):
        raise ValueError(f"two parts of a document share a title: {sorted(names.values())}")
    refs = {f"#/$defs/{old}": f"#/$defs/{new}" for old, new in names.items()}

    def renamed(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: refs.get(item, item) if key == "$ref" else renamed(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [renamed(item) for item in value]
        return value

    if defs:
        schema["$defs"] = {
            names[name]: defs[name] for name in sorted(defs, key=lambda name: names[name])
        }
    return {key: renamed(item) for key, item in schema.items()}


def schema_text(name: str) -> str:
    """The schema file's exact text."""
    return json.dumps(model_schema(SCHEMAS[name]), indent=2, ensure_ascii=False) + "\n"


def schema_path(name: str) -> Path:
    return SCHEMA_DIR / f"{name}.schema.json"
