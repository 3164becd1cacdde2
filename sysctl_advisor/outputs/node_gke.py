"""`recommend --format gke`: the node's keys as GKE's node system configuration, the YAML file
`gcloud container node-pools create|update --system-config-from-file FILE` takes.

The keys go in its `linuxConfig.sysctl` map, each value a string (gcloud refuses any other
type), written by the YAML serializer under the comment header: the keys GKE does not take,
with the reason, and the pod's keys. The read-back takes the file as gcloud does: a mapping of
`kubeletConfig` and `linuxConfig` only, `linuxConfig` of `sysctl` here, string values, and
only the sysctls GKE lists.
"""

from __future__ import annotations

from typing import Any

import yaml

from sysctl_advisor.knowledge.node_platforms import NodePlatform
from sysctl_advisor.outputs.node_platforms import NodeOutput
from sysctl_advisor.outputs.plan_render import RenderCheckError

ROOT = "linuxConfig"
SYSCTL = "sysctl"  # gcloud's name for the map (the API's LinuxNodeConfig.sysctls)


def document(node: NodeOutput) -> str:
    sysctls = {t.key: " ".join(t.value.split()) for t in node.taken}
    body = yaml.safe_dump(
        {ROOT: {SYSCTL: sysctls}}, sort_keys=False, default_flow_style=False, width=4096
    )
    return "\n".join(node.header) + "\n" + body


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The values GKE gives the node; a member gcloud would refuse fails the check."""
    data: Any = yaml.safe_load(text)
    if not isinstance(data, dict) or set(data) - {"kubeletConfig", ROOT}:
        raise RenderCheckError("the gke output is not a node system configuration")
    linux = data.get(ROOT) or {}
    if not isinstance(linux, dict) or set(linux) - {SYSCTL}:
        raise RenderCheckError(f"the gke output's {ROOT} holds more than {SYSCTL}")
    sysctls = linux.get(SYSCTL) or {}
    if not isinstance(sysctls, dict):
        raise RenderCheckError(f"the gke output's {SYSCTL} is not a mapping")
    listed = {key.name for key in platform.spec.keys}
    values: dict[str, str] = {}
    for key, value in sysctls.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise RenderCheckError(f"gcloud takes only string values: {key!r}: {value!r}")
        if key not in listed:
            raise RenderCheckError(f"GKE does not take {key!r}")
        values[key] = value
    return values
