"""Versioned JSON Schemas for every JSON output, generated from their models,
shipped in the package, and every JSON output validated against them with jsonschema (Draft
2020-12, format checking on). Each document carries the tool version."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import sysctl_advisor
from sysctl_advisor.model.check_config import BASELINE_SCHEMA, CONFIG_SCHEMA
from sysctl_advisor.model.diff import DIFF_SCHEMA
from sysctl_advisor.model.plan import PLAN_SCHEMA
from sysctl_advisor.outputs import fleet_summary
from sysctl_advisor.outputs.check_document import CHECK_SCHEMA
from sysctl_advisor.outputs.fleet_document import FLEET_SCHEMA
from sysctl_advisor.outputs.fleet_summary import HostOutcome
from sysctl_advisor.outputs.json_schemas import SCHEMAS, schema_path
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, ROOT, TESTS, invoke
from tests.model.test_model_base import all_models

FIXTURES = TESTS / "fixtures"
PROFILES = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml"))
CURRENT = [
    FIXTURES / "sysctl-trees" / "layered",
    FIXTURES / "sysctl-trees" / "unlinked-sysctl-conf",
    FIXTURES / "dumps" / "sysctl-a-6.18.txt",
    FIXTURES / "check" / "annotated.conf",
]


def load_schema(name: str) -> dict[str, Any]:
    """The shipped schema (as installed), parsed."""
    data: dict[str, Any] = json.loads(schema_path(name).read_text(encoding="utf-8"))
    return data


def validate(name: str, document: Any) -> None:
    schema = load_schema(name)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    assert document["schema"] == schema["$id"]
    assert document["version"] == sysctl_advisor.__version__
    assert not _out_of_order(schema, schema, document), _out_of_order(schema, schema, document)


def _out_of_order(
    schema: dict[str, Any], node: dict[str, Any], value: Any, at: str = ""
) -> list[str]:
    """Each object of the document whose keys stand in another order than its schema lists
    them: the document and its schema come from one model, field by field."""
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].removeprefix("#/$defs/")]
    wrong = []
    properties = node.get("properties")
    if isinstance(value, dict) and properties is not None:
        listed = [name for name in properties if name in value]
        if list(value) != listed:
            wrong.append(f"{at or '/'}: {list(value)}, the schema {listed}")
        for name, item in value.items():
            wrong += _out_of_order(schema, properties.get(name, {}), item, f"{at}/{name}")
    elif isinstance(value, dict) and isinstance(node.get("additionalProperties"), dict):
        for name, item in value.items():
            wrong += _out_of_order(schema, node["additionalProperties"], item, f"{at}/{name}")
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            wrong += _out_of_order(schema, node["items"], item, f"{at}/{i}")
    for branch in node.get("anyOf", []):  # only the branch of the value's shape finds anything
        wrong += _out_of_order(schema, branch, value, at)
    return wrong


def cli_json(*args: str | Path) -> Any:
    result = invoke(*args)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_shipped_schemas_are_json_schemas(name: str) -> None:
    """(That they are generated from the models: tests/test_regenerate.py.)"""
    jsonschema.Draft202012Validator.check_schema(load_schema(name))


def _schema_id(model: type[Any]) -> str | None:
    """The `$id` a model's own config gives its JSON Schema: a published document's."""
    extra = vars(model).get("__pydantic_config__", {}).get("json_schema_extra")
    schema: dict[str, Any] = {"properties": {}, "required": []}
    if callable(extra):
        extra(schema)
    elif isinstance(extra, dict):
        schema.update(extra)
    return schema.get("$id")


def test_every_published_document_has_its_schema_generated_and_checked() -> None:
    """A document model with a schema `$id` that SCHEMAS leaves out would publish nothing, and
    no test would compare its schema with the file or validate what it writes."""
    published = {model for model in all_models() if _schema_id(model) is not None}
    assert published == set(SCHEMAS.values())


def test_schema_ids_are_the_documents_schema_fields() -> None:
    ids = {name: load_schema(name)["$id"] for name in SCHEMAS}
    assert ids == {
        "plan": PLAN_SCHEMA,
        "diff": DIFF_SCHEMA,
        "check": CHECK_SCHEMA,
        "fleet-summary": FLEET_SCHEMA,
        "config": CONFIG_SCHEMA,
        "baseline": BASELINE_SCHEMA,
    }


@pytest.mark.parametrize("host", sorted(EXAMPLE_PROFILES))
@pytest.mark.parametrize("profile", PROFILES)
def test_every_plan_is_schema_valid(host: str, profile: str) -> None:
    document = cli_json(
        "recommend", "--facts", EXAMPLES / f"{host}.yaml", "-p", profile, "-f", "json"
    )
    validate("plan", document)
    # the plan document's contract: these fields first, in this order
    assert list(document)[:7] == [
        "schema", "version", "host", "profile", "settings", "findings", "companions",
    ]  # fmt: skip


@pytest.mark.parametrize("host", sorted(EXAMPLE_PROFILES))
@pytest.mark.parametrize("current", [None, *CURRENT], ids=lambda c: c.name if c else "facts")
def test_every_diff_is_schema_valid(host: str, current: Path | None) -> None:
    args: list[str | Path] = ["diff", "--facts", EXAMPLES / f"{host}.yaml"]
    args += ["-p", EXAMPLE_PROFILES[host], "-f", "json"]
    if current is not None:
        args += ["--current", current]
    elif "sysctl" not in yaml.safe_load((EXAMPLES / f"{host}.yaml").read_text()):
        pytest.skip(f"{host}'s facts hold no sysctl values to compare (exit 2, tested elsewhere)")
    validate("diff", cli_json(*args))


@pytest.mark.parametrize(
    "paths",
    [
        [FIXTURES / "check" / "annotated.conf"],
        [FIXTURES / "check" / "sysctl.d"],
        [FIXTURES / "sysctl-trees" / "layered"],
        [FIXTURES / "dumps" / "sysctl-a-6.18.txt"],
    ],
    ids=lambda p: p[0].name,
)
def test_every_check_report_is_schema_valid(paths: list[Path]) -> None:
    validate("check", cli_json("check", *paths, "--format", "json"))


def _fleet_summaries(tmp_path: Path) -> Iterator[Any]:
    tree = FIXTURES / "ansible" / "tree"
    out = tmp_path / "by-profile"
    result = invoke(
        "fleet", "--ansible-facts", str(tree), "--profile", "gridftp", "--out", str(out)
    )
    assert result.exit_code in (0, 1), result.stderr
    yield json.loads((out / "summary.json").read_text())
    out = tmp_path / "by-map"
    mapping = FIXTURES / "ansible" / "profile-map.yaml"
    inventory = FIXTURES / "ansible" / "inventory.json"
    args = ["fleet", "--ansible-facts", tree, "--profile-map", mapping, "--inventory", inventory]
    result = invoke(*map(str, args), "--out", str(out))
    assert result.exit_code in (0, 1), result.stderr
    yield json.loads((out / "summary.json").read_text())


def test_fleet_summaries_are_schema_valid(tmp_path: Path) -> None:
    summaries = list(_fleet_summaries(tmp_path))
    for summary in summaries:
        validate("fleet-summary", summary)
    skipped = [row for summary in summaries for row in summary["skipped"]]
    assert skipped and all(set(row) == {"host", "facts_file", "reason"} for row in skipped)


def test_hostile_fleet_summary_is_schema_valid(tmp_path: Path) -> None:
    """Texts the JSON must carry as they are: control characters, quotes, separators."""
    text = 'x"\\\n\u2028\x00<!--|`'
    outcomes = [
        HostOutcome(host=text, source=text, profile=text, kernel=text, changes=(text,),
                    findings=((text, "error"), (text, "info"))),
        HostOutcome(host=text, source=text, error=text),
    ]  # fmt: skip
    staging = tmp_path / "staging"
    staging.mkdir()
    from sysctl_advisor.model.directories import Directory

    directory = Directory.at(staging)
    fleet_summary.SummaryWriter(Path(text), None, None)(directory, iter(outcomes))
    directory.close()
    summary = json.loads((staging / "summary.json").read_text())
    validate("fleet-summary", summary)
    assert summary["skipped"] == [{"host": text, "facts_file": text, "reason": text}]


def test_schemas_ship_in_the_wheel(tmp_path: Path) -> None:
    """hatch puts every file inside sysctl_advisor/ into the wheel: the schemas are found beside the
    module installed, not only in a checkout."""
    if shutil.which("pip") is None and not _has_pip():
        pytest.skip("pip is not available to build the wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "-w", str(tmp_path), "--no-deps",
         "--no-build-isolation", "-q"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if build.returncode != 0 and "hatchling" in build.stderr:
        pytest.skip("hatchling is not installed for an offline wheel build")
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("sysctl_advisor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in SCHEMAS:
        assert f"sysctl_advisor/schemas/{name}.schema.json" in names


def _has_pip() -> bool:
    return subprocess.run([sys.executable, "-m", "pip", "--version"], check=False).returncode == 0
