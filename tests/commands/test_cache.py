"""`cache` shows where the caches are, what they hold and how big, and
`cache --clear` removes the advisor's own entries: never a file of another name or another
user, never through a symlink."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

DCACHE = str(ROOT / "examples" / "dcache-32bit.yaml")


def _run(cache: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SYSCTL_ADVISOR_CACHE": cache}
    command = [sys.executable, "-m", "sysctl_advisor", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)


def test_it_lists_each_kind_and_clears_only_its_own(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    empty = _run(cache, "cache")
    assert empty.returncode == 0 and "0 entries" in empty.stdout
    assert _run(cache, "recommend", "--facts", DCACHE, "-p", "gridftp").returncode == 0
    shown = _run(cache, "cache")
    assert shown.returncode == 0 and shown.stdout.splitlines()[0] == f"{cache}/private"
    for kind in ("rule expressions", "output templates", "knowledge files", "facts files"):
        assert kind in shown.stdout, kind
    private = Path(cache) / "private"
    ours = len(list(private.iterdir()))  # a file per kind of cache (and of knowledge)
    foreign = private / "notes.txt"
    foreign.write_text("mine\n")
    target = tmp_path / "elsewhere.marshal"
    target.write_bytes(b"x")
    (private / "specs-py311-9.9.9.marshal").symlink_to(target)  # our name, but a link
    cleared = _run(cache, "cache", "--clear")
    assert cleared.returncode == 0 and cleared.stdout.startswith(f"removed {ours} entries")
    assert sorted(p.name for p in private.iterdir()) == ["notes.txt", "specs-py311-9.9.9.marshal"]
    assert target.read_bytes() == b"x" and foreign.read_text() == "mine\n"
    assert "0 entries" in _run(cache, "cache").stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's file needs root")
def test_another_users_entry_stays(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _run(str(cache), "cache").returncode == 0  # creates the private directory
    theirs = cache / "private" / "facts-py311-0.0.1.marshal"
    theirs.write_bytes(b"x")
    os.chown(theirs, 65534, 65534)
    assert "0 entries" in _run(str(cache), "cache").stdout
    assert _run(str(cache), "cache", "--clear").stdout.startswith("removed 0 entries")
    assert theirs.exists()


def test_off_and_unusable_roots_are_said(tmp_path: Path) -> None:
    off = _run("off", "cache")
    assert off.returncode == 0 and "caches are off" in off.stdout
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    refused = _run(str(shared), "cache")
    assert refused.returncode == 0 and "no cache: " in refused.stdout
    assert f"{shared} is writable by others" in refused.stdout
    assert not (shared / "private").exists()
