"""`check`: lint sysctl.conf files, sysctl.d directories and trees. Exit 0 clean, 1 findings at
--fail-on or worse.

Wiring only: the settings (check_settings), then the baseline read (a bad one fails before any
file is judged), then the files read as the check engine reaches them (sources.check_inputs)
and the engine's pipeline (engine.check.pipeline) over them; the report rendered or a baseline
written (check_files)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sysctl_advisor.commands import check_policy, check_settings
from sysctl_advisor.commands.check_files import (
    files_to_fix,
    format_and_file,
    not_over_inputs,
    report_files,
    write_baseline_of,
)
from sysctl_advisor.commands.check_fix import fixed
from sysctl_advisor.commands.common import (
    choose,
    emit,
    load_knowledge,
    note,
    shown_path,
)
from sysctl_advisor.engine.check.judge import NEAR_BUDGET
from sysctl_advisor.engine.check.pipeline import run
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.severity import FAIL_ON, NEVER, SEVERITY_ORDER
from sysctl_advisor.sources.check_inputs import (
    read_inputs,
)

CheckSettings = check_settings.CheckSettings
COMMAND_LINE = check_settings.COMMAND_LINE


def check(
    paths: list[Path] | None = None,
    facts: Path | None = None,
    kernel: str | None = None,
    profile: str | Sequence[str] | None = None,
    settings: list[str] | None = None,
    fmt: str = "text",
    fail_on: str | None = None,
    whole_directory: bool = False,
    output: Path | None = None,
    also: list[str] | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    warn: list[str] | None = None,
    error: list[str] | None = None,
    config: Path | None = None,
    isolated: bool = False,
    show_config: bool = False,
    baseline: Path | None = None,
    settings_from: Path | None = None,
    write_baseline: Path | None = None,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
    fix: bool = False,
    statistics: bool = False,
) -> int:
    from sysctl_advisor.outputs import formats
    from sysctl_advisor.outputs.check_report import render_check, render_statistics, wants_color

    choose(fmt, formats.CHECK, "--format")
    if fail_on is not None:
        choose(fail_on, FAIL_ON, "--fail-on")
    if statistics and fmt not in STATISTICS_FORMATS:
        raise InputError(
            f"--statistics prints text or json, not {fmt} (--also writes the findings in it)",
            field="--statistics",
        )
    paths = paths or []
    if not paths and not show_config:
        raise InputError("give the sysctl files or directories to check (- reads stdin)")
    extra = [format_and_file(pair) for pair in also or []]
    given: dict[str, Any] = {"select": select, "ignore": ignore, "warn": warn}
    given |= {"error": error, "fail-on": fail_on, "kernel": kernel, "facts": facts}
    given |= {"profile": profile, "set": settings, "baseline": baseline}
    if settings_from is not None and not settings_from.is_dir():
        raise InputError("not a directory", path=settings_from, field="--settings-from")
    found = check_settings.resolve(
        check_settings.find(paths, config, isolated, settings_from), given, settings_from
    )
    if show_config:
        from sysctl_advisor.outputs.check_settings_text import show_settings

        where = shown_path(found.config.path) if found.config is not None else None
        values = check_settings.shown(found, as_json=fmt == "json")
        emit(show_settings(where, values, found.parameters, as_json=fmt == "json"), output)
        return 0
    check_settings.needs(found)
    targets = files_to_fix(paths, write_baseline) if fix else None
    files = report_files(output, [path for _, path in extra], write_baseline)
    try:
        kb = load_knowledge(rules_dir, profiles_dir)
        target = check_settings.target_kernel(found, paths, kb.catalog.model.newest_verified)
        policy = check_policy.policy(kb, found)
        accepted = check_policy.baseline(found) if write_baseline is None else None
        stdin = sys.stdin.buffer if sys.stdin is not None else None
        inputs = read_inputs(paths, kb.catalog.keys, stdin, shown_path, whole_directory)
        report = run(kb, policy, inputs, accepted)
        if targets is not None:
            report = fixed(kb, policy, accepted, report, targets, whole_directory)
        if report.uncompared:
            note(
                f"{report.uncompared:,} more keys not in the catalog were not compared with the "
                f"kernel's keys for a slip (the first {NEAR_BUDGET:,} were)"
            )
        if report.stale:
            note(
                f"{report.stale} findings in the baseline {found['baseline']} are gone; write "
                "it again with --write-baseline to keep it small"
            )
        not_over_inputs(files, found, report.files, write_baseline is not None)
        if write_baseline is not None:
            if target is not None:
                note(target)
            write_baseline_of(
                report, files[0], write_baseline, check_policy.root(found, write_baseline)
            )
            return 0
        color = wants_color(sys.stdout) if files[0] is None and fmt == "text" else False
        if statistics:
            main = render_statistics(report, fmt, kb.check_rules)
        else:
            main = render_check(report, fmt, kb.check_rules, color=color)
        # one check, many formats
        others = [render_check(report, each, kb.check_rules, color=False) for each, _ in extra]
        if target is not None:  # after every refusal (rendering's too): a report's line
            note(target)
        if files[0] is None:
            emit(main, None)
        else:
            files[0].write(main)
        for text, file in zip(others, files[1:], strict=True):
            assert file is not None
            file.write(text)
    finally:
        for file in files:
            if file is not None:
                file.close()
    worst = report.worst()
    if found["fail-on"] == NEVER:
        return 0
    return 1 if worst is not None and worst <= SEVERITY_ORDER[found["fail-on"]] else 0


STATISTICS_FORMATS = ("text", "json")
