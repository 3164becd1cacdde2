"""`recommend --format talos`: the node's keys as a Talos machine configuration patch.

A strategic merge patch (rules/catalog/node-platforms/talos.yaml): `machine.sysctls`, a map of
sysctl name to string value, merged into the machine configuration by `talosctl gen config
--config-patch-worker @FILE`, `talosctl machineconfig patch` or, on running nodes, `talosctl
patch mc`. Talos takes any key and writes each value to its file under /proc/sys. The document
comes from the YAML serializer, every value a string (the schema's type), the header on top as
YAML comments.
"""

from __future__ import annotations

from typing import Any

import yaml

from sysctl_advisor.knowledge.node_platforms import NodePlatform
from sysctl_advisor.outputs.node_platforms import NodeOutput


def patch(node: NodeOutput) -> dict[str, Any]:
    return {"machine": {"sysctls": {t.key: str(t.value) for t in node.taken}}}


def document(node: NodeOutput) -> str:
    head = "\n".join(node.header) + "\n"
    return head + yaml.safe_dump(patch(node), sort_keys=False, allow_unicode=True, width=4096)


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """`machine.sysctls` as Talos reads it: each entry a string (anything else, or any other
    field in the patch, reads as nothing)."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or set(data) != {"machine"}:
        return {}
    machine = data["machine"]
    if not isinstance(machine, dict) or set(machine) != {"sysctls"}:
        return {}
    sysctls = machine["sysctls"]
    if not isinstance(sysctls, dict):
        return {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in sysctls.items()):
        return {}
    return dict(sysctls)
