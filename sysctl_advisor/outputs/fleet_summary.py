"""summary.json (its models: `fleet_document`) and summary.md of a fleet run, written from a
stream of host outcomes.

Per-host rows go to a scratch file as they arrive; only fleet-wide counters (one per finding id,
changed key and profile) stay in memory. The summaries are then written from the counters and
the scratch file, so a run over 100,000 hosts needs no more memory than a run over 100.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from sysctl_advisor.model.directories import Directory
from sysctl_advisor.model.model_base import plain_data
from sysctl_advisor.model.severity import SEVERITY_ORDER, Severity
from sysctl_advisor.outputs.fleet_document import (
    FleetChangeCount,
    FleetFindingCount,
    FleetSummary,
    FleetWriterCount,
    NodePoolOutcome,
    SeverityCounts,
    SkippedHost,
    WrittenHost,
)

if TYPE_CHECKING:
    from sysctl_advisor.engine.kubernetes_placement import Placement
from sysctl_advisor.outputs.markdown_text import (
    BUDGET,
    FOLD_ROWS,
    md_code,
    md_code_cell,
    md_length,
    md_text,
    md_text_clipped,
)


@dataclass(frozen=True)
class HostOutcome:
    """What one host's run produced: a summary row, or the reason it was skipped."""

    host: str
    source: str
    profile: str | None = None
    error: str | None = None
    hostname: str | None = None
    kernel: str | None = None
    changes: tuple[str, ...] = ()
    findings: tuple[tuple[str, Severity], ...] = ()  # (id, severity), in plan order
    pool: str | None = None  # its node pool (fleet --node-pools)
    node: tuple[tuple[str, str], ...] = ()  # in a pool: its own node plan, (key, value)
    # in a pool: the placement `node` was cut from, from the host's one read of its facts (the
    # pool's file, when this host represents it, is rendered from exactly this)
    placement: Placement | None = field(default=None, compare=False, repr=False)
    # (key, writer) each key its facts' record shows written, and by whom; None: no record
    writers: tuple[tuple[str, str], ...] | None = None

    @property
    def written(self) -> bool:
        return self.error is None

    def by_severity(self) -> dict[str, int]:
        counts = dict.fromkeys(SEVERITY_ORDER, 0)
        for _, severity in self.findings:
            counts[severity] += 1
        return counts


@dataclass
class FleetTotals:
    hosts: int = 0
    written: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (host, reason), first few
    skipped_count: int = 0
    profiles: Counter[str] = field(default_factory=Counter)
    findings: Counter[tuple[str, Severity]] = field(default_factory=Counter)  # (id, severity)
    changes: Counter[str] = field(default_factory=Counter)
    watched: int = 0  # written hosts whose facts carry a record of writes
    writers: Counter[tuple[str, str]] = field(default_factory=Counter)  # (key, writer)

    def add(self, outcome: HostOutcome) -> None:
        self.hosts += 1
        if not outcome.written:
            self.skipped_count += 1
            if len(self.skipped) < 20:
                self.skipped.append((outcome.host, outcome.error or ""))
            return
        self.written += 1
        self.profiles[outcome.profile or ""] += 1
        self.findings.update(set(outcome.findings))
        self.changes.update(outcome.changes)
        if outcome.writers is not None:
            self.watched += 1
            self.writers.update(set(outcome.writers))

    def finding_rows(self) -> list[FleetFindingCount]:
        ordered = sorted(
            self.findings.items(), key=lambda kv: (SEVERITY_ORDER[kv[0][1]], -kv[1], kv[0][0])
        )
        return [FleetFindingCount(id=i, severity=s, hosts=n) for (i, s), n in ordered]

    def writer_rows(self) -> list[FleetWriterCount] | None:
        """Per key, the writers seen writing it, most hosts first; None: no host was watched."""
        if not self.watched:
            return None
        ordered = sorted(self.writers.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1]))
        return [FleetWriterCount(key=k, writer=w, hosts=n) for (k, w), n in ordered]

    def change_rows(self) -> list[FleetChangeCount]:
        ordered = sorted(self.changes.items(), key=lambda kv: (-kv[1], kv[0]))
        return [FleetChangeCount(key=k, hosts=n) for k, n in ordered]


def _row(outcome: HostOutcome) -> dict[str, Any]:
    row: SkippedHost | WrittenHost
    if not outcome.written:
        row = SkippedHost(host=outcome.host, facts_file=outcome.source, reason=outcome.error or "")
    else:
        row = WrittenHost(
            host=outcome.host,
            hostname=outcome.hostname,
            kernel=outcome.kernel,
            profile=outcome.profile or "",
            file=f"host_files/{outcome.host}.conf",
            changes=list(outcome.changes),
            findings=SeverityCounts(**outcome.by_severity()),
            finding_ids=sorted({i for i, _ in outcome.findings}),
        )
    data: dict[str, Any] = plain_data(row)
    return data


class SummaryWriter:
    def __init__(
        self,
        facts_source: Path,
        profile_map: Path | None,
        default: str | None,
        node_pools: Callable[[], tuple[str, list[NodePoolOutcome]] | None] | None = None,
    ) -> None:
        self.facts_source = facts_source
        self.profile_map = profile_map
        self.default = default
        self.totals = FleetTotals()
        # (the node format, each pool written), read once every host is in (fleet --node-pools)
        self.node_pools = node_pools
        self._pools: tuple[str, list[NodePoolOutcome]] | None = None

    def __call__(self, staging: Directory, outcomes: Iterator[HostOutcome]) -> int:
        """Write summary.json and summary.md into `staging` (by its descriptor); returns how
        many hosts were written."""
        rows_name = ".rows.jsonl"
        with staging.open(rows_name, "w") as rows:
            for outcome in outcomes:
                self.totals.add(outcome)
                rows.write(json.dumps(_row(outcome), sort_keys=False) + "\n")
        self._pools = self.node_pools() if self.node_pools is not None else None
        with staging.open("summary.json", "w") as out:
            self._json(out, staging, rows_name)
        with staging.open("summary.md", "w") as out:
            self._markdown(out, staging, rows_name)
        staging.unlink(rows_name)
        return self.totals.written

    def _rows(self, staging: Directory, rows_name: str, skipped: bool) -> Iterator[dict[str, Any]]:
        with staging.open(rows_name) as rows:
            for line in rows:
                row = json.loads(line)
                if ("reason" in row) == skipped:
                    yield row

    def _json(self, out: IO[str], staging: Directory, rows_name: str) -> None:
        t = self.totals
        fmt, pools = self._pools if self._pools is not None else (None, None)
        head = plain_data(
            FleetSummary(
                facts=str(self.facts_source),
                profile=self.default,
                profile_map=str(self.profile_map) if self.profile_map else None,
                hosts_total=t.hosts,
                hosts_written=t.written,
                hosts_skipped=t.skipped_count,
                profiles=dict(sorted(t.profiles.items())),
                findings=t.finding_rows(),
                changes=t.change_rows(),
                writers=t.writer_rows(),
                node_format=fmt,
                node_pools=pools,
                skipped=[],
                hosts=[],
            )
        )
        del head["skipped"], head["hosts"]  # the last two, streamed below
        text = json.dumps(head, indent=2)
        out.write(text[:-2] + ",\n")  # reopen the object to stream the two lists
        for name, skipped in (("skipped", True), ("hosts", False)):
            out.write(f'  "{name}": [')
            first = True
            for row in self._rows(staging, rows_name, skipped):
                out.write(("\n    " if first else ",\n    ") + json.dumps(row))
                first = False
            out.write("\n  ]" if not first else "]")
            out.write(",\n" if name == "skipped" else "\n")
        out.write("}\n")

    def _markdown(self, out: IO[str], staging: Directory, rows_name: str) -> None:
        """summary.md, within the budget of a pull-request comment whatever the fleet's size:
        the fleet-wide tables first, then as many skipped and written hosts as fit (a third
        of what is left for the skipped ones, when there are written ones), then a count of
        the rest; summary.json always lists every host."""
        t = self.totals
        profiles = ", ".join(f"{md_code(p)} {n}" for p, n in sorted(t.profiles.items())) or "none"
        head = (
            "# sysctl-advisor fleet summary\n\n"
            f"{t.hosts} hosts from {md_code(str(self.facts_source))}: {t.written} written, "
            f"{t.skipped_count} skipped. Profiles: {profiles}.\n"
        )
        fleet_wide = ""
        if t.findings:
            rows = (
                f"| {md_code_cell(f.id)} | {md_text(f.severity)} | {f.hosts} |"
                for f in t.finding_rows()
            )
            fleet_wide += _table(
                "Findings across the fleet",
                "| finding | severity | hosts |\n|---|---|---:|",
                rows,
                len(t.findings),
                "findings",
                _SECTION_BUDGET,
            )
        if t.changes:
            rows = (f"| {md_code_cell(c.key)} | {c.hosts} |" for c in t.change_rows())
            fleet_wide += _table(
                "Keys changed from the kernel default",
                "| key | hosts |\n|---|---:|",
                rows,
                len(t.changes),
                "keys",
                _SECTION_BUDGET,
            )
        writer_rows = t.writer_rows()
        if writer_rows is not None:
            rows = (
                f"| {md_code_cell(w.key)} | {md_text_clipped(w.writer)} | {w.hosts} |"
                for w in writer_rows
            )
            fleet_wide += _table(
                "Sysctl writers seen across the fleet",
                f"From the facts' records of writes ({t.watched} of {t.written} written hosts "
                "carry one): per key, who wrote it and on how many hosts.\n\n"
                "| key | writer | hosts |\n|---|---|---:|",
                rows,
                len(writer_rows),
                "writers",
                _SECTION_BUDGET,
            )
        fleet_wide += self._pools_markdown()
        left = BUDGET - md_length(head) - md_length(fleet_wide)
        skipped = ""
        if t.skipped_count:
            share = left // 3 if t.written else left
            rows = (
                f"| {md_code_cell(r['host'])} | {md_text_clipped(r['reason'])} |"
                for r in self._rows(staging, rows_name, True)
            )
            skipped = _table(
                "Skipped hosts",
                "No file was written for these; the playbook leaves them unchanged.\n\n"
                "| host | why |\n|---|---|",
                rows,
                t.skipped_count,
                "skipped hosts",
                share,
            )
        hosts = ""
        if t.written:
            rows = (
                f"| {md_code_cell(r['host'])} | {md_code_cell(r['profile'])} "
                f"| {md_text(r['kernel'] or 'unknown')} | {len(r['changes'])} "
                f"| {r['findings']['error']} | {r['findings']['warning']} "
                f"| {r['findings']['info']} |"
                for r in self._rows(staging, rows_name, False)
            )
            hosts = _table(
                "Hosts",
                "| host | profile | kernel | keys changed | errors | warnings | info |\n"
                "|---|---|---|---:|---:|---:|---:|",
                rows,
                t.written,
                "hosts",
                left - md_length(skipped),
            )
        out.write(head + skipped + fleet_wide + hosts)

    def _pools_markdown(self) -> str:
        """The node pools, and each key where a host's own node plan differs from its pool's."""
        if self._pools is None:
            return ""
        fmt, pools = self._pools
        if not pools:
            return f"\n## Node pools\n\nNo node pool has a written host: no {fmt} file.\n"
        rows = (
            f"| {md_code_cell(p.pool)} | {md_code_cell(p.file)} | {md_code_cell(p.representative)} "
            f"| {md_code_cell(p.profile)} | {p.hosts} | {len(p.differing)} |"
            for p in pools
        )
        text = _table(
            "Node pools",
            f"Each pool's {md_code(fmt)} file holds the node plan of its representative: the "
            "host whose own node plan most of the pool's hosts share (ties: the first name).\n\n"
            "| pool | file | representative | profile | hosts | differing |\n"
            "|---|---|---|---|---:|---:|",
            rows,
            len(pools),
            "pools",
            _SECTION_BUDGET,
        )
        differences = [(p, d, k) for p in pools for d in p.differing for k in d.keys]
        if differences:
            rows = (
                f"| {md_code_cell(d.host)} | {md_code_cell(p.pool)} | {md_code_cell(k.key)} "
                f"| {md_code_cell(k.pool) if k.pool is not None else 'not set'} "
                f"| {md_code_cell(k.host) if k.host is not None else 'not set'} |"
                for p, d, k in differences
            )
            text += _table(
                "Hosts whose own node plan differs from their pool's",
                "Their pool's file sets the pool's value on them.\n\n"
                "| host | pool | key | pool's value | host's own |\n|---|---|---|---|---|",
                rows,
                len(differences),
                "differences",
                _SECTION_BUDGET,
            )
        return text


_SECTION_BUDGET = 10_000
"""At most this much of summary.md for each fleet-wide table (their rows are bounded by the
rules and keys there are, but rules directories are the user's)."""
_MORE_RESERVE = 200
"""Room kept in a section's share for the line that counts what did not fit."""


def _table(title: str, header: str, rows: Iterator[str], total: int, noun: str, budget: int) -> str:
    """A section with a table of at most `budget` characters: folded into <details> when it
    is long, and the rows that do not fit counted, not shown."""
    fold = total > FOLD_ROWS
    text = f"\n## {title}\n\n"
    if fold:
        text += f"<details><summary>{total} {noun}</summary>\n\n"
    text += header + "\n"
    used, shown = md_length(text) + _MORE_RESERVE, 0
    for row in rows:
        used += md_length(row) + 1
        if used > budget:
            break
        text += row + "\n"
        shown += 1
    if shown < total:
        text += f"\n… and {total - shown:,} more {noun}: see summary.json.\n"
    if fold:
        text += "\n</details>\n"
    return text
