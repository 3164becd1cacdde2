"""Output files are replaced atomically, by descriptor, never through
a link or over something that is not a regular file; stdout failures are one line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.outputs.files import write_atomic
from tests.conftest import EXAMPLES, Cli

RECOMMEND = ["recommend", "--facts", str(EXAMPLES / "dcache-32bit.yaml"), "-p", "gridftp"]


def test_mode_of_the_replaced_file_is_kept_without_setuid(tmp_path: Path) -> None:
    target = tmp_path / "out.conf"
    target.write_text("old\n")
    os.chmod(target, 0o6770)
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    expected = 0o750 if os.geteuid() == 0 else 0o770  # root's output: no group write
    assert stat.S_IMODE(target.stat().st_mode) == expected


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to plant a file as nobody")
def test_root_output_is_roots_and_not_writable_by_others(cli: Cli, tmp_path: Path) -> None:
    """A file planted as nobody with mode 6777 used to be replaced by one still owned by
    nobody, mode 0777: what root would apply, writable by anyone."""
    os.chmod(tmp_path, 0o1777)
    target = tmp_path / "out.conf"
    target.write_text("planted\n")
    os.chown(target, 65534, 65534)
    os.chmod(target, 0o6777)
    result = cli(*RECOMMEND, "-o", str(target))
    assert result.exit_code == 0, result.stderr
    info = target.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o755)


def test_a_new_file_honours_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.conf", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.conf").stat().st_mode) == 0o640


def test_no_chmod_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mode goes on through the open descriptor: a racer who swaps the temporary name
    cannot redirect a chmod (os.chmod is never called)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("chmod by name")

    monkeypatch.setattr(os, "chmod", refuse)
    target = tmp_path / "out.conf"
    target.write_text("old\n")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"


def test_a_symlink_is_refused_and_its_target_untouched(cli: Cli, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "out.conf"
    link.symlink_to(victim)
    result = cli(*RECOMMEND, "-o", str(link))
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert link.is_symlink() and victim.read_text() == "precious\n"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_non_regular_targets_are_refused(cli: Cli, kind: str, tmp_path: Path) -> None:
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    result = cli(*RECOMMEND, "-o", str(target))
    assert result.exit_code == 2 and "not a regular file" in result.stderr
    assert (stat.S_ISFIFO if kind == "fifo" else stat.S_ISDIR)(target.lstat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a device node")
def test_a_device_node_is_not_replaced(cli: Cli, tmp_path: Path) -> None:
    """`-o /dev/null` as root once replaced /dev/null with a file; a null device made here
    stands in for it."""
    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = cli(*RECOMMEND, "-o", str(device))
    assert result.exit_code == 2 and "not a regular file" in result.stderr
    assert stat.S_ISCHR(device.lstat().st_mode)


def test_dash_is_standard_output(cli: Cli) -> None:
    result = cli(*RECOMMEND, "-o", "-")
    assert result.exit_code == 0 and result.stdout.startswith("# sysctl.conf for dcache-07")
    assert not Path("-").exists()


def test_an_unwritable_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot write"):
        write_atomic(tmp_path / "missing-dir" / "out.conf", "x")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [RECOMMEND, ["profiles"], ["rules"], ["explain", "tcp_mem"]])
def test_stdout_to_dev_full_is_exit_2_with_one_line(command: list[str]) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "sysctl_advisor", *command],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "sysctl-advisor: error: cannot write to standard output: No space left on device"
    ]


def test_a_killed_writes_temporary_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    """A SIGKILL during `-o` left `.NAME.XXXXXXXX.tmp` beside the target
    for good. The next write of that target removes its own kind of leftover: this user's,
    old enough not to be a concurrent run's; nothing else."""
    import time

    from sysctl_advisor.outputs.files import STALE_SECONDS

    target = tmp_path / "90-advisor.conf"
    old = time.time() - STALE_SECONDS - 60
    stale = tmp_path / ".90-advisor.conf.k3j4h5g6.tmp"
    young = tmp_path / ".90-advisor.conf.a1b2c3d4.tmp"
    other = tmp_path / ".90-advisor.conf.notours.tmp"  # not the shape of our names
    unrelated = tmp_path / ".other.conf.k3j4h5g6.tmp"
    for path in (stale, young, other, unrelated):
        path.write_text("partial\n")
    for path in (stale, other, unrelated):
        os.utime(path, (old, old))
    write_atomic(target, "net.core.somaxconn = 4096\n")
    assert not stale.exists()
    assert young.exists() and other.exists() and unrelated.exists()
    assert target.read_text() == "net.core.somaxconn = 4096\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == sorted(
        [young.name, other.name, unrelated.name]
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's directory needs root")
def test_root_never_writes_where_another_user_can_redirect_it(tmp_path: Path) -> None:
    """The third review: root's `-o ~alice/reports/web.conf`, with `reports` a link alice
    points at a root-only directory, created the file there. A directory on the way that
    another user owns (or may rename entries in) is refused before anything is written."""
    os.chmod(tmp_path, 0o755)
    alice = tmp_path / "alice"
    alice.mkdir()
    os.chown(alice, 65534, 65534)
    rootonly = tmp_path / "rootonly"
    rootonly.mkdir(mode=0o700)
    (alice / "reports").symlink_to(rootonly)
    for target in (alice / "reports" / "web.conf", alice / "web.conf"):
        with pytest.raises(InputError) as caught:
            write_atomic(target, "net.core.somaxconn = 4096\n")
        assert "belongs to another user" in str(caught.value)
    assert list(rootonly.iterdir()) == [] and sorted(p.name for p in alice.iterdir()) == ["reports"]


def test_a_parent_reached_through_a_trusted_link_is_written(tmp_path: Path) -> None:
    """Links on the way are resolved once (a distribution's /var/run -> /run is fine); the
    resolved directories are what is checked."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    write_atomic(tmp_path / "link" / "out.conf", "x = 1\n")
    assert (real / "out.conf").read_text() == "x = 1\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's link needs root")
def test_a_link_another_user_made_in_a_sticky_directory_is_not_followed(tmp_path: Path) -> None:
    """In /tmp (sticky, writable by all) any user may leave a link named like the directory
    root means to write into: a link that is not root's or the user's is refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    rootonly = tmp_path / "rootonly"
    rootonly.mkdir(mode=0o700)
    planted = shared / "reports"
    planted.symlink_to(rootonly)
    os.lchown(planted, 65534, 65534)
    with pytest.raises(InputError) as caught:
        write_atomic(planted / "web.conf", "x = 1\n")
    assert "a link another user made" in str(caught.value)
    assert list(rootonly.iterdir()) == []
