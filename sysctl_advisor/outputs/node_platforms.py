"""`recommend --format daemonset|talos|bottlerocket|aks|gke|eks`: the node's keys of a
Placement in the place each Kubernetes platform takes them.

What is shared: which of the node's keys the platform takes (knowledge/node_platforms.py, from
rules/catalog/node-platforms/ID.yaml) and which it refuses (listed in the output, never
dropped), the per-namespace keys that belong in the pod (`--format kubernetes`), and the
comment header. The document is built by the module of the platform's `shape` (`SHAPES`):
node_map.py (a map of sysctl to string at a path in YAML or TOML: Talos, Bottlerocket, GKE),
node_fields.py (the platform's typed fields in JSON: AKS) or node_file.py (the node's sysctl.d
file in a wrapper that installs it: the DaemonSet, EKS user data), each from its serializer
(`document(node) -> str`), and read back by it (`read_back(text, platform) -> {key: value}`,
an allow-list read through the platform's own file, which fails with one line naming the
member): the text is written only when it holds exactly the keys taken, with their values.
A platform whose document has one of these shapes is its YAML file alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from sysctl_advisor import __version__
from sysctl_advisor.engine.undo import UNDO_RULE
from sysctl_advisor.model.plan import Setting
from sysctl_advisor.outputs.node_output import NodeKey, NodeOutput
from sysctl_advisor.outputs.plan_render import (
    RenderCheckError,
    Renderer,
    _yaml_comment,
    first_sentence,
)

if TYPE_CHECKING:
    from sysctl_advisor.engine.kubernetes_placement import Placement
    from sysctl_advisor.knowledge.node_platforms import NodePlatform


class Shape(Protocol):
    """A shape's module."""

    def document(self, node: NodeOutput) -> str: ...
    def read_back(self, text: str, platform: NodePlatform) -> dict[str, str]: ...
    def extension(self, platform: NodePlatform) -> str: ...


def _map() -> Shape:
    from sysctl_advisor.outputs import node_map

    return node_map


def _fields() -> Shape:
    from sysctl_advisor.outputs import node_fields

    return node_fields


def _file() -> Shape:
    from sysctl_advisor.outputs import node_file

    return node_file


# Each shape's module, imported when a run writes that shape (rules/catalog/node-platforms'
# `shape`); the knowledge file's model names the same three.
SHAPES: dict[str, Callable[[], Shape]] = {"map": _map, "fields": _fields, "file": _file}


def shape(platform: NodePlatform) -> Shape:
    return SHAPES[platform.spec.shape]()


def read_back(text: str, platform: NodePlatform) -> dict[str, str]:
    """The keys and values the platform reads from its document; RenderCheckError, one line
    naming the member, for a document it would not read as written."""
    return shape(platform).read_back(text, platform)


def extension(platform: NodePlatform) -> str:
    """The file extension of the platform's document (fleet's node pool files)."""
    return shape(platform).extension(platform)


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
    module = shape(platform)
    text = module.document(node)
    if module.read_back(text, platform) != {t.key: t.value for t in taken}:
        raise RenderCheckError(
            f"the {platform.id} output does not read back as the plan; nothing was written"
        )
    return text
