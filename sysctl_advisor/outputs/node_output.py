"""What a node platform's document is built from (`NodeOutput`: the node's keys the platform
takes, those it refuses, the header), and the label that names a profile's objects and
selects its nodes. outputs/node_platforms.py makes it; each shape's module builds from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.plan import Plan, Setting
from sysctl_advisor.outputs.plan_render import RenderCheckError, Renderer

if TYPE_CHECKING:
    from sysctl_advisor.knowledge.node_platforms import NodePlatform, PlatformKey

NODE_LABEL = "sysctl-advisor/profile"  # the label that selects the nodes of a profile
# The label's value, which also names the objects (sysctl-advisor-VALUE): both a label value
# (apimachinery's IsValidLabelValue: at most 63 characters) and part of a DNS subdomain
# (IsDNS1123Subdomain: lower case, each dot-separated part starting and ending with a letter or
# digit). Several profiles (redis+postgresql) give redis.postgresql.
LABEL_VALUE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
MAX_LABEL = 63


def node_label(plan: Plan) -> str:
    """The plan's profile as the node label value and object name; InputError when it cannot
    be one (a long list of profiles, a --profiles-dir name)."""
    label = plan.profile.label
    if len(label) > MAX_LABEL or not LABEL_VALUE.fullmatch(label):
        raise InputError(
            f"profile {plan.profile.name[:70]!r} cannot name Kubernetes objects: a label value "
            f"is at most {MAX_LABEL} characters and each of its dot-separated parts starts "
            "and ends with a letter or digit (several profiles: one that lists them under "
            "`includes:` names them in one word)",
            field="--profile",
        )
    return label


@dataclass(frozen=True)
class NodeKey:
    setting: Setting
    entry: PlatformKey | None  # the allow-list's entry (its field name); None: any key

    @property
    def key(self) -> str:
        return self.setting.key

    @property
    def value(self) -> str:
        return self.setting.value


@dataclass(frozen=True)
class NodeOutput:
    """What a platform's document is built from."""

    platform: NodePlatform
    plan: Plan  # the node's plan, cut to the keys the platform takes
    taken: list[NodeKey]
    refused: list[tuple[Setting, str]]  # with the reason
    pod_keys: list[str]  # per-namespace keys: the pod's, in `--format kubernetes`
    header: list[str]  # comment lines, each starting with `#`
    command: str
    renderer: Renderer

    def conf(self) -> str:
        """The node's sysctl.d file, one line a key (what the DaemonSet and EKS install)."""
        return self.renderer.render(self.plan, "conf", self.command, detail="brief")


def read_back_error(platform: NodePlatform, where: str, what: str) -> RenderCheckError:
    """A read-back's one failure: one line naming the platform's output and the member."""
    return RenderCheckError(f"the {platform.id} output's {where or 'document'} {what}")


def nest(path: list[str], leaf: Any) -> dict[str, Any]:
    """`leaf` at `path`: {a: {b: leaf}} for [a, b]."""
    for name in reversed(path):
        leaf = {name: leaf}
    return dict(leaf)


def at_path(platform: NodePlatform, data: Any, path: list[str], beside: list[str]) -> Any:
    """What `data` holds at `path`, each member on the way a mapping holding only the next
    (the top may also hold `beside`); anything else fails the read-back."""
    where: list[str] = []
    for depth, name in enumerate(path):
        allowed = {name, *beside} if depth == 0 else {name}
        if not isinstance(data, dict):
            raise read_back_error(platform, ".".join(where), "is not a mapping")
        if set(data) - allowed:
            raise read_back_error(
                platform, ".".join(where), f"holds more than {' and '.join(sorted(allowed))}"
            )
        if name not in data:
            raise read_back_error(platform, ".".join(where), f"has no {name}")
        data = data[name]
        where.append(name)
    if not isinstance(data, dict):
        raise read_back_error(platform, ".".join(where), "is not a mapping")
    return data
