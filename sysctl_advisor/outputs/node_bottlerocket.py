"""`recommend --format bottlerocket`: the node's keys as Bottlerocket user data.

Bottlerocket reads its settings from the instance's user data in TOML
(rules/catalog/node-platforms/bottlerocket.yaml): `[settings.kernel.sysctl]`, quoted keys and
string values; in an EKS managed node group's launch template, EKS merges it with its own.
corndog writes each value to its file under /proc/sys. The document comes from a TOML
serializer (tomli-w), read back with tomllib; the header on top as TOML comments.

The settings API refuses a key outside its SysctlKey pattern: the platform file's
`key_pattern`, by which such a key is listed as not taken, never written.
"""

from __future__ import annotations

from typing import Any

import tomli_w

from sysctl_advisor.knowledge.node_platforms import NodePlatform
from sysctl_advisor.model.documents import parse_toml
from sysctl_advisor.outputs.node_platforms import NodeOutput


def settings(node: NodeOutput) -> dict[str, Any]:
    return {"settings": {"kernel": {"sysctl": {t.key: str(t.value) for t in node.taken}}}}


def document(node: NodeOutput) -> str:
    head = "\n".join(node.header) + "\n"
    return head + tomli_w.dumps(settings(node))


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """`settings.kernel.sysctl` as Bottlerocket reads it: string values only (anything else in
    the document, or a value of another type, reads as nothing)."""
    data = parse_toml(text, None)
    if set(data) != {"settings"} or set(data["settings"]) != {"kernel"}:
        return {}
    kernel = data["settings"]["kernel"]
    if not isinstance(kernel, dict) or set(kernel) != {"sysctl"}:
        return {}
    sysctl = kernel["sysctl"]
    if not isinstance(sysctl, dict) or not all(isinstance(v, str) for v in sysctl.values()):
        return {}
    return dict(sysctl)
