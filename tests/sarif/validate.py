"""Validation of every `check` output the suite produces, by the real consumers' schemas.

SARIF against the official OASIS SARIF 2.1.0 schema vendored beside this file (README.md),
check JSON against the schema the package ships (sysctl_advisor/schemas/check.schema.json),
both with format checking on: `uri` and `uri-reference` are checked by rfc3987 (jsonschema[format]);
help links (SARIF's informationUri and helpUri, JSON's help) are https.

`validate_check_outputs` wraps sysctl_advisor.outputs.check_report.render_check so that every
SARIF and JSON document rendered while it is active (CLI runs included) is validated;
registered as a plugin (`pytest_plugins = ["tests.sarif.validate"]` in conftest.py) it does so
for the whole suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import FormatChecker
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

HERE = Path(__file__).resolve().parent
SARIF_SCHEMA = HERE / "sarif-schema-2.1.0.json"
CHECK_SCHEMA = HERE.parent.parent / "sysctl_advisor" / "schemas" / "check.schema.json"


@cache
def _validator(path: Path) -> Validator:
    schema = json.loads(path.read_text(encoding="utf-8"))
    cls = validator_for(schema)  # the draft its $schema names (draft-04 for SARIF 2.1.0)
    cls.check_schema(schema)
    # The draft-04 checker knows only draft-04's formats; SARIF's artifactLocation.uri is a
    # `uri-reference`, so every format jsonschema can check is switched on.
    checker = FormatChecker()
    assert {"uri", "uri-reference", "date-time"} <= set(checker.checkers), (
        "jsonschema[format] (rfc3987) is needed to check URIs"
    )
    return cls(schema, format_checker=checker)


def sarif_validator() -> Validator:
    return _validator(SARIF_SCHEMA)


def check_json_validator() -> Validator:
    return _validator(CHECK_SCHEMA)


def _errors(validator: Validator, document: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def assert_valid_sarif(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    errors = _errors(sarif_validator(), document)
    assert not errors, "SARIF invalid against the SARIF 2.1.0 schema:\n" + "\n".join(errors)
    for run in document["runs"]:  # help a code-scanning reader can open: the web, never a file
        driver = run["tool"]["driver"]
        links = [driver.get("informationUri"), *(r.get("helpUri") for r in driver["rules"])]
        assert all(link.startswith("https://") for link in links if link), links
    return document


def assert_valid_check_json(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    errors = _errors(check_json_validator(), document)
    assert not errors, "check JSON invalid against check.schema.json:\n" + "\n".join(errors)
    helps = [finding["help"] for finding in document["findings"]]
    assert all(link.startswith("https://") for link in helps), helps
    return document


VALIDATED: dict[str, int] = {"sarif": 0, "json": 0}


@pytest.fixture(autouse=True)
def validate_check_outputs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every SARIF and check JSON rendered during the test is validated; failures are
    collected (the CLI's own error handling never sees them) and fail the test at teardown."""
    import sysctl_advisor.outputs.check_report as check_render

    original: Callable[..., str] = check_render.render_check
    failures: list[str] = []
    checks = {"sarif": assert_valid_sarif, "json": assert_valid_check_json}

    def validating(report: Any, fmt: str, *args: Any, **kwargs: Any) -> str:
        text = original(report, fmt, *args, **kwargs)
        if fmt in checks:
            try:
                checks[fmt](text)
            except AssertionError as exc:
                failures.append(str(exc))
            VALIDATED[fmt] += 1
        return text

    monkeypatch.setattr(check_render, "render_check", validating)
    yield
    assert not failures, "\n\n".join(failures)
