"""The workload a host runs: one profile or several (`-p frontend-proxy -p redis`, and each
profile's `includes:`), each keeping its own parameters.

A rule that several of them run is run once for each distinct set of the parameters it reads
(once when they agree, or when it reads none); the plan merges the wants of every run by the
catalog's policy, as it merges different rules' wants. A parameter two workloads both declare
is named `PROFILE.NAME` where their values differ (`--set redis.tcp_backlog=1024`); `--set
NAME=V` sets it for every workload that declares it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from sysctl_advisor.knowledge.profiles import Profile
from sysctl_advisor.knowledge.rules import Rule
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.near_names import unknown_name

SEPARATOR = "+"  # in a workload's name: frontend-proxy+redis
MAX_WORKLOADS = 32  # profiles one host runs, includes and all
_ABSENT = object()  # a parameter a profile does not declare
_MERGE: dict[str, Callable[[list[Any]], Any]] = {"max": max, "min": min, "any": any, "all": all}


def workload_names(names: str | Sequence[str]) -> tuple[str, ...]:
    """The profile names as given (one name, or several), each once, in order. A name joined
    with + (a plan's own name, `frontend-proxy+redis`) stands for each of its profiles: no
    profile name holds a +."""
    given = [names] if isinstance(names, str) else list(names)
    return tuple(dict.fromkeys(n for name in given for n in name.split(SEPARATOR)))


def unknown_profile(name: str, profiles: Mapping[str, Profile]) -> InputError:
    """`-p` naming no profile: the closest names, not all of them."""
    return unknown_name(
        "profile", name, list(profiles), "--profile", "`sysctl-advisor profiles` lists them"
    )


class RuleRun(NamedTuple):
    """One run of a rule: the workloads whose parameters it runs with (they agree on every
    parameter the rule reads), the first of them giving the parameters."""

    rule_id: str
    workloads: tuple[str, ...]


class Workload:
    """The profiles given, each followed by the profiles it includes (each once)."""

    def __init__(self, given: tuple[str, ...], profiles: Mapping[str, Profile]) -> None:
        if not given:
            raise InputError("no profile given", field="--profile")
        self.given = given
        self.name = SEPARATOR.join(given)
        expanded: dict[str, Profile] = {}

        def add(name: str, trail: tuple[str, ...]) -> None:
            if name in trail:
                raise InputError(
                    f"profile includes loop through {name!r}",
                    path=profiles[trail[-1]].path,
                    field="includes",
                )
            if name in expanded:
                return
            if len(expanded) == MAX_WORKLOADS:
                raise InputError(f"more than {MAX_WORKLOADS} profiles", field="--profile")
            expanded[name] = profiles[name]
            for included in profiles[name].includes:
                add(included, (*trail, name))

        for name in given:
            if name not in profiles:
                raise unknown_profile(name, profiles)
            add(name, ())
        self.profiles = list(expanded.values())
        self.names = [p.name for p in self.profiles]
        ids: dict[str, None] = {}
        for profile in self.profiles:
            ids.update(dict.fromkeys(profile.rule_ids))
        self.rule_ids = list(ids)
        self.servers = list(dict.fromkeys(s for p in self.profiles for s in p.servers))
        self._single_runs: list[RuleRun] | None = None

    @property
    def single(self) -> Profile | None:
        """The one profile, when the workload is one."""
        return self.profiles[0] if len(self.profiles) == 1 else None

    def resolve(
        self, overrides: dict[str, str], variables: dict[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """Each profile's own parameter values, unmerged: its defaults over the host, then the
        --set overrides meant for it (NAME: every profile declaring it; PROFILE.NAME: that
        one). `merge` gives what the rules see."""
        own: dict[str, dict[str, str]] = {p.name: {} for p in self.profiles}
        # NAME first, then PROFILE.NAME: the one that names a profile wins, whatever the order
        for name, value in sorted(overrides.items(), key=lambda item: "." in item[0]):
            target, dot, parameter = name.partition(".")
            if dot:
                if target not in own:
                    raise InputError(
                        f"{name!r}: {target!r} is not a profile of this workload "
                        f"({', '.join(own)})",
                        field="--set",
                    )
                takers = [target]
            else:
                parameter = name
                takers = [p.name for p in self.profiles if parameter in p.parameters]
                if not takers:
                    raise InputError(
                        f"unknown parameter {name!r} for {self._said()} "
                        f"(parameters: {', '.join(self.parameter_names()) or 'none'})",
                        field="--set",
                    )
            for taker in takers:
                own[taker][parameter] = value
        return {p.name: p.resolve(own[p.name], variables) for p in self.profiles}

    def merge(self, own: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The parameters every workload's rules see: each profile's own values (`resolve`),
        where a parameter describes the host (a merge policy) the merged value of them all."""
        params = {name: dict(values) for name, values in own.items()}
        for name, merge in self._merged().items():
            values = [v[name] for v in params.values() if v.get(name) is not None]
            if values:
                merged = _MERGE[merge](values)
                for values_of in params.values():
                    values_of[name] = merged
        return params

    def server_params(self, own: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each server's own workload's parameters, unmerged (`resolve`), by server id: the
        first profile naming it in `servers:` (Redis's listen_backlog is its tcp-backlog,
        whatever PostgreSQL's is; the merged value sizes the host's somaxconn)."""
        by_server: dict[str, dict[str, Any]] = {}
        for profile in self.profiles:
            for server in profile.servers:
                by_server.setdefault(server, own[profile.name])
        return by_server

    def _merged(self) -> dict[str, str]:
        """The parameters that describe the host (a merge policy), when several profiles run:
        every workload's rules then see the merged value, declared or not."""
        if len(self.profiles) == 1:
            return {}
        merged: dict[str, str] = {}
        for profile in self.profiles:
            for name, param in profile.parameters.items():
                if param.merge is not None:
                    merged.setdefault(name, param.merge)
        return merged

    def _said(self) -> str:
        return f"profile {self.name!r}" if len(self.given) == 1 else f"profiles {self.name!r}"

    def parameter_names(self) -> list[str]:
        """Every parameter a --set can name: NAME, and PROFILE.NAME where several declare it."""
        names: dict[str, None] = {}
        for profile in self.profiles:
            names.update(dict.fromkeys(profile.parameters))
        shared = {n for n in names if sum(n in p.parameters for p in self.profiles) > 1}
        dotted = [f"{p.name}.{n}" for p in self.profiles for n in p.parameters if n in shared]
        return sorted(names) + dotted

    def shown(self, params: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The parameters as the plan shows them: NAME where every profile declaring it has
        the same value, PROFILE.NAME for each where they differ."""
        if len(self.profiles) == 1:
            return params[self.names[0]]
        shown: dict[str, Any] = {}
        for profile in self.profiles:
            for name, value in params[profile.name].items():
                values = [params[p.name][name] for p in self.profiles if name in p.parameters]
                if all(v == values[0] and type(v) is type(values[0]) for v in values):
                    shown[name] = value
                else:
                    shown[f"{profile.name}.{name}"] = value
        return shown

    def runs(self, rules: Mapping[str, Rule], params: dict[str, dict[str, Any]]) -> list[RuleRun]:
        """Every rule run, in rule order: one per distinct set of the parameters it reads
        among the workloads that run it."""
        if len(self.profiles) == 1:  # one run each, whatever the parameters
            if self._single_runs is None:
                self._single_runs = [RuleRun(r, (self.names[0],)) for r in self.rule_ids]
            return self._single_runs
        runs: list[RuleRun] = []
        for rule_id in self.rule_ids:
            reads = rules[rule_id].parameter_names
            groups: dict[tuple[Any, ...], list[str]] = {}
            for profile in self.profiles:
                if rule_id in profile.rule_ids:
                    values = params[profile.name]
                    signature = tuple(repr(values.get(n, _ABSENT)) for n in reads)
                    groups.setdefault(signature, []).append(profile.name)
            runs += [RuleRun(rule_id, tuple(names)) for names in groups.values()]
        return runs
