"""`check` output: text, JSON, GitHub workflow commands, SARIF 2.1.0."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.check import CheckReport
from advisor.check_rules import CheckRule
from advisor.text_escape import one_line
from advisor.yamlio import dump_json

CHECK_FORMATS = ("text", "json", "github", "sarif")
CHECK_SCHEMA = "sysctl-advisor/check/v1"
# Where the generated rules reference lives; set SYSCTL_ADVISOR_DOCS_URL to your repository's
# copy (e.g. https://github.com/ORG/REPO/blob/main/docs/rules.md) for absolute links.
DOCS_URL = os.environ.get("SYSCTL_ADVISOR_DOCS_URL", "docs/rules.md")
SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def rule_url(rule_id: str) -> str:
    return f"{DOCS_URL}#{rule_id.replace('.', '')}"


def _text(report: CheckReport) -> str:
    lines = [
        one_line(f"{f.file}:{f.line or 1}:1: [{f.severity}] {f.message} ({f.id})")
        for f in report.findings
    ]
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in SARIF_LEVELS}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no findings"
    lines.append(f"{len(report.files)} file(s) checked: {summary}.")
    return "\n".join(lines) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github(report: CheckReport) -> str:
    command = {"error": "error", "warning": "warning", "info": "notice"}
    lines = []
    for f in report.findings:
        props = f"file={_escape_property(f.file)},line={f.line or 1},title={f.id}"
        lines.append(f"::{command[f.severity]} {props}::{_escape_data(f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _relative_uri(path: str) -> str:
    """Repository-relative when the file is under the working directory (as in CI)."""
    try:
        relative = os.path.relpath(os.path.abspath(path), Path.cwd())
    except ValueError:
        return Path(path).as_posix()
    if relative.startswith(".."):
        return Path(path).as_posix()
    return Path(relative).as_posix()


def _sarif(report: CheckReport, rules: dict[str, CheckRule]) -> dict[str, Any]:
    used = sorted({f.id for f in report.findings} | set(rules))
    index = {rule_id: i for i, rule_id in enumerate(used)}
    driver_rules = []
    for rule_id in used:
        rule = rules.get(rule_id)
        title = rule.spec.title if rule else rule_id
        why = " ".join(rule.spec.rationale.split()) if rule else title
        level = SARIF_LEVELS[rule.spec.severity] if rule else "warning"
        driver_rules.append(
            {
                "id": rule_id,
                "name": rule_id.replace(".", "-"),
                "shortDescription": {"text": title},
                "fullDescription": {"text": why},
                "help": {
                    "text": why,
                    "markdown": f"{why}\n\n[Rule documentation]({rule_url(rule_id)})",
                },
                **({"helpUri": rule_url(rule_id)} if "://" in DOCS_URL else {}),
                "defaultConfiguration": {"level": level},
            }
        )
    results = [
        {
            "ruleId": f.id,
            "ruleIndex": index[f.id],
            "level": SARIF_LEVELS[f.severity],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {
                            "uri": _relative_uri(f.file),
                            "uriBaseId": "%SRCROOT%",
                        },
                        "region": {"startLine": f.line or 1},
                    }
                }
            ],
        }
        for f in report.findings
    ]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "sysctl-advisor",
                        "version": __version__,
                        **({"informationUri": DOCS_URL} if "://" in DOCS_URL else {}),
                        "rules": driver_rules,
                    }
                },
                "results": results,
            }
        ],
    }


def render_check(report: CheckReport, fmt: str, rules: dict[str, CheckRule]) -> str:
    if fmt == "json":
        return dump_json(
            {
                "schema": CHECK_SCHEMA,
                "files": report.files,
                "findings": [
                    {
                        "id": f.id,
                        "severity": f.severity,
                        "file": f.file,
                        "line": f.line,
                        "key": f.key,
                        "message": f.message,
                        "help": rule_url(f.id),
                    }
                    for f in report.findings
                ],
            }
        )
    if fmt == "github":
        return _github(report)
    if fmt == "sarif":
        return dump_json(_sarif(report, rules))
    return _text(report)
