"""`check --write-baseline FILE` and `--baseline FILE`: a repository with 50 findings adopts
the linter, and a change adding one bad line fails on exactly that line, even with lines
inserted above the old findings; identical findings are counted, fixed ones noted, and a bad
or hostile baseline is refused in one line. Built at test time, through the CLI and the
Action's simulated runner."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import jsonschema
import pytest

from sysctl_advisor.outputs.json_schemas import schema_path
from tests.commands.check_repo import run_in
from tests.test_github_action import pull_request, run_action

# Five lines, one finding each (an error, warnings, an info), in each of ten hosts' sysctl.d.
OLD_LINES = (
    "net.ipv4.tcp_syncookies = 0\n"
    "net.ipv4.tcp_sack = 0\n"
    "net.ipv4.tcp_tw_recycle = 1\n"
    "net.ipv4.tcp_low_latency = 1\n"
    "net.core.somaxconn = 8192 # more\n"
)
NEW_BAD = "net.ipv4.tcp_window_scaling = 0\n"  # check.tcp-extension-off, a warning
HOSTS = [f"hosts/h{i}/sysctl.d" for i in range(10)]


def _findings(stdout: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = json.loads(stdout)["findings"]
    return found


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "infra"
    (repo / ".git").mkdir(parents=True)
    for host in HOSTS:
        (repo / host).mkdir(parents=True)
        (repo / host / "10-tuning.conf").write_text(OLD_LINES)
    (repo / ".sysctl-advisor.toml").write_text(
        'fail-on = "warning"\nbaseline = "sysctl-baseline.json"\n'
    )
    return repo


def test_fifty_findings_adopted_and_one_new_line_fails_on_exactly_that_line(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    code, out, _ = run_in(repo, "check", *HOSTS, "-f", "json", "--isolated")
    assert code == 1 and len(_findings(out)) == 50  # the repository as it is today
    code, out, err = run_in(repo, "check", *HOSTS, "--write-baseline", "sysctl-baseline.json")
    assert code == 0 and out == "" and "50 findings" in err
    written = json.loads((repo / "sysctl-baseline.json").read_text())
    jsonschema.validate(written, json.loads(schema_path("baseline").read_text()))
    assert {e["file"] for e in written["findings"]} == {f"{h}/10-tuning.conf" for h in HOSTS}

    code, out, _ = run_in(repo, "check", *HOSTS, "-f", "json")  # the configuration's baseline
    assert code == 0 and _findings(out) == []
    _, text, _ = run_in(repo, "check", *HOSTS)
    assert "suppressed: 50 in the baseline" in text

    # A pull request adds one bad line in the middle of a file: every old finding below it
    # moves down a line, and only the new line is reported, and fails the check.
    changed = repo / HOSTS[4] / "10-tuning.conf"
    lines = OLD_LINES.splitlines(keepends=True)
    changed.write_text("".join([*lines[:2], NEW_BAD, *lines[2:]]))
    code, out, _ = run_in(repo, "check", *HOSTS, "-f", "json")
    assert code == 1
    assert [(f["file"], f["line"], f["id"]) for f in _findings(out)] == [
        (f"{HOSTS[4]}/10-tuning.conf", 3, "check.tcp-extension-off")
    ]
    # The same from another directory, with the baseline named on the command line.
    code, out, _ = run_in(
        repo / "hosts", "check", *(h.removeprefix("hosts/") for h in HOSTS), "-f", "json",
        "--baseline", "../sysctl-baseline.json",
    )  # fmt: skip
    assert code == 1 and [f["line"] for f in _findings(out)] == [3]


def test_identical_findings_are_counted_and_fixed_ones_noted(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    conf = repo / "sysctl.conf"
    conf.write_text("net.ipv4.tcp_sack = 0\n" * 2)
    (repo / ".sysctl-advisor.toml").write_text(
        'ignore = ["check.duplicate-key", "check.duplicate-same-value"]\n'
    )
    code, _, _ = run_in(repo, "check", "sysctl.conf", "--write-baseline", "b.json")
    assert code == 0
    conf.write_text("net.ipv4.tcp_sack = 0\n" * 3)  # a third identical line is new
    code, out, _ = run_in(repo, "check", "sysctl.conf", "--baseline", "b.json", "-f", "json")
    assert [f["line"] for f in _findings(out)] == [3]
    conf.write_text("net.ipv4.tcp_sack = 1\n")  # both fixed: the baseline can shrink
    code, out, err = run_in(repo, "check", "sysctl.conf", "--baseline", "b.json", "-f", "json")
    assert code == 0 and _findings(out) == [] and "2 findings in the baseline" in err


def test_sarif_keeps_baselined_findings_as_external_suppressions(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    run_in(repo, "check", HOSTS[0], "--write-baseline", "sysctl-baseline.json")
    code, out, _ = run_in(repo, "check", HOSTS[0], "-f", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    assert code == 0 and len(results) == 5
    assert all(r["suppressions"][0]["kind"] == "external" for r in results)


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("not json", "not JSON"),
        ('{"schema": "sysctl-advisor/baseline/v9", "findings": []}', "schema"),
        (
            '{"findings": [{"rule": "check.x", "file": "a", "fingerprint": "zz"}]}',
            "fingerprint",
        ),
        ('{"findings": [], "extra": 1}', "extra"),
    ],
)
def test_a_bad_baseline_is_one_line(tmp_path: Path, text: str, part: str) -> None:
    repo = _repo(tmp_path)
    (repo / "sysctl-baseline.json").write_text(text)
    code, _, err = run_in(repo, "check", HOSTS[0])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "sysctl-baseline.json" in lines[0] and part in lines[0]


def test_a_fifo_baseline_is_refused_without_hanging(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    os.mkfifo(repo / "sysctl-baseline.json")
    done: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: done.append(run_in(repo, "check", HOSTS[0])))
    worker.start()
    worker.join(60)
    if worker.is_alive():
        with open(repo / "sysctl-baseline.json", "w"):
            pass
        worker.join()
        pytest.fail("check blocked on a FIFO baseline")
    code, _, err = done[0]
    assert code == 2 and "not a regular file" in err


def test_write_baseline_never_follows_a_link_nor_mixes_with_a_report(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (repo / "link.json").symlink_to(victim)
    code, _, err = run_in(repo, "check", HOSTS[0], "--write-baseline", "link.json")
    assert code == 2 and victim.read_text() == "keep\n", err
    code, _, err = run_in(repo, "check", HOSTS[0], "--write-baseline", "b.json", "-o", "r.txt")
    assert code == 2 and "--write-baseline" in err and not (repo / "b.json").exists()


def test_the_action_takes_the_baseline_and_the_configuration(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    base = {
        "etc/sysctl.d/10-old.conf": OLD_LINES,
        ".sysctl-advisor.toml": 'fail-on = "warning"\n',
    }
    event = pull_request(workspace, base, {"etc/sysctl.d/10-old.conf": NEW_BAD + OLD_LINES})
    run_in(workspace, "check", "etc/sysctl.d/10-old.conf", "--write-baseline", "b.json")
    original = workspace / "etc/sysctl.d/10-old.conf"
    original_text = original.read_text()
    original.write_text(OLD_LINES)  # the baseline of the base branch's file
    run_in(workspace, "check", "etc/sysctl.d", "--write-baseline", "b.json")
    original.write_text(original_text)
    run = run_action(workspace, tmp_path, {"baseline": "b.json"}, "pull_request", event)
    review = run.outputs["review"]
    assert review["findings"] == "1" and review["worst"] == "warning", run.stdout
    assert run.failed_step == "Fail on findings at fail-on"  # the configuration's fail-on
    sarif = json.loads(Path(review["sarif-file"]).read_text())
    new = [r for r in sarif["runs"][0]["results"] if "suppressions" not in r]
    assert [r["ruleId"] for r in new] == ["check.tcp-extension-off"]
    # The input's fail-on wins over the configuration's.
    run = run_action(
        workspace, tmp_path, {"baseline": "b.json", "fail-on": "error"}, "pull_request", event
    )
    assert run.failed_step is None, run.stdout


def test_the_action_says_when_a_change_edits_the_settings(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(
        workspace,
        {"etc/sysctl.d/10-a.conf": "net.ipv4.tcp_tw_recycle = 1\n"},
        {".sysctl-advisor.toml": 'ignore = ["check"]\n', "etc/sysctl.d/20-b.conf": "x = 1\n"},
    )
    run = run_action(workspace, tmp_path, {}, "pull_request", event)
    # The review ran with the base commit's settings (none), not the ones the change adds.
    assert run.outputs["review"]["worst"] == "error", run.stdout
    assert ".sysctl-advisor.toml" in run.summary and "base commit" in run.summary
