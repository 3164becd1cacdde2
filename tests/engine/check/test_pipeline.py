"""The check engine's pipeline: the order in which a finding is accepted (its file's comment,
then the configuration's per-file ignores, then the baseline), the severities applied before
either, and the baseline read before any file is judged."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.engine.check.baseline import BaselineInForce, baseline_of
from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.per_file import PerFileIgnores
from sysctl_advisor.engine.check.pipeline import CheckPolicy, acceptance, run
from sysctl_advisor.engine.check.selection import tuning
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.check_input import CheckInput
from sysctl_advisor.sources.sysctl_files import read_file
from tests.commands.check_repo import make_repo, run_in
from tests.conftest import assert_one_line_error

TW = "check.tw-recycle-enabled"


def _inputs(tmp_path: Path, kb: KnowledgeBase) -> list[CheckInput]:
    path = tmp_path / "a.conf"
    path.write_text("net.ipv4.tcp_tw_recycle = 1\n")
    return [CheckInput(str(path), read_file(path, kb.catalog.keys), str)]


def _policy(kb: KnowledgeBase, per_file: bool, warn: list[str] | None = None) -> CheckPolicy:
    ignores = PerFileIgnores(
        {"a.conf": frozenset({TW})}, lambda file: (None, Path(file).name), "per-file"
    )
    return CheckPolicy(
        tuning(kb.check_rules, warn=warn), CheckContext(), ignores if per_file else None
    )


def _baseline(tmp_path: Path, kb: KnowledgeBase) -> BaselineInForce:
    plain = run(kb, _policy(kb, per_file=False), _inputs(tmp_path, kb))
    assert [f.id for f in plain.findings] == [TW]
    names = [Path(f.file).name for f in plain.findings]
    return BaselineInForce(
        baseline_of(plain.findings, names), lambda file: Path(file).name, "baselined"
    )


def test_a_per_file_ignore_accepts_before_the_baseline(tmp_path: Path, kb: KnowledgeBase) -> None:
    baseline = _baseline(tmp_path, kb)
    report = run(kb, _policy(kb, per_file=True), _inputs(tmp_path, kb), baseline)
    assert report.findings == []
    assert [(s.finding.id, s.by) for s in report.suppressed] == [(TW, "config")]
    assert report.stale == 1  # the baseline's entry found nothing left to accept
    alone = run(kb, _policy(kb, per_file=False), _inputs(tmp_path, kb), baseline)
    assert [(s.by, alone.stale) for s in alone.suppressed] == [("baseline", 0)]


def test_severities_come_before_what_accepts_a_finding(tmp_path: Path, kb: KnowledgeBase) -> None:
    report = run(kb, _policy(kb, per_file=True, warn=[TW]), _inputs(tmp_path, kb))
    assert [s.finding.severity for s in report.suppressed] == ["warning"]


def test_acceptance_is_per_file_then_baseline(tmp_path: Path, kb: KnowledgeBase) -> None:
    policy = _policy(kb, per_file=True)
    assert len(acceptance(policy, None)) == 1
    assert len(acceptance(_policy(kb, per_file=False), None)) == 0
    phases = acceptance(policy, _baseline(tmp_path, kb))
    first = run(kb, _policy(kb, per_file=False), _inputs(tmp_path, kb))
    after_per_file = phases[0](first)
    assert [s.by for s in after_per_file.suppressed] == ["config"]
    assert phases[1](after_per_file).stale == 1


def test_a_bad_baseline_fails_before_any_file_is_read(tmp_path: Path) -> None:
    """No file to check at all: the bad baseline is still what is said (its error comes
    first), in one line, with exit 2."""
    repo = make_repo(tmp_path, None, {"base.json": "not json"})
    code, _, err = run_in(repo, "check", "--baseline", "base.json", "missing.conf")
    assert_one_line_error(code, err, "base.json", "not JSON")
    assert "missing.conf" not in err
