"""`check` output: text (coloured on a terminal), JSON, GitHub workflow commands, SARIF 2.1.0,
and Markdown (a job summary or pull-request comment).

Every format is escaped for the consumer that reads it: text and colour through one_line, JSON
through the CheckDocument model, workflow commands with the runner's own escapes, SARIF through
the JSON serializer with RFC 3986 percent-encoded URIs, Markdown through markdown_text.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast
from urllib.parse import quote, quote_from_bytes, urlsplit

from sysctl_advisor import __version__
from sysctl_advisor.engine.check.baseline import fingerprints
from sysctl_advisor.engine.check.findings import CheckFinding, CheckReport, Suppressed
from sysctl_advisor.knowledge.check_rules import CheckRule
from sysctl_advisor.model.documents import dump_json, read_bytes
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.severity import SEVERITY_ORDER, Severity
from sysctl_advisor.model.sysctl_conf import C_SPACE
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.outputs.markdown_text import (
    FOLD_ROWS,
    Limits,
    fit_document,
    md_code,
    md_code_cell,
    md_text,
    md_text_clipped,
)

if TYPE_CHECKING:
    from sysctl_advisor.outputs.check_document import CheckDocument

__all__ = [
    "escape_workflow_data",
    "render_check",
    "render_statistics",
    "rule_url",
    "wants_color",
]

SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
# GitHub code scanning's problem.severity words for ours.
_PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}
# Characters RFC 3986 allows in a URI as they are; anything else in a configured URL is
# percent-encoded so the SARIF stays valid.
_URI_CHARACTERS = ":/?#[]@!$&'()*+,;=%~"
SRCROOT = "%SRCROOT%"
# The one setting for a fork's or a mirror's rules reference.
DOCS_URL_VARIABLE = "SYSCTL_ADVISOR_DOCS_URL"
FINGERPRINT = "sysctlAdvisorFinding/v1"


# --- help links -------------------------------------------------------------------------------


def project_url() -> str | None:
    """Where the project is published: the `Repository` of pyproject.toml's [project.urls], as
    the installed distribution's metadata holds it (None when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls: list[str] = metadata("sysctl-advisor").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip() == "Repository" and url.strip().startswith("https://"):
            return url.strip()
    return None


def docs_url() -> str:
    """The rules reference (docs/rules.md): $SYSCTL_ADVISOR_DOCS_URL (a fork's or a mirror's,
    https only), else the published copy at this version's tag, else (not installed) its path
    in the repository, a text link only. Never a local file: a code-scanning reader cannot
    open one."""
    configured = os.environ.get(DOCS_URL_VARIABLE)
    if configured:
        try:
            parts = urlsplit(configured)
        except ValueError:  # an unclosed [ of an IPv6 host
            parts = urlsplit("")
        if parts.scheme != "https" or not parts.netloc:
            raise InputError(f"{configured!r} is not an https URL", field=DOCS_URL_VARIABLE)
        if "#" in configured:
            raise InputError(
                f"{configured!r} holds a #fragment; give the page (each rule's anchor is added)",
                field=DOCS_URL_VARIABLE,
            )
        # spaces, non-ASCII and a stray % (not an escape) made valid
        quoted = quote(configured, safe=_URI_CHARACTERS)
        quoted = re.sub("%(?![0-9A-Fa-f]{2})", "%25", quoted)
        # [ and ] are an IPv6 host's only (a path's or a query's are escaped), and an @ other
        # than the one ending the user's part is the user's
        netloc = urlsplit(quoted).netloc
        start = quoted.index("//") + 2
        user, at, host = netloc.rpartition("@")
        tail = quoted[start + len(netloc) :].replace("[", "%5B").replace("]", "%5D")
        return quoted[:start] + user.replace("@", "%40") + at + host + tail
    published = project_url()
    if published:
        return f"{published}/blob/v{__version__}/docs/rules.md"
    return "docs/rules.md"


def _anchor(rule_id: str) -> str:
    """The heading anchor GitHub and most Markdown viewers give `## check.some-rule`."""
    return rule_id.replace(".", "")


def rule_url(rule_id: str, base: str | None = None) -> str:
    return f"{base if base is not None else docs_url()}#{_anchor(rule_id)}"


def _absolute(url: str) -> bool:
    return bool(urlsplit(url).scheme)


# --- where a finding is -----------------------------------------------------------------------


class _Lines:
    """Columns of a finding's line, read back from the file the checker read (bounded reader:
    a file swapped for a FIFO or device meanwhile is not read, and then has no columns). Only
    the lines the findings are on are kept."""

    def __init__(self, findings: Iterable[CheckFinding]) -> None:
        self._wanted: dict[str, set[int]] = {}
        for finding in findings:
            if finding.line is not None:
                self._wanted.setdefault(finding.file, set()).add(finding.line)
        self._files: dict[str, dict[int, str] | None] = {}

    def _lines(self, path: str) -> dict[int, str] | None:
        if path not in self._files:
            try:
                data = read_bytes(Path(path))
            except InputError:
                self._files[path] = None
                return None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("latin-1")
            wanted = self._wanted.get(path, set())
            kept: dict[int, str] = {}
            start = 0
            for number in range(1, max(wanted, default=0) + 1):
                end = text.find("\n", start)  # lines end at \n only (procps)
                if number in wanted:
                    kept[number] = text[start:] if end < 0 else text[start:end]
                if end < 0:
                    break
                start = end + 1
            self._files[path] = kept
        return self._files[path]

    def span(self, finding: CheckFinding) -> tuple[int, int] | None:
        """1-based start column and end column (one past the last character) of what is on
        the finding's line, in Unicode code points; None when unknown."""
        if finding.line is None:
            return None
        lines = self._lines(finding.file)
        raw = lines.get(finding.line) if lines is not None else None
        if raw is None:
            return None
        content = raw.strip(C_SPACE)
        if not content:
            return None
        start = len(raw) - len(raw.lstrip(C_SPACE)) + 1
        return start, start + len(content)


# --- text ------------------------------------------------------------------------------------

_RESET = "\x1b[0m"
_SEVERITY_COLOR = {"error": "\x1b[1;31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_RULE_COLOR = "\x1b[2m"


def wants_color(stream: IO[str] | Any) -> bool:
    """Colour for a stream: never with NO_COLOR set (any non-empty value, no-color.org),
    always with FORCE_COLOR set (non-empty, force-color.org), else only on a terminal that is
    not TERM=dumb."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed or detached stream
        return False


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def _counts(report: CheckReport) -> str:
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in SARIF_LEVELS}
    plural = {"error": "errors", "warning": "warnings", "info": "info"}
    said = (
        ", ".join(f"{n} {s if n == 1 else plural[s]}" for s, n in counts.items() if n)
        or "no findings"
    )
    # what was accepted, and by what: the files' own comments, the configuration, the baseline
    by = {"comment": "by comments in the files", "config": "by per-file-ignores"}
    by["baseline"] = "in the baseline"
    counts = {how: sum(1 for s in report.suppressed if s.by == how) for how in by}
    accepted = [f"{n} {by[how]}" for how, n in counts.items() if n]
    return f"{said}; suppressed: {', '.join(accepted)}" if accepted else said


def _text(report: CheckReport, color: bool) -> str:
    lines = []
    columns = _Lines(report.findings)
    # File names, rule ids and messages recur (a long file repeats a few lines): each is
    # escaped once; so is the place of a line with several findings.
    names: dict[str, str] = {}
    places: dict[tuple[str, int], str] = {}
    for f in report.findings:
        if f.file not in names:
            names[f.file] = one_line(f.file)
        if f.line is None:
            where = names[f.file] + ":"
        else:
            where = places.get((f.file, f.line), "")
            if not where:
                span = columns.span(f)
                where = f"{names[f.file]}:{f.line}:{span[0] if span else 1}:"
                places[(f.file, f.line)] = where
        if f.id not in names:
            names[f.id] = one_line(f.id)
        severity, rule = f.severity, names[f.id]
        if color:
            severity = _paint(severity, _SEVERITY_COLOR[severity], color)
            rule = _paint(rule, _RULE_COLOR, color)
        message = names.get(f.message)
        if message is None:
            message = names[f.message] = one_line(f.message)
        lines.append(f"{where} [{severity}] {message} ({rule})")
    files = len(report.files)
    lines.append(f"{files} {'file' if files == 1 else 'files'} checked: {_counts(report)}.")
    return "\n".join(lines) + "\n"


# --- Markdown --------------------------------------------------------------------------------

_SEVERITY_MARK = {"error": "❌ error", "warning": "⚠️ warning", "info": "ℹ️ info"}


def _markdown(report: CheckReport) -> str:
    """A job summary or pull-request comment: the counts, then a table of findings (worst
    first, in file order within a severity), folded when long, cut to GitHub's comment size
    with a line saying how many rows were left out. Every value is escaped (markdown_text)."""
    base = docs_url()
    web = urlsplit(base).scheme in ("https", "http") and not any(c in base for c in "<> ")
    findings = sorted(report.findings, key=lambda f: SEVERITY_ORDER[f.severity])
    files = len(report.files)

    def render(limits: Limits) -> str:
        shown = findings[: limits.get("findings")]
        lines = [
            "### sysctl-advisor check",
            "",
            f"**{files} {'file' if files == 1 else 'files'} checked: {md_text(_counts(report))}.**",
        ]
        if report.files:
            names = ", ".join(md_code(name) for name in report.files[:FOLD_ROWS])
            more = len(report.files) - FOLD_ROWS
            lines += ["", f"Files: {names}" + (f" and {more} more." if more > 0 else ".")]
        if shown:
            fold = len(findings) > FOLD_ROWS
            lines.append("")
            if fold:
                lines += [f"<details open><summary>{len(findings)} findings</summary>", ""]
            lines += ["| severity | where | key | finding | rule |", "|---|---|---|---|---|"]
            for f in shown:
                where = f.file + (f":{f.line}" if f.line is not None else "")
                rule = (  # a reader of a comment or summary can open only a web link
                    f"[{md_text(f.id)}](<{rule_url(f.id, base)}>)" if web else md_code_cell(f.id)
                )
                lines.append(
                    f"| {_SEVERITY_MARK[f.severity]} | {md_code_cell(where)} | "
                    f"{md_code_cell(f.key) if f.key else '—'} | {md_text_clipped(f.message)} | "
                    f"{rule} |"
                )
            if len(shown) < len(findings):
                lines += [
                    "",
                    f"… and {len(findings) - len(shown)} more findings: `--format json` "
                    "lists them all.",
                ]
            if fold:
                lines += ["", "</details>"]
        return "\n".join(lines) + "\n"

    return fit_document(render, [{"findings": len(findings)}])


# --- JSON ------------------------------------------------------------------------------------


def check_document(report: CheckReport) -> CheckDocument:
    # The JSON document's model only for the JSON format: text, SARIF and Markdown runs do
    # not import it.
    from sysctl_advisor.outputs.check_document import CheckDocument, CheckFindingDocument

    base = docs_url()
    return CheckDocument(
        version=__version__,
        files=report.files,
        findings=[
            CheckFindingDocument(
                id=f.id,
                severity=cast(Severity, f.severity),
                file=f.file,
                line=f.line,
                key=f.key,
                message=f.message,
                help=rule_url(f.id, base),
            )
            for f in report.findings
        ],
    )


# --- GitHub workflow commands ----------------------------------------------------------------


def escape_workflow_data(text: str) -> str:
    """A workflow command's message, as the runner unescapes it (%, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return escape_workflow_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotated_name(path: str) -> str:
    """The file name as the annotation names it: exact (the runner restores \\r, \\n, %, :
    and , from their escapes), except control and format characters (an ESC sequence, a bidi
    override), which are shown escaped so a file name cannot restyle or reorder the log; such
    a file's annotations then stay in the summary instead of attaching to it."""
    return "".join(c if c in "\r\n" or c.isprintable() else one_line(c) for c in path)


def _github(report: CheckReport) -> str:
    command = {"error": "error", "warning": "warning", "info": "notice"}
    lines = []
    columns = _Lines(report.findings)
    for f in report.findings:
        props = [f"file={_escape_property(_annotated_name(f.file))}"]
        if f.line is not None:
            props.append(f"line={f.line}")
            props.append(f"endLine={f.line}")
            span = columns.span(f)
            if span is not None:
                # GitHub keeps columns only on a one-line annotation; endColumn is inclusive.
                props += [f"col={span[0]}", f"endColumn={max(span[0], span[1] - 1)}"]
        props.append(f"title={_escape_property(f.id)}")
        # The message quotes the file's text: control characters (an ESC sequence) shown
        # escaped, as in the text format, so a pull request cannot restyle the CI log.
        message = escape_workflow_data(one_line(f.message))
        lines.append(f"::{command[f.severity]} {','.join(props)}::{message}")
    return "\n".join(lines) + ("\n" if lines else "")


# --- SARIF -----------------------------------------------------------------------------------


def _file_uri(absolute: str) -> str:
    """file:// URI of an absolute path, every byte outside RFC 3986's unreserved set
    percent-encoded (a space, %, a comma, #, ?, a newline, non-UTF-8 bytes)."""
    return "file://" + quote_from_bytes(os.fsencode(absolute), safe="/")


def _artifact_location(path: str, cwd: str) -> dict[str, str]:
    """Files under the working directory (a CI checkout) relative to %SRCROOT%, others as an
    absolute file:// URI with no base."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, cwd)
    except ValueError:
        relative = ".."
    if relative == ".." or relative.startswith("../") or relative == ".":
        return {"uri": _file_uri(absolute)}
    return {"uri": quote_from_bytes(os.fsencode(relative), safe="/"), "uriBaseId": SRCROOT}


def _rule_properties(rule: CheckRule | None) -> dict[str, Any]:
    if rule is None:
        return {"tags": ["sysctl"], "precision": "high", "problem.severity": "warning"}
    spec = rule.spec
    tags = [
        "sysctl",
        "structural" if spec.kind == "structural" else "value",
        *(f"needs-{need}" for need in spec.needs),
    ]
    # A verdict from the file alone is certain; one that rests on facts or a profile is only
    # as good as they are.
    precision = "high" if {"facts", "profile"} & set(spec.needs) else "very-high"
    return {
        "tags": list(tags),
        "precision": precision,
        "problem.severity": _PROBLEM_SEVERITY[spec.severity],
    }


def _sarif_rule(rule_id: str, rule: CheckRule | None, base: str) -> dict[str, Any]:
    title = rule.spec.title if rule else rule_id
    why = " ".join(rule.spec.rationale.split()) if rule else title
    level = SARIF_LEVELS[rule.spec.severity] if rule else "warning"
    url = rule_url(rule_id, base)
    return {
        "id": rule_id,
        "name": rule_id.replace(".", "-"),
        "shortDescription": {"text": title},
        "fullDescription": {"text": why},
        # a rules directory's rationale is prose, never Markdown or HTML (images, links)
        "help": {"text": why, "markdown": f"{md_text(why)}\n\n[Rule documentation](<{url}>)"},
        **({"helpUri": url} if _absolute(base) else {}),
        "defaultConfiguration": {"level": level},
        "properties": _rule_properties(rule),
    }


def sarif_log(report: CheckReport, rules: dict[str, CheckRule]) -> dict[str, Any]:
    base = docs_url()
    cwd = os.getcwd()
    # Findings a comment in the file accepts are results too, each with an in-source
    # suppression and the comment's reason (code scanning shows them as dismissed); those the
    # configuration or the baseline accepts, with an external one.
    every = [*report.findings, *(s.finding for s in report.suppressed)]
    columns = _Lines(every)
    reasons: list[Suppressed | None] = [None] * len(report.findings)
    reasons += report.suppressed
    used = sorted({f.id for f in every} | set(rules))
    index = {rule_id: i for i, rule_id in enumerate(used)}
    locations = [_artifact_location(f.file, cwd) for f in every]
    prints = fingerprints(every, [loc["uri"] for loc in locations])
    results = []
    for f, artifact, fingerprint, reason in zip(every, locations, prints, reasons, strict=True):
        physical: dict[str, Any] = {"artifactLocation": artifact}
        if f.line is not None:  # a finding about the whole file gets no invented line
            region: dict[str, int] = {"startLine": f.line}
            span = columns.span(f)
            if span is not None:
                region.update(startColumn=span[0], endColumn=span[1])
            physical["region"] = region
        result: dict[str, Any] = {
            "ruleId": f.id,
            "ruleIndex": index[f.id],
            "level": SARIF_LEVELS[f.severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": physical}],
            "partialFingerprints": {FINGERPRINT: fingerprint},
        }
        if reason is not None:  # a comment in the file, or the configuration or baseline
            kind = "inSource" if reason.by == "comment" else "external"
            result["suppressions"] = [{"kind": kind, "justification": reason.reason}]
        results.append(result)
    driver: dict[str, Any] = {
        "name": "sysctl-advisor",
        "version": __version__,
        "semanticVersion": __version__,
    }
    if _absolute(base):  # the project, or the fork or mirror whose reference links point at
        configured = os.environ.get(DOCS_URL_VARIABLE)
        driver["informationUri"] = (not configured and project_url()) or base
    driver["rules"] = [_sarif_rule(rule_id, rules.get(rule_id), base) for rule_id in used]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {SRCROOT: {"uri": _file_uri(os.path.join(cwd, ""))}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


# --- entry point -----------------------------------------------------------------------------


def render_check(
    report: CheckReport,
    fmt: str,
    rules: dict[str, CheckRule],
    *,
    color: bool | None = False,
) -> str:
    """The report in `fmt`. `color` applies to text only: True/False as given, None decides
    for standard output from the terminal and the environment (wants_color). Off by default,
    so text written to a file never carries colour codes; json, github and sarif never do."""
    if fmt == "json":
        return check_document(report).to_json()
    if fmt == "github":
        return _github(report)
    if fmt == "sarif":
        return dump_json(sarif_log(report, rules))
    if fmt == "markdown":
        return _markdown(report)
    return _text(report, wants_color(sys.stdout) if color is None else color)


# --- --statistics -----------------------------------------------------------------------------


_FIXABLE = {True: "[*]", False: "   "}  # ruff's mark of a rule --fix fixes


def render_statistics(report: CheckReport, fmt: str, rules: dict[str, CheckRule]) -> str:
    """How many findings each rule has, most first, as ruff's and flake8's `--statistics`:
    text (count, rule, `[*]` where `--fix` fixes it, severity, title; then the counts line)
    or JSON (a list of {rule, severity, count, fixable, title})."""
    from collections import Counter

    from sysctl_advisor.engine.check.fix import fixable

    counted = Counter((f.id, f.severity) for f in report.findings)
    rows = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    titles = {
        rule_id: rules[rule_id].spec.title if rule_id in rules else "" for rule_id, _ in counted
    }
    if fmt == "json":
        return dump_json(
            [
                {
                    "rule": rule_id,
                    "severity": severity,
                    "count": count,
                    "fixable": fixable(rule_id),
                    "title": titles[rule_id],
                }
                for (rule_id, severity), count in rows
            ]
        )
    width = max((len(str(count)) for count in counted.values()), default=1)
    id_width = max((len(one_line(rule_id)) for rule_id, _ in counted), default=0)
    lines = [
        f"{count:>{width}}  {one_line(rule_id):<{id_width}}  {_FIXABLE[fixable(rule_id)]} "
        f"{severity:<7}  {one_line(titles[rule_id])}"
        for (rule_id, severity), count in rows
    ]
    files = len(report.files)
    lines.append(f"{files} {'file' if files == 1 else 'files'} checked: {_counts(report)}.")
    fixes = sum(count for (rule_id, _), count in rows if fixable(rule_id))
    if fixes:
        lines.append(f"[*] {fixes} fixable with --fix.")
    return "\n".join(lines) + "\n"
