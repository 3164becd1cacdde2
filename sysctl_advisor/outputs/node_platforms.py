"""`recommend --format daemonset|talos|bottlerocket|aks|gke|eks`: the node's keys of a
Placement in the place each Kubernetes platform takes them.

What is shared: which of the node's keys the platform takes (knowledge/node_platforms.py, from
rules/catalog/node-platforms/ID.yaml) and which it refuses (listed in the output, never
dropped), the per-namespace keys that belong in the pod (`--format kubernetes`), and the
comment header. Each platform's document is built by its own module, outputs/node_ID.py,
from a serializer (`document(node) -> str`), and read back by it (`read_back(text, platform)
-> {key: value}`, an allow-list read through the platform's own file): the text is written
only when it holds exactly the keys taken, with their values.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from sysctl_advisor import __version__
from sysctl_advisor.engine.undo import UNDO_RULE
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.plan import Plan, Setting
from sysctl_advisor.outputs.plan_render import (
    RenderCheckError,
    Renderer,
    _yaml_comment,
    first_sentence,
)

if TYPE_CHECKING:
    from sysctl_advisor.engine.kubernetes_placement import Placement
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
    """What a platform's module builds its document from."""

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


class _Module(Protocol):
    def document(self, node: NodeOutput) -> str: ...
    def read_back(self, text: str, platform: NodePlatform) -> dict[str, str]: ...


def _comment(text: str) -> list[str]:
    return str(_yaml_comment(text, indent="# ", first="# ")).splitlines()


def _header(node: NodeOutput, placement: Placement) -> list[str]:
    plan, spec = node.plan, node.platform.spec
    host = plan.host
    lines = _comment(
        f"{spec.title}, written by sysctl-advisor {__version__} for "
        f"{host.hostname or 'this host'} (kernel {host.kernel or 'unknown'}), profile "
        f"{plan.profile.name}."
    )
    lines += _comment(f"Where: {spec.place}.")
    lines += _comment(f"Rebuild: {node.command}")
    if node.refused:
        lines += _comment(
            f"Not taken by this platform ({len(node.refused)}); set them another way "
            "(--format daemonset works on any cluster):"
        )
        for setting, why in node.refused:
            lines += _comment(f"  {setting.key} = {setting.value}: {why}")
    lost = [f for f in plan.findings if f.rule == UNDO_RULE]  # an undo's keys it cannot restore
    if lost:
        lines += _comment(f"Not restored by this undo ({len(lost)}):")
        for finding in lost:
            lines += _comment(f"  {first_sentence(finding.message)}")
    if placement.host_network:
        lines += _comment(
            "The workload runs in the node's own network namespace (hostNetwork: "
            f"{'; '.join(placement.host_network)}), where a pod may not set net.* sysctls: "
            "its per-namespace keys are the node's, set here."
        )
    elif placement.node_namespace:
        lines += _comment(
            "Per-namespace keys for the node's own network namespace, not the pods': "
            + "; ".join(f"{key}: {why}" for key, why in placement.node_namespace.items())
            + "."
        )
    if node.pod_keys:
        lines += _comment(
            "Per-namespace keys belong in the pods, which a node's value never reaches "
            f"(--format kubernetes): {', '.join(node.pod_keys)}."
        )
    if not node.taken:
        lines += _comment("The node: no key to set on this platform.")
    return lines


def split(
    platform: NodePlatform, placement: Placement
) -> tuple[list[NodeKey], list[tuple[Setting, str]]]:
    """The node's keys the platform takes, and those it refuses with the reason."""
    taken: list[NodeKey] = []
    refused: list[tuple[Setting, str]] = []
    for setting in placement.node.settings:
        entry, why = platform.takes(setting.key, setting.value)
        if why is None:
            taken.append(NodeKey(setting, entry))
        else:
            refused.append((setting, why))
    return taken, refused


def render_node(
    platform: NodePlatform, renderer: Renderer, placement: Placement, command: str
) -> str:
    """The platform's document for the placement's node keys, checked by reading it back."""
    taken, refused = split(platform, placement)
    plan = replace(placement.node, settings=[t.setting for t in taken])
    node = NodeOutput(
        platform=platform,
        plan=plan,
        taken=taken,
        refused=refused,
        pod_keys=[p.setting.key for p in placement.pod],
        header=[],
        command=command,
        renderer=renderer,
    )
    node = replace(node, header=_header(node, placement))
    module: _Module = importlib.import_module(f"sysctl_advisor.outputs.node_{platform.id}")
    text = module.document(node)
    if module.read_back(text, platform) != {t.key: t.value for t in taken}:
        raise RenderCheckError(
            f"the {platform.id} output does not read back as the plan; nothing was written"
        )
    return text
