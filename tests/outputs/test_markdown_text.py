"""Markdown for pull-request comments, read by GitHub's own renderer.

Every Markdown output (recommend, diff, fleet summary.md) is rendered with cmark-gfm (the
`cmarkgfm` package: GitHub's fork of cmark with its table, autolink, strikethrough and tagfilter
extensions; raw HTML allowed, as GitHub allows it before its sanitizer) and the HTML is read
back with html.parser: each table row has its table's number of cells and each cell reads as
the value put in it, no HTML comment hides anything, only the tags the templates write appear,
and large hosts and fleets stay under GitHub's 65,536-character comment limit. Hostile values
and large inputs are built here, at test time.
"""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm  # type: ignore[import-untyped]
import pytest
import yaml
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.current_config import Problem
from sysctl_advisor.model.diff import DiffEntry, DiffReport
from sysctl_advisor.model.directories import Directory
from sysctl_advisor.model.plan import Companion, Finding, Plan, Unchanged
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.outputs.diff_report import render_diff
from sysctl_advisor.outputs.fleet_summary import HostOutcome, SummaryWriter
from sysctl_advisor.outputs.markdown_text import COMMENT_LIMIT, md_length
from sysctl_advisor.outputs.plan_render import Renderer, first_sentence
from sysctl_advisor.sources.service_configs import with_service_configs
from tests.conftest import EXAMPLES, load_facts

# What GitHub's renderer reads as syntax, in every position: alone, leading, trailing, mixed.
_PIECES = [
    "|", "\\|", "\\\\|", "<!--", "-->", "`", "``", "<", ">", "&", "&amp;", "&lt;", "*", "**",
    "_", "__", "~~", "[", "]", "[x](http://e.org)", "![i](x)", "\n", "\r\n", "\\", "#", "##",
    "- ", "+ ", "1. ", "2) ", "> ", "<script>alert(1)</script>", "<details>", "</td>", "  ",
    "\t", "\u2028", "---", "===", "http://e.org/a_b", "www.e.org", "WWW.E.ORG",
    "a@b.org", "ftp://e.org", ":+1:", "$x$", "é_é",
]  # fmt: skip
PAYLOADS = (
    _PIECES
    + [f"a{p}b" for p in _PIECES]
    + [f"{p}x" for p in _PIECES]
    + [f"x{p}" for p in _PIECES]
    + ["".join(_PIECES), "host<!--", "", "`a`", "a``b`c", "x\\", "tcp_mem * 2 <= _ram_"]
)
# The tags the templates write: no link (but to an e-mail address, which GitHub links after
# parsing, whatever the escapes, with the address as its text), image or other element comes
# from a value.
ALLOWED_TAGS = {
    "h1", "h2", "h3", "h4", "p", "ul", "li", "strong", "code", "table", "thead", "tbody",
    "tr", "th", "td", "details", "summary", "sub", "a",
}  # fmt: skip


def shown(value: object) -> str:
    """What a reader sees for a value: one line (control characters as visible escapes),
    runs of spaces as one."""
    return " ".join(one_line(value).split())


class Page(HTMLParser):
    """The parts of rendered HTML the tests look at."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self.blocks: list[tuple[str, str]] = []  # (tag, text) of headings and list items
        self.comments: list[str] = []
        self.tags: set[str] = set()
        self.links: list[str] = []
        self.open_details = 0
        self._cell: list[str] | None = None
        self._block: list[tuple[str, list[str]]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "a":
            self.links.append(dict(attrs).get("href") or "")
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h1", "h2", "h3", "h4", "li"):
            self._block.append((tag, []))
        elif tag == "details":
            self.open_details += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None
        elif tag in ("h1", "h2", "h3", "h4", "li") and self._block:
            name, parts = self._block.pop()
            self.blocks.append((name, " ".join("".join(parts).split())))
        elif tag == "details":
            self.open_details -= 1

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        for _, parts in self._block:
            parts.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def github(markdown: str) -> Page:
    """Render as GitHub does (GFM extensions, raw HTML kept) and check what every comment
    must satisfy."""
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    page = Page(html)
    assert page.comments == [], "an HTML comment hides part of the text"
    assert page.tags <= ALLOWED_TAGS, page.tags - ALLOWED_TAGS
    assert page.open_details == 0
    assert all(link.startswith("mailto:") for link in page.links), page.links
    for table in page.tables:
        assert len({len(row) for row in table}) == 1, table  # every row as wide as the header
    return page


def headings(page: Page, tag: str) -> list[str]:
    return [text for name, text in page.blocks if name == tag]


def items(page: Page) -> list[str]:
    return [text for name, text in page.blocks if name == "li"]


@pytest.fixture(scope="module")
def base_plan(kb: KnowledgeBase) -> Plan:
    return build_plan(kb, load_facts(EXAMPLES / "ec2-nginx-frontend.yaml"), "frontend-proxy")


def test_md_text_and_code_read_back_as_the_value() -> None:
    """Each payload alone, in a table cell, in a heading and in a list item."""
    from sysctl_advisor.outputs.markdown_text import md_code, md_code_cell, md_text

    for value in PAYLOADS:
        markdown = (
            f"### {md_text(value)}\n\n- {md_text(value)}\n- {md_code(value)}\n\n"
            f"| a | b |\n|---|---|\n| {md_text(value)} | {md_code_cell(value)} |\n"
        )
        page = github(markdown)
        expected = shown(value)
        assert headings(page, "h3") == [expected], (value, markdown)
        assert [i.strip() for i in items(page)] == [expected, expected], (value, markdown)
        assert [c.strip() for c in page.tables[0][1]] == [expected, expected], (value, markdown)


def _hostile_plan(plan: Plan, value: str) -> Plan:
    host = dataclasses.replace(plan.host, hostname=value, kernel=value)
    profile = dataclasses.replace(plan.profile, name=value, params={"x": value})
    return dataclasses.replace(
        plan,
        host=host,
        profile=profile,
        settings=[
            dataclasses.replace(
                s,
                value=value,
                kernel_default=value,
                human=value,
                rationale=value,
                summary=value,
                cited={},
                rules=[value],
            )
            for s in plan.settings
        ],
        findings=[Finding(id=value, severity="warning", key=value, message=value, rule="r")],
        companions=[Companion(target=value, setting=value, rationale=value, rule="r")],
        unchanged=[Unchanged(key=value, kernel_default=value, wanted=value, rules=[])],
        notes=[value],
    )


@pytest.mark.parametrize("value", PAYLOADS)
def test_plan_markdown_cells_and_headings_are_the_values(
    kb: KnowledgeBase, base_plan: Plan, value: str
) -> None:
    plan = _hostile_plan(base_plan, value)
    page = github(Renderer(kb.catalog).render(plan, "markdown", value))
    v = shown(value)
    assert headings(page, "h3") == [shown(f"sysctl-advisor: {v} for {shown(value or 'this host')}")]
    (table,) = page.tables
    assert table[0] == ["key", "kernel default", "recommended", "why"]
    first, *rest = value.split("\n")  # a summary's first line, then the merge's lines
    why = shown(" ".join([first_sentence(first), *(r for r in rest if not r.startswith("["))]))
    for s, row in zip(plan.settings, table[1:], strict=True):
        capped = "; capped" if s.capped_by else ""
        expected = [shown(s.key), v, f"{v} ({v})", shown(f"{why} ({v}{capped})")]
        assert [c.strip() for c in row] == [e.strip() for e in expected]
    c = v or " "  # an empty value as code: a code span of one space
    lis = items(page)
    assert shown(f"warning {c}" + (f" ({c})" if value else "") + f": {v}") in lis
    assert shown(f"{v}: {c}" + (f" — {v}" if value else "")) in lis
    assert shown(f"{c} = {c} (wanted {c})") in lis
    assert v in lis  # the note


@pytest.mark.parametrize("value", PAYLOADS)
def test_diff_markdown_cells_are_the_values(kb: KnowledgeBase, value: str) -> None:
    entries = [
        DiffEntry(key=value, current=value, recommended=value, kernel_default=value,
                  status=status, source=value, rationale=value)
        for status in ("ok", "change", "missing")
    ] + [DiffEntry(key=value, current=value, recommended=None, kernel_default=None,
                   status="remove", source=None, rationale=value)]  # fmt: skip
    report = DiffReport(
        hostname=value, kernel=value, profile=value, current_kind="file", current_label=value,
        entries=entries,
        findings=[Finding(id=value, severity="error", key=value, message=value, rule="r")],
        problems=[Problem(source=value, message=value, severity="error")],
    )  # fmt: skip
    page = github(render_diff(report, "markdown", Renderer(kb.catalog)))
    v = shown(value)
    assert headings(page, "h3") == [
        shown(f"sysctl-advisor diff: {v} for {shown(value or 'this host')}")
    ]
    (table,) = page.tables
    assert len(table) == 1 + len(entries)
    cells = [[c.strip() for c in row[1:]] for row in table[1:]]
    assert cells[:3] == [[v, v, v, v, v if value else "—"]] * 3
    assert cells[3] == [v, v, "(remove)", "—", "—"]
    c = v or " "
    lis = items(page)
    # Why each change: change, missing, remove. A rationale's line breaks (and other
    # whitespace) are where the engine joined sentences, so they read as spaces; every other
    # character is shown as it is.
    assert lis.count(shown(f"{c}: {' '.join(value.split())}")) == 3
    assert shown(f"error {c}: {v}") in lis


def _summary(tmp_path: Path, outcomes: list[HostOutcome], facts: str = "facts") -> tuple[str, dict]:  # type: ignore[type-arg]
    staging = tmp_path / "staging"
    staging.mkdir()
    directory = Directory.at(staging)
    SummaryWriter(Path(facts), None, "base")(directory, iter(outcomes))
    directory.close()
    return (staging / "summary.md").read_text(), json.loads((staging / "summary.json").read_text())


@pytest.mark.parametrize("value", PAYLOADS[::3])
def test_fleet_summary_cells_are_the_values(tmp_path: Path, value: str) -> None:
    outcomes = [
        HostOutcome(host=value, source=value, profile=value, kernel=value, changes=(value,),
                    findings=((value, "error"),)),
        HostOutcome(host=value, source=value, error=value),
    ]  # fmt: skip
    markdown, _ = _summary(tmp_path, outcomes, facts=value or "facts")
    page = github(markdown)
    v = shown(value)
    skipped, findings, changes, hosts = ([[c.strip() for c in r] for r in t] for t in page.tables)
    assert skipped[1:] == [[v, v]]
    assert findings[1:] == [[v, "error", "1"]]
    assert changes[1:] == [[v, "1"]]
    assert hosts[1:] == [[v, v, v or "unknown", "1", "1", "0", "0"]]


def _nginx_facts(tmp_path: Path, sockets: int) -> Path:
    """The example frontend, its nginx listening on `sockets` addresses on the default
    backlog: one companion setting per socket."""
    lines = ["events {}", "http {"]
    lines += [
        f"  server {{ listen 10.0.{i // 250}.{i % 250 + 1}:{8000 + i}; server_name s{i}; }}"
        for i in range(sockets)
    ]
    (tmp_path / "nginx.conf").write_text("\n".join([*lines, "}"]) + "\n")
    facts = yaml.safe_load((EXAMPLES / "ec2-nginx-frontend.yaml").read_text())
    facts["services"] = {"nginx": {"config": "nginx.conf"}}
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump(facts))
    return path


def _more(page_text: str) -> dict[str, int]:
    """The counts of what did not fit: {"changes outside sysctl": 11, ...}."""
    return {
        noun: int(n.replace(",", ""))
        for n, noun in re.findall(r"… and ([\d,]+) more ([^:]+):", page_text)
    }


def test_a_host_with_200_nginx_sockets_fits_a_comment(kb: KnowledgeBase, tmp_path: Path) -> None:
    path = _nginx_facts(tmp_path, 200)
    plan = build_plan(kb, with_service_configs(load_facts(path), path.parent), "frontend-proxy")
    assert len(plan.companions) > 200
    markdown = Renderer(kb.catalog).render(plan, "markdown", "cmd")
    assert md_length(markdown) < COMMENT_LIMIT
    page = github(markdown)
    assert "details" in page.tags  # the long list is folded
    more = _more(markdown)
    shown_items = [i for i in items(page) if i.startswith("nginx: listen")]
    listen = sum(1 for c in plan.companions if c.setting.startswith("listen"))
    assert len(shown_items) + more["changes outside sysctl"] == listen
    assert len(page.tables[0]) == 1 + len(plan.settings)  # the settings table is whole


def test_any_plan_fits_a_comment(kb: KnowledgeBase, base_plan: Plan) -> None:
    """Thousands of long findings and notes: sections lose rows, each counted."""
    long = "word " * 3_000
    plan = dataclasses.replace(
        base_plan,
        findings=[Finding(f"f{i}", "warning", None, long, "r") for i in range(3_000)],
        notes=[long] * 500,
    )
    markdown = Renderer(kb.catalog).render(plan, "markdown", "cmd")
    assert md_length(markdown) < COMMENT_LIMIT
    page = github(markdown)
    more = _more(markdown)
    findings = [i for i in items(page) if i.startswith("warning f")]
    assert len(findings) + more["findings"] == 3_000
    assert all("more characters)" in f for f in findings)  # each message cut, saying so


def test_any_diff_fits_a_comment(kb: KnowledgeBase) -> None:
    entries = [
        DiffEntry(f"net.k{i}", "1", "2", "0", "change", f"f{i}.conf:1", "because " * 50)
        for i in range(1_500)
    ]
    problems = [Problem(f"x{i}.conf:1", "not a sysctl line " * 20) for i in range(5_000)]
    report = DiffReport("h", None, "base", "tree", "/etc", entries, [], problems)
    markdown = render_diff(report, "markdown", Renderer(kb.catalog))
    assert md_length(markdown) < COMMENT_LIMIT
    page = github(markdown)
    more = _more(markdown)
    assert len(page.tables[0]) - 1 + more.get("keys", 0) == 1_500
    assert more["problems"] > 0


def test_a_2000_host_fleet_summary_fits_a_comment(tmp_path: Path) -> None:
    outcomes = [
        HostOutcome(host=f"web-{i:04d}", source=f"tree/web-{i:04d}", profile="frontend-proxy",
                    kernel="5.15.0-91-generic", changes=("net.core.somaxconn",),
                    findings=(("time-wait.tw-recycle-enabled", "error"),))
        for i in range(2_000)
    ] + [HostOutcome(host=f"db-{i:03d}", source=f"tree/db-{i:03d}", error="facts: no memory")
         for i in range(300)]  # fmt: skip
    markdown, summary = _summary(tmp_path, outcomes)
    assert md_length(markdown) < COMMENT_LIMIT
    page = github(markdown)
    skipped, _findings, _changes, hosts = page.tables
    more = _more(markdown)
    assert len(hosts) - 1 + more["hosts"] == 2_000
    assert len(skipped) - 1 + more.get("skipped hosts", 0) == 300
    assert f"… and {more['hosts']:,} more hosts: see summary.json." in markdown
    assert len(summary["hosts"]) == 2_000 and len(summary["skipped"]) == 300


def test_small_outputs_are_whole(kb: KnowledgeBase, base_plan: Plan) -> None:
    """Folding and counting only where needed: the example hosts render every row."""
    markdown = Renderer(kb.catalog).render(base_plan, "markdown", "cmd")
    assert "… and" not in markdown and "<details" not in markdown
    page = github(markdown)
    assert len(page.tables[0]) == 1 + len(base_plan.settings)
