"""`recommend --format aks`: the node's keys as the Linux OS configuration file of AKS's custom
node configuration, the JSON that `az aks nodepool add --linux-os-config FILE` takes.

The keys go in its `sysctls` object under AKS's own field names and types (integers, a boolean,
the port range as a "low high" string), from rules/catalog/node-platforms/aks.yaml, written by
the JSON serializer. JSON holds no comments, so what the other formats say in their header (the
keys AKS does not take, with the reason, and the pod's keys) is a second top-level member,
`x-sysctl-advisor`, which AKS never reads: az builds the request from the documented fields of
LinuxOSConfig. The read-back takes only `sysctls`, field by field through the allow-list, as AKS
does.
"""

from __future__ import annotations

import json
from typing import Any

from sysctl_advisor.knowledge.node_platforms import NodePlatform, PlatformKey
from sysctl_advisor.outputs.node_platforms import NodeOutput
from sysctl_advisor.outputs.plan_render import RenderCheckError

NOTES = "x-sysctl-advisor"  # the member AKS does not read: what the header says elsewhere


def _port_range(entry: PlatformKey, value: str) -> str:
    """The range as AKS takes it ("low high"), each end within the documented bounds."""
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
            f"{entry.name} = {value}: AKS takes two ports from {bottom} to {top}, low first; "
            "nothing was written (set it with --format daemonset)"
        )
    return f"{low} {high}"


def _typed(entry: PlatformKey, value: str) -> int | bool | str:
    if entry.kind == "bool":
        return value.strip() == "1"
    if entry.kind == "int":
        return int(value)
    if entry.kind == "range":
        return _port_range(entry, value)
    return value


def _kernel_text(entry: PlatformKey, value: Any) -> str:
    """What the node's sysctl gets from a field's value (the plan's spelling)."""
    if entry.kind == "bool" and isinstance(value, bool):
        return "1" if value else "0"
    if entry.kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if entry.kind in ("range", "str") and isinstance(value, str):
        return " ".join(value.split())
    raise RenderCheckError(f"the aks output gives {entry.field} a {type(value).__name__}")


def document(node: NodeOutput) -> str:
    sysctls: dict[str, int | bool | str] = {}
    for taken in node.taken:
        if taken.entry is None or taken.entry.field is None:
            raise RenderCheckError(f"{taken.key} has no AKS field; nothing was written")
        sysctls[taken.entry.field] = _typed(taken.entry, taken.value)
    notes: dict[str, Any] = {
        "header": [line.removeprefix("#").removeprefix(" ") for line in node.header],
        "notTaken": {s.key: {"value": s.value, "why": why} for s, why in node.refused},
        "podKeys": list(node.pod_keys),
    }
    return json.dumps({"sysctls": sysctls, NOTES: notes}, indent=2) + "\n"


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The values AKS gives the node: each field of `sysctls` through the allow-list; a field
    AKS does not know, or a value of the wrong type, fails the check."""
    data = json.loads(text)
    if not isinstance(data, dict) or set(data) - {"sysctls", NOTES}:
        raise RenderCheckError("the aks output holds more than sysctls and its notes")
    sysctls = data.get("sysctls", {})
    if not isinstance(sysctls, dict):
        raise RenderCheckError("the aks output's sysctls is not an object")
    fields = {key.field or key.name: key for key in platform.spec.keys}  # AKS's names
    values: dict[str, str] = {}
    for field, value in sysctls.items():
        entry = fields.get(field)
        if entry is None:
            raise RenderCheckError(f"AKS has no sysctl field {field!r}")
        values[entry.name] = _kernel_text(entry, value)
    return values
