"""`recommend`: facts and a profile in, the plan in one format out."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.commands.common import choose, emit, load_knowledge, parse_overrides, read_facts
from sysctl_advisor.model.errors import InputError


def recommend(
    profile: str,
    facts: Path | None = None,
    settings: list[str] | None = None,
    fmt: str = "conf",
    detail: str = "normal",
    output: Path | None = None,
    nginx_conf: Path | None = None,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
    kubernetes_version: str | None = None,
    undo: bool = False,
) -> int:
    from sysctl_advisor.engine.plan_builder import build_plan
    from sysctl_advisor.outputs import formats
    from sysctl_advisor.outputs.plan_render import Renderer, rebuild_command

    choose(fmt, formats.RECOMMEND, "--format")
    choose(detail, formats.DETAIL, "--detail")
    if undo and fmt == "kubernetes":
        raise InputError(
            "the kubernetes format has no undo yet; write the undo as -f conf, tuned or ansible",
            field="--undo",
        )
    if kubernetes_version is not None and fmt != "kubernetes":
        raise InputError(
            "--kubernetes-version needs --format kubernetes", field="--kubernetes-version"
        )
    overrides = parse_overrides(settings)
    kb = load_knowledge(rules_dir, profiles_dir)
    version = kb.kubernetes.version(kubernetes_version) if fmt == "kubernetes" else None
    host = read_facts(facts, kb, nginx_conf)
    command = rebuild_command(profile, facts, overrides, fmt)
    renderer = Renderer(kb.catalog)
    if version is not None:
        from sysctl_advisor.engine.kubernetes_placement import placement_for
        from sysctl_advisor.outputs.kubernetes_manifests import render_kubernetes

        placement = placement_for(kb, host, profile, overrides, version)
        command += f" --kubernetes-version {version}"
        emit(render_kubernetes(renderer, placement, command), output)
        return 0
    plan = build_plan(kb, host, profile, overrides)
    if undo:
        from sysctl_advisor.engine.undo import undo_plan

        period = host.observed.period
        read_at = period.at if period is not None and period.kind == "snapshot" else None
        plan = undo_plan(plan, kb.catalog, read_at)
        command += " --undo"
    if detail != "normal":
        command += f" --detail {detail}"
    emit(renderer.render(plan, fmt, command, detail=detail, undo=undo), output)
    return 0
