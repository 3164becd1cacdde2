"""With a target kernel, a key one slip away from a key of the release's sysctl tables is
named as the key meant, in the one error that says the key is missing (check.misspelt-key
stays quiet there, so a line gets one finding)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import Cli


def _findings(cli: Cli, conf: Path, *args: str) -> list[dict[str, Any]]:
    result = cli("check", conf, "--isolated", "-f", "json", *args)
    assert result.exit_code in (0, 1), result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)["findings"]
    return found


def test_a_slip_of_a_key_only_the_release_tables_list_names_it(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("vm.dirty_writeback_centisec = 1500\nnet.ipv4.tcp_fin_timout = 30\n")
    found = _findings(cli, conf, "--kernel", "6.1")
    by_line = {f["line"]: f for f in found}
    assert {f["id"] for f in found} == {"check.key-not-in-kernel"}
    # vm.dirty_writeback_centisecs is in the release's tables, not in the advice catalog
    assert "Did you mean vm.dirty_writeback_centisecs?" in by_line[1]["message"]
    assert "Did you mean net.ipv4.tcp_fin_timeout?" in by_line[2]["message"]


def test_without_a_kernel_the_slip_is_a_warning(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("net.ipv4.tcp_fin_timout = 30\n")
    found = _findings(cli, conf)
    assert [f["id"] for f in found] == ["check.misspelt-key"]


def test_a_missing_key_near_no_other_says_remove_it(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("net.ipv4.tcp_tw_recycle = 0\n")
    (found,) = _findings(cli, conf, "--kernel", "5.15")
    assert found["id"] == "check.key-not-in-kernel"
    assert "Did you mean" not in found["message"] and "Remove it" in found["message"]
