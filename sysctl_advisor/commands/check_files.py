"""The files `check` writes: its reports (--output, --also FORMAT=FILE) and a baseline
(--write-baseline), each made ready before anything is written, never one over a file the
check reads, and a baseline only over a baseline; and the files --fix rewrites, only those it
was given as files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sysctl_advisor.commands.check_settings import CheckSettings
from sysctl_advisor.commands.common import choose, emit, say, to_stdout
from sysctl_advisor.engine.check.baseline import baseline_of, outside, scope_of
from sysctl_advisor.model.check_config import BASELINE_SCHEMA, BASELINE_SCHEMA_FAMILY
from sysctl_advisor.model.errors import InputError

if TYPE_CHECKING:
    from sysctl_advisor.engine.check.findings import CheckFinding, CheckReport
    from sysctl_advisor.knowledge.catalog import Catalog
    from sysctl_advisor.model.kernel_version import KernelVersion
    from sysctl_advisor.outputs.files import OutputFile


def report_files(
    output: Path | None, extra: list[Path], write_baseline: Path | None
) -> list[OutputFile | None]:
    """The files `check` writes: the report and --also's, or the baseline alone."""
    if write_baseline is None:
        return _output_files(output, extra)
    if output is not None or extra:
        raise InputError(
            "--write-baseline writes the baseline, not a report: drop --output and --also",
            field="--write-baseline",
        )
    files = _output_files(write_baseline, [])
    if files[0] is not None:
        _only_a_baseline(files[0])
    return files


def write_baseline_of(report: CheckReport, file: OutputFile | None, path: Path, root: Path) -> None:
    """The baseline that accepts the report's findings, written to `file` (None: standard
    output), each finding's file named from `root`; the entries of the baseline it replaces
    that this run could not have found again (other files, rules that did not run) kept."""
    from sysctl_advisor.model.documents import dump_json, max_input_bytes
    from sysctl_advisor.model.model_base import plain_data
    from sysctl_advisor.sources.check_inputs import gone_files, names_from

    name = names_from(root)
    kept = []
    limit = max_input_bytes()
    existing = file.head(limit + 1) if file is not None else None  # read once, by descriptor
    if existing and f'"{BASELINE_SCHEMA}"'.encode() in existing[:4096]:
        from sysctl_advisor.sources.check_config import baseline_from

        if len(existing) > limit:
            raise InputError(
                f"larger than {limit:,} bytes (SYSCTL_ADVISOR_MAX_INPUT): not read",
                path=path,
                field="--write-baseline",
            )
        replaced = baseline_from(existing, path)
        gone = gone_files(root, (e.file for e in replaced.findings))
        kept = outside(replaced, scope_of(report, name, gone))
    findings = report.findings
    written = baseline_of(findings, [name(f.file) for f in findings], kept)
    if file is None:  # `--write-baseline -`
        emit(dump_json(plain_data(written)), None)
        return
    file.write(dump_json(plain_data(written)))
    others = f" ({len(kept)} kept from what this check did not cover)" if kept else ""
    say(f"wrote {len(written.findings)} findings to the baseline {path}{others}")


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


def format_and_file(pair: str) -> tuple[str, Path]:
    """--also FORMAT=FILE."""
    from sysctl_advisor.outputs import formats

    fmt, sep, file = pair.partition("=")
    if not sep or not file or file == "-":
        raise InputError(f"expected FORMAT=FILE, got {pair!r}", field="--also")
    return choose(fmt, formats.CHECK, "--also"), Path(file)


def _only_a_baseline(file: OutputFile) -> None:
    """--write-baseline replaces a baseline, never another file (a forgotten FILE makes the
    next argument, a sysctl file, the target)."""
    head = file.head()
    if head is not None and f'"{BASELINE_SCHEMA_FAMILY}'.encode() not in head:
        file.close()
        raise InputError(
            "exists and is not a sysctl-advisor baseline: not replaced (did the file name "
            "after --write-baseline go missing?)",
            path=file.path,
            field="--write-baseline",
        )


def not_over_inputs(
    files: list[OutputFile | None],
    found: CheckSettings,
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


def files_to_fix(paths: list[Path], write_baseline: Path | None) -> dict[str, Path]:
    """--fix rewrites only the files it is given, each opened as a file: standard input, a
    directory or tree (whose files it did not name) and a link are refused before anything is
    read. The files by the name their findings carry."""
    from sysctl_advisor.commands.common import shown_path

    if write_baseline is not None:
        raise InputError(
            "--fix rewrites the files; --write-baseline records their findings: give one",
            field="--fix",
        )
    targets: dict[str, Path] = {}
    for path in paths:
        if str(path) == "-":
            raise InputError(
                "--fix rewrites files it is given; standard input cannot be rewritten",
                path="-",
                field="--fix",
            )
        if path.is_symlink():
            raise InputError(
                "is a symbolic link; --fix rewrites the file it points to only when that "
                "file is given (links are not followed when writing)",
                path=path,
                field="--fix",
            )
        if path.is_dir():
            raise InputError(
                "is a directory; --fix rewrites only files it is given by name (give the "
                "files: sysctl.d/*.conf)",
                path=path,
                field="--fix",
            )
        targets[shown_path(path)] = path
    return targets


def fix_files(
    findings: list[CheckFinding],
    targets: dict[str, Path],
    catalog: Catalog,
    target: tuple[KernelVersion | None, int | None] = (None, None),
) -> list[CheckFinding]:
    """Each file given with a finding `--fix` can fix, read again (never through a link, at
    most the input cap) and replaced atomically where its text changes; the findings fixed.
    A file that is not UTF-8, or has grown past the cap, is left as it is, with a note.
    `target`: the kernel release and word size the files are judged for."""
    from sysctl_advisor.commands.common import note
    from sysctl_advisor.engine.check.fix import fix_text, fixable
    from sysctl_advisor.model.documents import max_input_bytes
    from sysctl_advisor.outputs.files import OutputFile
    from sysctl_advisor.sources.sysctl_files import TEMPLATE_SUFFIX
    from sysctl_advisor.sources.sysctl_templates import template_lines

    by_file: dict[str, list[CheckFinding]] = {}
    for finding in findings:
        if fixable(finding.id) and finding.file in targets:
            by_file.setdefault(finding.file, []).append(finding)
    fixed: list[CheckFinding] = []
    for name, found in by_file.items():
        file = OutputFile(targets[name])  # a link or a device now is refused
        try:
            limit = max_input_bytes()
            data = file.head(limit + 1)
            if data is None or len(data) > limit:
                note(f"{name}: not fixed: no longer a regular file within the input cap")
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                note(f"{name}: not fixed: not UTF-8 text")
                continue
            judged = None
            if targets[name].name.endswith(TEMPLATE_SUFFIX):  # the lines it renders are judged
                lines = template_lines(text)
                if lines.error is not None:
                    continue
                judged = lines.text
            new, done = fix_text(text, found, catalog, judged, target)
            if new != text:
                file.write(new)
                fixed += done
        finally:
            file.close()
    return fixed
