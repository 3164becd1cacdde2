"""Rules: one concern per YAML file, validated strictly, expressions compiled once.

A rule may `set` keys (capacity or safety wants, merged by the catalog's policy), `cap` keys
(safety ceilings that beat every want, or with `cap_kind: preference` one workload's
preference, which yields to no want and beats none), raise `findings` and propose
`companions` (settings outside sysctl that the values depend on).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.catalog import Catalog, CatalogKey, normalise
from sysctl_advisor.knowledge.expressions import (
    Compiler,
    Expression,
    ExpressionError,
    Text,
    as_input_error,
    each,
)
from sysctl_advisor.knowledge.knowledge_files import RULE_ID, check_family, rule_files
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import After, Before, Field, SpecModel, model
from sysctl_advisor.model.severity import Severity

if TYPE_CHECKING:
    from jinja2.runtime import Context

_PLANNED = re.compile(r"\bplanned\b")
_PLANNED_ALIAS = re.compile(r"\bplanned\.([A-Za-z_]\w*)")
# `planned` alone as a truth test ("if planned", "and planned"): says which pass this is
_PLANNED_TEST = re.compile(r"\b(?:if|and|or|not)\s+planned\b(?!\s*\.)")
_PARAMETER = re.compile(r"\bparams\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*['\"]([^'\"]+)['\"]\s*\])")
# what is code in a field: a string literal is not, nor a template's prose outside {{ }}/{% %}
_STRING = re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\"")
_TEMPLATE_CODE = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.DOTALL)
C = TypeVar("C", Expression, Text)


def code_of(source: str, template: bool) -> str:
    """An expression's code, or a template's `{{ }}` and `{% %}` parts (its prose is not
    code), string literals blanked: what a rule reads is found here, not in its words."""
    if template:
        source = " ".join(a or b for a, b in _TEMPLATE_CODE.findall(source))
    return _STRING.sub("''", source)


@model
class FindingSpec(SpecModel):
    id: str = Field(pattern=RULE_ID)
    severity: Severity
    key: str | None = None
    when: str | None = None
    message: str


@model
class CompanionSpec(SpecModel):
    target: str = Field(description="what the setting belongs to; a template (`{{ item.x }}`)")
    when: str | None = None
    for_each: str | None = Field(
        default=None, description="a list expression; one companion per element, bound to `item`"
    )
    setting: str
    command: bool = Field(
        default=False,
        description="the setting is a shell command: every value a `{{ }}` prints into it is "
        "one shell word (shlex.quote), so a name from the facts never becomes shell syntax",
    )
    rationale: str | None = None


def _rationale_keys(value: str | dict[str, str]) -> str | dict[str, str]:
    if isinstance(value, dict) and not value:
        raise ValueError("rationale must not be empty")
    return value


def _strings(value: Any) -> Any:
    # Numbers are valid expressions too; accept `set: {key: 0}`.
    if isinstance(value, dict):
        return {
            k: (str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v)
            for k, v in value.items()
        }
    return value


Expressions = Annotated[dict[str, str], Before(_strings)]


@model
class RuleSpec(SpecModel):
    id: str = Field(pattern=RULE_ID)
    title: str
    description: str
    when: str | None = None
    let: Expressions = Field(default_factory=dict)
    set: Expressions = Field(default_factory=dict)
    cap: Expressions = Field(default_factory=dict)
    cap_kind: Literal["safety", "preference"] = Field(
        default="safety",
        description="what the rule's caps are: `safety` (a limit that keeps the kernel or the "
        "host safe, which beats every want) or `preference` (what one workload would rather "
        "have, such as small idle buffers: against another rule's want on the same element it "
        "is a contradiction, reported, and neither is applied)",
    )
    findings: list[FindingSpec] = Field(default_factory=list)
    companions: list[CompanionSpec] = Field(default_factory=list)
    rationale: Annotated[str | dict[str, str], After(_rationale_keys)] = Field(
        description="one template for the whole rule, or one per key (plus `default`)"
    )
    summary: Annotated[str | dict[str, str], After(_rationale_keys)] | None = Field(
        default=None,
        description="the rationale in one sentence with its arithmetic (what a sysctl.conf "
        "prints by default): one template, or one per key (plus `default`)",
    )
    references: list[str] = Field(min_length=1)


@dataclass
class FindingResult:
    id: str
    severity: Severity
    key: str | None
    message: str
    rule: str


@dataclass
class CompanionResult:
    target: str
    setting: str
    rationale: str
    rule: str


@dataclass
class RuleResult:
    rule: Rule
    lets: dict[str, Any] = field(default_factory=dict)
    wants: dict[str, Any] = field(default_factory=dict)
    caps: dict[str, Any] = field(default_factory=dict)
    findings: list[FindingResult] = field(default_factory=list)
    companions: list[CompanionResult] = field(default_factory=list)
    # The rule's context after its evaluation: rationales are rendered in it when a setting
    # asks for one (about half the rules that apply to a host end up setting nothing).
    context: Context | None = None
    rationale: dict[str, str] = field(default_factory=dict)
    summary: dict[str, str] = field(default_factory=dict)

    def rationale_for(self, key: str) -> str:
        """The rule's rationale for `key` (its own, else the rule's default, else none)."""
        return self._text(key, self.rule.rationale, self.rationale, "rationale")

    def summary_for(self, key: str) -> str:
        """The rule's one-sentence summary for `key` (as `rationale_for`), else its rationale."""
        if not self.rule.summary:
            return self.rationale_for(key)
        return self._text(key, self.rule.summary, self.summary, "summary") or self.rationale_for(
            key
        )

    def _text(self, key: str, templates: dict[str, Text], done: dict[str, str], what: str) -> str:
        name = key if key in templates else "default"
        if name not in templates or self.context is None:
            return ""
        text = done.get(name)
        if text is None:
            try:
                text = done[name] = templates[name].render_in(self.context)
            except ExpressionError as exc:
                raise self.rule.fail(exc, f"{what}.{name}") from None
        return text


class Rule:
    """A rule with its expressions compiled."""

    def __init__(self, spec: RuleSpec, path: Path, compiler: Compiler, catalog: Catalog) -> None:
        self.spec = spec
        self.compiler = compiler
        self.id = spec.id
        self.path = path
        for section in ("set", "cap"):
            for key in getattr(spec, section):
                if key not in catalog.keys:
                    raise InputError(
                        f"unknown key {key!r} (not in the key catalog)",
                        path=path,
                        field=f"{section}.{key}",
                    )
                if section == "cap" and catalog.keys[key].is_text:
                    raise InputError(
                        f"{key} holds text (a name or a port set), which has no cap",
                        path=path,
                        field=f"cap.{key}",
                    )
        if spec.cap_kind != "safety" and not spec.cap:
            raise InputError(
                f"cap_kind is {spec.cap_kind!r}, but the rule caps nothing",
                path=path,
                field="cap_kind",
            )
        for i, finding in enumerate(spec.findings):
            if finding.key is not None and finding.key not in catalog.keys:
                raise InputError(
                    f"unknown key {finding.key!r}", path=path, field=f"findings[{i}].key"
                )
        self.keys: dict[str, CatalogKey] = {k: catalog.keys[k] for k in (*spec.set, *spec.cap)}
        # every expression and template of the rule, by field (for the parameters check), and
        # the code in each (what it reads of `planned`, the facts, the kernel model)
        self.sources: list[tuple[str, str]] = []
        self.code: list[tuple[str, str]] = []
        self._aliases = catalog.by_alias

        def compiled(make: Callable[[str], C], source: str, where: str) -> C:
            self.sources.append((where, source))
            self.code.append(
                (where, code_of(source, make in (compiler.template, compiler.command)))
            )
            try:
                return make(source)
            except ExpressionError as exc:
                raise as_input_error(exc, path, where) from None

        def expr(source: str, where: str) -> Expression:
            return compiled(compiler.expression, source, where)

        def text(source: str, where: str) -> Text:
            return compiled(compiler.template, source, where)

        self.when = expr(spec.when, "when") if spec.when else None
        self.let = [(n, expr(e, f"let.{n}")) for n, e in spec.let.items()]
        self.set = [(k, expr(e, f"set.{k}")) for k, e in spec.set.items()]
        self.cap = [(k, expr(e, f"cap.{k}")) for k, e in spec.cap.items()]
        self.findings = [
            (
                f,
                expr(f.when, f"findings[{i}].when") if f.when else None,
                text(f.message, f"findings[{i}].message"),
            )
            for i, f in enumerate(spec.findings)
        ]
        self.companions = [
            (
                c,
                expr(c.when, f"companions[{i}].when") if c.when else None,
                expr(c.for_each, f"companions[{i}].for_each") if c.for_each else None,
                compiled(
                    compiler.command if c.command else compiler.template,
                    c.setting,
                    f"companions[{i}].setting",
                ),
                text(c.rationale, f"companions[{i}].rationale") if c.rationale else None,
                text(c.target, f"companions[{i}].target"),
            )
            for i, c in enumerate(spec.companions)
        ]
        self.rationale = self._templates(spec.rationale, "rationale", path, text)
        self.summary = self._templates(spec.summary, "summary", path, text) if spec.summary else {}

    def _templates(
        self,
        value: str | dict[str, str],
        what: str,
        path: Path,
        text: Callable[[str, str], Text],
    ) -> dict[str, Text]:
        """A rationale or summary: one template for every key (`default`), or one per key."""
        if isinstance(value, str):
            return {"default": text(value, what)}
        for key in value:
            if key != "default" and key not in self.keys:
                raise InputError(
                    f"{what} for {key!r}, which the rule neither sets nor caps",
                    path=path,
                    field=f"{what}.{key}",
                )
        return {k: text(v, f"{what}.{k}") for k, v in value.items()}

    @functools.cached_property
    def reads_planned(self) -> bool:
        """Whether the rule reads `planned` (the values the plan ends with), and so runs again
        once the other rules' wants and caps are resolved."""
        return any(_PLANNED.search(code) for _, code in self.code)

    @functools.cached_property
    def planned_aliases(self) -> frozenset[str] | None:
        """The catalog aliases the rule reads as `planned.ALIAS`; None when it reads `planned`
        some other way, or an attribute that is no alias (`planned.get(...)`): then every key
        is resolved for it."""
        named = {m[1] for _, code in self.code for m in _PLANNED_ALIAS.finditer(code)}
        uses = sum(len(_PLANNED.findall(code)) for _, code in self.code)
        dotted = sum(len(_PLANNED_ALIAS.findall(code)) for _, code in self.code)
        bare = sum(len(_PLANNED_TEST.findall(code)) for _, code in self.code)
        if uses != dotted + bare or any(name not in self._aliases for name in named):
            return None
        return frozenset(named)

    @functools.cached_property
    def parameter_names(self) -> tuple[str, ...]:
        """The names of the parameters the rule reads, sorted, each once."""
        return tuple(sorted({name for _, name in self.parameters_read()}))

    def parameters_read(self) -> list[tuple[str, str]]:
        """(field, name) of every profile parameter the rule reads by name (`params.NAME`,
        `params['NAME']`), in its expressions and templates."""
        return [
            (where, match[1] or match[2])
            for where, source in self.sources
            for match in _PARAMETER.finditer(source)
        ]

    def fail(self, exc: ExpressionError | ValueError, where: str) -> InputError:
        return InputError(str(exc), path=self.path, field=where)

    def evaluate(
        self,
        variables: dict[str, Any],
        compiler: Compiler | None = None,
        screen: Context | None = None,
    ) -> RuleResult | None:
        """Apply the rule to one host; None when its `when` is false. All of the rule's
        expressions run in one context (much cheaper than one each). `screen`: a context over
        the same variables that several rules' `when` share (most rules do not apply to a
        given host, and a `when` cannot change a context), so a rule whose `when` is false
        costs no context of its own."""
        if compiler is None:
            compiler = self.compiler
        where = "when"
        ctx: Context | None = None
        try:
            if self.when is not None:
                if screen is None:
                    screen = ctx = compiler.context(variables)
                if not self.when.run(screen):
                    return None
            if ctx is None:
                ctx = compiler.context(variables)
            result = RuleResult(self)
            for name, expr in self.let:
                where = f"let.{name}"
                value = expr.run(ctx)
                ctx.vars[name] = value
                result.lets[name] = value
            for key, expr in self.set:
                where = f"set.{key}"
                value = expr.run(ctx)
                if value is not None:  # `none` means: no want on this host
                    # a `none` element: this rule is not about that element
                    result.wants[key] = normalise(value, self.keys[key], allow_none=True)
            for key, expr in self.cap:
                where = f"cap.{key}"
                value = expr.run(ctx)
                if value is not None:  # `none` means: no cap on this host
                    result.caps[key] = normalise(value, self.keys[key], allow_none=True)
            for i, (spec, when, message) in enumerate(self.findings):
                where = f"findings[{i}]"
                if when is None or when.run(ctx):
                    result.findings.append(
                        FindingResult(
                            spec.id, spec.severity, spec.key, message.render_in(ctx), self.id
                        )
                    )
            for i, (_, when, for_each, setting, why, target) in enumerate(self.companions):
                where = f"companions[{i}]"
                if when is not None and not when.run(ctx):
                    continue
                items = _items(for_each.run(ctx)) if for_each is not None else [None]
                for item in each(items):  # each item's renders pay a loop iteration
                    if for_each is not None:
                        ctx.vars["item"] = item
                    result.companions.append(
                        CompanionResult(
                            " ".join(target.render_in(ctx).split()),
                            setting.render_in(ctx),
                            why.render_in(ctx) if why else "",
                            self.id,
                        )
                    )
                ctx.vars.pop("item", None)
            result.context = ctx
        except (ExpressionError, ValueError) as exc:
            raise self.fail(exc, where) from None
        return result


def load_rules(
    directories: list[Path], compiler: Compiler, catalog: Catalog, specs: SpecCache
) -> dict[str, Rule]:
    """Every *.yaml under the directories (their catalog/ and check/ folders excepted).

    Within one directory a rule id may appear once; a later directory (--rules-dir) replaces a
    shipped rule of the same id.
    """
    rules: dict[str, Rule] = {}
    for directory in directories:
        if not directory.is_dir():
            raise InputError("rules directory not found", path=directory)
        local: dict[str, Rule] = {}
        for path in rule_files(directory):
            rule = load_rule(path, compiler, catalog, specs)
            check_family(rule.id, path, directory)
            if rule.id in local:
                raise InputError(
                    f"duplicate rule id {rule.id!r} (also in {local[rule.id].path})",
                    path=path,
                    field="id",
                )
            local[rule.id] = rule
        rules.update(local)
    seen: dict[str, Path] = {}
    for rule in rules.values():
        for finding in rule.spec.findings:
            if finding.id in seen and seen[finding.id] != rule.path:
                raise InputError(
                    f"finding id {finding.id!r} is also used in {seen[finding.id]}",
                    path=rule.path,
                    field="findings",
                )
            seen[finding.id] = rule.path
    return dict(sorted(rules.items()))


def load_rule(path: Path, compiler: Compiler, catalog: Catalog, specs: SpecCache) -> Rule:
    """One rule file, validated and compiled (checked against the others by load_rules)."""
    return Rule(specs.load(path, RuleSpec, "a rule file"), path, compiler, catalog)


def _items(value: Any) -> list[Any]:
    """What a companion's `for_each` gives: a list (a number or a text is refused)."""
    if not isinstance(value, list | tuple):
        raise ValueError(f"for_each must give a list, not {type(value).__name__}")
    return list(value)


def matches(pattern: str, rule_id: str) -> bool:
    """Profile rule selectors: exact ids or globs where `*` is any run of characters
    (`time-wait.*`). Matched greedily with backtracking to the last star only, so the time is
    at most len(pattern) x len(rule_id), never exponential (a regex of many `.*` was)."""
    if "*" not in pattern:
        return pattern == rule_id
    p = t = 0
    star, mark = -1, 0
    while t < len(rule_id):
        if p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif p < len(pattern) and pattern[p] == rule_id[t]:
            p += 1
            t += 1
        elif star != -1:
            p, mark = star + 1, mark + 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)
