"""explain's unit line says the range a key is meant for and, where the newest verified
kernel's handler takes another, that one: a write outside it fails with EINVAL there, and a
value between them is stored although the kernel gives it no meaning of its own."""

from __future__ import annotations

import pytest

from tests.conftest import Cli


def _unit_line(cli: Cli, key: str) -> str:
    result = cli("explain", key)
    assert result.exit_code == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if line.strip().startswith("unit:"))


@pytest.mark.parametrize(
    ("key", "meant", "takes"),
    [
        ("net.ipv4.tcp_rmem", "4096..2147483647", "1..2147483647"),  # extra1 = SYSCTL_ONE
        ("net.ipv4.tcp_syncookies", "0..2", "0..255"),  # a u8 from 5.13
    ],
)
def test_the_handlers_range_is_said_where_it_is_another(
    cli: Cli, key: str, meant: str, takes: str
) -> None:
    line = _unit_line(cli, key)
    assert f"meaningful {meant}" in line and f"accepts {takes}" in line, line


def test_one_range_is_said_once(cli: Cli) -> None:
    line = _unit_line(cli, "net.core.somaxconn")
    assert "accepted 0..2147483647" in line and "meaningful" not in line, line
