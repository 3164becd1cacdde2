"""Where each Kubernetes platform takes a node's sysctls (rules/catalog/node-platforms/*.yaml,
one file per platform): the documented place, whether it takes any key or only an
allow-list, and for an allow-list each key's field name and accepted range, with the source;
and the shape of its document (`shape` and `document`): a map of sysctl to string at a path
in YAML or TOML, a map of the platform's typed fields in JSON, or the node's sysctl.d file in
a wrapper that installs it.

A platform's file is knowledge, like a rule: the outputs (outputs/node_platforms.py) read it
to put each of the node's keys in its place, or to list it as refused, never to drop it; a
platform whose document has one of the shapes is its file alone.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import After, Constraints, Field, SpecModel, model
from sysctl_advisor.model.vocabulary import SysctlKeyGlob

PLATFORM_ID = r"^[a-z][a-z0-9-]{1,30}$"
_FIELD = r"^[A-Za-z][A-Za-z0-9_.-]{0,80}$"


@model
class PlatformKey(SpecModel):
    """A key an allow-list takes: its name there and the values it accepts."""

    name: SysctlKeyGlob = Field(description="the sysctl, as sysctl.conf names it")
    field: str | None = Field(
        default=None,
        pattern=_FIELD,
        description="the platform's own name for it (AKS: netCoreSomaxconn); none: the sysctl",
    )
    min: int | None = Field(default=None, description="the smallest value the platform takes")
    max: int | None = Field(default=None, description="the largest value the platform takes")
    kind: Literal["int", "bool", "str", "range"] = Field(
        default="int",
        description="how the platform types the value (range: 'low high', AKS's port range)",
    )
    refusal: str | None = Field(
        default=None,
        max_length=300,
        description="why a value outside min..max is refused, when more than its bounds say",
    )
    source: str = Field(max_length=300, description="where the platform documents the key")


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    return value


@model
class HeldKey(SpecModel):
    """A key a platform that takes any key must not be given by this output: its image sets
    it in a way the output would undo (a list a later file replaces whole)."""

    name: SysctlKeyGlob
    why: str = Field(max_length=400, description="what writing it would undo, and what to do")


@model
class LinterExemption(SpecModel):
    """A check of the linters people run on manifests (checkov, kube-linter) that the
    platform's manifest fails on purpose, and why: the output writes it as each linter's skip
    annotation, so a reviewer reads the reason where the linter would have complained."""

    why: str = Field(
        max_length=300,
        pattern=r"^[^=\n]+$",
        description="one line; no `=` (checkov splits its annotation's value at each one)",
    )
    checkov: list[str] = Field(default_factory=list, max_length=10)
    kube_linter: list[str] = Field(default_factory=list, max_length=10)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.checkov and not self.kube_linter:
            raise ValueError("an exemption names a checkov or kube-linter check")
        for check in self.checkov:
            if re.fullmatch(r"CKV2?_K8S_[0-9]{1,4}", check) is None:
                raise ValueError(f"not a checkov Kubernetes check id: {check[:40]!r}")
        for check in self.kube_linter:  # the annotation's name part: at most 63 characters
            if re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", check) is None:
                raise ValueError(f"not a kube-linter check name: {check[:70]!r}")


_MEMBER = r"^[A-Za-z][A-Za-z0-9_-]{0,40}$"


@model
class NodeDocument(SpecModel):
    """What the platform's document is made of, by its `shape` (outputs/node_platforms.py
    builds it): `map` a map of sysctl to string at `path` in `syntax`; `fields` the
    platform's typed fields (each key's `field`) at `path` in JSON; `file` the node's sysctl.d
    file, installed as `file` by a `wrapper`."""

    syntax: Literal["yaml", "toml", "json"] | None = Field(
        default=None, description="map: the document's syntax (fields: json)"
    )
    path: list[Annotated[str, Constraints(pattern=_MEMBER)]] = Field(
        default_factory=list,
        max_length=6,
        description="map and fields: the members, outermost first, that hold the keys",
    )
    beside: list[Annotated[str, Constraints(pattern=_MEMBER)]] = Field(
        default_factory=list,
        max_length=10,
        description="map: other top-level members the platform's file may hold (not written)",
    )
    one_line: bool = Field(
        default=False,
        description="map: each value written as one line, its fields joined by single spaces",
    )
    wrapper: Literal["daemonset", "user-data"] | None = Field(
        default=None,
        description="file: a ConfigMap and a DaemonSet (any cluster), or a shell script in "
        "MIME multi-part user data run before the kubelet starts",
    )
    file: str | None = Field(
        default=None,
        pattern=r"^/etc/sysctl\.d/[0-9A-Za-z][0-9A-Za-z_.-]{0,60}\.conf$",
        description="file: where on the node the sysctl.d file is installed",
    )
    comment: str | None = Field(
        default=None,
        max_length=1000,
        description="file, user-data: comment lines of the script, before it installs the file",
    )


_SHAPES = {  # what each shape's document names, and what it leaves out
    "map": ({"syntax", "path"}, {"wrapper", "file", "comment"}),
    "fields": ({"path"}, {"beside", "one_line", "wrapper", "file", "comment"}),
    "file": ({"wrapper", "file"}, {"syntax", "path", "beside", "one_line"}),
}


@model
class NodePlatformSpec(SpecModel):
    id: str = Field(pattern=PLATFORM_ID, description="the --format name")
    title: str = Field(max_length=200)
    place: str = Field(max_length=300, description="where on the platform the keys go")
    accepts: Literal["any", "listed"] = Field(
        description="any: every key the kernel has; listed: only `keys`, the platform refuses "
        "the rest"
    )
    keys: list[PlatformKey] = Field(default_factory=list, max_length=500)
    held: list[HeldKey] = Field(
        default_factory=list,
        max_length=50,
        description="keys the output leaves to the platform's image (listed as not set, with why)",
    )
    key_pattern: Annotated[str, After(_regex)] | None = Field(
        default=None,
        max_length=200,
        description="the key names the platform takes at all (a regular expression, whole "
        "name); any other is refused with `refused`",
    )
    refused: str | None = Field(
        default=None,
        max_length=500,
        description="what the platform does with a key it does not take",
    )
    shape: Literal["map", "fields", "file"] = Field(
        description="the kind of document the platform takes (see `document`)"
    )
    document: NodeDocument
    exemptions: list[LinterExemption] = Field(
        default_factory=list,
        max_length=40,
        description="linter checks its manifest fails on purpose, with why (annotated on it)",
    )
    references: list[str] = Field(min_length=1, max_length=20)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.accepts == "listed" and not self.keys:
            raise ValueError("a platform that takes listed keys needs `keys`")
        if self.accepts == "any" and self.keys:
            raise ValueError("a platform that takes any key lists none")
        names = [key.name for key in self.keys]
        if len(set(names)) != len(names):
            raise ValueError("a key is listed twice")
        self._check_document()

    def _check_document(self) -> None:
        names, unused = _SHAPES[self.shape]
        given = {name for name, value in self.document.__dict__.items() if value}
        if names - given or given & unused:
            raise ValueError(
                f"a {self.shape} document names {', '.join(sorted(names))}"
                + (f" and none of {', '.join(sorted(unused))}" if unused else "")
            )
        if self.shape == "map" and self.document.syntax == "json":
            raise ValueError("a map document is YAML or TOML (JSON holds no comments)")
        if self.shape == "fields" and (self.document.syntax or "json") != "json":
            raise ValueError("a fields document is JSON")
        if self.shape == "fields" and any(key.field is None for key in self.keys):
            raise ValueError("a fields document names each key's field")
        if self.document.comment is not None and self.document.wrapper != "user-data":
            raise ValueError("only a user-data script holds a comment")


class NodePlatform:
    def __init__(self, spec: NodePlatformSpec, path: Path) -> None:
        self.spec = spec
        self.path = path
        self._keys = {key.name: key for key in spec.keys}

    @property
    def id(self) -> str:
        return self.spec.id

    def takes(self, key: str, value: str) -> tuple[PlatformKey | None, str | None]:
        """Where the platform takes `key` = `value` (None: as the sysctl itself, where any key
        is taken), or why it refuses it."""
        held = next((h for h in self.spec.held if h.name == key), None)
        if held is not None:
            return None, held.why
        pattern = self.spec.key_pattern
        if pattern is not None and re.fullmatch(pattern, key) is None:
            return None, self.spec.refused or "the platform does not take this key name"
        if self.spec.accepts == "any":
            return None, None
        entry = self._keys.get(key)
        if entry is None:
            return None, self.spec.refused or f"{self.spec.title} does not take this key"
        if entry.kind in ("int", "bool"):
            fields = value.split()
            if len(fields) != 1 or not fields[0].lstrip("-").isdigit():
                return None, f"the platform takes one integer here, not {value!r}"
            number = int(fields[0])
            if entry.kind == "bool" and number not in (0, 1):
                return None, f"the platform takes true or false here, not {number}"
            if entry.min is not None and number < entry.min:
                return None, entry.refusal or f"below the platform's minimum of {entry.min}"
            if entry.max is not None and number > entry.max:
                return None, entry.refusal or f"above the platform's maximum of {entry.max}"
        return entry, None


def load_node_platforms(directory: Path, specs: SpecCache) -> dict[str, NodePlatform]:
    platforms: dict[str, NodePlatform] = {}
    for path in sorted(directory.glob("*.yaml")):
        spec = specs.load(path, NodePlatformSpec, "a node platform")
        if spec.id != path.stem:
            raise InputError(f"id {spec.id!r} is not the file's name", path=path, field="id")
        platforms[spec.id] = NodePlatform(spec, path)
    return platforms
