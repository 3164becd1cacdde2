"""Old caches do not pile up: what no run used for 30 days goes when the cache is next written,
and nothing else does (not another user's file, not a symlink or what it points to, not a name
the advisor does not write, not a template directory holding anything else)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sysctl_advisor.cache.files import CacheDirectory, open_cache_directory
from sysctl_advisor.cache.pruning import UNUSED_SECONDS, remove_entries
from tests.conftest import ROOT

OLD = time.time() - UNUSED_SECONDS - 3600
RECENT = time.time() - UNUSED_SECONDS + 3600
PY = f"py{sys.version_info[0]}{sys.version_info[1]}"
JINJA_FILE = "__jinja2_" + "0123456789abcdef" * 2 + "01234567.cache"


def _prune(directory: Path) -> int:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return len(remove_entries(fd))
    finally:
        os.close(fd)


def _opened() -> CacheDirectory:
    """The private cache directory the fixture's SYSCTL_ADVISOR_CACHE names, held open."""
    return open_cache_directory()


def _aged(path: Path, when: float) -> Path:
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def _file(directory: Path, name: str, when: float = OLD) -> Path:
    path = directory / name
    path.write_bytes(b"x")
    return _aged(path, when)


def _template_directory(directory: Path, name: str, when: float = OLD) -> Path:
    path = directory / name
    path.mkdir(mode=0o700)
    _file(path, JINJA_FILE)
    return _aged(path, when)


@pytest.fixture
def private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / "cache"))
    return _opened().path


def test_entries_of_old_versions_go_when_the_cache_is_written(private: Path) -> None:
    old = [
        _file(private, f"expressions-{PY}-jinja3.1.6-0.1.0-0123456789ab.marshal"),
        _file(private, f"specs-{PY}-0.0.9.marshal"),
        _file(private, f"specs-{PY}-0.1.0.pickle"),  # an older format
        _file(private, "facts-py39-0.0.9.marshal"),
        _file(private, f".specs-{PY}-0.1.0.marshal.k2j3h4g5.tmp"),  # a crashed write
        _template_directory(private, "templates-jinja3.1.6-0123456789ab"),
    ]
    recent = [
        _file(private, f"expressions-{PY}-jinja3.1.6-0.1.0-ba9876543210.marshal", RECENT),
        _template_directory(private, "templates-jinja3.1.6-ba9876543210", RECENT),
    ]
    assert _opened().write(f"facts-{PY}-0.1.0.marshal", b"new")
    assert [p for p in old if os.path.lexists(p)] == []
    assert all(p.exists() for p in recent)
    assert (private / f"facts-{PY}-0.1.0.marshal").read_bytes() == b"new"


def test_what_the_advisor_did_not_write_stays(private: Path, tmp_path: Path) -> None:
    elsewhere = _file(tmp_path, f"specs-{PY}-0.0.1.marshal")
    kept = [
        _file(private, "notes.txt"),
        _file(private, f"specs-{PY}-0.0.1.marshal.bak"),
        _file(private, "templates-jinja3.1.6-0123456789ab.marshal"),
        _file(private, "x"),
    ]
    link = private / f"specs-{PY}-0.0.2.marshal"
    link.symlink_to(elsewhere)
    _aged(link, OLD)
    linked_dir = private / "templates-jinja3.1.6-aaaaaaaaaaaa"
    linked_dir.symlink_to(tmp_path)
    _aged(linked_dir, OLD)
    mixed = _template_directory(private, "templates-jinja3.1.6-bbbbbbbbbbbb")
    _file(mixed, "keep-me")
    _aged(mixed, OLD)

    assert _prune(private) == 0
    assert all(p.exists() for p in kept)
    assert link.is_symlink() and elsewhere.exists()
    assert linked_dir.is_symlink() and tmp_path.is_dir()
    assert sorted(p.name for p in mixed.iterdir()) == [JINJA_FILE, "keep-me"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's file needs root")
def test_another_users_file_stays(private: Path) -> None:
    theirs = _file(private, f"specs-{PY}-0.0.3.marshal")
    os.chown(theirs, 65534, 65534)
    _aged(theirs, OLD)
    directory = _template_directory(private, "templates-jinja3.1.6-cccccccccccc")
    os.chown(directory / JINJA_FILE, 65534, 65534)
    _aged(directory, OLD)
    assert _prune(private) == 0
    assert theirs.exists() and (directory / JINJA_FILE).exists()


def test_a_run_that_uses_a_cache_keeps_it(private: Path) -> None:
    used = _file(private, f"specs-{PY}-0.0.4.marshal")
    assert _opened().read(used.name) == b"x"
    templates = _file(private, f"templates-{PY}-jinja3.1.6-0.0.4-dddddddddddd.marshal")
    assert _opened().read(templates.name) == b"x"
    assert time.time() - used.stat().st_mtime < 60
    assert time.time() - templates.stat().st_mtime < 60
    assert _prune(private) == 0


def test_a_real_run_that_writes_removes_the_stale_and_ends_with_its_own_set(
    tmp_path: Path,
) -> None:
    """Even when everything is older than the limit, a run that writes its cache ends with
    the same cache files as before (those it uses are refreshed or rebuilt) and the stale
    one of another version is gone; its output is unchanged."""
    cache = tmp_path / "cache"
    env = {**os.environ, "SYSCTL_ADVISOR_CACHE": str(cache)}
    command = [sys.executable, "-m", "sysctl_advisor", "recommend", "-p", "gridftp", "--facts"]
    command.append(str(ROOT / "examples" / "dcache-32bit.yaml"))
    first = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    private = cache / "private"
    ours = sorted(p.name for p in private.iterdir())
    for path in private.iterdir():  # everything the first run made has not been used since
        _aged(path, OLD)
    stale = _file(private, f"expressions-{PY}-jinja0.0-0.0.1-0123456789ab.marshal")
    _file(tmp_path, "input.yaml").write_text(
        (ROOT / "examples" / "dcache-32bit.yaml").read_text() + "# another file\n"
    )
    command[-1] = str(tmp_path / "input.yaml")  # a new facts file: the run writes its cache
    second = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert second.stdout.replace(str(tmp_path / "input.yaml"), "X") == first.stdout.replace(
        str(ROOT / "examples" / "dcache-32bit.yaml"), "X"
    )
    assert not stale.exists()
    assert sorted(p.name for p in private.iterdir()) == ours
