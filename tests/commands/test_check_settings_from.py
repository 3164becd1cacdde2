"""`check --settings-from DIR`: the settings come from DIR, a copy of the working directory's
settings files (the GitHub Action's base commit), while the files checked stay where they
are: the configuration is searched for in DIR from each path's place there, and the names
in its per-file-ignores and its baseline stand for the working directory's files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands.check_repo import make_repo, run_in

RECYCLE = "net.ipv4.tcp_tw_recycle = 1\n"  # check.tw-recycle-enabled, an error
SYNCOOKIES_OFF = "net.ipv4.tcp_syncookies = 0\n"  # check.syncookies-off, a warning
CONF = "hosts/web/sysctl.d/10.conf"


def _ids(out: str) -> set[str]:
    return {f["id"] for f in json.loads(out)["findings"]}


def _copy(tmp_path: Path, files: dict[str, str]) -> Path:
    copy = tmp_path / "copy"
    for name, text in files.items():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text(text)
    copy.mkdir(exist_ok=True)
    return copy


def test_the_configuration_is_the_copy_s_not_the_working_directory_s(tmp_path: Path) -> None:
    """A nearer configuration in the working directory (the change's) is not read; the copy's
    per-file-ignores name the file as it stands in the working directory."""
    repo = make_repo(tmp_path, 'ignore = ["check"]\n', {CONF: RECYCLE + SYNCOOKIES_OFF})
    (repo / "hosts/web/.sysctl-advisor.toml").write_text('ignore = ["check"]\n')
    copy = _copy(
        tmp_path,
        {".sysctl-advisor.toml": f'[per-file-ignores]\n"{CONF}" = ["check.syncookies-off"]\n'},
    )
    code, out, err = run_in(repo, "check", CONF, "-f", "json", "--settings-from", str(copy))
    assert code == 1, err
    assert _ids(out) == {"check.tw-recycle-enabled"}
    code, out, _ = run_in(repo, "check", CONF, "-f", "json")
    assert code == 0 and _ids(out) == set()  # without it, the working directory's


def test_the_copy_s_baseline_names_the_working_directory_s_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, None, {CONF: RECYCLE})
    code, _, err = run_in(repo, "check", CONF, "--write-baseline", "accepted.json")
    assert code == 0, err
    copy = _copy(
        tmp_path,
        {
            ".sysctl-advisor.toml": 'baseline = "accepted.json"\n',
            "accepted.json": (repo / "accepted.json").read_text(),
        },
    )
    (repo / "accepted.json").unlink()  # the change deleted it
    code, out, err = run_in(repo, "check", CONF, "-f", "json", "--settings-from", str(copy))
    assert code == 0 and _ids(out) == set(), (out, err)
    # and named on the command line, as a path into the copy
    code, out, err = run_in(
        repo,
        *("check", CONF, "-f", "json", "--isolated"),
        *("--settings-from", str(copy), "--baseline", str(copy / "accepted.json")),
    )
    assert code == 0 and _ids(out) == set(), (out, err)


def test_a_directory_the_copy_does_not_have_is_passed_over(tmp_path: Path) -> None:
    """The change adds hosts/new/: the copy has no such directory, and the configuration
    above it applies."""
    repo = make_repo(tmp_path, None, {"hosts/new/sysctl.d/10.conf": SYNCOOKIES_OFF})
    copy = _copy(tmp_path, {".sysctl-advisor.toml": 'fail-on = "warning"\n'})
    code, _, err = run_in(
        repo, "check", "hosts/new/sysctl.d", "--settings-from", str(copy), "-f", "json"
    )
    assert code == 1, err


def test_bad_settings_from_is_one_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, None, {CONF: RECYCLE})
    copy = _copy(tmp_path, {})
    code, _, err = run_in(repo, "check", CONF, "--settings-from", str(repo / "nope"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--settings-from" in err, err
    outside = tmp_path / "elsewhere.conf"
    outside.write_text(RECYCLE)
    code, _, err = run_in(repo, "check", str(outside), "--settings-from", str(copy))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "working directory" in err, err
