"""The cache root is opened once, from `/`, by descriptor, and refused
when anyone but root or the user could change the way to it; a relative root is never used.
Root therefore never runs another user's code through a cache, even while that user swaps
directories on the way in a loop. Payloads are built at test time; each would create MARKER
if it were loaded."""

from __future__ import annotations

import ctypes
import marshal
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest

from tests.conftest import HANG_SECONDS, ROOT

DCACHE = str(ROOT / "examples" / "dcache-32bit.yaml")
PY = f"py{sys.version_info[0]}{sys.version_info[1]}"
NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="another user's files need root")


class _Plant:
    """Unpickling this creates the marker file: proof that a planted pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _run(env: dict[str, str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sysctl_advisor", *args]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, cwd=cwd, timeout=HANG_SECONDS
    )


def _env(**values: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("SYSCTL_ADVISOR_CACHE", "XDG_CACHE_HOME")
    }
    env["PYTHONPATH"] = str(ROOT)  # the checkout's package, whatever the working directory
    return {**env, **values}


KINDS = ("specs", "facts", "expressions", "templates")


@pytest.fixture(scope="module")
def cache_keys() -> dict[str, list[str]]:
    """The private cache's files after a clean run of `recommend --facts DCACHE -p gridftp`,
    each with the keys it holds: what `_plant_tree` replaces. Read-only, so taken once for the
    module (a clean run compiles every expression: the costly part of each test's setup)."""
    with tempfile.TemporaryDirectory() as clean:
        made = _run(_env(SYSCTL_ADVISOR_CACHE=clean), "recommend", "--facts", DCACHE, "-p",
                    "gridftp")  # fmt: skip
        assert made.returncode == 0, made.stderr
        files = sorted((Path(clean) / "private").glob("*.marshal"))
        assert {f.name.split("-")[0] for f in files} == set(KINDS), files
        return {file.name: list(marshal.loads(file.read_bytes())) for file in files}


def _plant_tree(
    private: Path, marker: Path, cache_keys: dict[str, list[str]], kinds: tuple[str, ...] = KINDS
) -> None:
    """Every file the advisor reads in its private directory, under the names and keys that
    `recommend --facts DCACHE -p gridftp` reads (taken from a clean run's cache: the
    `cache_keys` fixture), each entry replaced by a payload that creates `marker` when loaded:
    a pickle for the validated files, code for the expressions, Jinja bytecode whose checksum
    is that pickle for the templates (only the files of `kinds`).
    test_the_planted_tree_runs_from_a_cache_the_user_owns shows that each is live."""
    pickled = pickle.dumps(_Plant(marker))
    payloads = {
        "specs": pickled,
        "facts": pickled,
        "expressions": marshal.dumps(compile(f"open({str(marker)!r}, 'w')", "<plant>", "exec")),
        "templates": jinja2.bccache.bc_magic + pickled,
    }
    private.mkdir(parents=True, exist_ok=True)
    for name, keys in cache_keys.items():
        kind = name.split("-")[0]
        if kind not in kinds:
            continue
        (private / name).write_bytes(marshal.dumps(dict.fromkeys(keys, payloads[kind])))


@pytest.mark.parametrize("kind", KINDS)
def test_the_planted_tree_runs_from_a_cache_the_user_owns(
    tmp_path: Path, kind: str, cache_keys: dict[str, list[str]]
) -> None:
    """The control for the tests below: each file of the tree, in a cache directory that
    passes every check (the user's own, 0700), is loaded and the marker appears; so where they
    find no marker, the advisor refused the tree, not a payload that could never run."""
    marker = tmp_path / "MARKER"
    cache = tmp_path / "own-cache"
    _plant_tree(cache / "private", marker, cache_keys, (kind,))
    os.chmod(cache / "private", 0o700)
    env = _env(SYSCTL_ADVISOR_CACHE=str(cache))
    _run(env, "recommend", "--facts", DCACHE, "-p", "gridftp")
    assert marker.exists()


def test_a_relative_cache_root_is_never_used(
    tmp_path: Path, cache_keys: dict[str, list[str]]
) -> None:
    """SYSCTL_ADVISOR_CACHE=cache in a directory someone else filled (a tarball root
    extracted): no cache at all, nothing read or written there."""
    marker = tmp_path / "MARKER"
    _plant_tree(tmp_path / "cache" / "private", marker, cache_keys)
    before = sorted(p.name for p in (tmp_path / "cache" / "private").iterdir())
    env = _env(SYSCTL_ADVISOR_CACHE="cache")
    shown = _run(env, "cache", cwd=tmp_path)
    assert shown.returncode == 0 and "not an absolute path" in shown.stdout
    result = _run(env, "recommend", "--facts", DCACHE, "-p", "gridftp", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    assert sorted(p.name for p in (tmp_path / "cache" / "private").iterdir()) == before


def test_a_relative_xdg_cache_home_is_ignored(
    tmp_path: Path, cache_keys: dict[str, list[str]]
) -> None:
    """The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored (~/.cache instead)."""
    marker = tmp_path / "MARKER"
    _plant_tree(tmp_path / "xdg" / "sysctl-advisor" / "private", marker, cache_keys)
    home = tmp_path / "home"
    home.mkdir()
    env = _env(XDG_CACHE_HOME="xdg", HOME=str(home))
    shown = _run(env, "cache", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"{home}/.cache/sysctl-advisor/private"
    assert _run(env, "recommend", "--facts", DCACHE, "-p", "gridftp", cwd=tmp_path).returncode == 0
    assert not marker.exists()


@pytest.fixture
def foreign_home() -> Iterator[Path]:
    """A directory root can reach but another user (nobody) owns, as a `sudo -E` HOME is."""
    base = Path(tempfile.mkdtemp(prefix="sysctl-advisor-home-"))
    os.chmod(base, 0o755)
    home = base / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    try:
        yield home
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


@needs_root
def test_root_with_another_users_home_uses_no_cache(
    foreign_home: Path, cache_keys: dict[str, list[str]]
) -> None:
    marker = foreign_home.parent / "MARKER"
    private = foreign_home / ".cache" / "sysctl-advisor" / "private"
    _plant_tree(private, marker, cache_keys)
    for path in [foreign_home / ".cache", *private.parents, private, *private.iterdir()]:
        if foreign_home in path.parents:
            os.chown(path, NOBODY, NOBODY)
    env = _env(HOME=str(foreign_home))
    shown = _run(env, "cache")
    assert "belongs to another user" in shown.stdout, shown.stdout
    result = _run(env, "recommend", "--facts", DCACHE, "-p", "gridftp")
    assert result.returncode == 0 and not marker.exists()
    names = sorted(p.name for p in private.iterdir())
    assert all(p.stat().st_uid == NOBODY for p in private.iterdir()), names  # nothing written


_SWAPPER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop, seconds = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3], float(sys.argv[4])
os.setgid(65534); os.setuid(65534)
print("ready", flush=True)
end = time.monotonic() + seconds
swaps = tries = 0
while time.monotonic() < end and (tries % 1000 or not os.path.exists(stop)):
    tries += 1
    if libc.renameat2(-100, a, -100, b, 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
        swaps += 1
print(swaps)
"""


@needs_root
def test_swapping_the_way_to_roots_cache_never_runs_the_users_code(
    foreign_home: Path, cache_keys: dict[str, list[str]]
) -> None:
    """The third review's race: root's cache inside a directory another user owns, which that
    user swaps with a tree of planted files (renameat2 RENAME_EXCHANGE, in a loop) while root
    runs the advisor. Bounded: 12 runs during the swapping."""
    if not hasattr(ctypes.CDLL(None), "renameat2"):
        pytest.skip("no renameat2 in this libc")
    marker = foreign_home.parent / "MARKER"
    cache = foreign_home / "cache"  # root's own cache, as `sudo -E` makes it
    (cache / "private").mkdir(parents=True, mode=0o700)
    os.chmod(cache, 0o700)
    evil = foreign_home / "evil"
    _plant_tree(evil / "private", marker, cache_keys)
    for path in [evil, evil / "private", *(evil / "private").iterdir()]:
        os.chown(path, NOBODY, NOBODY)
    env = _env(SYSCTL_ADVISOR_CACHE=str(cache))
    clean = _run(_env(SYSCTL_ADVISOR_CACHE="off"), "recommend", "--facts", DCACHE, "-p", "gridftp")
    stop = foreign_home.parent / "STOP"
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(cache), str(evil), str(stop), str(HANG_SECONDS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swapper.stdout is not None
        assert swapper.stdout.readline() == "ready\n"  # swapping from now on, as nobody
        for _ in range(12):
            result = _run(env, "recommend", "--facts", DCACHE, "-p", "gridftp")
            assert result.returncode == 0, result.stderr
            assert result.stdout == clean.stdout
            assert not marker.exists()
    finally:
        stop.touch()
        swaps, _ = swapper.communicate(timeout=HANG_SECONDS)
    assert int(swaps) > 0  # the race ran: the directories were swapped while root ran
    assert "belongs to another user" in _run(env, "cache").stdout
