"""Caches that hold code are loaded only when no one else could have written
them. Planted payloads are built here at test time; each would create MARKER if loaded."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysctl_advisor.cache.files import MAX_CACHE_BYTES, CacheDirectory, open_cache_directory
from tests.conftest import ROOT

DCACHE = str(ROOT / "examples" / "dcache-32bit.yaml")


class _Plant:
    """Unpickling this opens (creates) the marker file: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _run(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SYSCTL_ADVISOR_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", *args], env=env, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def filled_cache() -> Iterator[tuple[Path, str]]:
    """A cache root after one cold `recommend --facts DCACHE -p gridftp` (every kind of cache
    file written), and that run's output. Tests copy the root (modes and times kept) instead
    of each paying for a cold run of its own."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "cache"
        made = _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
        assert made.returncode == 0, made.stderr
        yield root, made.stdout


def _opened(root: Path, monkeypatch: pytest.MonkeyPatch) -> CacheDirectory:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(root))
    return open_cache_directory()


def _plant_everywhere(private: Path, marker: Path) -> None:
    payload = pickle.dumps({"x": _Plant(marker)})
    for name in (
        f"specs-py{sys.version_info[0]}{sys.version_info[1]}-0.1.0.pickle",
        "specs-planted.pickle",
    ):
        (private / name).write_bytes(payload)


def test_a_cache_root_others_can_write_is_never_used(tmp_path: Path) -> None:
    root = tmp_path / "shared-cache"
    root.mkdir()
    os.chmod(root, 0o777)
    result = _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
    assert result.returncode == 0, result.stderr
    assert not (root / "private").exists()  # nothing written, nothing read


def test_a_private_directory_with_group_access_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    private = root / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o770)
    marker = tmp_path / "MARKER"
    _plant_everywhere(private, marker)
    result = _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
    assert result.returncode == 0 and not marker.exists()


def test_a_group_writable_file_in_the_private_directory_is_not_loaded(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    private = root / "private"
    private.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    marker = tmp_path / "MARKER"
    _plant_everywhere(private, marker)
    for path in private.iterdir():
        os.chmod(path, 0o666)
    result = _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
    assert result.returncode == 0 and not marker.exists()


def test_a_symlinked_cache_file_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    private = root / "private"
    private.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    marker = tmp_path / "MARKER"
    target = tmp_path / "elsewhere.pickle"
    target.write_bytes(pickle.dumps({"x": _Plant(marker)}))
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    name = f"specs-py{sys.version_info[0]}{sys.version_info[1]}-0.1.0.pickle"
    (private / name).symlink_to(target)
    directory = _opened(root, monkeypatch)
    assert directory.read(name) is None
    # a write replaces the link itself, never the file it points to
    (private / "linked").symlink_to(victim)
    assert directory.write("linked", b"new")
    assert victim.read_text() == "keep me\n" and not (private / "linked").is_symlink()
    result = _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
    assert result.returncode == 0 and not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory another owner")
def test_root_never_uses_another_users_cache(tmp_path: Path) -> None:
    """`sudo -E` keeps the user's cache path: root must not load what that user wrote."""
    root = tmp_path / "user-cache"
    private = root / "private"
    private.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    marker = tmp_path / "MARKER"
    _plant_everywhere(private, marker)
    for path in (root, private, *private.iterdir()):
        os.chown(path, 65534, 65534)
    result = _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
    assert result.returncode == 0 and not marker.exists()


def test_oversized_cache_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filled_cache: tuple[Path, str]
) -> None:
    root = tmp_path / "cache"
    shutil.copytree(filled_cache[0], root)  # a cold run's cache
    private = root / "private"
    big = next(private.glob("expressions-*.marshal"))
    big.write_bytes(b"\0" * (MAX_CACHE_BYTES + 1))
    # never read past the cap, so never slower for its size
    assert _opened(root, monkeypatch).read(big.name) is None
    assert _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp").returncode == 0


def test_temporary_names_are_not_predictable(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
    private = root / "private"
    for pid_guess in range(os.getpid() - 5, os.getpid() + 200):
        assert not list(private.glob(f"*.{pid_guess}.tmp"))
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in private.iterdir() if p.is_file())


def test_a_spec_cache_key_depends_on_every_model_module_and_on_pydantic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server table's model is built on rules.SpecModel, facts on model/: an edit of any
    module that defines or checks a model (or another pydantic) retires every cached spec
    and facts file validated with the old checks."""
    from sysctl_advisor.cache import files as cache_files
    from sysctl_advisor.cache.specs import spec_key

    package = ROOT / "sysctl_advisor"
    covered = {
        package / "knowledge" / "rules.py",
        package / "knowledge" / "servers.py",
        package / "model" / "host_facts.py",
        package / "model" / "model_base.py",
        package / "sources" / "facts_file.py",
    }
    seen: list[Path] = []

    def recording(paths: list[Path]) -> str:
        seen.extend(paths)
        return "fingerprint-" + str(len(seen))

    monkeypatch.setattr(cache_files, "files_fingerprint", recording)
    cache_files.validating_code.cache_clear()
    try:
        key = spec_key("sysctl_advisor.knowledge.servers.ServerTableSpec", "servers: []\n")
        assert covered <= set(seen)
        assert any(p.name == "version.py" and p.parent.name == "pydantic" for p in seen)
        cache_files.validating_code.cache_clear()
        assert spec_key("sysctl_advisor.knowledge.servers.ServerTableSpec", "servers: []\n") != key
    finally:
        cache_files.validating_code.cache_clear()


def test_a_damaged_entry_is_rebuilt_not_fatal(
    tmp_path: Path, filled_cache: tuple[Path, str]
) -> None:
    """An entry that no longer unpickles (truncated, of a class renamed since)
    is a miss: the run validates the file again, writes the same output, and the next run is
    warm again."""
    import marshal

    root = tmp_path / "cache"
    shutil.copytree(filled_cache[0], root)  # a cold run's cache, and that run's output
    first_stdout = filled_cache[1]
    damaged = sorted((root / "private").glob("*-py*.marshal"))
    kinds = {path.name.split("-")[0] for path in damaged}
    assert kinds == {"specs", "facts", "expressions", "templates"}, kinds
    for path in damaged:
        entries = marshal.loads(path.read_bytes())
        path.write_bytes(marshal.dumps({key: value[:7] for key, value in entries.items()}))
    snapshots = [{path.name: path.read_bytes() for path in damaged}]
    for _ in range(3):
        again = _run(root, "recommend", "--facts", DCACHE, "-p", "gridftp")
        assert again.returncode == 0 and again.stderr == "" and again.stdout == first_stdout
        snapshots.append({path.name: path.read_bytes() for path in damaged})
    # The first run mends every file whose entries it used (each built again and written back:
    # every kind of cache; an expression file per kind of knowledge, whose code is unmarshalled
    # only when it runs); the next finds nothing to mend, and the one after it reads what that
    # one read: warm again.
    mended = {
        name.split("-")[0] for name in snapshots[0] if snapshots[1][name] != snapshots[0][name]
    }
    assert mended == kinds
    assert all(snapshots[1][n] != snapshots[0][n] for n in snapshots[0] if n.startswith("specs"))
    assert snapshots[3] == snapshots[2]
