"""A profile's default_expr reads `params.NAME` of the parameters declared before it. One from
a colleague's profiles directory that reads itself, a later parameter (two that read each
other), one nobody declares, or `params` as a whole fails when the directory loads, whichever
profile runs: one line naming the file and the field, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES, assert_one_line_error, invoke

FACTS = str(EXAMPLES / "app-node.yaml")


def _param(expr: str) -> dict[str, Any]:
    return {"type": "int", "description": "d", "default_expr": expr}


def _recommend(tmp_path: Path, profile: dict[str, Any], run: str = "base") -> tuple[int, str]:
    directory = tmp_path / "profiles"
    directory.mkdir()
    body = {"summary": "s", "description": "d", **profile}
    (directory / f"{profile['name']}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    result = invoke(
        "recommend", "--facts", FACTS, "-p", run, "--profiles-dir", str(directory), "-q"
    )
    return result.exit_code, result.stderr


@pytest.mark.parametrize(
    ("parameters", "field", "said"),
    [
        ({"a": _param("params.a + 1")}, "parameters.a", "params.a"),
        ({"a": _param("2 * params.b"), "b": _param("params.a + 1")}, "parameters.a", "params.b"),
        ({"a": _param("2 * params.b"), "b": _param("3")}, "parameters.a", "params.b"),
        ({"a": _param("params.nobody * 2")}, "parameters.a", "params.nobody"),
        ({"a": _param("3"), "b": _param("params | length")}, "parameters.b", "other than"),
        ({"a": _param("3"), "b": _param("params['a' ~ 'b']")}, "parameters.b", "other than"),
    ],
)
def test_a_default_reading_no_earlier_parameter_fails_at_load(
    tmp_path: Path, parameters: dict[str, Any], field: str, said: str
) -> None:
    profile = {"name": "colleague", "extends": "base", "parameters": parameters}
    code, stderr = _recommend(tmp_path, profile)
    assert_one_line_error(code, stderr, "colleague.yaml", f"{field}.default_expr", said)


def test_a_default_reading_an_earlier_or_inherited_parameter_loads(tmp_path: Path) -> None:
    profile = {
        "name": "pg-colleague",
        "extends": "postgresql",
        "parameters": {
            # overrides the parent's, which stays in its place: after max_connections
            "listen_backlog": _param("3 * params.max_connections"),
            "mine": _param("params.listen_backlog + params.max_connections"),
        },
    }
    code, stderr = _recommend(tmp_path, profile, run="pg-colleague")
    assert code == 0, stderr
