"""Rule expressions and templates are a trust boundary (issue 13, items 1 and 8).

A rule directory from a colleague may only produce wrong numbers: it cannot reach Python
objects, call anything the project did not put there, or hang or exhaust the machine. Payloads
are built here at test time; none executes anything if the sandbox holds (the marker file
stays absent)."""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from advisor.cli import app
from advisor.engine import host_variables
from advisor.expressions import Compiler, ExpressionError, KernelData
from advisor.facts import facts_from_data
from advisor.knowledge import KnowledgeBase
from tests.conftest import EXAMPLES

DCACHE = str(EXAMPLES / "dcache-32bit.yaml")

# Classic server-side template injection, each one ending where a real escape would run a
# command that creates MARKER.
ESCAPES = [
    "().__class__.__bases__[0].__subclasses__()",
    "''.__class__.__mro__[1].__subclasses__()",
    "facts.__class__",
    "facts.memory.__class__.__init__.__globals__",
    "facts.items()",
    "facts.get('memory')",
    "facts.pop('memory')",
    "facts.update({})",
    "nics.append(1)",
    "nics.__getitem__",
    "kernel.version",
    "kernel.version.parse('1.2')",
    "kernel.__class__.__init__.__globals__",
    "kernel.__eq__",
    "kernel._quantities",
    "host.__class__",
    "'{0.__class__}'.format(1)",
    "'x'.format",
    "'x'.__class__",
    "'x'.join",
    "(1).__class__.__base__",
    "range.__self__",
    "range.__globals__",
    "pow2_ceil.__globals__['os'].system('touch MARKER')",
    "ceil.__self__",
    "min.__self__.__import__('os').system('touch MARKER')",
    "cycler.__init__.__globals__.os.system('touch MARKER')",
    "joiner.__init__.__globals__",
    "lipsum.__globals__['os'].system('touch MARKER')",
    "namespace(a=1)",
    "dict(a=1)",
    "self.__init__.__globals__",
    "facts | attr('__class__')",
    "'%s' | format(facts.__class__)",
    "(facts | list)[0].__class__",
    "facts.memory | attr('items')",
]
# Methods of the pydantic models the context used to hold: the models are gone, the names are
# not there, and calling what is not there is refused.
GONE = [
    "facts.parse_raw('x', proto='pickle', allow_pickle=True)",
    "facts.model_construct()",
    "facts.parse_file('/etc/shadow')",
    "observed.model_dump()",
    "nics[0].model_copy()",
]
# Things that would hang, eat memory or crash the interpreter if not bounded.
BOMBS = [
    "10 ** (10 ** 10)",
    "2 ** 100000",
    "(10 ** 400) ** 400",
    "'a' * 10 ** 10",
    "[1] * 10 ** 9",
    "(2 ** 40000) * (2 ** 40000)",
    "range(10 ** 12) | list",
    "('a' * 99999) | replace('a', 'a' * 99999)",
    "(" * 200 + "1" + ")" * 200,
    "(1e308 * 10) | int",
]
TEMPLATE_BOMBS = [
    "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% for c in facts.hostname * 1 %}{% for i in range(100000) %}{{ i }}{% endfor %}{% endfor %}",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "{{ 'x' * 99999 }}{{ 'x' * 99999 }}{{ 'x' * 99999 }}",
]


@pytest.fixture(scope="module")
def variables() -> dict[str, Any]:
    kb = KnowledgeBase.load()
    facts = facts_from_data(
        {
            "hostname": "h1",
            "kernel": "5.15.0-91-generic",
            "arch": "x86_64",
            "memory": {"total": "8 GiB"},
            "nics": [{"name": "eth0", "driver": "ixgbe", "speed_mbps": 10000, "mtu": 9000}],
            "sysctl": {"net.core.somaxconn": "4096"},
            "observed": {"orphans_peak": 3, "kernel_messages": ["Out of socket memory"]},
            "services": {"nginx": {"listen_backlog": 511}},
        }
    )
    found, _, _ = host_variables(kb, facts)
    return {**found, "params": {"rtt_ms": 1.0}, "current": {"somaxconn": 4096}}


def _refused(source: str, variables: dict[str, Any], template: bool = False) -> str:
    compiler = Compiler()
    with pytest.raises(ExpressionError) as caught:
        if template:
            compiler.template(source).render(variables)
        else:
            compiler.expression(source).evaluate(variables)
    return str(caught.value)


@pytest.mark.parametrize("payload", ESCAPES)
def test_escape_is_refused(payload: str, variables: dict[str, Any], workdir: Path) -> None:
    message = _refused(payload, variables)
    assert "refused by the sandbox" in message or "not safely callable" in message, message
    message = _refused("{{ " + payload + " }}", variables, template=True)
    assert "refused by the sandbox" in message or "not safely callable" in message, message
    assert not (workdir / "MARKER").exists() and not Path("MARKER").exists()


@pytest.mark.parametrize("payload", GONE)
def test_model_methods_are_not_there(payload: str, variables: dict[str, Any]) -> None:
    assert "refused by the sandbox" in _refused(payload, variables)


@pytest.mark.parametrize("payload", BOMBS)
def test_bomb_is_bounded(payload: str, variables: dict[str, Any]) -> None:
    started = time.monotonic()
    message = _refused(payload, variables)
    assert "\n" not in message
    assert time.monotonic() - started < 2, payload


@pytest.mark.parametrize("payload", TEMPLATE_BOMBS)
def test_template_bomb_is_bounded(payload: str, variables: dict[str, Any]) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    message = _refused(payload, variables, template=True)
    assert "\n" not in message
    assert time.monotonic() - started < 5, payload
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 200, grown_mib


def _walk(value: Any, path: str, out: list[tuple[str, Any]], depth: int = 0) -> None:
    out.append((path, value))
    if depth > 4:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.isidentifier():
                _walk(item, f"{path}.{key}", out, depth + 1)
    elif isinstance(value, list) and value:
        _walk(value[0], f"{path}[0]", out, depth + 1)


def test_every_callable_reachable_from_the_context_is_refused(variables: dict[str, Any]) -> None:
    """Walk everything an expression can reach and try every method and dunder on it: only
    the few str methods the rules use are allowed."""
    reachable: list[tuple[str, Any]] = []
    for name, value in variables.items():
        _walk(value, name, reachable)
    tried = 0
    for path, value in reachable:
        for attr in dir(value):
            if isinstance(value, KernelData) and attr in value.fields:
                continue
            if isinstance(value, dict) and attr in value:
                continue  # a mapping's item of that name, not its method
            if isinstance(value, str) and attr in {"split", "strip", "lower", "upper"} | {
                "startswith",
                "endswith",
            }:
                continue
            if not (attr.startswith("__") or callable(getattr(value, attr, None))):
                continue
            tried += 1
            message = _refused(f"{path}.{attr}", variables)
            assert "refused by the sandbox" in message, (path, attr, message)
    assert tried > 300


def test_plain_data_only(variables: dict[str, Any]) -> None:
    allowed = (dict, list, str, int, float, bool, type(None), KernelData)

    def check(value: Any, path: str) -> None:
        if callable(value) and not isinstance(value, KernelData):
            return  # the project's own functions (GLOBALS), checked by the sandbox by identity
        assert isinstance(value, allowed), (path, type(value))
        if isinstance(value, dict):
            for k, v in value.items():
                check(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                check(v, f"{path}[{i}]")

    for name, value in variables.items():
        check(value, name)


def _rules_dir(tmp: Path, where: str, payload: str) -> Path:
    directory = tmp / "rules" / "evil"
    directory.mkdir(parents=True)
    rule: dict[str, Any] = {
        "id": "evil.payload",
        "title": "payload",
        "description": "A rule that tries to escape the sandbox.",
        "rationale": "text",
        "references": ["test"],
        "set": {"net.core.somaxconn": "100"},
    }
    if where == "let":
        rule["let"] = {"x": payload}
    elif where == "when":
        rule["when"] = payload
    else:
        rule["rationale"] = "{{ " + payload + " }}"
    (directory / "payload.yaml").write_text(yaml.safe_dump(rule))
    return tmp / "rules"


def _profiles_dir(tmp: Path, default_expr: str | None = None) -> Path:
    directory = tmp / "profiles"
    directory.mkdir(exist_ok=True)
    profile: dict[str, Any] = {
        "name": "evil",
        "summary": "s",
        "extends": "base",
        "rules": ["evil.payload"] if default_expr is None else [],
    }
    if default_expr is not None:
        profile["parameters"] = {
            "p": {"type": "str", "description": "d", "default_expr": default_expr}
        }
    (directory / "evil.yaml").write_text(yaml.safe_dump(profile))
    return directory


@pytest.mark.parametrize("where", ["let", "when", "rationale"])
@pytest.mark.parametrize(
    "payload",
    [
        "facts.__class__.__init__.__globals__",
        "lipsum.__globals__['os'].system('touch MARKER')",
        "'{0.__class__}'.format(facts)",
        "10 ** (10 ** 10)",
    ],
)
def test_rules_dir_payload_exits_2_with_one_line(
    where: str, payload: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workdir)
    rules = _rules_dir(workdir, where, payload)
    profiles = _profiles_dir(workdir)
    started = time.monotonic()
    result = CliRunner().invoke(
        app,
        [
            *["recommend", "--facts", DCACHE, "-p", "evil", "--rules-dir", str(rules)],
            *["--profiles-dir", str(profiles)],
        ],
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused by the sandbox" in lines[0], lines
    assert "payload.yaml" in lines[0]
    assert not (workdir / "MARKER").exists()
    assert time.monotonic() - started < 10


def test_profile_default_expr_payload(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    profiles = _profiles_dir(workdir, "facts.__class__.parse_raw('x')")
    result = CliRunner().invoke(
        app, ["recommend", "--facts", DCACHE, "-p", "evil", "--profiles-dir", str(profiles)]
    )
    assert result.exit_code == 2
    assert "refused by the sandbox" in result.stderr and "default_expr" in result.stderr
