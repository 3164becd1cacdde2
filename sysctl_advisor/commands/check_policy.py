"""What check's settings mean to its engine: the policy (rules selected and their severities,
the per-file ignores, what is known of the target host) and the baseline in force, named
from its root; a file the configuration names is read only inside its directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sysctl_advisor.commands import check_settings
from sysctl_advisor.commands.common import read_facts, shown_path, to_stdout
from sysctl_advisor.engine.check.baseline import BaselineInForce
from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.per_file import PerFileIgnores, ignore_patterns
from sysctl_advisor.engine.check.pipeline import CheckPolicy
from sysctl_advisor.engine.check.selection import tuning
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.sources.check_config import read_baseline
from sysctl_advisor.sources.check_inputs import baseline_root, gone_files, names_from, names_inside

if TYPE_CHECKING:
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase

CheckSettings = check_settings.CheckSettings


def policy(kb: KnowledgeBase, found: CheckSettings) -> CheckPolicy:
    """The engine's settings: the rules selected and their severities (each list named by
    where it was given), the per-file ignores, and what is known of the target."""
    where = {key: found.given(key) for key in ("select", "ignore", "warn", "error")}
    tuned = tuning(
        kb.check_rules, found["select"], found["ignore"], found["warn"], found["error"], where
    )
    per_file = None
    if found["per-file-ignores"] and found.config is not None:
        patterns = ignore_patterns(
            kb.check_rules, found["per-file-ignores"], found.given("per-file-ignores")
        )
        name = names_inside(found.standing(found.config.directory))
        per_file = PerFileIgnores(
            patterns, name, f"per-file-ignores in {shown_path(found.config.path)}"
        )
    return CheckPolicy(tuned, _context(kb, found), per_file)


def _inside(found: CheckSettings, key: str) -> Path | None:
    """A file the configuration names is read only inside its directory."""
    if found.values[key].origin != check_settings.COMMAND_LINE and found.config:
        return found.config.directory
    return None


def baseline(found: CheckSettings) -> BaselineInForce | None:
    path: Path | None = found["baseline"]
    if path is None:
        return None
    read = read_baseline(path, check_settings.remember, _inside(found, "baseline"))
    top = root(found, found.standing(path))
    gone = gone_files(top, (e.file for e in read.findings))
    return BaselineInForce(read, names_from(top), f"in the baseline {path}", gone)


def root(found: CheckSettings, baseline: Path | None) -> Path:
    """The directory a baseline names files from (sources.check_inputs.baseline_root)."""
    config = found.standing(found.config.directory) if found.config is not None else None
    return baseline_root(config, None if baseline is None or to_stdout(baseline) else baseline)


def _context(kb: KnowledgeBase, found: CheckSettings) -> CheckContext:
    """What is known of the target host: its facts (and a plan for it, the profile run with
    the same --set parameters `recommend` takes), or a kernel."""
    context = CheckContext()
    facts: Path | None = found["facts"]
    if facts is not None:  # the planner (and the facts model) only for a known host
        from sysctl_advisor.engine.check.host import host_context

        try:
            host = read_facts(facts, kb, within=_inside(found, "facts"))
            context = host_context(kb, host, found["profile"], found.overrides)
        except InputError as exc:  # a profile or parameter the configuration gave
            raise found.blame(exc) from None
    if found["kernel"] is not None:
        context.kernel = KernelVersion.parse(found["kernel"])
        if facts is None and found["kernel"] == check_settings.running_release():
            from sysctl_advisor.sources.running_kernel import read_running_kernel

            context.running = read_running_kernel(
                found["kernel"], kb.kernel_keys.interface_directories
            )
    return context
