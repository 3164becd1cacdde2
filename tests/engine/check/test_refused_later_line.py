"""A later line the target kernel may refuse replaces nothing for certain: `sysctl -p` keeps
the earlier value when the later write fails. `--fix` then keeps the earlier line, the
duplicate's message says what each tool does, and a twin is not taken as cleared."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Cli


def test_fix_keeps_the_line_in_force_when_the_later_value_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    conf = tmp_path / "a.conf"
    # 5.4 takes at most 100, 5.8 and later 200
    conf.write_text("vm.swappiness = 60\nvm.swappiness = 150\n")
    cli("check", conf, "--isolated", "--kernel", "5.4", "--fix", "--fail-on", "never")
    assert conf.read_text() == "vm.swappiness = 60\nvm.swappiness = 150\n"
    # on 5.8 and later, 150 is taken: the earlier line goes
    cli("check", conf, "--isolated", "--kernel", "5.15", "--fix", "--fail-on", "never")
    assert conf.read_text() == "vm.swappiness = 150\n"


def test_the_duplicate_says_what_each_tool_keeps(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("vm.swappiness = 60\nvm.swappiness = 150\n")
    result = cli("check", conf, "--isolated", "--kernel", "5.4", "-f", "json")
    (duplicate,) = [f for f in json.loads(result.stdout)["findings"] if f["line"] == 1]
    assert duplicate["id"] == "check.duplicate-key"
    assert "may refuse" in duplicate["message"] and "never takes effect" not in duplicate["message"]
    result = cli("check", conf, "--isolated", "--kernel", "5.15", "-f", "json")
    (duplicate,) = [f for f in json.loads(result.stdout)["findings"] if f["line"] == 1]
    assert "never takes effect" in duplicate["message"]


def test_a_refused_write_clears_no_twin(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    # vm.dirty_bytes takes at least two pages: 1 is refused, and vm.dirty_ratio keeps its value
    conf.write_text("vm.dirty_ratio = 20\nvm.dirty_bytes = 1\n")
    result = cli("check", conf, "--isolated", "--kernel", "6.1", "-f", "json")
    ids = {f["id"] for f in json.loads(result.stdout)["findings"]}
    assert "check.twin-cleared" not in ids and "check.out-of-bounds" in ids
    conf.write_text("vm.dirty_ratio = 20\nvm.dirty_bytes = 268435456\n")
    result = cli("check", conf, "--isolated", "--kernel", "6.1", "-f", "json")
    ids = {f["id"] for f in json.loads(result.stdout)["findings"]}
    assert "check.twin-cleared" in ids
