"""Rule expressions and templates are a trust boundary.

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

from sysctl_advisor.engine.plan_builder import host_variables
from sysctl_advisor.knowledge.expression_budget import MAX_BUILD, new_budget, weight
from sysctl_advisor.knowledge.expression_sandbox import KernelData
from sysctl_advisor.knowledge.expressions import Compiler, ExpressionError
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from tests.conftest import EXAMPLES, HANG_SECONDS, Cli, invoke

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
    # Operator chains Python's compiler refuses (more than 200 nested parentheses).
    " + ".join(["1"] * 250),
    "not " * 300 + "true",
    "- " * 300 + "1",
    # Text built by formatting, joining and concatenating (found by the hostile-input hunt).
    "('%0999999999d' % 1) | length",
    "('%0999999999d' | format(1)) | length",
    "'%0*d' % (999999999, 1)",
    "'%.99999999f' % 1.0",
    "('%(a)s' * 99999) % {'a': 'x' * 99999}",
    "(['x' * 99999] * 99) | join | length",
    "((['x' * 99999] * 10) | string) | length",
    "('x' * 99999) ~ ('x' * 99999) ~ ('x' * 99999) ~ ('x' * 99999) ~ ('x' * 99999) "
    "~ ('x' * 99999) ~ ('x' * 99999) ~ ('x' * 99999) ~ ('x' * 99999) ~ ('x' * 99999) "
    "~ ('x' * 99999)",
    "[[['x' * 99999] * 10] * 10] * 10",
    "(['x' * 99999] * 10) + (['x' * 99999] * 10)",
    "[['x'] * 99999, ['x'] * 99999] | sum(start=[])",
    "('x' * 99999) | replace('', 'y' * 10)",
    # Mistakes that used to be internal errors: unknown filters and tests, Jinja's asserts.
    "'x' | center(5)",
    "1 is foo",
    "'x' | truncate(-1)",
    # Second hunt: work the budget did not see, and inputs that were exit 3.
    "5 | round(-100000000)",
    "1.5 | round(100000000, 'ceil')",
    "(([(10 ** 1000) ** 4] * 100000) | string) | length",
    "('%(a(b)c)400000000s' % {'a(b)c': 1}) | length",
    "[1, 2] | dictsort",
    "'abc' | dictsort",
    "[1] | map('dictsort') | list",
    " + ".join(["1"] * 2000),
    # Third hunt: the project's own filters pay for their input and output.
    "('{a}' * 250) | fill(a=(10 ** 1000) ** 4)",
    "['{a}{a}{a}{a}'] * 99999 | map('fill', a=10 ** 19) | list | length",
    "['1' * 490000] * 9 | map('address') | list | length",
    "[0] * 999999 | percent",
    "([0] * 99999) | count",
]
TEMPLATE_BOMBS = [
    "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% for c in facts.hostname * 1 %}{% for i in range(100000) %}{{ i }}{% endfor %}{% endfor %}",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "{{ 'x' * 99999 }}{{ 'x' * 99999 }}{{ 'x' * 99999 }}",
    "{% set x %}{{ '%0999999999d' % 1 }}{% endset %}{{ x | length }}",
    "{% set x %}{% for i in range(99999) %}{{ 'y' * 99999 }}{% endfor %}{% endset %}{{ x|length }}",
    "{% filter upper %}{% for i in range(99999) %}{{ 'y' * 9999 }}{% endfor %}{% endfilter %}",
    "{% for i in range(99999) %}{% set y = 'x' * 99999 %}{% endfor %}",
    "{{ 'x' | truncate(-1) }}",
    "{% set a = [0] * 499000 %}{% for i in range(80000) %}{% if 1 in a %}{% endif %}{% endfor %}",
    "{% set a = [0] * 499000 %}{% set b = [0] * 499000 %}"
    "{% for i in range(80000) %}{% if a == b %}{% endif %}{% endfor %}",
    "{% set x = [0] * 499000 %}{% for i in range(80000) %}{{ x | max }}{% endfor %}",
    "{% set x = [0] * 499000 %}{% for i in range(80000) %}{{ x | reject('eq', 0) | first }}"
    "{% endfor %}",
    "{% set s = 'ab ' * 333000 %}{{ [" + ", ".join(["s.split()"] * 40) + "] | length }}",
    "{% set s = 'x' * 999999 %}{% for i in range(99999) %}{% set t = s[::-1] %}{% endfor %}",
    "{% set s = 'x' * 999999 %}{% for i in range(99999) %}{{ s.upper() | length }}{% endfor %}",
    "{% set a = [0] * 499000 %}{{ [1] * 9999 | select('in', a) | list | length }}",
    "{% if 1 %}{% endif %}" * 300000,
    "{% set s = 'x' * 490000 %}{% for i in range(99999) %}{{ s | address }}{% endfor %}",
    "{% set s = '{a}' * 333 %}{% for i in range(99999) %}{{ s | fill(a=10 ** 19) }}{% endfor %}",
    # CPython parses a long number in quadratic time: int and float pay for what they read.
    "{% set s = '9' * 4000 %}{% for i in range(99999) %}{{ s | int }}{% endfor %}",
]


@pytest.fixture(autouse=True)
def fresh_budget() -> None:
    """Each test is a host of its own: the work budget starts full."""
    new_budget()


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


def _refused(
    source: str, variables: dict[str, Any], template: bool = False, compiler: Compiler | None = None
) -> str:
    compiler = compiler or Compiler()
    with pytest.raises(ExpressionError) as caught:
        if template:
            compiler.template(source).render(variables)
        else:
            compiler.expression(source).evaluate(variables)
    return str(caught.value)


@pytest.mark.parametrize("payload", ESCAPES)
def test_escape_is_refused(payload: str, variables: dict[str, Any], tmp_path: Path) -> None:
    message = _refused(payload, variables)
    assert "refused by the sandbox" in message or "not safely callable" in message, message
    message = _refused("{{ " + payload + " }}", variables, template=True)
    assert "refused by the sandbox" in message or "not safely callable" in message, message
    assert not (tmp_path / "MARKER").exists() and not Path("MARKER").exists()


@pytest.mark.parametrize("payload", GONE)
def test_model_methods_are_not_there(payload: str, variables: dict[str, Any]) -> None:
    assert "refused by the sandbox" in _refused(payload, variables)


@pytest.mark.parametrize("payload", BOMBS)
def test_bomb_is_bounded(payload: str, variables: dict[str, Any]) -> None:
    started = time.monotonic()
    message = _refused(payload, variables)
    assert "\n" not in message
    assert time.monotonic() - started < HANG_SECONDS, payload


@pytest.mark.parametrize("payload", TEMPLATE_BOMBS)
def test_template_bomb_is_bounded(payload: str, variables: dict[str, Any]) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    message = _refused(payload, variables, template=True)
    assert "\n" not in message
    assert time.monotonic() - started < HANG_SECONDS, payload
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    # The budget itself allows about 200 MiB: a list of two-character strings costs 3 units an
    # item and about 60 bytes (the str object and its pointer), so ten million units of them
    # measured 193 MiB here, and a loaded run 203. The bound is that, with room for the
    # allocator, not a figure below it.
    assert grown_mib < 256, grown_mib


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
    # One compiler for the ~8000 tries, as one run has: each try is a source of its own (its
    # own memo and cache key), and a fresh Compiler would re-read the whole code cache per try.
    compiler = Compiler()
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
            message = _refused(f"{path}.{attr}", variables, compiler=compiler)
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
        "references": ["linux-6-18-doc-ip-sysctl"],
        # above 2.6.32's default (128), so the setting is shown and its rationale rendered
        "set": {"net.core.somaxconn": "1024"},
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
    cli: Cli, where: str, payload: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rules = _rules_dir(tmp_path, where, payload)
    profiles = _profiles_dir(tmp_path)
    started = time.monotonic()
    result = cli(
        *["recommend", "--facts", DCACHE, "-p", "evil", "--rules-dir", str(rules)],
        *["--profiles-dir", str(profiles)],
    )
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused by the sandbox" in lines[0], lines
    assert "payload.yaml" in lines[0]
    assert not (tmp_path / "MARKER").exists()
    assert time.monotonic() - started < HANG_SECONDS


def test_profile_default_expr_payload(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    profiles = _profiles_dir(tmp_path, "facts.__class__.parse_raw('x')")
    result = cli("recommend", "--facts", DCACHE, "-p", "evil", "--profiles-dir", str(profiles))
    assert result.exit_code == 2
    assert "refused by the sandbox" in result.stderr and "default_expr" in result.stderr


def _run_rule(tmp_path: Path, extra: dict[str, Any]) -> tuple[int, list[str], float]:
    """recommend with a rules dir holding one rule built from `extra`; exit code, stderr lines
    and seconds taken."""
    directory = tmp_path / "rules" / "evil"
    directory.mkdir(parents=True)
    rule: dict[str, Any] = {
        "id": "evil.payload",
        "title": "payload",
        "description": "A rule that tries to exhaust the machine.",
        "rationale": "text",
        "references": ["linux-6-18-doc-ip-sysctl"],
        "set": {"net.core.somaxconn": "100"},
        **extra,
    }
    (directory / "payload.yaml").write_text(yaml.safe_dump(rule))
    profiles = _profiles_dir(tmp_path)
    started = time.monotonic()
    result = invoke(
        *["recommend", "--facts", DCACHE, "-p", "evil"],
        *["--rules-dir", str(tmp_path / "rules"), "--profiles-dir", str(profiles)],
    )
    return result.exit_code, result.stderr.strip().splitlines(), time.monotonic() - started


def test_companion_renders_share_the_hosts_budget(tmp_path: Path) -> None:
    """Each for_each item used to get a fresh loop budget: 100,000 items of a 441,000-iteration
    template was about 8 hours. Now all of a host's loops share one budget."""
    loops = "{% for i in range(49000) %}{% for j in range(9) %}{% endfor %}{% endfor %}x"
    companion = {"target": "nginx", "for_each": "[1] * 100000", "setting": loops}
    code, lines, seconds = _run_rule(tmp_path, {"companions": [companion]})
    assert code == 2 and len(lines) == 1, lines
    assert "more work than one host may take" in lines[0] and "payload.yaml" in lines[0]
    assert seconds < HANG_SECONDS


@pytest.mark.parametrize("for_each", ["5", "'text'", "none"])
def test_a_companion_for_each_that_is_not_a_list_is_one_line_exit_2(
    for_each: str, tmp_path: Path
) -> None:
    """A number there exited 3 (an internal error)."""
    companion = {"target": "nginx", "for_each": for_each, "setting": "x"}
    code, lines, _ = _run_rule(tmp_path, {"companions": [companion]})
    assert code == 2 and len(lines) == 1, lines
    assert "payload.yaml" in lines[0] and "companions[0]" in lines[0], lines[0]
    assert "for_each must give a list" in lines[0]


def test_lets_cannot_double_a_value_into_a_bomb(tmp_path: Path) -> None:
    """Each `let` may reuse the last: [a, a, a, a] twelve times over is 4**12 copies, which a
    later `| string` or comparison would walk. Literals are weighed as they are built."""
    lets = {"a0": "'x' * 1000"} | {f"a{i}": f"[a{i - 1}] * 4" for i in range(1, 13)}
    lets["a13"] = "[a12, a12, a12, a12]"
    code, lines, seconds = _run_rule(tmp_path, {"let": lets, "rationale": "{{ a13 }}"})
    assert code == 2 and len(lines) == 1 and "refused by the sandbox" in lines[0], lines
    assert seconds < HANG_SECONDS


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("2**1000 * 2**1000 * 2**1000 * 2**1000", "larger than any kernel value"),
        (" + ".join(["1"] * 250), "too deeply nested"),
        ("'x' | center(5)", "No filter named 'center'"),
        ("'x' | truncate(-1) | length", "AssertionError"),
    ],
)
def test_a_bad_value_expression_is_one_line_exit_2(value: str, says: str, tmp_path: Path) -> None:
    code, lines, _ = _run_rule(tmp_path, {"set": {"net.core.somaxconn": value}})
    assert code == 2 and len(lines) == 1, lines
    assert says in lines[0] and "payload.yaml" in lines[0], lines[0]


def test_weight_counts_shared_parts_and_stops_early() -> None:
    text = "x" * 1000
    assert weight(text) == 1000
    assert weight([text, text]) == 2003
    shared: list[Any] = [text]
    for _ in range(40):  # 2**40 copies of the text through shared references
        shared = [shared, shared]
    started = time.monotonic()
    assert weight(shared) > MAX_BUILD  # a walk of 2**40 copies would not end
    assert time.monotonic() - started < HANG_SECONDS


def test_jinja_sum_with_an_attribute_still_works(variables: dict[str, Any]) -> None:
    compiler = Compiler()
    expression = compiler.expression("[{'b': 3}, {'b': 4}] | sum(attribute='b')")
    assert expression.evaluate(variables) == 7
    assert compiler.expression("'%-20s|' % 'x'").evaluate(variables) == "x" + " " * 19 + "|"
    assert compiler.expression("(2.567 | round(2, 'floor'))").evaluate(variables) == 2.56


@pytest.mark.parametrize("reader", ["int", "float"])
def test_reading_a_number_pays_for_its_digits(reader: str, variables: dict[str, Any]) -> None:
    """CPython reads a long number in quadratic time, so `s | int` in a loop pays for the
    digits it reads each time, not only once for building `s`."""
    from sysctl_advisor.knowledge import expression_budget

    compiler = Compiler()
    built = compiler.expression("('9' * 4000) | length")
    parsed = compiler.expression(f"('9' * 4000) | {reader}")
    new_budget()
    built.evaluate(variables)
    building = expression_budget.MAX_WORK - expression_budget._Budget.left
    new_budget()
    parsed.evaluate(variables)
    assert expression_budget.MAX_WORK - expression_budget._Budget.left >= building + 4000


@pytest.mark.parametrize("character", ["\x1b", "\u202e", "\u2028", "\x85", "\r"])
@pytest.mark.parametrize("where", ["rules", "profiles"])
def test_rule_and_profile_text_holds_no_control_characters(
    cli: Cli, character: str, where: str, tmp_path: Path
) -> None:
    """A colleague's rules or profiles directory reaches terminals (`rules`, `explain`,
    `profiles`) and files: an ESC sequence, a bidi override or a line separator in a title or
    summary is refused at load with a one-line error, exit 2."""
    rules = _rules_dir(tmp_path, "let", "1")
    payload = f"looks harmless{character}[31m"
    rule_file = rules / "evil" / "payload.yaml"
    if where == "rules":
        rule = yaml.safe_load(rule_file.read_text())
        rule["title"] = payload
        rule_file.write_text(yaml.safe_dump(rule))
        args = ["rules", "--rules-dir", str(rules)]
    else:
        profiles = _profiles_dir(tmp_path)
        profile = yaml.safe_load((profiles / "evil.yaml").read_text())
        profile["summary"] = payload
        (profiles / "evil.yaml").write_text(yaml.safe_dump(profile))
        args = ["profiles", "--rules-dir", str(rules), "--profiles-dir", str(profiles)]
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert character not in result.stdout + result.stderr
    assert "control or separator character" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cached_code_runs_only_when_used_and_a_damaged_entry_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code from the cache is unmarshalled when the expression first runs (a run
    evaluates only its selected rules); an entry that no longer unmarshals is compiled again
    instead of failing, and a source new to the cache is compiled (and checked) at once."""
    from sysctl_advisor.cache import code

    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / "cache"))
    first = Compiler()
    first.expression("x * 2")
    first.save()
    loads: list[bytes] = []
    real_loads = code.marshal.loads

    def counted(data: bytes) -> object:
        loads.append(data)
        return real_loads(data)

    monkeypatch.setattr(code.marshal, "loads", counted)
    second = Compiler()
    second._cache()  # the cache file itself, opened when a kind first compiles
    opened = len(loads)
    expression = second.expression("x * 2")
    assert len(loads) == opened  # not yet
    assert expression.evaluate({"x": 21}) == 42
    assert len(loads) == opened + 1
    third = Compiler()
    key = next(iter(third._cache()._codes))
    third._cache()._codes[key] = b"\x00damaged"
    assert third.expression("x * 2").evaluate({"x": 4}) == 8
    with pytest.raises(ExpressionError, match="invalid expression"):
        third.expression("x *")  # not in the cache: compiled, and refused, when loaded


def test_a_rationale_no_setting_shows_is_never_rendered(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule's rationale is rendered when a setting it explains is shown. A rule
    that wants less than the default (an unchanged key) never runs its rationale, so even a
    payload there does nothing and the plan is made."""
    monkeypatch.chdir(tmp_path)
    rules = _rules_dir(tmp_path, "rationale", "lipsum.__globals__['os'].system('touch MARKER')")
    payload = rules / "evil" / "payload.yaml"
    payload.write_text(payload.read_text().replace("'1024'", "'100'"))
    assert "'100'" in payload.read_text()
    result = cli(
        *["recommend", "--facts", DCACHE, "-p", "evil", "--rules-dir", str(rules)],
        *["--profiles-dir", str(_profiles_dir(tmp_path)), "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    assert "net.core.somaxconn" in result.stdout and not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("1512.4", "1,510"),  # not "1.51e+03"
        ("123456.7", "123,000"),
        ("-2048.5", "-2,050"),
        ("999.5", "1,000"),  # rounds to 3 significant digits first
        ("723.1", "723"),
        ("0.0123", "0.0123"),
        ("4.5", "4.5"),
        ("1510", "1,510"),
        ("3000.0", "3,000"),
    ],
)
def test_num_never_writes_scientific_notation_from_a_thousand(
    value: str, shown: str, variables: dict[str, Any]
) -> None:
    rendered = Compiler().template("{{ " + value + " | num }}").render(variables)
    assert rendered == shown
