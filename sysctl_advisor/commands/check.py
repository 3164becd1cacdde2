"""`check`: lint sysctl.conf files, sysctl.d directories and trees. Exit 0 clean, 1 findings at
--fail-on or worse.

The files are read here (sources.sysctl_files, with systemd-sysctl's precedence for a
directory); the lint itself (engine.lint) sees only what was read."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sysctl_advisor.commands.common import choose, emit, load_knowledge, read_facts, to_stdout
from sysctl_advisor.engine.lint import CheckContext, Checker, CheckFinding, CheckReport
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.severity import SEVERITY_ORDER
from sysctl_advisor.sources.sysctl_files import read_file, read_tree


def check(
    paths: list[Path],
    facts: Path | None = None,
    kernel: str | None = None,
    profile: str | None = None,
    fmt: str = "text",
    fail_on: str = "error",
    whole_directory: bool = False,
    output: Path | None = None,
    also: list[str] | None = None,
) -> int:
    from sysctl_advisor.outputs import formats
    from sysctl_advisor.outputs.check_report import render_check, wants_color

    choose(fmt, formats.CHECK, "--format")
    choose(fail_on, SEVERITY_ORDER, "--fail-on")
    extra = [_format_and_file(pair) for pair in also or []]
    _distinct_outputs(output, [path for _, path in extra])
    if profile is not None and facts is None:
        raise InputError("--profile needs --facts", field="--profile")
    kb = load_knowledge()
    context = CheckContext()
    if facts is not None:  # the planner (and the facts model) only for a known host
        from sysctl_advisor.engine.plan_builder import build_plan, host_variables

        host = read_facts(facts, kb)
        variables, defaults, _ = host_variables(kb, host)
        context.facts, context.host, context.defaults = host, variables["host"], defaults
        context.kernel = variables["kernel"].version
        if profile is not None:
            context.plan = build_plan(kb, host, profile)
    if kernel is not None:
        try:
            context.kernel = KernelVersion.parse(kernel)
        except ValueError as exc:
            raise InputError(str(exc), field="--kernel") from None
    report = check_paths(Checker(kb, kb.check_rules, context), paths, whole_directory)
    color = wants_color(sys.stdout) if to_stdout(output) and fmt == "text" else False
    emit(render_check(report, fmt, kb.check_rules, color=color), output)
    for extra_fmt, path in extra:  # one check, written in several formats
        emit(render_check(report, extra_fmt, kb.check_rules, color=False), path)
    worst = report.worst()
    return 1 if worst is not None and worst <= SEVERITY_ORDER[fail_on] else 0


def _distinct_outputs(output: Path | None, extra: list[Path]) -> None:
    """Every report goes to a file of its own, in a directory it may be written to, checked
    before anything is written (a report never replaces another, nor stops half-way)."""
    from sysctl_advisor.model.directories import UntrustedDirectory, open_directory

    named = ([] if to_stdout(output) else [output]) + extra
    seen: set[str] = set()
    for path in named:
        assert path is not None
        where = os.path.abspath(path)
        if where in seen:
            raise InputError("two reports would be written to this file", path=path, field="--also")
        seen.add(where)
        try:
            fd, _ = open_directory(path.parent if str(path.parent) else Path("."))
        except UntrustedDirectory as exc:
            raise InputError(f"cannot write there: {exc}", path=path, field="--also") from None
        os.close(fd)


def _format_and_file(pair: str) -> tuple[str, Path]:
    """--also FORMAT=FILE."""
    from sysctl_advisor.outputs import formats

    fmt, sep, file = pair.partition("=")
    if not sep or not file or file == "-":
        raise InputError(f"expected FORMAT=FILE, got {pair!r}", field="--also")
    return choose(fmt, formats.CHECK, "--also"), Path(file)


def check_paths(checker: Checker, paths: list[Path], whole_directory: bool = False) -> CheckReport:
    """Check files, sysctl.d directories and trees. With `whole_directory`, a *.conf file
    is checked together with the sysctl.d directory it is in, as that directory is applied
    (pre-commit passes only the files that changed: an override of an unchanged file by a
    changed one is still found)."""
    if whole_directory:
        paths = _with_directories(paths)
    findings: list[CheckFinding] = []
    files: list[str] = []
    usable = 0
    for path in paths:
        if path.is_dir():
            config = read_tree(path, checker.kb.catalog.keys)
        elif path.exists():
            config = read_file(path, checker.kb.catalog.keys)
        else:
            rule = checker.reported_by.get("unreadable")
            if rule is not None:
                findings.append(
                    CheckFinding(rule.id, rule.spec.severity, str(path), None, None, "not found")
                )
            continue
        usable += len(config.documents)
        found = checker.check_config(config)
        from_here = _FromHere(config.base)  # tree paths: make them paths from here again
        found = [
            f if f.file == (name := from_here(f.file)) else f._replace(file=name) for f in found
        ]
        tree = config.base is not None
        files += [from_here(f.split(" -> ")[0] if tree else f) for f in config.files]
        findings += found
    if not usable:
        first = findings[0] if findings else None
        reason = f"{first.file}: {first.message}" if first else "no sysctl files to check"
        raise InputError(f"nothing could be checked ({reason})")
    findings.sort(key=lambda f: (f.file, f.line or 0, SEVERITY_ORDER[f.severity], f.id))
    return CheckReport(findings, files)


class _FromHere:
    """Names read in a tree (relative to its base) or given, as a reviewer reads them; one
    file's findings share its name, which is worked out once."""

    def __init__(self, base: Path | None) -> None:
        self.base = base
        self.shown: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name not in self.shown:
            path = self.base / name if self.base is not None else Path(name)
            self.shown[name] = _shown(path)
        return self.shown[name]


def _shown(path: Path) -> str:
    """A path as a reviewer reads it: relative to the working directory when it is inside it
    (as pre-commit and CI runners show paths), else as given."""
    normal = os.path.normpath(path)
    if os.path.isabs(normal):
        relative = os.path.relpath(normal)
        if relative != ".." and not relative.startswith("../"):
            return relative
    return normal


def _with_directories(paths: list[Path]) -> list[Path]:
    """Each *.conf file in a directory named sysctl.d replaced by that directory (once); other
    paths as they are (an Ansible role's files/ holds more than sysctl settings)."""
    chosen: list[Path] = []
    for path in paths:
        if path.suffix == ".conf" and path.parent.name == "sysctl.d" and path.is_file():
            path = path.parent
        if path not in chosen:
            chosen.append(path)
    return chosen
