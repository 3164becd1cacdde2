"""What the node platforms' tests share: a node output holding chosen keys and values, past
`takes` (each test checks the serializer itself), built on a real placement's node plan."""

from __future__ import annotations

from dataclasses import replace

from sysctl_advisor.engine.kubernetes_placement import Placement
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs.node_output import NodeKey, NodeOutput
from sysctl_advisor.outputs.plan_render import Renderer


def node_output(
    kb: KnowledgeBase, placement: Placement, platform: str, values: dict[str, str]
) -> NodeOutput:
    """The platform's node output taking exactly `values` (each under the platform's
    allow-list entry, where it has one)."""
    entries = {key.name: key for key in kb.node_platforms[platform].spec.keys}
    template = placement.node.settings[0]
    settings = [replace(template, key=k, value=v) for k, v in values.items()]
    return NodeOutput(
        platform=kb.node_platforms[platform],
        plan=replace(placement.node, settings=settings),
        taken=[NodeKey(s, entries.get(s.key)) for s in settings],
        refused=[],
        pod_keys=[],
        header=["# test"],
        command="rebuild",
        renderer=Renderer(kb.catalog),
    )
