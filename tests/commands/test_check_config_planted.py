"""A configuration another user planted above the checked files: the search for
`.sysctl-advisor.toml` (and pyproject.toml) skips it with a note naming it, and stops at any
directory another user may write to, as OpenSSH's StrictModes judges a file and the
directories above it. Every planted file and directory is built at test time; giving a file
to another user needs root."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from sysctl_advisor.sources.strict_modes import others_may_write
from tests.commands.check_repo import run_in

RECYCLE = "net.ipv4.tcp_tw_recycle = 1\n"  # check.tw-recycle-enabled, an error
RELAX = 'ignore = ["check"]\n'  # what a planted configuration says
NOBODY = 65534  # another user, and a group (nogroup) that user is a member of
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="gives files to another user (needs root)")


def _job(top: Path) -> Path:
    """Root's own files below `top`, no repository: the search goes up from them."""
    job = top / "job"
    job.mkdir()
    (job / "a.conf").write_text(RECYCLE)
    return job / "a.conf"


def _notes(err: str) -> list[str]:
    """The notes on stderr besides the one every such check gives, about its target kernel."""
    return [line for line in err.splitlines() if "note:" in line and "target kernel" not in line]


def _checked_without_it(cwd: Path, conf: Path, planted: Path) -> str:
    """check of `conf` runs without the planted configuration: its error is found (exit 1,
    not 2), and a note on stderr names the file it did not use."""
    code, out, err = run_in(cwd, "check", str(conf), "-f", "json")
    assert code == 1, (code, out, err)
    assert "check.tw-recycle-enabled" in {f["id"] for f in json.loads(out)["findings"]}
    notes = [line for line in err.splitlines() if str(planted) in line]
    assert len(notes) == 1 and "note: " in notes[0], err
    return notes[0]


@as_root
def test_a_configuration_another_user_owns_is_skipped_with_a_note(tmp_path: Path) -> None:
    """The directory is root's and no one else may write to it, but the file in it is another
    user's: it is not read (it used to stop every check below with exit 2)."""
    area = tmp_path / "area"
    area.mkdir()
    planted = area / ".sysctl-advisor.toml"
    planted.write_text(RELAX)
    os.chown(planted, NOBODY, NOBODY)
    note = _checked_without_it(tmp_path, _job(area), planted)
    assert f"uid {NOBODY}" in note


@as_root
def test_a_pyproject_another_user_owns_is_skipped_with_a_note(tmp_path: Path) -> None:
    area = tmp_path / "area"
    area.mkdir()
    planted = area / "pyproject.toml"
    planted.write_text("[tool.sysctl-advisor]\n" + RELAX)
    os.chown(planted, NOBODY, NOBODY)
    _checked_without_it(tmp_path, _job(area), planted)


@as_root
@pytest.mark.parametrize(
    ("owner", "group", "mode"),
    [
        (NOBODY, 0, 0o755),  # another user's directory: they may replace any file in it
        (0, NOBODY, 0o775),  # writable by a group another user is a member of
        (0, 0, 0o777),  # writable by everyone, not sticky
        (0, 0, 0o1777),  # writable by everyone, sticky as /tmp is: anyone may add a file
    ],
    ids=["another-user-s", "group-writable", "world-writable", "sticky"],
)
def test_a_directory_another_user_may_write_to_ends_the_search(
    tmp_path: Path, owner: int, group: int, mode: int
) -> None:
    """A configuration there is not read, even root's own (another user may put theirs in
    its place), the note names it, and no configuration above that directory applies."""
    (tmp_path / ".sysctl-advisor.toml").write_text(RELAX)  # root's, above: never reached
    shared = tmp_path / "shared"
    shared.mkdir()
    planted = shared / ".sysctl-advisor.toml"
    planted.write_text(RELAX)
    os.chown(shared, owner, group)
    shared.chmod(mode)
    note = _checked_without_it(tmp_path, _job(shared), planted)
    assert str(shared) in note


@as_root
def test_a_directory_another_user_may_write_to_ends_the_search_without_a_note(
    tmp_path: Path,
) -> None:
    """With no configuration in that directory there is nothing to name: no note, and still
    no configuration above it applies."""
    (tmp_path / ".sysctl-advisor.toml").write_text(RELAX)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    code, out, err = run_in(tmp_path, "check", str(_job(shared)), "-f", "json")
    assert code == 1 and not _notes(err), (code, out, err)


def test_your_own_directories_are_searched(tmp_path: Path) -> None:
    """The directories of a checkout the running user owns, not writable by others (0755, or
    0775 with the user's own group as its only member): the configuration there applies."""
    top = tmp_path / "top"
    top.mkdir()
    top.chmod(0o755)
    (top / ".sysctl-advisor.toml").write_text(RELAX)
    code, out, err = run_in(tmp_path, "check", str(_job(top)), "-f", "json")
    assert code == 0 and json.loads(out)["findings"] == [] and not _notes(err), err


# --- the rule itself, on stat results built here (no root needed) -------------------------------


def _info(uid: int, gid: int, mode: int) -> os.stat_result:
    return os.stat_result((stat.S_IFDIR | mode, 0, 0, 2, uid, gid, 0, 0, 0, 0))


@pytest.mark.parametrize(
    ("uid", "gid", "mode", "others"),
    [
        (os.geteuid(), 0, 0o755, False),
        (0, 0, 0o755, False),
        (0, 0, 0o700, False),
        (NOBODY if os.geteuid() != NOBODY else 1, 0, 0o755, True),  # another user's
        (0, 0, 0o757, True),
        (0, 0, 0o1777, True),
        (0, NOBODY, 0o775, True),  # nogroup: nobody is a member
        (0, NOBODY, 0o755, False),  # the group may not write
    ],
)
def test_who_else_may_write(uid: int, gid: int, mode: int, others: bool) -> None:
    assert (others_may_write(_info(uid, gid, mode)) is not None) is others
