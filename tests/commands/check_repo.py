"""What the tests of check's configuration and baseline share: a repository built at test time,
and the CLI run from a directory of it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import invoke


def make_repo(tmp_path: Path, config: str | bytes | None, files: dict[str, str]) -> Path:
    """A repository (a .git directory at its top) holding `files` and, when given, a
    .sysctl-advisor.toml with `config`."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    if config is not None:
        data = config.encode() if isinstance(config, str) else config
        (repo / ".sysctl-advisor.toml").write_bytes(data)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


def run_in(cwd: Path, *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of the CLI run with `args` from `cwd`."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = invoke(*args)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr
