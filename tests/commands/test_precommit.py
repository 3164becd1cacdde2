"""The pre-commit hook, run by the real pre-commit.

pre-commit passes only the files a commit changes, in parallel batches unless the hook says
`require_serial`. A change to 99-sysctl.conf that silently replaces a value of the unchanged
10-net.conf must still fail the commit: the hook checks the whole sysctl.d directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, Cli

HOOKS = ROOT / ".pre-commit-hooks.yaml"


def test_hook_definition() -> None:
    import re

    (hook,) = yaml.safe_load(HOOKS.read_text())
    assert hook["require_serial"] is True and "--whole-directory" in hook["entry"]
    files = re.compile(hook["files"])
    for path in [
        "etc/sysctl.conf", "etc/sysctl.d/99-net.conf", "roles/net/templates/sysctl.conf.j2",
        "roles/net/templates/99-sysctl.conf.j2", "roles/net/files/90-sysctl-tuning.conf",
        "sysctl.d/10-x.conf.j2",
    ]:  # fmt: skip
        assert files.search(path), path
    for path in ["etc/nginx/nginx.conf", "roles/net/files/haproxy.conf", "sysctl.d/x.txt"]:
        assert not files.search(path), path


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.skipif(shutil.which("pre-commit") is None, reason="needs pre-commit (test extras)")
def test_a_commit_that_undercuts_an_unchanged_file_fails(cli: Cli, tmp_path: Path) -> None:
    repo = tmp_path / "site"
    conf = repo / "etc" / "sysctl.d"
    conf.mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "ci@example.invalid")
    _git(repo, "config", "user.name", "ci")
    (conf / "10-net.conf").write_text("net.core.somaxconn = 4096\n")
    (conf / "99-sysctl.conf").write_text("vm.swappiness = 10\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["pre-commit", "try-repo", str(ROOT), "sysctl-advisor-check", "--verbose"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    # Only 99-sysctl.conf changes, and it quietly takes back 10-net.conf's somaxconn.
    (conf / "99-sysctl.conf").write_text("vm.swappiness = 10\nnet.core.somaxconn = 128\n")
    _git(repo, "add", ".")
    failed = try_repo()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    # Paths as the reviewer's repository has them, relative to where pre-commit runs.
    assert "etc/sysctl.d/10-net.conf:1:" in failed.stdout, failed.stdout
    assert "check.overridden" in failed.stdout and str(repo) not in failed.stdout

    # The same change without the override passes.
    (conf / "99-sysctl.conf").write_text("vm.swappiness = 10\nnet.core.netdev_max_backlog = 2000\n")
    _git(repo, "add", ".")
    passed = try_repo()
    assert passed.returncode == 0, passed.stdout + passed.stderr

    # A team adopts the linter with a baseline its configuration names: the override that
    # failed above is accepted as existing, and the hook passes while nothing new is added.
    (conf / "99-sysctl.conf").write_text("vm.swappiness = 10\nnet.core.somaxconn = 128\n")
    (repo / ".sysctl-advisor.toml").write_text('baseline = "sysctl-baseline.json"\n')
    here = os.getcwd()
    os.chdir(repo)
    try:
        written = cli("check", "etc/sysctl.d", "--write-baseline", "sysctl-baseline.json")
    finally:
        os.chdir(here)
    assert written.exit_code == 0, written.output
    _git(repo, "add", ".")
    adopted = try_repo()
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
