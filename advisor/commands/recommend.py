"""`recommend`: facts and a profile in, the plan in one format out."""

from __future__ import annotations

from pathlib import Path

from advisor.commands.common import choose, emit, load_knowledge, parse_overrides, read_facts


def recommend(
    profile: str,
    facts: Path | None = None,
    settings: list[str] | None = None,
    fmt: str = "conf",
    output: Path | None = None,
    nginx_conf: Path | None = None,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
) -> int:
    from advisor.engine.plan_builder import build_plan
    from advisor.outputs.plan_render import FORMATS, Renderer, rebuild_command

    choose(fmt, FORMATS, "--format")
    overrides = parse_overrides(settings)
    kb = load_knowledge(rules_dir, profiles_dir)
    host = read_facts(facts, kb, nginx_conf)
    plan = build_plan(kb, host, profile, overrides)
    command = rebuild_command(profile, facts, overrides, fmt)
    emit(Renderer(kb.catalog).render(plan, fmt, command), output)
    return 0
