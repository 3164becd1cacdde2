"""`fleet --out` never destroys what it did not write, publishes a
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

from tests.commands.test_fleet import GOOD, TREE, fleet, snapshot, tree_of
from tests.conftest import ROOT


def _fleet_process(tree: Path, out: Path, profile: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *[sys.executable, "-m", "sysctl_advisor", "fleet", "--ansible-facts", str(tree)],
            *["-p", profile, "--out", str(out), "-j", "2"],
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_an_ansible_project_is_never_touched(tmp_path: Path) -> None:
    project = tmp_path / "site"
    (project / "host_vars").mkdir(parents=True)
    (project / "host_vars" / "web-01.yml").write_text("ntp_server: 10.0.0.1\n")
    (project / "playbook.yml").write_text("- hosts: all\n")
    before = snapshot(project)
    code, err = fleet("--ansible-facts", TREE, "-p", "base", "--out", project)
    assert code == 2 and "not a previous fleet output" in err
    assert snapshot(project) == before


def test_a_file_added_to_a_previous_output_stops_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    (out / "host_vars" / "extra.yml").write_text("mine: true\n")
    before = snapshot(out)
    code, err = fleet("--ansible-facts", TREE, "-p", "frontend-proxy", "--out", out)
    assert code == 2 and "host_vars/extra.yml" in err
    assert snapshot(out) == before


def test_a_previous_output_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(TREE / GOOD[0], one / GOOD[0])
    assert fleet("--ansible-facts", one, "-p", "base", "--out", out)[0] == 0
    assert sorted(p.name for p in (out / "host_files").iterdir()) == [f"{GOOD[0]}.conf"]
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    assert leftovers == [".out.sysctl-advisor.lock"]


def test_host_names_that_are_not_file_names_are_skipped(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, GOOD[:1])
    for bad in ("..", "a b", "x\ny", "-rf", "é"):
        shutil.copy(TREE / GOOD[0], tree / bad)
    out = tmp_path / "out"
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
def test_sigkill_never_leaves_a_mix_of_two_runs(tmp_path: Path, trial: int) -> None:
    tree = tree_of(tmp_path, GOOD, copies=600)
    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree, "-p", "base", "--out", out)[0] == 0
    process = _fleet_process(tree, out, "frontend-proxy")
    time.sleep(random.Random(trial).uniform(0.3, 2.5))
    process.kill()
    process.wait()
    assert _consistent(out) in ("base", "frontend-proxy")


def test_concurrent_runs_are_serialized(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, GOOD, copies=600)
    out = tmp_path / "out"
    first = _fleet_process(tree, out, "base")
    try:
        # the first run holds the lock once its staging directory is there (on a busy
        # machine that can take more than a second)
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.staging-*")) and first.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        code, err = fleet("--ansible-facts", TREE, "-p", "base", "--out", out)
        if first.poll() is None:  # still running: the second run must have been refused
            assert code == 2 and "another fleet run" in err
    finally:
        first.wait(timeout=120)
    assert first.returncode == 0
    _consistent(out)


def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, GOOD, copies=4000)
    out = tmp_path / "out"
    process = _fleet_process(tree, out, "base")
    # interrupt once hosts are being written (a fleet of one shape runs ~2,000 hosts/s, so a
    # fixed delay could miss the run on a quiet machine)
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(".out.staging-*/*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "sysctl-advisor: interrupted"
    assert not out.exists() or (out / ".sysctl-advisor-fleet").exists()
    assert not list(tmp_path.glob(".out.staging-*"))


# Ctrl-C lands inside Pool() just before the pool registers its own termination (simulated by
# a SIGINT sent from there): the pool was left running, and its thread could restart the workers
# the interpreter's exit was waiting for (a hang, seen once in a loaded test run).
_INTERRUPTED_POOL = """
import os, signal, sys
from pathlib import Path
import multiprocessing.pool as mp
from sysctl_advisor.commands.fleet import advise_all

real = mp.util.Finalize

def finalize(obj, callback, *args, **kwargs):
    if kwargs.get("exitpriority") == 15:  # Pool.__init__'s last step
        os.kill(os.getpid(), signal.SIGINT)
    return real(obj, callback, *args, **kwargs)

mp.util.Finalize = finalize

class Job:
    def advise(self, path):
        return path

try:
    for _ in advise_all(Job(), [Path(str(i)) for i in range(500)], 2):
        pass
except KeyboardInterrupt:
    import threading
    # a pool thread still running restarts the workers the interpreter's exit waits for
    left = [t.name for t in threading.enumerate() if "_handle_workers" in t.name]
    sys.stderr.write(f"left running: {left}\\n" if left else "interrupted\\n")
    sys.exit(3 if left else 130)
"""


def test_ctrl_c_while_the_pool_is_built_ends_the_run() -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-c", _INTERRUPTED_POOL],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the run hung after Ctrl-C while its pool was being built")
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "interrupted"


def test_the_lock_file_is_private(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    lock = tmp_path / ".out.sysctl-advisor.lock"
    assert oct(lock.stat().st_mode & 0o777) == "0o600"
    assert os.stat(lock).st_uid == os.geteuid()


@pytest.mark.parametrize("made", ["emptydir", "d1/d2"])
def test_an_empty_directory_of_the_users_stops_the_next_run(made: str, tmp_path: Path) -> None:
    """Empty directories were not counted and were deleted with the previous run."""
    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    (out / made).mkdir(parents=True)
    code, err = fleet("--ansible-facts", TREE, "-p", "base", "--out", out)
    assert code == 2 and f"{made.split('/')[0]}/" in err
    assert (out / made).is_dir()


def test_the_output_directory_keeps_its_mode_and_group(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o2775)  # a group-shared directory
    expected = "0o2755" if os.geteuid() == 0 else "0o2775"  # root's output: no group write
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    assert oct(out.stat().st_mode & 0o7777) == expected
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    assert oct(out.stat().st_mode & 0o7777) == expected
    fresh = tmp_path / "fresh"
    umask = os.umask(0o027)
    try:
        assert (
            fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", fresh)[0] == 0
        )
    finally:
        os.umask(umask)
    assert oct(fresh.stat().st_mode & 0o777) == "0o750"


def test_a_doctored_marker_deletes_nothing_outside(tmp_path: Path) -> None:
    """The marker is in a directory others may write: a listed `../victim` or a listed file
    under a directory that has become a link must not delete anything outside OUTDIR."""
    from sysctl_advisor.outputs.fleet_outdir import MARKER, MARKER_HEADER, OutDir

    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.conf").write_text("keep me too\n")
    previous = tmp_path / "previous"
    previous.mkdir()
    (previous / "host_files").symlink_to(elsewhere)
    (previous / "playbook.yml").write_text("x\n")
    (previous / MARKER).write_text(
        MARKER_HEADER + "../victim\nhost_files/a.conf\n/etc/hostname\nplaybook.yml\n"
    )
    with OutDir(tmp_path / "out") as out:
        kept = out._remove_run(previous.name)
    assert victim.read_text() == "keep me\n"
    assert (elsewhere / "a.conf").read_text() == "keep me too\n"
    assert not (previous / "playbook.yml").exists()
    assert kept == previous  # the link was not the advisor's: the directory stays


def test_a_file_that_appears_during_publishing_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the last check and the swap a user adds a file: the previous run is kept, with
    it, and the run says where."""
    from sysctl_advisor.outputs.fleet_outdir import OutDir

    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    real_check = OutDir.check

    def check_then_race(self: OutDir) -> None:
        real_check(self)
        (out / "late.txt").write_text("mine\n")

    with OutDir(out) as outdir:
        staging = outdir.staging()
        staging.write("playbook.yml", "- hosts: all\n")
        monkeypatch.setattr(OutDir, "check", check_then_race)
        kept = outdir.publish(staging, ["playbook.yml"])
        outdir.discard(staging)
    assert kept is not None and (kept / "late.txt").read_text() == "mine\n"
    assert (out / "playbook.yml").read_text() == "- hosts: all\n"


def test_ctrl_c_while_loading_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while typer and the CLI are still being imported (a signal sent in the first
    tenth of a second) used to print an import traceback."""
    from sysctl_advisor import entry

    class Loading:
        def __getattr__(self, name: str) -> None:
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "sysctl_advisor.cli", Loading())
    with pytest.raises(SystemExit) as stopped:
        entry.main()
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "sysctl-advisor: interrupted\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the directory to nobody")
def test_an_outdir_of_another_user_does_not_lend_its_mode(tmp_path: Path) -> None:
    """An empty --out owned by nobody with mode 0777 used to come back 0777 owned by root:
    anyone could have swapped host_vars for a link before root applied the playbook."""
    out = tmp_path / "out"
    out.mkdir()
    os.chown(out, 65534, 65534)
    os.chmod(out, 0o777)
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    info = out.stat()
    assert info.st_uid == 0 and info.st_mode & 0o022 == 0
    assert not [p for p in tmp_path.iterdir() if ".staging-" in p.name]  # no leftover


def test_a_users_directory_that_looks_like_staging_is_not_removed(tmp_path: Path) -> None:
    """Only a staging directory marked by the advisor is cleaned up: `.out.staging-mine` with
    an empty (or linked) `.staging` is the user's."""
    out = tmp_path / "out"
    mine = tmp_path / ".out.staging-mine"
    mine.mkdir()
    (mine / ".staging").write_text("")
    (mine / "data").write_text("keep\n")
    linked = tmp_path / ".out.staging-linked"
    linked.mkdir()
    real_mark = tmp_path / "mark"
    real_mark.write_text("sysctl-advisor fleet staging directory: the next run removes it\n")
    (linked / ".staging").symlink_to(real_mark)
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    assert (mine / "data").read_text() == "keep\n" and linked.is_dir()


def test_a_run_killed_while_publishing_is_cleaned_by_the_next(tmp_path: Path) -> None:
    """Killed between dropping the staging mark and the exchange, a run
    left its complete output (with its marker) beside OUTDIR, which nothing removed; killed
    after the exchange, the previous run it swapped out. The next run removes exactly what
    their markers list: a file someone added in the meantime stays."""
    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    unpublished = tmp_path / ".out.staging-killed1"
    shutil.copytree(out, unpublished)
    swapped_out = tmp_path / ".out.staging-killed2"
    shutil.copytree(out, swapped_out)
    (swapped_out / "added-meanwhile.txt").write_text("keep\n")
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    assert not unpublished.exists()
    assert sorted(p.name for p in swapped_out.iterdir()) == ["added-meanwhile.txt"]


@pytest.mark.parametrize("root", ["/", "/tmp/.."])
def test_the_root_is_refused_at_once(root: str) -> None:
    """`--out /` walked the whole filesystem before refusing it."""
    code, err = fleet("--ansible-facts", TREE, "-p", "base", "--out", root)
    assert code == 2 and "--out" in err and len(err.strip().splitlines()) == 1


def test_a_full_directory_is_refused_from_its_top_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory that is not empty and has no marker is refused without looking below its
    top level; a previous run is read only where its marker says it wrote."""
    from sysctl_advisor.outputs.fleet_outdir import OutDir

    full = tmp_path / "full"
    for i in range(50):
        (full / f"d{i}" / "deeper").mkdir(parents=True)
    listed: list[object] = []
    real_listdir = os.listdir

    def counting(path: object = ".") -> list[str]:
        listed.append(path)
        return real_listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "listdir", counting)
    with OutDir(full) as out, pytest.raises(Exception, match="not a previous fleet output"):
        out.check()
    assert len(listed) == 1
    monkeypatch.undo()

    previous = tmp_path / "out"
    assert (
        fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", previous)[0] == 0
    )
    (previous / "host_files" / "nested" / "deeper").mkdir(parents=True)
    listed.clear()
    monkeypatch.setattr(os, "listdir", counting)
    with OutDir(previous) as out, pytest.raises(Exception, match="host_files/nested/"):
        out.check()
    assert len(listed) == 4  # the top (empty? then what), host_files, host_vars: not nested


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to plant a file as nobody")
def test_a_lock_file_someone_else_planted_is_refused(tmp_path: Path) -> None:
    """In a sticky directory another user can create the lock file's name first: it is not
    taken as a lock (they could hold it, or it could be a link)."""
    os.chmod(tmp_path, 0o1777)
    lock = tmp_path / ".out.sysctl-advisor.lock"
    lock.write_text("")
    os.chown(lock, 65534, 65534)
    code, err = fleet("--ansible-facts", TREE, "-p", "base", "--out", tmp_path / "out")
    assert code == 2 and "not a lock file of yours" in err
    assert not (tmp_path / "out").exists()
