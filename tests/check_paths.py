"""Check files, sysctl.d directories and trees as `check` reads and judges them (the judge
and the directives, before severities and what a configuration accepts): the reader of
sources.check_inputs and the engine's `judged`, for tests that build their own Checker."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.commands.common import shown_path
from sysctl_advisor.engine.check.findings import CheckReport
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.check.pipeline import judged
from sysctl_advisor.sources.check_inputs import read_inputs


def check_paths(checker: Checker, paths: list[Path], whole_directory: bool = False) -> CheckReport:
    inputs = read_inputs(paths, checker.kb.catalog.keys, None, shown_path, whole_directory)
    return judged(checker, inputs)
