"""`check`: lint sysctl.conf files, sysctl.d directories and trees. Exit 0 clean, 1 findings at
--fail-on or worse.

The files are read here (sources.sysctl_files, with systemd-sysctl's precedence for a
directory); the lint itself (engine.lint) sees only what was read, with the rules --select and
--ignore leave; --warn and --error then change severities before --fail-on reads them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sysctl_advisor.commands import check_settings
from sysctl_advisor.commands.common import (
    choose,
    emit,
    load_knowledge,
    note,
    read_facts,
    say,
    shown_path,
    to_stdout,
)
from sysctl_advisor.engine.check_host import host_context
from sysctl_advisor.engine.check_tuning import tuning
from sysctl_advisor.engine.lint import (
    NEAR_BUDGET,
    CheckContext,
    Checker,
    CheckFinding,
    CheckReport,
    Suppressed,
)
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.severity import SEVERITY_ORDER
from sysctl_advisor.sources.sysctl_files import STDIN_NAME, read_file, read_stdin, read_tree

if TYPE_CHECKING:
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
    from sysctl_advisor.model.check_config import Baseline
    from sysctl_advisor.outputs.files import OutputFile


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
) -> int:
    from sysctl_advisor.outputs import formats
    from sysctl_advisor.outputs.check_report import render_check, wants_color

    choose(fmt, formats.CHECK, "--format")
    if fail_on is not None:
        choose(fail_on, SEVERITY_ORDER, "--fail-on")
    paths = paths or []
    if not paths and not show_config:
        raise InputError("give the sysctl files or directories to check (- reads stdin)")
    extra = [_format_and_file(pair) for pair in also or []]
    given = {
        "select": select,
        "ignore": ignore,
        "warn": warn,
        "error": error,
        "fail-on": fail_on,
        "kernel": kernel,
        "facts": facts,
        "profile": profile,
        "set": settings,
        "baseline": baseline,
    }
    if settings_from is not None and not settings_from.is_dir():
        raise InputError("not a directory", path=settings_from, field="--settings-from")
    found = check_settings.resolve(
        check_settings.find(paths, config, isolated, settings_from), given, settings_from
    )
    if show_config:
        from sysctl_advisor.outputs.check_settings_text import show_settings

        where = shown_path(found.config.path) if found.config is not None else None
        as_json = fmt == "json"
        values = {  # TOML: paths as the configuration wrote them; JSON: from here
            key: replace(v, value=shown_path(v.value) if as_json else v.shown)
            if isinstance(v.value, Path)
            else v
            for key, v in found.values.items()
        }
        emit(show_settings(where, values, found.parameters, as_json=as_json), output)
        return 0
    _needs(found)
    if write_baseline is not None and (output is not None or extra):
        raise InputError(
            "--write-baseline writes the baseline, not a report: drop --output and --also",
            field="--write-baseline",
        )
    target = write_baseline if write_baseline is not None else output
    files = _output_files(target, [path for _, path in extra])
    if write_baseline is not None and files[0] is not None:
        _only_a_baseline(files[0])
    try:
        kb = load_knowledge(rules_dir, profiles_dir)
        tuned = tuning(
            kb.check_rules,
            found["select"],
            found["ignore"],
            found["warn"],
            found["error"],
            {key: found.given(key) for key in ("select", "ignore", "warn", "error")},
        )
        rules = {i: rule for i, rule in kb.check_rules.items() if i in tuned.selected}
        context = _context(kb, found, found.overrides)
        checker = Checker(kb, rules, context)
        report = check_paths(checker, paths, whole_directory)
        if checker.uncompared:
            note(
                f"{checker.uncompared:,} more keys not in the catalog were not compared with the "
                f"kernel's keys for a slip (the first {NEAR_BUDGET:,} were)"
            )
        _not_over_inputs(files, found, report.files, write_baseline is not None)
        if tuned.severities:  # --warn, --error: before --fail-on reads the report
            severity = tuned.severities.get
            report.findings = [
                f._replace(severity=severity(f.id, f.severity)) for f in report.findings
            ]
            report.suppressed = [  # SARIF keeps these, at the severity they would have had
                s._replace(
                    finding=s.finding._replace(severity=severity(s.finding.id, s.finding.severity))
                )
                for s in report.suppressed
            ]
            report.findings.sort(key=_report_order)
        _accept_per_file(report, found, kb.check_rules)
        if write_baseline is not None:
            from sysctl_advisor.engine.check_baseline import baseline_of

            accepted = baseline_of(report.findings, _names(report.findings, write_baseline))
            if files[0] is None:  # `--write-baseline -`: names from the working directory
                emit(accepted_json(accepted), None)
                return 0
            files[0].write(accepted_json(accepted))
            say(f"wrote {len(accepted.findings)} findings to the baseline {write_baseline}")
            return 0
        if found["baseline"] is not None:
            _accept_baselined(report, found)
        color = wants_color(sys.stdout) if files[0] is None and fmt == "text" else False
        main = render_check(report, fmt, kb.check_rules, color=color)
        if files[0] is None:
            emit(main, None)
        else:
            files[0].write(main)
        for (extra_fmt, _), file in zip(extra, files[1:], strict=True):  # one check, many formats
            assert file is not None
            file.write(render_check(report, extra_fmt, kb.check_rules, color=False))
    finally:
        for file in files:
            if file is not None:
                file.close()
    worst = report.worst()
    return 1 if worst is not None and worst <= SEVERITY_ORDER[found["fail-on"]] else 0


def _only_a_baseline(file: OutputFile) -> None:
    """--write-baseline replaces a baseline, never another file (a forgotten FILE makes the
    next argument, a sysctl file, the target)."""
    from sysctl_advisor.model.check_config import BASELINE_SCHEMA

    head = file.head()
    if head is not None and f'"{BASELINE_SCHEMA}"'.encode() not in head:
        file.close()
        raise InputError(
            "exists and is not a sysctl-advisor baseline: not replaced (did the file name "
            "after --write-baseline go missing?)",
            path=file.path,
            field="--write-baseline",
        )


def _not_over_inputs(
    files: list[OutputFile | None],
    found: check_settings.CheckSettings,
    read: list[str],
    writing_baseline: bool,
) -> None:
    """Refuse to write a report or baseline over a file this check read (a forgotten
    `--write-baseline FILE` before `sysctl.d/*.conf` makes the first one the target), the
    configuration or a file it names."""
    targets = {}
    for file in files:
        existing = file.existing() if file is not None else None
        if file is not None and existing is not None:
            targets[existing] = file
    if not targets:
        return
    inputs: list[str | Path] = [*read, found["facts"] or ""]
    if not writing_baseline:  # writing one is how a baseline in force is written again
        inputs.append(found["baseline"] or "")
    if found.config is not None:
        inputs.append(found.config.path)
    for name in inputs:
        try:
            info = os.stat(name)
        except (OSError, ValueError):
            continue
        file = targets.get((info.st_dev, info.st_ino))
        if file is not None:
            raise InputError(
                "is a file this check reads; not overwritten (did the file name after the "
                "option go missing?)",
                path=file.path,
            )


def _needs(found: check_settings.CheckSettings) -> None:
    """A profile needs facts; a parameter needs a profile; a kernel must be one."""
    if found["profile"] is not None and found["facts"] is None:
        where = found.values["profile"].origin
        raise InputError(
            "a profile needs facts (--facts, or facts in the configuration)",
            path=None if where == check_settings.COMMAND_LINE else where,
            field="--profile" if where == check_settings.COMMAND_LINE else "profile",
        )
    if found.parameters and found["profile"] is None:
        raise InputError(
            "a profile parameter needs a profile (--profile, or profile in the configuration)",
            field="--set",
        )
    if found["kernel"] is not None:
        try:
            KernelVersion.parse(found["kernel"])
        except ValueError as exc:
            where = found.values["kernel"].origin
            command_line = where == check_settings.COMMAND_LINE
            raise InputError(
                str(exc),
                path=None if command_line else where,
                field="--kernel" if command_line else "kernel",
            ) from None


def accepted_json(baseline: Baseline) -> str:
    from sysctl_advisor.model.documents import dump_json
    from sysctl_advisor.model.model_base import plain_data

    return dump_json(plain_data(baseline))


def _names(findings: list[CheckFinding], relative_to: Path) -> list[str]:
    """Each finding's file named from the directory of `relative_to` (a baseline), in `/`
    form, so the baseline holds the same names wherever check is run from."""
    base = os.path.dirname(os.path.abspath(relative_to))
    shown: dict[str, str] = {}
    for f in findings:
        if f.file not in shown:
            shown[f.file] = (
                f.file if f.file == STDIN_NAME else os.path.relpath(os.path.abspath(f.file), base)
            )
    return [shown[f.file] for f in findings]


def _accept_per_file(
    report: CheckReport, found: check_settings.CheckSettings, ids: Iterable[str]
) -> None:
    """Findings of rules the configuration's per-file-ignores turn off for their file move to
    the report's suppressed findings."""
    from sysctl_advisor.engine.check_baseline import ignored_for_file
    from sysctl_advisor.engine.check_tuning import named_rules

    table: dict[str, Any] | None = found["per-file-ignores"]
    if not table or found.config is None:
        return
    where = found.given("per-file-ignores")
    patterns = {
        pattern: named_rules(ids, selectors, replace(where, field=f"{where.field}.{pattern}"))
        for pattern, selectors in table.items()
    }
    base = os.path.abspath(found.standing(found.config.directory))
    kept: list[CheckFinding] = []
    reason = f"per-file-ignores in {shown_path(found.config.path)}"
    tests: dict[str, Callable[[str], bool]] = {}
    for f in report.findings:
        if f.file not in tests:
            relative = os.path.relpath(os.path.abspath(f.file), base)
            inside = not (relative == ".." or relative.startswith("../"))
            name = relative.replace(os.sep, "/") if inside and f.file != STDIN_NAME else None
            tests[f.file] = ignored_for_file(patterns, name, os.path.basename(f.file))
        if tests[f.file](f.id):
            report.suppressed.append(Suppressed(f, reason, "config"))
        else:
            kept.append(f)
    report.findings = kept


def _accept_baselined(report: CheckReport, found: check_settings.CheckSettings) -> None:
    """Findings the baseline holds move to the report's suppressed findings; the baseline's
    entries that match nothing any more are counted in a note. A baseline the configuration
    names is read only inside the configuration's directory."""
    from sysctl_advisor.engine.check_baseline import in_baseline
    from sysctl_advisor.sources.check_config import read_baseline

    path: Path = found["baseline"]
    inside = None
    if found.values["baseline"].origin != check_settings.COMMAND_LINE and found.config:
        inside = found.config.directory
    names = _names(report.findings, found.standing(path))
    accepted, stale = in_baseline(
        report.findings, names, read_baseline(path, check_settings.remember, inside)
    )
    reason = f"in the baseline {path}"
    report.suppressed += [
        Suppressed(f, reason, "baseline")
        for f, yes in zip(report.findings, accepted, strict=True)
        if yes
    ]
    report.findings = [f for f, yes in zip(report.findings, accepted, strict=True) if not yes]
    if stale:
        note(
            f"{stale} findings in the baseline {path} are gone; write it again with "
            "--write-baseline to keep it small"
        )


def _context(
    kb: KnowledgeBase, found: check_settings.CheckSettings, overrides: dict[str, str]
) -> CheckContext:
    """What is known of the target host: its facts (and a plan for it, the profile run with
    the same --set parameters `recommend` takes), or a kernel. Facts named by a configuration
    are read only inside its directory."""
    context = CheckContext()
    facts: Path | None = found["facts"]
    if facts is not None:  # the planner (and the facts model) only for a known host
        inside = None
        if found.values["facts"].origin != check_settings.COMMAND_LINE and found.config:
            inside = found.config.directory
        try:
            host = read_facts(facts, kb, within=inside)
            context = host_context(kb, host, found["profile"], overrides)
        except InputError as exc:  # a profile or parameter the configuration gave
            raise found.blame(exc) from None
    if found["kernel"] is not None:
        context.kernel = KernelVersion.parse(found["kernel"])
    return context


def _output_files(output: Path | None, extra: list[Path]) -> list[OutputFile | None]:
    """The report files (None: standard output), each made ready (its directory opened and
    checked, the target checked) before anything is written, and each a file of its own
    however it is named: a report never replaces another, nor stops half-way."""
    from sysctl_advisor.outputs.files import OutputFile

    files: list[OutputFile | None] = []
    try:
        files.append(OutputFile(output) if output is not None and not to_stdout(output) else None)
        seen = {files[0].identity} if files[0] is not None else set()
        for path in extra:
            file = OutputFile(path)
            files.append(file)
            if file.identity in seen:
                raise InputError(
                    "two reports would be written to this file", path=path, field="--also"
                )
            seen.add(file.identity)
    except BaseException:
        for opened in files:
            if opened is not None:
                opened.close()
        raise
    return files


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
    suppressed: list[Suppressed] = []
    files: list[str] = []
    usable = 0
    linked: set[str] = set()  # files a tree reached through a link (99-sysctl.conf)
    if sum(str(path) == "-" for path in paths) > 1:
        raise InputError("standard input can be read once: give `-` once", path="-")
    for path in paths:
        if str(path) == "-":  # `sysctl -a | sysctl-advisor check -`
            if sys.stdin is None:  # started with standard input closed
                raise InputError("no standard input to read", path="-")
            config = read_stdin(sys.stdin.buffer, checker.kb.catalog.keys)
        elif path.is_dir():
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
        suppressed += [
            accepted._replace(
                finding=accepted.finding._replace(file=from_here(accepted.finding.file))
            )
            for accepted in checker.take_suppressed()
        ]
        tree = config.base is not None
        files += [from_here(f.split(" -> ")[0] if tree else f) for f in config.files]
        if tree:
            linked.update(from_here(f.split(" -> ")[1]) for f in config.files if " -> " in f)
        findings += found
    if not usable:
        first = findings[0] if findings else None
        reason = f"{first.file}: {first.message}" if first else "no sysctl files to check"
        raise InputError(f"nothing could be checked ({reason})")
    if linked:  # `check /etc/sysctl.d /etc/sysctl.conf`: a linked file's line is said once
        findings = _once_per_link(findings, linked)
        suppressed = _once_per_link(suppressed, linked)
    findings.sort(key=_report_order)
    suppressed.sort(key=lambda s: (s.finding.file, s.finding.line or 0, s.finding.id))
    return CheckReport(findings, files, suppressed)


def _report_order(f: CheckFinding) -> tuple[str, int, int, str]:
    """File, line, worst first, rule id."""
    return (f.file, f.line or 0, SEVERITY_ORDER[f.severity], f.id)


_Found = TypeVar("_Found", CheckFinding, Suppressed)


def _once_per_link(findings: list[_Found], linked: set[str]) -> list[_Found]:
    """The findings (or suppressed findings), less the second of two identical ones about a
    file that a tree read through a link and that was also checked on its own (a file named
    twice on the command line is still checked twice)."""
    kept: list[_Found] = []
    seen: set[_Found] = set()
    for found in findings:
        finding = found if isinstance(found, CheckFinding) else found.finding
        if finding.file in linked and found in seen:
            continue
        seen.add(found)
        kept.append(found)
    return kept


class _FromHere:
    """Names read in a tree (relative to its base) or given, as a reviewer reads them; one
    file's findings share its name, which is worked out once."""

    def __init__(self, base: Path | None) -> None:
        self.base = base
        self.shown: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name not in self.shown:
            path = self.base / name if self.base is not None else Path(name)
            self.shown[name] = shown_path(path)
        return self.shown[name]


def _with_directories(paths: list[Path]) -> list[Path]:
    """Each *.conf file in a directory named sysctl.d replaced by that directory (once); other
    paths as they are (an Ansible role's files/ holds more than sysctl settings)."""
    chosen: list[Path] = []
    for path in paths:
        if str(path) == "-":
            pass
        elif path.suffix == ".conf" and path.parent.name == "sysctl.d" and path.is_file():
            path = path.parent
        if path not in chosen:
            chosen.append(path)
    return chosen
