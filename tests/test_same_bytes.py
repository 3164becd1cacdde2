"""The same input gives the same bytes: no output carries the time of the run. Every command
that writes a file runs twice, more than a second apart (every time written is to the second),
and writes identical bytes both times.

The one time a facts file holds is when its snapshot was taken (`observed.period.at`): now on
the live host, which is never the same input twice; from a copied tree, when the tree's copy of
sockstat was written, a fact of the tree. The kernel log window of a tree ends there too.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.model.errors import InputError
from tests.conftest import EXAMPLES, Cli, invoke

FIXTURES = Path(__file__).parent / "fixtures"
TREE = FIXTURES / "hosts" / "busy-frontend"
KERNEL_LOG = FIXTURES / "kernel-log" / "kern-3.x.log"
FACTS = str(EXAMPLES / "haproxy-frontend-rhel7.yaml")
LAYERED = str(FIXTURES / "sysctl-trees" / "layered")

COMMANDS = [
    ["facts", "--root", "{tree}"],
    ["facts", "--root", "{tree}", "--kernel-log", str(KERNEL_LOG), "-f", "json"],
    *(
        ["recommend", "--facts", FACTS, "-p", "frontend-proxy", "-f", fmt]
        for fmt in ("conf", "json", "markdown", "tuned", "ansible", "kubernetes")
    ),
    *(
        ["diff", "--facts", FACTS, "-p", "frontend-proxy", "--current", LAYERED, "-f", fmt]
        for fmt in ("text", "json", "markdown")
    ),
    *(
        ["check", str(FIXTURES / "check" / "annotated.conf"), "-f", fmt]
        for fmt in ("text", "json", "sarif", "github", "markdown")
    ),
    ["fleet", "--ansible-facts", str(FIXTURES / "ansible" / "tree"), "-p", "base", "--out"],
]


def _outputs(tmp_path: Path, tree: Path, run: int) -> dict[str, bytes]:
    """Every command's standard output, and each file fleet wrote, by name."""
    outputs: dict[str, bytes] = {}
    for argv in COMMANDS:
        args = [a.replace("{tree}", str(tree)) for a in argv]
        out = tmp_path / f"fleet-{run}"
        if args[0] == "fleet":
            args.append(str(out))
        result = invoke(*args)
        assert result.exit_code in (0, 1), (args, result.stderr)
        outputs[" ".join(argv)] = result.stdout_bytes
        if args[0] == "fleet":
            for path in sorted(out.rglob("*")):
                if path.is_file():
                    outputs[f"fleet {path.relative_to(out)}"] = path.read_bytes()
    return outputs


def test_the_same_command_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree, symlinks=True)
    first = _outputs(tmp_path, tree, 1)
    time.sleep(1.1)
    second = _outputs(tmp_path, tree, 2)
    assert first.keys() == second.keys()
    for name, data in first.items():
        assert data == second[name], name


def test_a_tree_snapshot_is_when_the_tree_was_copied(cli: Cli, tmp_path: Path) -> None:
    """`observed.period.at` of a copied tree is its sockstat's modification time, and the
    kernel log's window ends there: a tree copied in the past reads as it was then."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree, symlinks=True)
    copied = time.mktime((2026, 11, 22, 12, 0, 0, 0, 0, 0)) - time.timezone
    os.utime(tree / "proc/net/sockstat", (copied, copied))
    result = cli("facts", "--root", str(tree), "--kernel-log", str(KERNEL_LOG), "--since", "1d")
    assert result.exit_code == 0, result.stderr
    observed = yaml.safe_load(result.stdout)["observed"]
    assert observed["period"]["at"] == "2026-11-22T12:00:00Z"
    assert observed["kernel_log"]["since"] == "2026-11-21T12:00:00Z"
    assert observed["kernel_events"], "the log's lines of 2026-11-22 lie inside that window"


@pytest.mark.parametrize("mtime", [1e20, -1e20, float("nan")])
def test_a_tree_whose_copy_time_is_no_date_is_one_line(
    tmp_path: Path, mtime: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file system keeps such a time, but a tree is hostile: its sockstat's time is
    faked where the collector reads it (the descriptor opened)."""
    import sysctl_advisor.sources.local_host as local_host

    monkeypatch.setattr(local_host, "_modified", lambda fd: mtime)
    with pytest.raises(InputError, match="not a date") as refused:
        local_host.snapshot_time(TREE, live=False)
    assert "sockstat" in str(refused.value) and "\n" not in str(refused.value)
