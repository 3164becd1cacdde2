"""A partial run (pre-commit passes only the changed files; a run of some rules) and the
baseline: an entry is gone only when the run could have found its finding again (its file was
checked, with its directory for a finding that comes from another file; its rule ran; or its
file is no more), and `--write-baseline` on such a run keeps the other entries, so following
the note never empties the baseline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands.check_repo import make_repo, run_in

CONFIG = 'fail-on = "info"\nbaseline = "sysctl-baseline.json"\n'
FILES = {
    "etc/sysctl.d/10-net.conf": "net.ipv4.tcp_syncookies = 0\nnet.ipv4.tcp_sack = 0\n",
    # its first line is replaced by 99-vendor.conf's (check.overridden)
    "etc/sysctl.d/20-app.conf": "net.core.somaxconn = 1024\nnet.ipv4.tcp_tw_recycle = 1\n",
    "etc/sysctl.d/30-old.conf": "net.ipv4.tcp_window_scaling = 0\nvm.swappiness = 0\n",
    "etc/sysctl.d/99-vendor.conf": "net.core.somaxconn = 4096\n",
}
APP = "etc/sysctl.d/20-app.conf"


def _entries(repo: Path) -> list[tuple[str, str]]:
    written = json.loads((repo / "sysctl-baseline.json").read_text())
    return sorted((e["file"], e["rule"]) for e in written["findings"])


def _adopted(tmp_path: Path) -> tuple[Path, list[tuple[str, str]]]:
    repo = make_repo(tmp_path, CONFIG, FILES)
    code, _, err = run_in(repo, "check", "etc/sysctl.d", "--write-baseline", "sysctl-baseline.json")
    assert code == 0, err
    entries = _entries(repo)
    assert ("etc/sysctl.d/20-app.conf", "check.overridden") in entries
    assert {f for f, _ in entries} >= {"etc/sysctl.d/10-net.conf", "etc/sysctl.d/30-old.conf"}
    return repo, entries


def test_one_file_checked_says_nothing_of_the_others_and_writing_keeps_them(
    tmp_path: Path,
) -> None:
    repo, entries = _adopted(tmp_path)
    for args in ([APP], ["--whole-directory", APP]):  # alone, and as the pre-commit hook does
        code, _, err = run_in(repo, "check", *args)
        assert code == 0 and "gone" not in err, (args, err)
    code, _, err = run_in(repo, "check", APP, "--write-baseline", "sysctl-baseline.json")
    assert code == 0 and "kept" in err, err
    assert _entries(repo) == entries  # not emptied: the others' entries, and the override's
    code, _, err = run_in(repo, "check", "etc/sysctl.d")
    assert code == 0 and "gone" not in err, err


def test_a_finding_fixed_in_the_file_checked_is_gone_and_only_it_leaves(tmp_path: Path) -> None:
    repo, entries = _adopted(tmp_path)
    (repo / APP).write_text("net.core.somaxconn = 1024\n")  # tw_recycle fixed
    code, _, err = run_in(repo, "check", APP)
    assert code == 0 and "1 findings in the baseline" in err, err
    run_in(repo, "check", APP, "--write-baseline", "sysctl-baseline.json")
    assert _entries(repo) == [e for e in entries if e != (APP, "check.tw-recycle-enabled")]
    code, _, err = run_in(repo, "check", "etc/sysctl.d")
    assert code == 0 and "gone" not in err, err


def test_a_deleted_file_s_entries_are_gone_from_any_run(tmp_path: Path) -> None:
    repo, entries = _adopted(tmp_path)
    (repo / "etc/sysctl.d/30-old.conf").unlink()
    code, _, err = run_in(repo, "check", APP)
    assert code == 0 and "2 findings in the baseline" in err, err
    run_in(repo, "check", APP, "--write-baseline", "sysctl-baseline.json")
    assert _entries(repo) == [e for e in entries if e[0] != "etc/sysctl.d/30-old.conf"]


def test_a_run_of_some_rules_keeps_the_other_rules_entries(tmp_path: Path) -> None:
    repo, entries = _adopted(tmp_path)
    selected = ["etc/sysctl.d", "--select", "check.tw-recycle-enabled"]
    code, _, err = run_in(repo, "check", *selected)
    assert code == 0 and "gone" not in err, err
    code, _, err = run_in(repo, "check", *selected, "--write-baseline", "sysctl-baseline.json")
    assert code == 0 and "kept" in err, err
    assert _entries(repo) == entries
