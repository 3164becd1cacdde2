"""A pull request cannot relax its own review: the Action judges the change's sysctl files
with the settings in force at the base commit (the configuration, the baseline and facts
files in force, the site's rules under `rules-dir`), read from git, and says so; a change that
deletes, moves, shadows or edits them gets a warning naming what it changes. Each hostile
pull request is built here as a git repository whose HEAD is its merge commit."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.commands.check_repo import run_in
from tests.conftest import EXAMPLES
from tests.knowledge.test_user_check_rules import RULE
from tests.test_github_action import Run, pull_request, run_action

TIMESTAMPS_OFF = "net.ipv4.tcp_timestamps = 0\n"  # check.tcp-timestamps-off, a warning
RECYCLE = "net.ipv4.tcp_tw_recycle = 1\n"  # check.tw-recycle-enabled, an error
TCP_MEM = "net.ipv4.tcp_mem = 2097152 4194304 8388608\n"  # above a 32-bit host's lowmem
FACTS = (EXAMPLES / "dcache-32bit.yaml").read_text()
PR_CONF = "hosts/web/etc/sysctl.d/20-pr.conf"


def _review(
    tmp_path: Path,
    base: dict[str, str],
    change: dict[str, str],
    removed: tuple[str, ...] = (),
    inputs: dict[str, str] | None = None,
) -> tuple[Run, str]:
    """The review of a pull request that writes `change` and deletes `removed` over `base`;
    and the base commit's short id."""
    workspace = tmp_path / "repo"
    event = pull_request(workspace, {"README.md": "infra\n", **base}, change, removed)
    run = run_action(workspace, tmp_path, inputs or {}, "pull_request", event)
    return run, event["pull_request"]["base"]["sha"][:12]


def _failed_with_the_base_settings(run: Run, base: str, *edited: str) -> None:
    """The review failed on the change's finding, said it used the base commit's settings,
    and warned that the change edits each of `edited`."""
    assert run.failed_step == "Fail on findings at fail-on", run.stdout
    assert f"Settings from the base commit {base}" in run.summary, run.summary
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning::")]
    assert any("the review used the base commit" in line for line in warnings), run.stdout
    for name in edited:
        assert any(name in line for line in warnings), (name, run.stdout)
        assert name in run.summary


def test_deleting_the_configuration_does_not_relax_the_review(tmp_path: Path) -> None:
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": 'fail-on = "warning"\n'},
        {PR_CONF: TIMESTAMPS_OFF},
        removed=(".sysctl-advisor.toml",),
    )
    _failed_with_the_base_settings(run, base, ".sysctl-advisor.toml")
    assert run.outputs["review"]["worst"] == "warning"


def test_moving_the_configuration_does_not_relax_the_review(tmp_path: Path) -> None:
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": 'fail-on = "warning"\n'},
        {PR_CONF: TIMESTAMPS_OFF, "docs/old-sysctl-advisor.toml": 'fail-on = "warning"\n'},
        removed=(".sysctl-advisor.toml",),
    )
    _failed_with_the_base_settings(run, base, ".sysctl-advisor.toml")


def test_a_nearer_configuration_does_not_shadow_the_repository_s(tmp_path: Path) -> None:
    """The base's facts come from the top configuration; the change adds an empty one beside
    its files, which the search would find first."""
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": 'facts = "facts/web.yaml"\n', "facts/web.yaml": FACTS},
        {PR_CONF: TCP_MEM, "hosts/web/.sysctl-advisor.toml": "\n"},
    )
    _failed_with_the_base_settings(run, base, "hosts/web/.sysctl-advisor.toml")
    assert "check.tcp-mem-above-memory" in run.summary
    assert "facts facts/web.yaml" in run.summary


def test_deleting_the_facts_and_the_line_naming_them_does_not_relax_the_review(
    tmp_path: Path,
) -> None:
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": 'facts = "facts/web.yaml"\n', "facts/web.yaml": FACTS},
        {PR_CONF: TCP_MEM, ".sysctl-advisor.toml": "\n"},
        removed=("facts/web.yaml",),
    )
    _failed_with_the_base_settings(run, base, ".sysctl-advisor.toml", "facts/web.yaml")
    assert "check.tcp-mem-above-memory" in run.summary


def test_the_facts_input_is_the_base_commit_s(tmp_path: Path) -> None:
    """The facts input names a file the change rewrites as a host with memory to spare."""
    roomy = FACTS.replace("i686", "x86_64").replace("total: 8 GiB", "total: 64 GiB")
    roomy = roomy.replace("  lowmem: 896 MiB\n", "")
    run, base = _review(
        tmp_path,
        {"facts/web.yaml": FACTS},
        {PR_CONF: TCP_MEM, "facts/web.yaml": roomy},
        inputs={"facts": "facts/web.yaml"},
    )
    _failed_with_the_base_settings(run, base, "facts/web.yaml")
    assert "check.tcp-mem-above-memory" in run.summary


def test_editing_the_baseline_does_not_accept_the_change_s_own_finding(tmp_path: Path) -> None:
    config = 'baseline = "accepted.json"\n'
    empty = '{"schema": "sysctl-advisor/baseline/v2", "findings": []}\n'
    # The baseline that accepts the change's own finding, written on a copy of the merge.
    scratch = tmp_path / "scratch"
    (scratch / ".git").mkdir(parents=True)
    (scratch / ".sysctl-advisor.toml").write_text(config)
    (scratch / PR_CONF).parent.mkdir(parents=True)
    (scratch / PR_CONF).write_text(RECYCLE)
    code, _, err = run_in(scratch, "check", "hosts/web", "--write-baseline", "accepted.json")
    assert code == 0, err
    accepted = (scratch / "accepted.json").read_text()
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": config, "accepted.json": empty, PR_CONF.replace("20", "10"): ""},
        {PR_CONF: RECYCLE, "accepted.json": accepted},
    )
    _failed_with_the_base_settings(run, base, "accepted.json")
    assert "baseline accepted.json" in run.summary


def test_the_site_rules_are_the_base_commit_s(tmp_path: Path) -> None:
    """The change turns the site's own rule off by editing it under `rules-dir`."""
    rule = "site-rules/check/site-somaxconn-floor.yaml"
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": 'fail-on = "warning"\n', rule: RULE},
        {PR_CONF: "net.core.somaxconn = 128\n", rule: RULE.replace("< 4096", "< 0")},
        inputs={"rules-dir": "site-rules"},
    )
    _failed_with_the_base_settings(run, base, rule)
    assert "check.site-somaxconn-floor" in run.summary
    assert "rules-dir site-rules" in run.summary


def test_a_clean_change_says_which_settings_it_used_and_warns_of_nothing(tmp_path: Path) -> None:
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": 'fail-on = "warning"\n'},
        {PR_CONF: "net.ipv4.tcp_fin_timeout = 30\n"},
    )
    assert run.failed_step is None, run.stdout
    line = f"Settings from the base commit {base}: configuration .sysctl-advisor.toml."
    assert line in run.summary
    assert "::warning::" not in run.stdout


def test_a_settings_file_the_change_adds_is_not_used(tmp_path: Path) -> None:
    """A baseline the base commit does not have (the change adds it, accepting its own
    finding): the review runs without it and says so."""
    scratch = tmp_path / "scratch"
    (scratch / ".git").mkdir(parents=True)
    (scratch / PR_CONF).parent.mkdir(parents=True)
    (scratch / PR_CONF).write_text(RECYCLE)
    code, _, err = run_in(scratch, "check", "hosts/web", "--write-baseline", "b.json")
    assert code == 0, err
    run, _ = _review(
        tmp_path,
        {},
        {PR_CONF: RECYCLE, "b.json": (scratch / "b.json").read_text()},
        inputs={"baseline": "b.json"},
    )
    assert run.failed_step == "Fail on findings at fail-on", run.stdout
    assert "has no baseline b.json: the change adds it" in run.stdout


def test_a_bad_base_configuration_is_named_by_the_base_commit(tmp_path: Path) -> None:
    run, base = _review(
        tmp_path,
        {".sysctl-advisor.toml": 'fail-on = "sometimes"\n'},
        {PR_CONF: RECYCLE, ".sysctl-advisor.toml": 'fail-on = "error"\n'},
    )
    assert run.failed_step == "Review the changed sysctl files"
    assert f"{base}:.sysctl-advisor.toml" in run.stdout, run.stdout


@pytest.mark.parametrize("event", ["push", "pull_request"])
def test_without_a_base_the_work_tree_s_settings_are_used_and_said(
    tmp_path: Path, event: str
) -> None:
    """A push has no base, and a pull request checked out without the history (no merge
    commit, a base git does not have) is reviewed as before: with the work tree's settings,
    a change that edits them warned about."""
    workspace = tmp_path / "repo"
    (workspace / "sysctl.d").mkdir(parents=True)
    (workspace / "sysctl.d" / "90-bad.conf").write_text(TIMESTAMPS_OFF)
    (workspace / ".sysctl-advisor.toml").write_text('fail-on = "warning"\n')
    payloads: dict[str, dict[str, Any]] = {
        "push": {"commits": [{"added": ["sysctl.d/90-bad.conf", ".sysctl-advisor.toml"]}]},
        "pull_request": {"pull_request": {"base": {"sha": "1" * 40}, "head": {"sha": "2" * 40}}},
    }
    payload = payloads[event]
    run = run_action(workspace, tmp_path, {}, event, payload)
    assert run.failed_step == "Fail on findings at fail-on", run.stdout
    assert "Settings from the work tree" in run.summary
    assert "configuration .sysctl-advisor.toml" in run.summary
    if event == "push":
        assert "This change edits .sysctl-advisor.toml" in run.stdout


def test_the_base_settings_are_read_from_git_never_the_work_tree(tmp_path: Path) -> None:
    """A work tree whose configuration was swapped for a FIFO after the checkout (reading it
    would block or fail): the review reads the base commit's from git."""
    workspace = tmp_path / "repo"
    event = pull_request(
        workspace,
        {"README.md": "x\n", ".sysctl-advisor.toml": 'fail-on = "warning"\n'},
        {PR_CONF: TIMESTAMPS_OFF},
    )
    (workspace / ".sysctl-advisor.toml").unlink()
    os.mkfifo(workspace / ".sysctl-advisor.toml")
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    assert run.failed_step == "Fail on findings at fail-on", run.stdout
    assert run.outputs["review"]["worst"] == "warning"
    sarif = json.loads(Path(run.outputs["review"]["sarif-file"]).read_text())
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"check.tcp-timestamps-off"}


def test_the_base_copy_is_trusted_whatever_the_umask(tmp_path: Path) -> None:
    """The copy's directories are 0700 however the runner's umask would leave them: the
    facts beside the reviewed tree make hosts/web/ there, and a umask of 0 must not make
    it a directory others may write to, where the search for the configuration would stop
    before hosts/.sysctl-advisor.toml."""
    (tmp_path / "runner-temp").mkdir(mode=0o755)  # the runner's own, as on a runner
    old = os.umask(0)
    try:
        run, base = _review(
            tmp_path,
            {"hosts/.sysctl-advisor.toml": 'fail-on = "warning"\n', "hosts/web/facts.yaml": FACTS},
            {PR_CONF: TIMESTAMPS_OFF},
            removed=("hosts/.sysctl-advisor.toml",),
            inputs={"facts": "hosts/web/facts.yaml"},
        )
    finally:
        os.umask(old)
    _failed_with_the_base_settings(run, base, "hosts/.sysctl-advisor.toml")
    assert "configuration hosts/.sysctl-advisor.toml" in run.summary


def test_the_service_configurations_the_facts_name_are_the_base_commit_s(tmp_path: Path) -> None:
    """The facts name nginx.conf beside them; the change lowers its backlog so that its own
    somaxconn no longer departs from the recommendation. The base's nginx.conf is read."""
    facts = (EXAMPLES / "ec2-nginx-frontend.yaml").read_text()
    facts = facts.replace("nginx: {listen_backlog: 511}", "nginx: {config: nginx.conf}")
    assert "config: nginx.conf" in facts
    nginx = "events {}\nhttp { server { listen 80 backlog=%d; } }\n"
    run, base = _review(
        tmp_path,
        {"facts/web.yaml": facts, "facts/nginx.conf": nginx % 65535},
        {PR_CONF: "net.core.somaxconn = 16384\n", "facts/nginx.conf": nginx % 2048},
        inputs={"facts": "facts/web.yaml", "profile": "frontend-proxy", "fail-on": "info"},
    )
    assert run.failed_step == "Fail on findings at fail-on", run.stdout
    assert "check.departs-from-recommendation" in run.summary
    line = f"Settings from the base commit {base}: no configuration file, facts facts/web.yaml."
    assert line in run.summary, run.summary
