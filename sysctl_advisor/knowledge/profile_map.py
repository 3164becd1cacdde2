"""Which profile each host of a fleet gets: `--profile-map FILE`, first match wins.

    # profile-map.yaml
    - hosts: ["edge-*", "web[01:12]"]   # inventory names: Ansible ranges, * and ? globs
      profile: frontend-proxy
      set: {listen_backlog: 32768}
    - group: dtn                 # Ansible inventory group(s); needs --inventory
      profile: gridftp
    - hosts: "cache-*"
      profile: [frontend-proxy, redis]   # several workloads (or a profile with includes:)
      set: {redis.listen_backlog: 4096}
    - hosts: "*"                 # a catch-all; without one, --profile is the default
      profile: base

Host patterns read as in Ansible (sysctl_advisor/knowledge/host_patterns.py): `web[01:03]` is web01
to web03, `[a:c]` is a, b or c, `*` and `?` are globs; a shell character class (`[abc]`) is refused.
Groups come from `ansible-inventory -i INVENTORY --list` (JSON), given as --inventory: Ansible
resolves its own inventory formats, plugins and nested groups better than a re-implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from sysctl_advisor.knowledge.host_patterns import PatternError, compile_pattern, matches
from sysctl_advisor.knowledge.profiles import Profile, coerce
from sysctl_advisor.knowledge.workloads import SEPARATOR, Workload, workload_names
from sysctl_advisor.model.documents import (
    PROFILE_MAP,
    parse_document,
    parse_json,
    read_text,
)
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import Before, Field, Record, model, validate


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Names = Annotated[list[str], Before(_as_list)]  # one name, or a list of them


@model
class MapEntry(Record):
    hosts: Names = Field(default_factory=list, description="inventory-name patterns")
    group: Names = Field(default_factory=list, description="inventory groups")
    profile: Names = Field(description="a profile, or the list of profiles the hosts run")
    set: dict[str, str | int | float | bool] = Field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    """The profile for one host, with its --set style overrides."""

    profile: str
    overrides: dict[str, str]


class ProfileMap:
    def __init__(
        self,
        entries: list[MapEntry],
        default: Choice | None,
        groups: dict[str, frozenset[str]],
        overrides: list[dict[str, str]] | None = None,
    ) -> None:
        self.entries = entries
        # checked by load_profile_map with the file and entry in the message
        self._patterns = [[compile_pattern(p) for p in e.hosts] for e in entries]
        self.default = default
        self.groups = groups
        # each entry's `set`, as the profile's parameter types read it (`streams: 2.0` is 2)
        canonical = overrides or [{k: _text(v) for k, v in e.set.items()} for e in entries]
        self._choices = [
            Choice(SEPARATOR.join(e.profile), o) for e, o in zip(entries, canonical, strict=True)
        ]

    def choose(self, host: str) -> Choice | None:
        """The first entry that matches the host, else the default (None: no profile)."""
        for entry, patterns, choice in zip(
            self.entries, self._patterns, self._choices, strict=True
        ):
            if any(matches(pattern, host) for pattern in patterns):
                return choice
            if any(host in self.groups.get(group, ()) for group in entry.group):
                return choice
        return self.default


def _text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 80.0 -> "80", which an int or a float parameter reads
    return str(value)


def load_profile_map(
    path: Path | None,
    default_profile: str | None,
    profiles: Mapping[str, Profile],
    inventory: Path | None = None,
) -> ProfileMap:
    """Read and check the map against the known profiles and their parameters."""
    if default_profile is not None:
        Workload(workload_names(default_profile), profiles)  # every profile known, or one line
    default = Choice(default_profile, {}) if default_profile is not None else None
    entries: list[MapEntry] = []
    overrides: list[dict[str, str]] = []
    if path is not None:
        text = read_text(path)
        data = parse_document(text, path, PROFILE_MAP)
        if not isinstance(data, list):
            raise InputError("a profile map is a list of {hosts|group, profile, set}", path=path)
        for i, item in enumerate(data):
            entry = validate(MapEntry, item, path, text)
            overrides.append(_check_entry(entry, i, path, profiles))
            entries.append(entry)
    elif default is None:
        raise InputError("give --profile, --profile-map, or both", field="--profile")
    groups: dict[str, frozenset[str]] = {}
    wanted = {g for e in entries for g in e.group}
    if wanted:
        if inventory is None:
            raise InputError(
                "the profile map matches inventory groups: pass --inventory FILE "
                "(the output of `ansible-inventory -i INVENTORY --list`)",
                path=path,
            )
        groups = load_inventory_groups(inventory)
        unknown = sorted(wanted - set(groups))
        if unknown:
            raise InputError(f"groups not in the inventory: {', '.join(unknown)}", path=path)
    return ProfileMap(entries, default, groups, overrides)


def _check_entry(
    entry: MapEntry, i: int, path: Path, profiles: Mapping[str, Profile]
) -> dict[str, str]:
    """Check one entry against its profile; its `set` as the text --set would pass."""
    where = f"[{i}]"
    if not entry.hosts and not entry.group:
        raise InputError("an entry needs `hosts` or `group`", path=path, field=where)
    for n, pattern in enumerate(entry.hosts):
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            raise InputError(str(exc), path=path, field=f"{where}.hosts[{n}]") from None
    try:
        workload = Workload(workload_names(entry.profile), profiles)
    except InputError as exc:
        raise InputError(exc.message, path=path, field=f"{where}.profile") from None
    canonical: dict[str, str] = {}
    for name, value in entry.set.items():
        target, dot, parameter = name.partition(".")
        declaring = [
            p
            for p in workload.profiles
            if (p.name == target if dot else True) and (parameter if dot else name) in p.parameters
        ]
        if not declaring:
            known = ", ".join(workload.parameter_names()) or "none"
            raise InputError(
                f"unknown parameter {name!r} for {workload.name!r} (parameters: {known})",
                path=path,
                field=f"{where}.set",
            )
        param = declaring[0].parameters[parameter if dot else name]
        try:
            canonical[name] = _text(coerce(name, param, value))
        except InputError as exc:
            raise InputError(exc.message, path=path, field=f"{where}.set.{name}") from None
    return canonical


def _names(value: object, path: Path, field: str) -> list[str]:
    """An inventory group's `hosts` or `children`: a list of names (absent: none)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError("expected a list of names", path=path, field=field)
    return value


def load_inventory_groups(path: Path) -> dict[str, frozenset[str]]:
    """Group -> hosts (nested groups included) from `ansible-inventory --list` JSON."""
    data = parse_json(read_text(path), path)
    if not isinstance(data, dict):
        raise InputError("expected `ansible-inventory --list` output (a JSON object)", path=path)
    direct: dict[str, set[str]] = {}
    children: dict[str, list[str]] = {}
    for name, group in data.items():
        if name == "_meta" or not isinstance(group, dict):
            continue
        direct[name] = set(_names(group.get("hosts"), path, f"{name}.hosts"))
        children[name] = _names(group.get("children"), path, f"{name}.children")

    # Every group's hosts, nested groups included: an explicit walk, so a chain of thousands
    # of nested groups (or a cycle) costs no recursion.
    resolved: dict[str, frozenset[str]] = {}
    for name in direct:
        hosts: set[str] = set()
        seen, stack = {name}, [name]
        while stack:
            group = stack.pop()
            hosts |= direct.get(group, set())
            for child in children.get(group, []):
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        resolved[name] = frozenset(hosts)
    return resolved
