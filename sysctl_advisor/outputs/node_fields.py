"""The `fields` shape of a node platform's document: the platform's own typed fields at a path
in JSON (AKS's Linux OS configuration file, `sysctls`, that `az aks nodepool add
--linux-os-config FILE` takes: the platform's `document`, rules/catalog/node-platforms/ID.yaml).

Each key goes under its allow-list entry's `field`, typed by its `kind` (integers, a boolean,
a port range as a "low high" string), written by the JSON serializer. JSON holds no comments,
so what the other formats say in their header (the keys not taken, with the reason, and the
pod's keys) is a second top-level member, `x-sysctl-advisor`, which the platform never reads
(az builds the request from the documented fields). The read-back takes only the fields at the
path, field by field through the allow-list, as the platform does.
"""

from __future__ import annotations

import json
from typing import Any

from sysctl_advisor.knowledge.node_platforms import NodePlatform, PlatformKey
from sysctl_advisor.outputs.node_output import NodeOutput, at_path, nest, read_back_error
from sysctl_advisor.outputs.plan_render import RenderCheckError

NOTES = "x-sysctl-advisor"  # the member the platform does not read: what the header says elsewhere


def _port_range(platform: NodePlatform, entry: PlatformKey, value: str) -> str:
    """The range as the platform takes it ("low high"), each end within the documented bounds."""
    ends = value.split()
    low, high = (
        (int(ends[0]), int(ends[1]))
        if len(ends) == 2 and value.isascii() and all(e.isdigit() for e in ends)
        else (0, -1)
    )
    bottom = entry.min if entry.min is not None else 0
    top = entry.max if entry.max is not None else 65535
    if not bottom <= low <= high <= top:
        raise RenderCheckError(
            f"{entry.name} = {value}: the {platform.id} output takes two ports from {bottom} to "
            f"{top}, low first; nothing was written (set it with --format daemonset)"
        )
    return f"{low} {high}"


def _typed(platform: NodePlatform, entry: PlatformKey, value: str) -> int | bool | str:
    if entry.kind == "bool":
        return value.strip() == "1"
    if entry.kind == "int":
        return int(value)
    if entry.kind == "range":
        return _port_range(platform, entry, value)
    return value


def _kernel_text(platform: NodePlatform, entry: PlatformKey, value: Any) -> str:
    """What the node's sysctl gets from a field's value (the plan's spelling)."""
    if entry.kind == "bool" and isinstance(value, bool):
        return "1" if value else "0"
    if entry.kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if entry.kind in ("range", "str") and isinstance(value, str):
        return " ".join(value.split())
    where = ".".join([*platform.spec.document.path, str(entry.field)])
    raise read_back_error(platform, where, f"is a {type(value).__name__}, not {entry.kind}")


def document(node: NodeOutput) -> str:
    fields: dict[str, int | bool | str] = {}
    for taken in node.taken:
        if taken.entry is None or taken.entry.field is None:
            raise RenderCheckError(f"{taken.key} has no field here; nothing was written")
        fields[taken.entry.field] = _typed(node.platform, taken.entry, taken.value)
    notes: dict[str, Any] = {
        "header": [line.removeprefix("#").removeprefix(" ") for line in node.header],
        "notTaken": {s.key: {"value": s.value, "why": why} for s, why in node.refused},
        "podKeys": list(node.pod_keys),
    }
    data = {**nest(node.platform.spec.document.path, fields), NOTES: notes}
    return json.dumps(data, indent=2) + "\n"


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The values the platform gives the node: each field at the path through the allow-list;
    a field it does not know, or a value of the wrong type, fails the check."""
    path = platform.spec.document.path
    try:
        data = json.loads(text)
    except ValueError:
        raise read_back_error(platform, "", "is not JSON") from None
    found = at_path(platform, data, path, [NOTES])
    entries = {key.field: key for key in platform.spec.keys}  # the platform's names
    values: dict[str, str] = {}
    for field, value in found.items():
        entry = entries.get(field)
        if entry is None:
            raise read_back_error(
                platform, ".".join(path), f"holds {field!r}, no field of the platform"
            )
        values[entry.name] = _kernel_text(platform, entry, value)
    return values


def extension(platform: NodePlatform) -> str:
    return "json"
