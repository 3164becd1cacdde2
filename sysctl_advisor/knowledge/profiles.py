"""Workload profiles: parameters (typed, bounded, documented), rules they enable, `extends:`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.expressions import (
    Compiler,
    Expression,
    ExpressionError,
    as_input_error,
)
from sysctl_advisor.knowledge.knowledge_files import profile_files
from sysctl_advisor.knowledge.rules import Rule, matches
from sysctl_advisor.knowledge.servers import SERVER_ID
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import After, Constraints, Field, SpecModel, model
from sysctl_advisor.model.text_escape import plain_line
from sysctl_advisor.model.vocabulary import OneLine

ParamType = Literal["int", "float", "bool", "str"]
MAX_EXTENDS = 32  # profiles in one `extends` chain (the shipped ones go two deep)
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
# A parameter's name: what a rule reads as params.NAME and `--set NAME=V` (or PROFILE.NAME=V)
# names, so no dot, `=`, space or line break.
_PARAMETER_NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}")


def _parameter_name(name: str) -> str:
    if not _PARAMETER_NAME.fullmatch(name):
        raise ValueError(
            f"parameter name {name[:70]!r} is not lower-case letters, digits and _ "
            "(at most 64, not starting with a digit)"
        )
    return name


ParameterName = Annotated[str, After(_parameter_name)]
MAX_LINE = 200  # a summary or unit: shown after a name, on that name's line
# A DNS label (RFC 1123): the name is also a Kubernetes label value and object name, and
# several profiles' names joined by `.` are one (outputs.node_platforms.node_label).
PROFILE_NAME = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
# What a profile names: another profile, a server of the server table, rules (an id, or a
# glob of ids with `*`). Each is held to the form of what it names, so a reference no
# profile, server or rule could answer to is refused where it stands (its file, line and
# field), and one that could is short enough to quote whole when it names nothing loaded.
ProfileRef = Annotated[str, Constraints(pattern=PROFILE_NAME)]
ServerRef = Annotated[str, Constraints(pattern=SERVER_ID)]
RuleSelector = Annotated[str, Constraints(pattern=r"^[a-z0-9*][a-z0-9.*-]{0,199}$")]


@model
class Parameter(SpecModel):
    type: ParamType
    description: str
    default: int | float | bool | str | None = None
    default_expr: str | None = Field(
        default=None,
        description="expression over host facts, and `params.NAME` of the parameters "
        "declared before it (their --set values where given); any other read of `params` "
        "fails at load",
    )
    min: float | None = None
    max: float | None = None
    choices: list[str] | None = None
    unit: OneLine | None = Field(default=None, max_length=MAX_LINE)
    # A fact about the host rather than one workload's wish: where several workloads run, the
    # rules see one value, the largest (max) or smallest (min) number, or true when any (any)
    # or every (all) workload that declares it says so.
    merge: Literal["max", "min", "any", "all"] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.default is not None and self.default_expr is not None:
            raise ValueError("give either default or default_expr, not both")
        for name in ("min", "max", "default"):
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is above max")
        if self.merge in ("max", "min") and self.type not in ("int", "float"):
            raise ValueError(f"merge {self.merge} needs a number parameter")
        if self.merge in ("any", "all") and self.type != "bool":
            raise ValueError(f"merge {self.merge} needs a bool parameter")


@model
class ProfileSpec(SpecModel):
    name: str = Field(pattern=PROFILE_NAME)
    summary: OneLine = Field(max_length=MAX_LINE)
    description: str = ""
    extends: ProfileRef | None = None
    # Other workloads this one brings along (a host role: `includes: [frontend-proxy, redis]`):
    # each keeps its own parameters and rules, merged as `--profile A --profile B` merges them.
    includes: list[ProfileRef] = Field(default_factory=list, max_length=32)
    parameters: dict[ParameterName, Parameter] = Field(default_factory=dict)
    rules: list[RuleSelector] = Field(default_factory=list)
    servers: list[ServerRef] = Field(
        default_factory=list,
        max_length=32,
        description="ids in the server table (rules/catalog/servers.yaml) of the programs that "
        "serve this workload: one listening in a Kubernetes node's own network namespace means "
        "the workload runs there (hostNetwork), so its per-namespace keys are the node's",
    )


class Profile:
    """A profile with its inheritance resolved: all parameters and rule ids, parents first."""

    def __init__(
        self,
        chain: list[tuple[ProfileSpec, Path]],
        rules: Mapping[str, Rule],
        compiler: Compiler,
        selected: dict[str, list[str]] | None = None,
    ) -> None:
        """`selected`: rule ids by selector, shared by the profiles of one load (a selector
        is matched against the rules once, however many profiles inherit it)."""
        selected = {} if selected is None else selected
        spec, path = chain[-1]
        self.name = spec.name
        self.summary = spec.summary
        self.description = spec.description
        self.path = path
        self.chain = [s.name for s, _ in chain]
        self.includes = list(spec.includes)
        self.own_servers = list(spec.servers)  # as its file declares them (checked at load)
        self.servers = list(dict.fromkeys(name for s, _ in chain for name in s.servers))
        self.parameters: dict[str, Parameter] = {}
        self._param_paths: dict[str, Path] = {}
        ids: dict[str, None] = {}  # in order, each once
        for s, p in chain:
            for name, param in s.parameters.items():
                self.parameters[name] = param
                self._param_paths[name] = p
            for i, selector in enumerate(s.rules):
                found = selected.get(selector)
                if found is None:
                    found = selected[selector] = [rid for rid in rules if matches(selector, rid)]
                if not found:
                    raise InputError(f"no rule matches {selector!r}", path=p, field=f"rules[{i}]")
                for rid in found:
                    ids[rid] = None
        self.rule_ids = list(ids)
        self._defaults: dict[str, Expression] = {}
        for index, (name, param) in enumerate(self.parameters.items()):
            if param.default_expr is not None:
                try:
                    self._defaults[name] = compiler.expression(param.default_expr)
                except ExpressionError as exc:
                    raise as_input_error(
                        exc, self._param_paths[name], f"parameters.{name}.default_expr"
                    ) from None
                self._reads_earlier(compiler, name, list(self.parameters)[:index])

    def _reads_earlier(self, compiler: Compiler, name: str, earlier: list[str]) -> None:
        """A default_expr reads `params.NAME` of parameters declared before it only: one that
        reads itself, a later one or `params` any other way (a cycle, or a default that works
        only with a --set) fails at load, naming the file and field."""
        source = self.parameters[name].default_expr or ""
        if "params" not in source:
            return
        _, read = compiler.reads(source, "params")
        bad = None if read is None else sorted(read - set(earlier))
        if bad == []:
            return
        what = ", ".join(f"params.{b}" for b in bad) if bad else "params other than by name"
        raise InputError(
            f"default_expr reads {what}: a default reads only parameters declared before it "
            f"({', '.join(earlier) or 'none here'})",
            path=self._param_paths[name],
            field=f"parameters.{name}.default_expr",
        )

    def resolve(self, overrides: dict[str, str], variables: dict[str, Any]) -> dict[str, Any]:
        """Parameter values: defaults (evaluated over the host), then --set overrides."""
        for name in overrides:
            if name not in self.parameters:
                known = ", ".join(sorted(self.parameters)) or "none"
                raise InputError(
                    f"unknown parameter {name!r} for profile {self.name!r} (parameters: {known})",
                    field="--set",
                )
        # a default_expr reads `params`: the --set values and the parameters declared before
        # it (PostgreSQL's listen_backlog is twice the max_connections the plan takes)
        values: dict[str, Any] = {
            name: coerce(name, param, overrides[name])
            for name, param in self.parameters.items()
            if name in overrides
        }
        for name, param in self.parameters.items():
            if name in overrides:
                continue
            if name in self._defaults:
                try:
                    value = self._defaults[name].evaluate({**variables, "params": dict(values)})
                except ExpressionError as exc:
                    raise as_input_error(
                        exc, self._param_paths[name], f"parameters.{name}.default_expr"
                    ) from None
            else:
                value = param.default
            values[name] = None if value is None else coerce(name, param, value, from_default=True)
        return values


def coerce(name: str, param: Parameter, raw: Any, *, from_default: bool = False) -> Any:
    """A parameter value of the declared type and range; InputError otherwise."""
    where = f"parameters.{name}" if from_default else f"--set {name}"
    value: Any
    text = str(raw).strip()
    try:
        if param.type == "bool":
            if isinstance(raw, bool):
                value = raw
            elif text.lower() in _TRUE:
                value = True
            elif text.lower() in _FALSE:
                value = False
            else:
                raise ValueError
        elif param.type in ("int", "float") and not text.isascii():
            raise ValueError  # int() and float() also take '١٢٣' or '²'
        elif param.type == "int":
            if isinstance(raw, float) and raw.is_integer():
                raw = int(raw)
            value = raw if isinstance(raw, int) and not isinstance(raw, bool) else int(text, 10)
        elif param.type == "float":
            value = (
                float(raw)
                if isinstance(raw, int | float) and not isinstance(raw, bool)
                else float(text)
            )
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError
        else:
            value = plain_line(text, "parameter")
    except ValueError as exc:
        if param.type == "str":
            raise InputError(str(exc), field=where) from None
        raise InputError(f"expected {_article(param.type)}, got {text!r}", field=where) from None
    if param.type in ("int", "float"):
        if param.min is not None and value < param.min:
            raise InputError(f"{value} is below the minimum {param.min:g}", field=where)
        if param.max is not None and value > param.max:
            raise InputError(f"{value} is above the maximum {param.max:g}", field=where)
    if param.choices is not None and value not in param.choices:
        raise InputError(f"{value!r} is not one of {', '.join(param.choices)}", field=where)
    return value


def _article(kind: str) -> str:
    return {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string"}[
        kind
    ]


ProfileFiles = dict[str, tuple[ProfileSpec, Path]]


def load_profiles(
    directories: list[Path], rules: Mapping[str, Rule], compiler: Compiler, specs: SpecCache
) -> dict[str, Profile]:
    found = profile_specs(directories, specs)
    selected: dict[str, list[str]] = {}
    profiles = {name: resolve(name, found, rules, compiler, selected) for name in sorted(found)}
    for profile in profiles.values():
        for i, included in enumerate(profile.includes):
            if included not in profiles:
                raise InputError(
                    f"includes unknown profile {included!r}",
                    path=profile.path,
                    field=f"includes[{i}]",
                )
    check_parameters(rules, profiles)
    return profiles


def profile_specs(directories: list[Path], specs: SpecCache) -> ProfileFiles:
    """Every profile file, validated, by name (a later directory's replaces an earlier's)."""
    found: ProfileFiles = {}
    for directory in directories:
        if not directory.is_dir():
            raise InputError("profiles directory not found", path=directory)
        for path in profile_files(directory):
            spec = specs.load(path, ProfileSpec, "a profile file")
            if path.stem != spec.name:
                raise InputError(
                    f"profile name {spec.name!r} does not match the file name",
                    path=path,
                    field="name",
                )
            found[spec.name] = (spec, path)
    return found


def resolve(
    name: str,
    found: ProfileFiles,
    rules: Mapping[str, Rule],
    compiler: Compiler,
    selected: dict[str, list[str]],
) -> Profile:
    """One profile with its inheritance resolved (`selected`: rule ids by selector, shared by
    the profiles of one load)."""
    chain: list[tuple[ProfileSpec, Path]] = []
    names: set[str] = set()
    current: str | None = name
    while current is not None:
        if current in names:
            raise InputError(
                f"profile inheritance loops through {current!r}",
                path=found[name][1],
                field="extends",
            )
        if len(chain) == MAX_EXTENDS:
            raise InputError(
                f"extends more than {MAX_EXTENDS} profiles deep",
                path=found[name][1],
                field="extends",
            )
        names.add(current)
        if current not in found:
            child = chain[-1][1] if chain else found[name][1]
            raise InputError(f"extends unknown profile {current!r}", path=child, field="extends")
        chain.append(found[current])
        current = found[current][0].extends
    return Profile(list(reversed(chain)), rules, compiler, selected)


def check_parameters(rules: Mapping[str, Rule], profiles: dict[str, Profile]) -> None:
    """Every parameter a rule reads by name is declared by a profile that runs the rule (by
    any profile, for a rule none runs): `params.rtt_msec is defined` with a misspelt name
    would otherwise never hold, and the rule would never fire."""
    everyone = list(profiles.values())
    runs = [(p, set(p.rule_ids)) for p in everyone]
    for rule in rules.values():
        running = [p for p, ids in runs if rule.id in ids] or everyone
        declared = {name for p in running for name in p.parameters}
        for where, name in rule.parameters_read():
            if name not in declared:
                names = ", ".join(p.name for p in running) or "none"
                raise InputError(
                    f"reads params.{name}, which no profile that runs the rule declares "
                    f"(profiles: {names})",
                    path=rule.path,
                    field=where,
                )
