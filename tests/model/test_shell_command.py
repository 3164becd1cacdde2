"""A pasted shell command's suggested line names the key the command set, as sysctl(8) writes
it: a VLAN interface's dot stays a `/` (eth0/100), a /proc/sys path's `/` become separators."""

from __future__ import annotations

import pytest

from sysctl_advisor.model.sysctl_conf import key_of_path, shell_command


@pytest.mark.parametrize(
    ("line", "meant"),
    [
        ("sysctl -w net.ipv4.conf.eth0/100.rp_filter=1", "net.ipv4.conf.eth0/100.rp_filter = 1"),
        (
            "echo 1 > /proc/sys/net/ipv4/conf/eth0.100/rp_filter",
            "net.ipv4.conf.eth0/100.rp_filter = 1",
        ),
        ("sysctl -w net/ipv4/ip_forward=1", "net.ipv4.ip_forward = 1"),
        ("sudo sysctl net.core.somaxconn=4096", "net.core.somaxconn = 4096"),
    ],
)
def test_the_line_to_write_instead_names_the_same_key(line: str, meant: str) -> None:
    said = shell_command(line)
    assert said is not None and f"write `{meant}` instead" in said


def test_a_proc_path_is_the_key_sysctl_names() -> None:
    assert key_of_path("net/ipv4/conf/eth0.100/rp_filter") == "net.ipv4.conf.eth0/100.rp_filter"
