"""The corpus: public sysctl files people copy, and what `check` says about them.

`index.yaml` names each file's public source (repository, path, commit), its kind and the
kernel release it was written for. `count()` runs `check --kernel K --format json` on each file
(no facts, no profile) and counts the findings per rule and severity; `python -m tests.corpus`
prints the counts (`--json FILE` writes them). docs/check.md keeps the table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).parent
UNKNOWN_KEY = "check.unknown-key"
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Entry:
    """One file of the corpus and where it comes from."""

    file: str
    repository: str
    path: str
    commit: str
    kind: str
    kernel: str
    why: str

    @property
    def local(self) -> Path:
        return CORPUS / self.file


def entries() -> list[Entry]:
    """The corpus index, in its order."""
    document = yaml.safe_load((CORPUS / "index.yaml").read_text(encoding="utf-8"))
    fields = Entry.__dataclass_fields__
    return [Entry(**{name: str(row[name]) for name in fields}) for row in document["files"]]


def check(path: Path, kernel: str) -> list[dict[str, Any]]:
    """The findings of `check --kernel KERNEL --format json PATH`, run as the CLI runs."""
    command = [sys.executable, "-m", "sysctl_advisor", "check", "--kernel", kernel]
    result = subprocess.run(
        [*command, "--format", "json", str(path)], capture_output=True, text=True, timeout=300
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(f"check {path.name} exited {result.returncode}: {result.stderr.strip()}")
    findings: list[dict[str, Any]] = json.loads(result.stdout)["findings"]
    return findings


def count(corpus: list[Entry] | None = None, workers: int = 2) -> dict[str, Any]:
    """Per-rule counts by severity over the corpus, the total and the share of unknown keys."""
    corpus = entries() if corpus is None else corpus
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda entry: check(entry.local, entry.kernel), corpus))
    rules: dict[str, Counter[str]] = {}
    per_file: dict[str, int] = {}
    for entry, findings in zip(corpus, results, strict=True):
        per_file[entry.file] = len(findings)
        for finding in findings:
            rules.setdefault(finding["id"], Counter())[finding["severity"]] += 1
    total = sum(sum(counter.values()) for counter in rules.values())
    unknown = sum(rules.get(UNKNOWN_KEY, Counter()).values())
    return {
        "files": len(corpus),
        "total": total,
        "by_severity": {s: sum(c[s] for c in rules.values()) for s in SEVERITIES},
        "unknown_key_share": unknown / total if total else 0.0,
        "rules": {rule: dict(sorted(rules[rule].items())) for rule in sorted(rules)},
        "per_file": per_file,
    }


def table(counts: dict[str, Any]) -> str:
    """The counts as a Markdown table, one row per rule."""
    lines = ["| rule | error | warning | info | all |", "|---|---:|---:|---:|---:|"]
    for rule, severities in counts["rules"].items():
        cells = [str(severities.get(s, 0)) for s in SEVERITIES]
        lines.append(f"| `{rule}` | {' | '.join(cells)} | {sum(severities.values())} |")
    by = counts["by_severity"]
    lines.append(
        f"| all rules | {by['error']} | {by['warning']} | {by['info']} | {counts['total']} |"
    )
    share = counts["unknown_key_share"]
    lines.append("")
    lines.append(
        f"{counts['files']} files, {counts['total']} findings; "
        f"`{UNKNOWN_KEY}` is {share:.1%} of them."
    )
    return "\n".join(lines)
