"""`check` tuned by a team: --select/--ignore by id and prefix, --warn/--error before
--fail-on, and suppression comments in the files (the next line, the whole file, several ids,
unused, without a reason, naming no rule, after a value), through the CLI; the files are built
at test time."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sysctl_advisor.engine.check.listing import MAX_LISTED
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import HANG_SECONDS, Cli, invoke
from tests.test_github_action import pull_request, run_action

RECYCLE = "net.ipv4.tcp_tw_recycle = 1\n"  # check.tw-recycle-enabled, an error
GLOB_UNCLOSED = "net.ipv4.conf.[eth0.rp_filter = 1\n"  # check.glob-unclosed
REASON = "kept until the 2027 migration"


def _check(tmp_path: Path, text: str, *args: str) -> tuple[int, list[dict[str, str]], str]:
    """Exit code, JSON findings and the text report of `check` on one file holding `text`."""
    path = tmp_path / "90-test.conf"
    path.write_text(text)
    as_json = invoke("check", str(path), "-f", "json", *args)
    as_text = invoke("check", str(path), *args)
    assert as_json.exit_code == as_text.exit_code, as_text.output
    findings = json.loads(as_json.stdout)["findings"] if as_json.exit_code != 2 else []
    return as_json.exit_code, findings, as_text.output


def _ids(findings: list[dict[str, str]]) -> set[str]:
    return {f["id"] for f in findings}


# --- --select / --ignore ---------------------------------------------------------------------


def test_ignore_by_id_drops_the_rule_and_its_exit(tmp_path: Path) -> None:
    code, found, _ = _check(tmp_path, RECYCLE)
    assert code == 1 and "check.tw-recycle-enabled" in _ids(found)
    code, found, _ = _check(tmp_path, RECYCLE, "--ignore", "check.tw-recycle-enabled")
    assert code == 0 and "check.tw-recycle-enabled" not in _ids(found)


def test_select_by_id_runs_only_that_rule(tmp_path: Path) -> None:
    text = RECYCLE + "net.ipv4.tcp_fin_timeout = 30 # shorter\n"
    _, found, _ = _check(tmp_path, text)
    assert {"check.tw-recycle-enabled", "check.inline-comment"} <= _ids(found)
    code, found, _ = _check(tmp_path, text, "--select", "check.inline-comment")
    assert code == 0 and _ids(found) == {"check.inline-comment"}


def test_a_prefix_names_a_family_at_a_boundary(tmp_path: Path) -> None:
    kb = KnowledgeBase.load()
    glob_rules = {i for i in kb.check_rules if i == "check.glob" or i.startswith("check.glob-")}
    assert "check.glob-unclosed" in glob_rules
    _, found, _ = _check(tmp_path, GLOB_UNCLOSED + RECYCLE, "--select", "check.glob")
    assert _ids(found) and _ids(found) <= glob_rules
    _, found, _ = _check(tmp_path, GLOB_UNCLOSED + RECYCLE, "--ignore", "check.glob")
    assert not _ids(found) & glob_rules and "check.tw-recycle-enabled" in _ids(found)
    # check.tw ends at a boundary of check.tw-recycle-enabled (a `-`): it names the rule
    _, found, _ = _check(tmp_path, RECYCLE, "--ignore", "check.tw")
    assert "check.tw-recycle-enabled" not in _ids(found)
    # check.tw-rec ends inside a word: it names no rule
    code, _, _ = _check(tmp_path, RECYCLE, "--ignore", "check.tw-rec")
    assert code == 2


def test_every_rule_by_star_and_comma_separated_lists(tmp_path: Path) -> None:
    text = GLOB_UNCLOSED + RECYCLE
    _, everything, _ = _check(tmp_path, text)
    _, starred, _ = _check(tmp_path, text, "--select", "check.*")
    assert _ids(starred) == _ids(everything)
    code, found, _ = _check(tmp_path, text, "--ignore", "check.glob-unclosed, check.tw-recycle")
    assert code == 0 and not _ids(found) & {"check.glob-unclosed", "check.tw-recycle-enabled"}
    # ignore is applied after select
    _, found, _ = _check(tmp_path, text, "--select", "check.glob", "--ignore", "check.glob-")
    assert not _ids(found) - {"check.glob"}


@pytest.mark.parametrize("option", ["--select", "--ignore", "--warn", "--error"])
@pytest.mark.parametrize("name", ["check.no-such-rule", "nothing", "check.glob[", "CHECK.GLOB"])
def test_a_name_of_no_rule_is_one_line_and_exit_2(
    cli: Cli, tmp_path: Path, option: str, name: str
) -> None:
    path = tmp_path / "a.conf"
    path.write_text(RECYCLE)
    result = cli("check", str(path), option, name)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "Traceback" not in result.output


# --- --warn / --error --------------------------------------------------------------------------


def test_warn_and_error_change_severity_and_the_fail_on_outcome(tmp_path: Path) -> None:
    code, found, _ = _check(tmp_path, RECYCLE, "--warn", "check.tw-recycle-enabled")
    assert code == 0  # an error made a warning no longer fails at --fail-on error
    assert {f["severity"] for f in found if f["id"] == "check.tw-recycle-enabled"} == {"warning"}
    code, _, _ = _check(
        tmp_path, RECYCLE, "--warn", "check.tw-recycle-enabled", "--fail-on", "warning"
    )
    assert code == 1
    text = "net.ipv4.tcp_fin_timeout = 30 # shorter\n"  # check.inline-comment, a warning
    code, found, _ = _check(tmp_path, text)
    assert code == 0
    code, found, output = _check(tmp_path, text, "--error", "check.inline")
    assert code == 1 and {f["severity"] for f in found} == {"error"}
    assert "[error]" in output


def test_a_rule_both_warned_and_errored_is_bad_input(tmp_path: Path) -> None:
    code, _, _ = _check(tmp_path, RECYCLE, "--warn", "check.tw", "--error", "check.tw-recycle")
    assert code == 2


# --- suppression comments ----------------------------------------------------------------------


def test_a_comment_suppresses_the_next_assignment_line_only(tmp_path: Path) -> None:
    text = (
        f"# sysctl-advisor: ignore[check.tw-recycle-enabled] {REASON}\n"
        "\n"
        "# an ordinary comment between\n" + RECYCLE + RECYCLE
    )
    code, found, output = _check(tmp_path, text)
    lines = [f["line"] for f in found if f["id"] == "check.tw-recycle-enabled"]
    assert lines == [5]  # line 4 accepted, line 5 (set again) still reported
    assert code == 1
    assert "suppressed: 1 by comments" in output.splitlines()[-1]


def test_suppressed_findings_do_not_count_for_fail_on(tmp_path: Path) -> None:
    text = f"; sysctl-advisor: ignore[check.tw-recycle-enabled] {REASON}\n" + RECYCLE
    code, found, output = _check(tmp_path, text)
    assert code == 0 and not found
    assert (
        output.strip()
        .splitlines()[-1]
        .startswith("1 file checked: no findings; suppressed: 1 by comments")
    )


def test_ignore_file_accepts_the_rule_anywhere_in_the_file(tmp_path: Path) -> None:
    text = (
        "net.core.somaxconn = 4096\n"
        + RECYCLE
        + f"# sysctl-advisor: ignore-file[check.tw-recycle-enabled] {REASON}\n"
        + RECYCLE
    )
    code, found, output = _check(tmp_path, text)
    assert code == 0 and "check.tw-recycle-enabled" not in _ids(found)
    assert "suppressed: 2 by comments" in output


def test_several_ids_in_one_comment(tmp_path: Path) -> None:
    text = (
        f"# sysctl-advisor: ignore[check.tw-recycle-enabled,  check.inline-comment] {REASON}\n"
        "net.ipv4.tcp_tw_recycle = 1 # legacy\n"
    )
    code, found, output = _check(tmp_path, text)
    assert code == 0 and not found, found
    assert "suppressed: 2 by comments" in output


def test_an_unused_suppression_is_reported(tmp_path: Path) -> None:
    text = f"# sysctl-advisor: ignore[check.tw-recycle-enabled] {REASON}\n"
    text += "net.core.somaxconn = 4096\n"
    code, found, _ = _check(tmp_path, text)
    (unused,) = [f for f in found if f["id"] == "check.unused-suppression"]
    assert unused["line"] == 1 and unused["severity"] == "warning"
    assert code == 0
    # a rule that did not run here (needs --kernel) is not called unused
    text = f"# sysctl-advisor: ignore-file[check.key-not-in-kernel] {REASON}\n" + RECYCLE
    _, found, _ = _check(tmp_path, text)
    assert "check.unused-suppression" not in _ids(found)
    # nor one --ignore left out
    text = f"# sysctl-advisor: ignore[check.tw-recycle-enabled] {REASON}\n" + RECYCLE
    _, found, _ = _check(tmp_path, text, "--ignore", "check.tw-recycle-enabled")
    assert not found
    # a suppression after the last assignment applies to nothing
    _, found, _ = _check(tmp_path, RECYCLE + f"# sysctl-advisor: ignore[check.glob] {REASON}\n")
    assert "check.unused-suppression" in _ids(found)


@pytest.mark.parametrize(
    "comment",
    [
        "# sysctl-advisor: ignore[check.tw-recycle-enabled]",  # no reason
        "# sysctl-advisor: ignore[check.tw-recycle-enabled]   ",
        "# sysctl-advisor: ignore[check.tw-recycle-enabld] typo",  # no such rule
        "# sysctl-advisor: ignore[tw-recycle-enabled] not a check id",
        "# sysctl-advisor: ignore check.tw-recycle-enabled because",  # not the form
        "# sysctl-advisor: ignore[check.tw-recycle-enabled]because",
        "# sysctl-advisor: ignore[check.tw-recycle-enabled] " + "x" * 201,  # reason too long
        "# sysctl-advisor: ignore[check.tw-recycle-enabled] bell \x07 inside",
    ],
)
def test_a_malformed_suppression_accepts_nothing_and_is_reported(
    tmp_path: Path, comment: str
) -> None:
    code, found, _ = _check(tmp_path, comment + "\n" + RECYCLE)
    assert code == 1 and "check.tw-recycle-enabled" in _ids(found)
    (malformed,) = [f for f in found if f["id"] == "check.suppression-malformed"]
    assert malformed["line"] == 1


def test_a_suppression_after_a_value_is_a_value_not_a_suppression(tmp_path: Path) -> None:
    text = (
        f"net.ipv4.tcp_tw_recycle = 1 # sysctl-advisor: ignore[check.tw-recycle-enabled] {REASON}\n"
    )
    code, found, output = _check(tmp_path, text)
    assert code == 1
    assert {"check.inline-comment", "check.tw-recycle-enabled"} <= _ids(found)
    assert "suppressed" not in output


def test_prose_that_mentions_the_advisor_is_no_suppression(tmp_path: Path) -> None:
    text = "# tuned with sysctl-advisor: see the wiki\n" + RECYCLE
    _, found, _ = _check(tmp_path, text)
    assert "check.suppression-malformed" not in _ids(found)


def test_suppressed_findings_are_in_sarif_with_their_reason(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "a.conf"
    path.write_text(f"# sysctl-advisor: ignore[check.tw-recycle-enabled] {REASON}\n" + RECYCLE)
    result = cli("check", str(path), "-f", "sarif")
    assert result.exit_code == 0
    (accepted,) = json.loads(result.stdout)["runs"][0]["results"]
    assert accepted["ruleId"] == "check.tw-recycle-enabled"
    assert accepted["suppressions"] == [{"kind": "inSource", "justification": REASON}]


def test_a_suppression_in_a_sysctl_d_directory_accepts_an_override(
    cli: Cli, tmp_path: Path
) -> None:
    """check.overridden is reported at the hidden line, in the earlier file: its comment there
    accepts it; the Markdown report counts it."""
    directory = tmp_path / "sysctl.d"
    directory.mkdir()
    (directory / "10-site.conf").write_text(
        f"# sysctl-advisor: ignore[check.overridden] {REASON}\nnet.core.somaxconn = 8192\n"
    )
    (directory / "99-vendor.conf").write_text("net.core.somaxconn = 4096\n")
    result = cli("check", str(directory), "--fail-on", "warning")
    assert result.exit_code == 0, result.output
    assert "check.overridden" not in result.output and "suppressed: 1 by comments" in result.output
    result = cli("check", str(directory), "-f", "markdown")
    assert "suppressed: 1 by comments" in result.stdout


def test_thousands_of_suppressions_stay_linear(cli: Cli, tmp_path: Path) -> None:
    """A hostile file: 12,500 lines, 10,000 of them suppressions, most of them near misses
    built to make a naive pattern backtrack (an id list that never closes, blanks before a
    missing `]`, a comment far past the reader's cap), is checked in bounded time, every
    finding accepted."""
    unit = (
        f"# sysctl-advisor: ignore[check.tw-recycle-enabled] {REASON}\n"
        + RECYCLE
        + "# sysctl-advisor: ignore[" + "check.a-b-c ,  " * 60 + "\n"
        + "# sysctl-advisor: ignore[check.glob" + " \t" * 500 + "x\n"
        + ";sysctl-advisor: ignore-file[check.glob] " + "é" * 1500 + "\n"
    )  # fmt: skip
    path = tmp_path / "hostile.conf"
    path.write_text(unit * 2500)
    started = time.monotonic()
    result = cli("check", str(path), "-f", "json")
    assert time.monotonic() - started < HANG_SECONDS
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)["findings"]
    assert not [f for f in found if f["id"] == "check.tw-recycle-enabled"]
    malformed = [f for f in found if f["id"] == "check.suppression-malformed"]
    assert len(malformed) == MAX_LISTED + 1  # the rest said in one finding with their count
    assert f"and {3 * 2500 - MAX_LISTED - 1:,} more lines" in malformed[-1]["message"]


# --- the GitHub Action --------------------------------------------------------------------------


def test_the_action_passes_ignore_and_select_through(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    event = pull_request(workspace, {"README.md": "x\n"}, {"etc/sysctl.d/20-pr.conf": RECYCLE})
    run = run_action(
        workspace, tmp_path, {"ignore": "check.tw-recycle-enabled"}, "pull_request", event
    )
    assert run.outputs["review"]["worst"] == "none", run.stdout
    assert run.failed_step is None
    run = run_action(workspace, tmp_path, {"select": "check.glob"}, "pull_request", event)
    assert run.outputs["review"]["worst"] == "none", run.stdout
    run = run_action(workspace, tmp_path, {"ignore": "check.no-such"}, "pull_request", event)
    assert run.failed_step == "Review the changed sysctl files"
