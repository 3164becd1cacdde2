"""`recommend`: facts and a profile in, the plan in one format out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sysctl_advisor.commands.common import (
    choose,
    emit,
    load_knowledge,
    note,
    parse_overrides,
    read_facts,
)
from sysctl_advisor.model.errors import InputError

if TYPE_CHECKING:
    from sysctl_advisor.engine.kubernetes_placement import Placement
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
    from sysctl_advisor.knowledge.kubernetes import KubernetesVersion
    from sysctl_advisor.model.host_facts import HostFacts
    from sysctl_advisor.outputs.plan_render import Renderer


def recommend(
    profile: str | Sequence[str],
    facts: Path | None = None,
    settings: list[str] | None = None,
    fmt: str = "conf",
    detail: str = "normal",
    output: Path | None = None,
    nginx_conf: Path | None = None,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
    kubernetes_version: str | None = None,
    workload_network: str = "auto",
    undo: bool = False,
) -> int:
    from sysctl_advisor.engine.plan_builder import build_plan
    from sysctl_advisor.outputs import formats
    from sysctl_advisor.outputs.plan_render import Renderer, rebuild_command

    choose(fmt, formats.RECOMMEND, "--format")
    choose(detail, formats.DETAIL, "--detail")
    choose(workload_network, formats.WORKLOAD_NETWORK, "--workload-network")
    if undo and fmt == "kubernetes":
        raise InputError(
            "the kubernetes format has no undo yet; write the undo as -f conf, tuned or ansible",
            field="--undo",
        )
    on_kubernetes = fmt == "kubernetes" or fmt in formats.NODE
    if kubernetes_version is not None and not on_kubernetes:
        raise InputError(
            "--kubernetes-version needs --format kubernetes (or a node platform's format)",
            field="--kubernetes-version",
        )
    if workload_network != "auto" and not on_kubernetes:
        raise InputError(
            "--workload-network needs --format kubernetes (or a node platform's format)",
            field="--workload-network",
        )
    overrides = parse_overrides(settings)
    kb = load_knowledge(rules_dir, profiles_dir)
    version = kb.kubernetes.version(kubernetes_version) if on_kubernetes else None
    host = read_facts(facts, kb, nginx_conf)
    command = rebuild_command(profile, facts, overrides, fmt)
    renderer = Renderer(kb.catalog)
    if version is not None and fmt in formats.NODE:
        node = _node_output(
            kb, renderer, host, profile, overrides, version, command, fmt, undo, workload_network
        )
        emit(node, output)
        return 0
    if version is not None:
        from sysctl_advisor.engine.kubernetes_placement import placement_for
        from sysctl_advisor.outputs.kubernetes_manifests import render_kubernetes

        placement = placement_for(kb, host, profile, overrides, version, workload_network)
        command += f" --kubernetes-version {version}"
        if workload_network != "auto":
            command += f" --workload-network {workload_network}"
        emit(render_kubernetes(renderer, placement, command), output)
        return 0
    plan = build_plan(kb, host, profile, overrides)
    if undo:
        from sysctl_advisor.engine.undo import undo_plan

        plan = undo_plan(plan, kb.catalog, host.values_read_at)
        command += " --undo"
    if detail != "normal":
        command += f" --detail {detail}"
    emit(renderer.render(plan, fmt, command, detail=detail, undo=undo), output)
    return 0


def _node_output(
    kb: KnowledgeBase,
    renderer: Renderer,
    host: HostFacts,
    profile: str | Sequence[str],
    overrides: dict[str, str],
    version: KubernetesVersion,
    command: str,
    fmt: str,
    undo: bool,
    workload_network: str,
) -> str:
    """A node platform's document for the node's keys (with --undo, their undo); the keys the
    platform does not take are listed in it and said on stderr."""
    from dataclasses import replace

    from sysctl_advisor.engine.kubernetes_placement import placement_for

    placement = placement_for(kb, host, profile, overrides, version, workload_network)
    command += f" --kubernetes-version {version}"
    if workload_network != "auto":
        command += f" --workload-network {workload_network}"
    if undo:
        from sysctl_advisor.engine.undo import undo_plan

        node = undo_plan(placement.node, kb.catalog, host.values_read_at)
        placement = replace(placement, node=node)
        command += " --undo"
    return node_document(kb, renderer, placement, command, fmt)


def node_document(
    kb: KnowledgeBase,
    renderer: Renderer,
    placement: Placement,
    command: str,
    fmt: str,
    on_refused: Callable[[str], None] = note,
) -> str:
    """A node platform's document for a placement's node keys (recommend, and fleet's node
    pools); each key the platform does not take is listed in it and given to `on_refused`."""
    from sysctl_advisor.outputs.node_platforms import render_node, split

    platform = kb.node_platforms[fmt]
    for setting, why in split(platform, placement)[1]:
        on_refused(f"{fmt}: {setting.key} = {setting.value} is not set: {why}")
    return render_node(platform, renderer, placement, command)
