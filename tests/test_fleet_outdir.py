"""Issue 13 items 10 and 11: fleet --out never destroys what it did not write, publishes a
whole run at once, runs one at a time, and stops on Ctrl-C with one line."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_fleet import GOOD, TREE, fleet, snapshot, tree_of

ROOT = Path(__file__).resolve().parent.parent


def _fleet_process(tree: Path, out: Path, profile: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *[sys.executable, "-m", "advisor", "fleet", "--ansible-facts", str(tree)],
            *["-p", profile, "--out", str(out), "-j", "2"],
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_an_ansible_project_is_never_touched(workdir: Path) -> None:
    project = workdir / "site"
    (project / "host_vars").mkdir(parents=True)
    (project / "host_vars" / "web-01.yml").write_text("ntp_server: 10.0.0.1\n")
    (project / "playbook.yml").write_text("- hosts: all\n")
    before = snapshot(project)
    code, err = fleet("--ansible-facts", TREE, "-p", "base", "--out", project)
    assert code == 2 and "not a previous fleet output" in err
    assert snapshot(project) == before


def test_a_file_added_to_a_previous_output_stops_the_next_run(workdir: Path) -> None:
    out = workdir / "out"
    assert fleet("--ansible-facts", tree_of(workdir, GOOD), "-p", "base", "--out", out)[0] == 0
    (out / "host_vars" / "extra.yml").write_text("mine: true\n")
    before = snapshot(out)
    code, err = fleet("--ansible-facts", TREE, "-p", "frontend-proxy", "--out", out)
    assert code == 2 and "host_vars/extra.yml" in err
    assert snapshot(out) == before


def test_a_previous_output_is_replaced_whole(workdir: Path) -> None:
    out = workdir / "out"
    assert fleet("--ansible-facts", tree_of(workdir, GOOD), "-p", "base", "--out", out)[0] == 0
    one = workdir / "one"
    one.mkdir()
    shutil.copy(TREE / GOOD[0], one / GOOD[0])
    assert fleet("--ansible-facts", one, "-p", "base", "--out", out)[0] == 0
    assert sorted(p.name for p in (out / "host_files").iterdir()) == [f"{GOOD[0]}.conf"]
    leftovers = [p.name for p in workdir.iterdir() if p.name.startswith(".out.")]
    assert leftovers == [".out.sysctl-advisor.lock"]


def test_host_names_that_are_not_file_names_are_skipped(workdir: Path) -> None:
    tree = tree_of(workdir, GOOD[:1])
    for bad in ("..", "a b", "x\ny", "-rf", "é"):
        shutil.copy(TREE / GOOD[0], tree / bad)
    out = workdir / "out"
    code, err = fleet("--ansible-facts", tree, "-p", "base", "--out", out)
    assert code == 1 and "not an inventory host name" in err
    assert sorted(p.name for p in (out / "host_files").iterdir()) == [f"{GOOD[0]}.conf"]


def _consistent(out: Path) -> str:
    """The profile of the one whole run OUTDIR holds (fails on a mix of two runs)."""
    listed = set((out / ".sysctl-advisor-fleet").read_text().splitlines()[1:])
    present = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name[0] != "."}
    assert listed == present
    profiles = {row["profile"] for row in json.loads((out / "summary.json").read_text())["hosts"]}
    for conf in (out / "host_files").iterdir():
        assert f"# profile:  {next(iter(profiles))}" in conf.read_text()
    assert len(profiles) == 1
    return next(iter(profiles))


@pytest.mark.parametrize("trial", range(3))
def test_sigkill_never_leaves_a_mix_of_two_runs(workdir: Path, trial: int) -> None:
    tree = tree_of(workdir, GOOD, copies=600)
    out = workdir / "out"
    assert fleet("--ansible-facts", tree, "-p", "base", "--out", out)[0] == 0
    process = _fleet_process(tree, out, "frontend-proxy")
    time.sleep(random.Random(trial).uniform(0.3, 2.5))
    process.kill()
    process.wait()
    assert _consistent(out) in ("base", "frontend-proxy")


def test_concurrent_runs_are_serialized(workdir: Path) -> None:
    tree = tree_of(workdir, GOOD, copies=600)
    out = workdir / "out"
    first = _fleet_process(tree, out, "base")
    try:
        time.sleep(0.8)
        code, err = fleet("--ansible-facts", TREE, "-p", "base", "--out", out)
        if first.poll() is None:  # still running: the second run must have been refused
            assert code == 2 and "another fleet run" in err
    finally:
        first.wait(timeout=120)
    assert first.returncode == 0
    _consistent(out)


def test_ctrl_c_is_one_line_and_exit_130(workdir: Path) -> None:
    tree = tree_of(workdir, GOOD, copies=2000)
    out = workdir / "out"
    process = _fleet_process(tree, out, "base")
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "sysctl-advisor: interrupted"
    assert not out.exists() or (out / ".sysctl-advisor-fleet").exists()
    assert not list(workdir.glob(".out.staging-*"))


def test_the_lock_file_is_private(workdir: Path) -> None:
    out = workdir / "out"
    assert fleet("--ansible-facts", tree_of(workdir, GOOD), "-p", "base", "--out", out)[0] == 0
    lock = workdir / ".out.sysctl-advisor.lock"
    assert oct(lock.stat().st_mode & 0o777) == "0o600"
    assert os.stat(lock).st_uid == os.geteuid()
