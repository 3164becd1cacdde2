"""A team adopts the linter in a real repository, end to end: the REAL pre-commit runs the
hook as `.pre-commit-hooks.yaml` defines it, and the Action's review (action.yml, review.py)
runs on each pull request's merge commit, as a runner would.

The repository has findings before it adopts the linter (one whose message names another file);
it writes a baseline its configuration names, from one spelling of its files, and commits both;
pre-commit and the Action name the files otherwise. Then: a comment-only change passes; a
change adding one bad line fails on exactly that line; a commit touching one file says nothing
false; a pull request deleting the configuration is warned about; a templated `*.conf.j2` with
`{{ var }}` values passes.

pre-commit installs the hook's `language: python` environment once for this module (a
`repo: local` hook with the advisor as its dependency, under a private PRE_COMMIT_HOME); the
package registry is the only network it needs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.test_github_action import Run, merged_pull_request, run_action

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(shutil.which("pre-commit") is None, reason="needs pre-commit (test extras)"),
]

NET = "etc/sysctl.d/10-net.conf"
VM = "etc/sysctl.d/20-vm.conf"
VENDOR = "etc/sysctl.d/99-vendor.conf"
TEMPLATE = "roles/net/templates/sysctl.conf.j2"
CONFIG = ".sysctl-advisor.toml"
BASELINE = "sysctl-baseline.json"
BEFORE = {
    # findings the team inherits: an error and a warning, accepted by the baseline
    NET: "net.ipv4.tcp_tw_recycle = 1\nnet.core.somaxconn = 4096\n",
    VM: "vm.swappiness = 10\n",
    # 10-net.conf's somaxconn is overridden: a finding whose message names another file
    VENDOR: "net.core.somaxconn = 1024\n",
    TEMPLATE: "# {{ ansible_managed }}\nnet.core.somaxconn = {{ somaxconn }}\n"
    "net.ipv4.tcp_timestamps = 0\n",
    CONFIG: f'baseline = "{BASELINE}"\n',
    "README.md": "infra\n",
}
# One finding as check prints it: path:line:column: [severity] ...
FINDING = re.compile(r"^(\S+):(\d+):\d+: \[(error|warning|info)\]", re.M)


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _hook_config() -> str:
    """The hook exactly as `.pre-commit-hooks.yaml` defines it, installed from this checkout."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook["additional_dependencies"] = [str(ROOT)]
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]})


@pytest.fixture(scope="module")
def pre_commit_home() -> Iterator[Path]:
    """One pre-commit cache for the module, its hook environment installed once."""
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory)
        repo = home / "install"
        repo.mkdir()
        _git(repo, "init", "-q")
        (repo / ".pre-commit-config.yaml").write_text(_hook_config())
        done = _pre_commit(home, repo, "install-hooks")
        assert done.returncode == 0, done.stdout + done.stderr
        yield home


def _pre_commit(home: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        ["pre-commit", *args, "--color", "never"] if args[0] == "run" else ["pre-commit", *args],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def _write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)


@pytest.fixture
def site(tmp_path: Path, pre_commit_home: Path) -> Path:
    """The repository once it adopted the linter: the baseline written from the top of the
    repository with one spelling of its files (`./etc/sysctl.d/` and the template's absolute
    path), which pre-commit and the Action then name otherwise, and committed on main."""
    repo = tmp_path / "site"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, {**BEFORE, ".pre-commit-config.yaml": _hook_config()})
    written = subprocess.run(
        [sys.executable, "-m", "sysctl_advisor", "check", "./etc/sysctl.d/", str(repo / TEMPLATE),
         "--write-baseline", BASELINE],
        cwd=repo, capture_output=True, text=True,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert '"check.overridden"' in (repo / BASELINE).read_text()
    _git(repo, "add", "-A")
    adopted = _pre_commit(pre_commit_home, repo, "run", "--all-files")
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    assert FINDING.findall(adopted.stdout) == []
    _git(repo, "commit", "-q", "-m", "adopt sysctl-advisor")
    return repo


def _commit(home: Path, repo: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """pre-commit on a commit that writes `files`: it sees only the staged changes."""
    _write(repo, files)
    _git(repo, "add", "-A")
    return _pre_commit(home, repo, "run", "--verbose")  # the hook's output, passed or not


def _review(repo: Path, tmp: Path, files: dict[str, str], removed: tuple[str, ...] = ()) -> Run:
    """The Action on a pull request writing `files` and deleting `removed`, checked out as
    its merge commit (as actions/checkout leaves it); main is put back afterwards."""
    base = _git(repo, "rev-parse", "HEAD")
    event = merged_pull_request(repo, files, removed, number=7)
    tmp.mkdir()
    try:
        return run_action(repo, tmp, {}, "pull_request", event)
    finally:
        _git(repo, "reset", "-q", "--hard", base)
        _git(repo, "branch", "-q", "-D", "topic")


def test_a_comment_only_change_passes(site: Path, pre_commit_home: Path, tmp_path: Path) -> None:
    change = {NET: "# the web tier\n" + BEFORE[NET]}  # every line moves down one
    committed = _commit(pre_commit_home, site, change)
    assert committed.returncode == 0, committed.stdout
    assert FINDING.findall(committed.stdout) == []
    _git(site, "reset", "-q", "--hard")

    run = _review(site, tmp_path / "pr", change)
    assert run.failed_step is None, run.stdout + run.summary
    assert run.outputs["review"]["findings"] == "0", run.summary


def test_a_change_adding_one_bad_line_fails_on_exactly_that_line(
    site: Path, pre_commit_home: Path, tmp_path: Path
) -> None:
    change = {NET: BEFORE[NET] + "net.core.netdev_max_backlog = 4k\n"}
    committed = _commit(pre_commit_home, site, change)
    assert committed.returncode == 1, committed.stdout
    assert FINDING.findall(committed.stdout) == [(NET, "3", "error")], committed.stdout
    assert "check.not-a-number" in committed.stdout
    _git(site, "reset", "-q", "--hard")

    run = _review(site, tmp_path / "pr", change)
    assert run.failed_step == "Fail on findings at fail-on", run.stdout
    annotations = re.findall(r"^::(error|warning|notice) file=([^,]+),line=(\d+)", run.stdout, re.M)
    assert annotations == [("error", NET, "3")], run.stdout
    assert run.outputs["review"]["findings"] == "1"


def test_a_commit_of_one_file_says_nothing_false(site: Path, pre_commit_home: Path) -> None:
    """pre-commit passes only 20-vm.conf: its directory is checked whole, the template is
    not, and neither is said to hold a finding."""
    committed = _commit(pre_commit_home, site, {VM: "vm.swappiness = 20\n"})
    assert committed.returncode == 0, committed.stdout
    assert FINDING.findall(committed.stdout) == [], committed.stdout
    assert TEMPLATE not in committed.stdout


def test_a_commit_of_one_file_does_not_call_the_baseline_stale(
    site: Path, pre_commit_home: Path
) -> None:
    committed = _commit(pre_commit_home, site, {VM: "vm.swappiness = 20\n"})
    assert committed.returncode == 0, committed.stdout
    assert "gone" not in committed.stdout, committed.stdout


def test_a_pull_request_deleting_the_configuration_is_warned(site: Path, tmp_path: Path) -> None:
    run = _review(site, tmp_path / "pr", {}, removed=(CONFIG,))
    warnings = [line for line in run.stdout.splitlines() if line.startswith("::warning::")]
    assert len(warnings) == 1 and f"This change deletes {CONFIG}" in warnings[0], run.stdout
    # judged by the base's settings: the baseline it names still accepts the old findings
    assert run.failed_step is None, run.stdout + run.summary


def test_a_templated_file_does_not_fail(site: Path, pre_commit_home: Path, tmp_path: Path) -> None:
    template = "roles/db/templates/99-sysctl.conf.j2"
    text = (
        "# {{ ansible_managed }}\n"
        "vm.swappiness = {{ db_swappiness | default(1) }}\n"
        "{% if db_huge_pages %}\n"
        "vm.nr_hugepages = {{ db_huge_pages }}\n"
        "{% endif %}\n"
        "net.ipv4.tcp_rmem = 4096 {{ rmem_default }} {{ rmem_max }}\n"
    )
    committed = _commit(pre_commit_home, site, {template: text})
    assert committed.returncode == 0, committed.stdout
    assert FINDING.findall(committed.stdout) == [], committed.stdout
    _git(site, "reset", "-q", "--hard")
    (site / template).unlink(missing_ok=True)

    run = _review(site, tmp_path / "pr", {template: text})
    assert run.outputs["review"]["files"] == template, run.stdout
    assert run.failed_step is None and run.outputs["review"]["findings"] == "0", run.summary
