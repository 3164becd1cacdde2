"""Check's tuning through the Action's simulated runner: in one pull request, a suppression
comment accepts its line, the repository's configuration sets fail-on, a site's own check rule
from the `rules-dir` input runs, and a cargo-cult line and a hardening-against-performance
collision are reported, each on its line. (Selection is
tested in tests/commands/test_check_tuning.py, the baseline in test_check_baseline.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from tests.knowledge.test_user_check_rules import RULE
from tests.test_github_action import pull_request, run_action

CONF = (
    "# sysctl-advisor: ignore[check.tw-recycle-inert] kept until the 2027 migration\n"
    "net.ipv4.tcp_tw_recycle = 1\n"
    "net.ipv4.tcp_timestamps = 0\n"
    "net.ipv4.tcp_tw_reuse = 1\n"
    "net.core.somaxconn = 128\n"
)


def test_one_review_applies_every_way_a_team_tunes_check(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(
        workspace,
        {
            ".sysctl-advisor.toml": 'fail-on = "warning"\n',
            "site-rules/check/site-somaxconn-floor.yaml": RULE,
        },
        {"etc/sysctl.d/20-pr.conf": CONF},
    )
    run = run_action(workspace, tmp_path, {"rules-dir": "site-rules"}, "pull_request", event)
    review = run.outputs["review"]
    sarif = json.loads(Path(review["sarif-file"]).read_text())
    results = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r
        for r in sarif["runs"][0]["results"]
    }
    reported = {key for key, r in results.items() if "suppressions" not in r}
    assert reported >= {
        ("check.tcp-timestamps-off", 3),
        ("check.hardening-tw-reuse-without-timestamps", 4),
        ("check.site-somaxconn-floor", 5),
    }, run.stdout
    accepted = results[("check.tw-recycle-inert", 2)]["suppressions"][0]
    assert accepted["kind"] == "inSource" and "2027 migration" in accepted["justification"]
    assert ("check.tw-recycle-inert", 2) not in reported
    # Annotations on the lines, and the configuration's fail-on fails the job on warnings.
    assert "file=etc/sysctl.d/20-pr.conf,line=5" in run.stdout
    assert review["worst"] == "warning" and run.failed_step == "Fail on findings at fail-on"
    # A rules directory outside the repository is refused before anything runs.
    run = run_action(workspace, tmp_path, {"rules-dir": "../elsewhere"}, "pull_request", event)
    assert run.failed_step == "Review the changed sysctl files"
    assert "rules-dir" in run.stdout
