"""Every command that writes, driven through the same attack: the output's directory is one
another user may rename entries in (their own directory, one everyone may write, or the way to
it runs through a link they made), and while the command runs that user swaps whatever appears
there for links to a root-owned victim. Every writer opens its directory once from `/`, refuses
such a directory before writing anything, and then works by descriptor; in a sticky directory
(/tmp), where the user can plant names but not move root's, the command writes its own output
or refuses, and never through a link.

The writers: `-o` (recommend), `--also` and `--write-baseline` (check), `fleet --out` with
`--node-pools`, and the cache (a run that fills it, and `cache --clear`). Root runs the
commands; the attacker runs as nobody (uid 65534)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, TESTS

NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")

# The attacker: swap every entry it can rename for a link to the victim, and plant links at
# the names a writer could use, until killed.
ATTACKER = """
import os, sys, time
directory, victim, plant = sys.argv[1], sys.argv[2], sys.argv[3] == "plant"
names = ("out.conf", "out", ".out.sysctl-advisor.lock", ".out.retired", "baseline.json",
         "report.sarif", "cache")
if plant:  # where root's entries cannot be moved (sticky): the names a writer could use
    for name in names:
        try:
            os.symlink(victim, os.path.join(directory, name))
        except OSError:
            pass
me = os.getuid()
while True:  # every entry of root's that appears is moved aside and replaced by a link
    try:
        entries = os.listdir(directory)
    except OSError:
        entries = []
    for name in entries:
        path = os.path.join(directory, name)
        try:
            if os.lstat(path).st_uid == me or name.endswith(".moved"):
                continue
            os.rename(path, path + ".moved")
            os.symlink(victim, path)
        except OSError:
            pass
    time.sleep(0.0002)
"""


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _fleet_inputs(work: Path) -> list[str]:
    from tests.commands.test_fleet_pools import MAP

    tree = work / "tree"
    tree.mkdir()
    for host in ("dtn-01", "dtn-02"):
        shutil.copy(TESTS / "fixtures" / "ansible" / "tree" / "dtn-01", tree / host)
    inventory = {
        "_meta": {"hostvars": {}},
        "pool_dtn": {"hosts": ["dtn-01", "dtn-02"]},
        "pool_web": {"hosts": []},
    }
    (work / "inventory.json").write_text(json.dumps(inventory))
    (work / "map.yaml").write_text(MAP)
    return [
        "fleet", "--ansible-facts", str(tree), "--profile-map", str(work / "map.yaml"),
        "--inventory", str(work / "inventory.json"), "--node-pools", "pool_*",
    ]  # fmt: skip


def _check_inputs(work: Path) -> list[str]:
    conf = work / "99-tuning.conf"
    conf.write_text("net.core.somaxconn = 4096\nnet.ipv4.tcp_tw_recycle = 1\n")
    return ["check", str(conf)]


RECOMMEND = ["recommend", "--facts", str(EXAMPLES / "dcache-32bit.yaml"), "--profile", "gridftp"]

# command name -> (arguments given the inputs' directory and the target directory, extra
# environment given the target directory, whether it refuses an untrusted target with exit 2)
WRITERS: dict[str, Callable[[Path, Path], tuple[list[str], dict[str, str], bool]]] = {
    "-o": lambda work, target: ([*RECOMMEND, "-o", str(target / "out.conf")], {}, True),
    "--also": lambda work, target: (
        [*_check_inputs(work), "--also", f"sarif={target / 'report.sarif'}"],
        {},
        True,
    ),
    "--write-baseline": lambda work, target: (
        [*_check_inputs(work), "--write-baseline", str(target / "baseline.json")],
        {},
        True,
    ),
    "fleet --out": lambda work, target: (
        [*_fleet_inputs(work), "--out", str(target / "out")],
        {},
        True,
    ),
    # a cache it may not trust is no cache: the run goes on without one, writing nothing there
    "cache": lambda work, target: (
        RECOMMEND,
        {"SYSCTL_ADVISOR_CACHE": str(target / "cache")},
        False,
    ),
    "cache --clear": lambda work, target: (
        ["cache", "--clear"],
        {"SYSCTL_ADVISOR_CACHE": str(target / "cache")},
        False,
    ),
}


def _tree(path: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry below `path` (not following links): owner and content or link target."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for directory, dirs, files in os.walk(path):
        for name in dirs + files:
            entry = Path(directory) / name
            info = entry.lstat()
            content: bytes | str = (
                os.readlink(entry)
                if entry.is_symlink()
                else entry.read_bytes()
                if entry.is_file()
                else b""
            )
            found[str(entry.relative_to(path))] = (info.st_uid, content)
    return found


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[Path]:
    """A root-owned directory with a file in it that no writer may touch."""
    place = tmp_path / "victim"
    place.mkdir()
    (place / "victim.conf").write_text("keep me\n")
    (place / "playbook.yml").write_text("- hosts: all\n")
    yield place


def _directory(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """(the directory the attacker may act in, the path the command is given to reach it)."""
    place = tmp_path / "attacked"
    place.mkdir()
    if kind == "theirs":
        os.chown(place, NOBODY, NOBODY)
        os.chmod(place, 0o755)
    elif kind == "everyones":
        os.chmod(place, 0o777)
    elif kind == "sticky":
        os.chmod(place, 0o1777)
    elif kind == "their-link":
        real = tmp_path / "real"
        real.mkdir()
        os.chmod(place, 0o1777)
        os.symlink(real, place / "way")
        os.lchown(place / "way", NOBODY, NOBODY)
        return real, place / "way"
    return place, place


def _run(
    argv: list[str], env: dict[str, str], attack: Path | None, victim: Path, plant: bool = False
) -> tuple[int, str]:
    attacker = None
    if attack is not None:
        attacker = subprocess.Popen(
            # the system's interpreter: nobody may not enter the project's virtualenv
            [
                shutil.which("python3", path="/usr/bin:/bin") or sys.executable,
                "-c",
                ATTACKER,
                str(attack),
                str(victim),
                "plant" if plant else "swap",
            ],
            preexec_fn=_as_nobody,
            cwd="/",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.2)  # its links are planted before the command starts
    try:
        result = subprocess.run(
            [sys.executable, "-m", "sysctl_advisor", *argv],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, **env},
            timeout=300,
        )
    finally:
        if attacker is not None:
            attacker.send_signal(signal.SIGKILL)
            attacker.wait()
    return result.returncode, result.stderr


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_directory_others_may_write_is_refused_before_anything_is_written(
    writer: str, tmp_path: Path, victim: Path
) -> None:
    """Without a second user: a directory everyone may write (no sticky bit) is refused."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    place, target = _directory(tmp_path, "everyones")
    argv, env, refuses = WRITERS[writer](inputs, target)
    before = _tree(victim)
    code, err = _run(argv, env, None, victim)
    assert "Traceback" not in err
    if refuses:
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "writable by others" in err
    assert _tree(place) == {}
    assert _tree(victim) == before


@ROOT_ONLY
@pytest.mark.parametrize("kind", ["theirs", "everyones", "their-link", "sticky"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_the_swap_race(writer: str, kind: str, tmp_path: Path, victim: Path) -> None:
    """The attacker (nobody) races every writer: nothing reaches the victim, root writes
    nothing into a directory nobody may rename entries in, and in a sticky directory root's
    output is root's own regular files, never a link."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    os.chmod(tmp_path, 0o755)
    place, target = _directory(tmp_path, kind)
    argv, env, refuses = WRITERS[writer](inputs, target)
    before = _tree(victim)
    code, err = _run(argv, env, place, victim, plant=kind == "sticky")
    assert "Traceback" not in err and "internal error" not in err
    assert _tree(victim) == before
    created = {name: owner for name, (owner, _) in _tree(place).items() if owner != NOBODY}
    if kind == "sticky":
        assert code in (0, 2) if refuses else code == 0, err
        for name in created:  # root's own entries: real files and directories, no link
            assert not (place / name).is_symlink(), name
    else:
        if refuses:
            assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert created == {}, created
