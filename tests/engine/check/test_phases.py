"""Each phase of the check engine on its own: the directives (a file's suppression comments),
the severities, the per-file ignores and the baseline, over findings written here."""

from __future__ import annotations

from sysctl_advisor.engine.check.baseline import (
    BaselineInForce,
    accept_baselined,
    baseline_of,
)
from sysctl_advisor.engine.check.directives import accept_by_comments, read_comments
from sysctl_advisor.engine.check.findings import CheckFinding, CheckReport, Suppressed
from sysctl_advisor.engine.check.per_file import PerFileIgnores, accept_per_file
from sysctl_advisor.engine.check.selection import with_severities
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.check_config import Baseline
from sysctl_advisor.model.current_config import CurrentConfig
from sysctl_advisor.model.sysctl_conf import Assignment

TW = "check.tw-recycle-enabled"
GLOB = "check.glob"


def _finding(
    rule: str, file: str = "a.conf", line: int = 2, severity: str = "error"
) -> CheckFinding:
    return CheckFinding(rule, severity, file, line, "net.ipv4.tcp_tw_recycle", f"{rule} here")


def _config(comments: list[tuple[int, str]]) -> CurrentConfig:
    config = CurrentConfig("file", "a.conf")
    line = Assignment(key="net.ipv4.tcp_tw_recycle", value="1", line=2)
    config.documents.append(("a.conf", [line]))
    config.advisor_comments.append(("a.conf", comments))
    return config


def test_directives_accept_the_finding_they_name_and_report_what_is_wrong(
    kb: KnowledgeBase,
) -> None:
    config = _config(
        [
            (1, f"# sysctl-advisor: ignore[{TW}, {GLOB}] kept for the migration"),
            (3, "# sysctl-advisor: ignore[check.tw-recycle-enabled]"),
        ]
    )
    rules = kb.check_rules
    comments = read_comments(config, rules, rules["check.suppression-malformed"])
    assert comments.addressed() == {("a.conf", 2)}
    kept, accepted = accept_by_comments(
        comments, [_finding(TW)], {TW, GLOB}, rules["check.unused-suppression"]
    )
    assert accepted == [Suppressed(_finding(TW), "kept for the migration", "comment")]
    assert [(f.id, f.line) for f in kept] == [
        ("check.suppression-malformed", 3),
        ("check.unused-suppression", 1),
    ]
    assert "no check.glob finding on line 2" in kept[1].message


def test_severities_change_findings_and_suppressed_findings_alike() -> None:
    report = CheckReport(
        [_finding(TW, line=5), _finding(GLOB, line=5, severity="info")],
        ["a.conf"],
        [Suppressed(_finding(TW, line=9), "why")],
    )
    changed = with_severities(report, {TW: "warning", GLOB: "error"})
    assert [(f.id, f.severity) for f in changed.findings] == [(GLOB, "error"), (TW, "warning")]
    assert changed.suppressed[0].finding.severity == "warning"
    assert with_severities(report, {}) is report


def test_per_file_ignores_accept_by_pattern_with_the_configuration_as_reason() -> None:
    ignores = PerFileIgnores(
        {"vendor/*.conf": frozenset({TW}), "b.conf": frozenset({GLOB})},
        lambda file: (file if not file.startswith("/") else None, file.rpartition("/")[2]),
        "per-file-ignores in .sysctl-advisor.toml",
    )
    found = [
        _finding(TW, "vendor/x.conf"),
        _finding(GLOB, "vendor/x.conf"),
        _finding(GLOB, "/elsewhere/b.conf"),
        _finding(TW, "/elsewhere/vendor/x.conf"),
    ]
    report = accept_per_file(CheckReport(found, []), ignores)
    assert report.findings == [found[1], found[3]]
    assert [(s.finding, s.by) for s in report.suppressed] == [
        (found[0], "config"),
        (found[2], "config"),
    ]


def test_the_baseline_accepts_one_finding_an_entry_and_counts_the_stale() -> None:
    old = [_finding(TW), _finding(TW), _finding(GLOB)]
    entries = baseline_of(old, ["a.conf"] * 3)
    baseline = BaselineInForce(entries, lambda file: file, "in the baseline b.json")
    now = [_finding(TW, line=4), _finding(TW, line=6), _finding(TW, line=8)]
    report = accept_baselined(CheckReport(now, ["a.conf"]), baseline)
    assert report.findings == [now[2]]
    assert [s.by for s in report.suppressed] == ["baseline", "baseline"]
    assert report.stale == 1
    empty = BaselineInForce(Baseline(findings=[]), str, "in the baseline b.json")
    assert accept_baselined(CheckReport(now, []), empty).findings == now
