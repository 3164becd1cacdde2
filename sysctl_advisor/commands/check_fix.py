"""`check --fix`: the files given rewritten where a finding's fix is certain
(engine.check.fix), and checked again until nothing more is fixed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sysctl_advisor.commands.check_files import fix_files
from sysctl_advisor.commands.common import say, shown_path
from sysctl_advisor.engine.check.pipeline import CheckPolicy, run
from sysctl_advisor.sources.check_inputs import read_inputs

if TYPE_CHECKING:
    from sysctl_advisor.engine.check.baseline import BaselineInForce
    from sysctl_advisor.engine.check.findings import CheckReport
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase

FIX_PASSES = 4  # one fix per line per pass: a line with every fixable defect needs three


def fixed(
    kb: KnowledgeBase,
    policy: CheckPolicy,
    accepted: BaselineInForce | None,
    report: CheckReport,
    targets: dict[str, Path],
    whole_directory: bool,
) -> CheckReport:
    """--fix: the files given rewritten where a finding's fix is certain, and checked again
    (each pass reads them afresh) until nothing more is fixed; the last report is what is
    left."""
    fixed = 0
    files: set[str] = set()
    facts = policy.context.facts
    target = (policy.context.kernel, facts.bits if facts is not None else None)
    for _ in range(FIX_PASSES):
        done = fix_files(report.findings, targets, kb.catalog, target)
        if not done:
            break
        fixed += len(done)
        files.update(finding.file for finding in done)
        inputs = read_inputs(
            list(targets.values()), kb.catalog.keys, None, shown_path, whole_directory
        )
        report = run(kb, policy, inputs, accepted)
    if fixed:
        say(
            f"fixed {fixed} {'finding' if fixed == 1 else 'findings'} in {len(files)} "
            f"{'file' if len(files) == 1 else 'files'}"
        )
    return report
