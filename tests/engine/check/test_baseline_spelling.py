"""A baseline does not depend on how the files were named: written from any spelling of the same
files (`.`, `etc/sysctl.d`, `./etc/sysctl.d/`, absolute paths, a path through a link to the
checkout, a subdirectory as the working directory) it holds every finding a check from any
other spelling makes, whether its root is the configuration's directory, the repository's top
or the baseline's own directory. A baseline an earlier version wrote is refused in one line
that says to write it again, and `--write-baseline` replaces it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.commands.check_repo import run_in
from tests.conftest import assert_one_line_error

# 20-app.conf: an override by 99-vendor.conf (its message names the later file, spelt as the
# tree was given), a turned-off TCP extension and a key set twice.
FILES = {
    "etc/sysctl.d/20-app.conf": (
        "net.core.somaxconn = 8192\nnet.ipv4.tcp_sack = 0\nvm.swappiness = 10\nvm.swappiness = 20\n"
    ),
    "etc/sysctl.d/99-vendor.conf": "net.core.somaxconn = 4096\n",
}
BASELINE = "sysctl-baseline.json"

# Where check runs from (from the repository's top) and the tree it is given, spelt from there:
# `{repo}` is the checkout's absolute path, `{link}` the same through a link to it.
SPELLINGS = [
    ("", "."),
    ("", "etc/sysctl.d"),
    ("", "./etc/sysctl.d/"),
    ("", "etc/../etc/sysctl.d"),
    ("", "{repo}"),
    ("", "{repo}/etc/sysctl.d"),
    ("", "{link}/etc/sysctl.d/"),
    ("etc", "sysctl.d"),
    ("etc", "./sysctl.d/"),
    ("etc", ".."),
    ("etc", "{link}"),
    ("etc/sysctl.d", "."),
    ("etc/sysctl.d", "../.."),
    ("etc/sysctl.d", "{repo}/etc/sysctl.d"),
]
# What the root is: the configuration's directory, the repository's top, the baseline's own.
ROOTS = ["config", "git", "baseline"]


def _checkout(top: Path, root: str) -> tuple[Path, Path]:
    """The repository and a link to it."""
    repo = top / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    if root == "config":
        (repo / ".git").mkdir()
        (repo / ".sysctl-advisor.toml").write_text('fail-on = "info"\n')
    elif root == "git":
        (repo / ".git").mkdir()
    link = top / "link"
    link.symlink_to(repo)
    return repo, link


def _check(repo: Path, link: Path, spelling: tuple[str, str], *args: str) -> tuple[int, str, str]:
    where, path = spelling
    cwd = repo / where
    path = path.format(repo=repo, link=link)
    baseline = os.path.relpath(repo / BASELINE, cwd)
    return run_in(cwd, "check", path, "--fail-on", "info", *args, baseline)


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(ROOTS),
    st.sampled_from(SPELLINGS),
    st.sampled_from(SPELLINGS),
)
@example("config", ("", "etc/sysctl.d"), ("", "."))  # docs/github-action.md, then the Action
@example("git", ("", "."), ("etc", "sysctl.d"))
@example("baseline", ("etc/sysctl.d", "."), ("", "{link}/etc/sysctl.d/"))
def test_a_baseline_from_any_spelling_holds_a_check_from_any_other(
    root: str, written: tuple[str, str], checked: tuple[str, str]
) -> None:
    with tempfile.TemporaryDirectory() as top:
        repo, link = _checkout(Path(top), root)
        code, _, err = _check(repo, link, written, "--write-baseline")
        assert code == 0 and "wrote 3 findings" in err, err
        code, out, err = _check(repo, link, checked, "-f", "json", "--baseline")
        assert code == 0 and json.loads(out)["findings"] == [], (out, err)
        assert "gone" not in err, err


def test_the_files_are_named_from_the_configuration_s_directory(tmp_path: Path) -> None:
    repo, _ = _checkout(tmp_path, "config")
    (repo / "ci").mkdir()
    run_in(repo / "etc", "check", "sysctl.d", "--write-baseline", f"../ci/{BASELINE}")
    written = json.loads((repo / "ci" / BASELINE).read_text())
    assert {e["file"] for e in written["findings"]} == {"etc/sysctl.d/20-app.conf"}
    assert written["schema"] == "sysctl-advisor/baseline/v2"


def test_an_earlier_version_s_baseline_is_refused_in_one_line_and_replaced_when_written(
    tmp_path: Path,
) -> None:
    repo, _ = _checkout(tmp_path, "config")
    (repo / BASELINE).write_text(
        '{"schema": "sysctl-advisor/baseline/v1", "findings": [{"rule": "check.overridden", '
        '"file": "etc/sysctl.d/20-app.conf", "fingerprint": "' + "0" * 64 + '"}]}\n'
    )
    code, _, err = run_in(repo, "check", "etc/sysctl.d", "--baseline", BASELINE)
    assert_one_line_error(code, err, BASELINE, "sysctl-advisor/baseline/v1", "--write-baseline")
    code, _, err = run_in(repo, "check", "etc/sysctl.d", "--write-baseline", BASELINE)
    assert code == 0 and "wrote 3 findings" in err and "kept" not in err, err
    code, _, err = run_in(repo, "check", ".", "--baseline", BASELINE, "--fail-on", "info")
    assert code == 0, err
