"""`diff`: the values in force against the plan. Exit 0: no drift; 1: drift. With `undo`: the
plan's values against what its undo restores. Exit 0: nothing to undo; 1: the undo changes keys."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from sysctl_advisor.commands.common import (
    choose,
    emit,
    load_knowledge,
    parse_overrides,
    read_facts,
    read_in_force,
    to_stdout,
)


def diff(
    profile: str | Sequence[str],
    facts: Path | None = None,
    current: Path | None = None,
    settings: list[str] | None = None,
    fmt: str = "text",
    output: Path | None = None,
    nginx_conf: Path | None = None,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
    undo: bool = False,
) -> int:
    from sysctl_advisor.engine.diff import build_diff
    from sysctl_advisor.engine.plan_builder import build_plan
    from sysctl_advisor.outputs import formats
    from sysctl_advisor.outputs.diff_report import render_diff
    from sysctl_advisor.outputs.plan_render import Renderer

    choose(fmt, formats.DIFF, "--format")
    overrides = parse_overrides(settings)
    kb = load_knowledge(rules_dir, profiles_dir)
    keys = list(kb.catalog.keys)
    host = read_facts(facts, kb, nginx_conf)
    in_force = read_in_force(current, facts, host, keys)
    as_configured = replace(
        host,
        # the readable keys (what the kernel offers) stay as the host reported them
        sysctl={
            **{k: v for k, v in host.sysctl.items() if k in kb.catalog.readable},
            **{k: v.value for k, v in in_force.values.items()},
        },
        # Which values files set: all of them for files and trees; a dump cannot say.
        sysctl_files=(
            {k: v.source for k, v in in_force.values.items()}
            if in_force.kind in ("file", "tree")
            else None
            if in_force.kind == "dump"
            else host.sysctl_files
        ),
        sysctl_file_settings=host.sysctl_file_settings if current is None else None,
    )
    plan = build_plan(kb, as_configured, profile, overrides)
    if undo:  # the plan applied, against what its undo restores
        from sysctl_advisor.engine.undo import undo_diff, undo_plan

        read_at = host.values_read_at if current is None else None
        restore = undo_plan(plan, kb.catalog, read_at)
        report = undo_diff(plan, restore, f"{in_force.kind} {in_force.label}")
    else:
        from sysctl_advisor.engine.observed_owners import observed_owners

        version = kb.catalog.kernel_for(host)[0]
        observed = observed_owners(kb, host, plan)
        report = build_diff(plan, in_force, kb.catalog, version, observed)
    terminal = to_stdout(output) and sys.stdout.isatty()
    emit(render_diff(report, fmt, Renderer(kb.catalog), terminal=terminal), output)
    return 1 if report.drift else 0
