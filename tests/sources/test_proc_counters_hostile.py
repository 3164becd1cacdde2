"""/proc/net/snmp (observed.udp), sockstat and the other /proc text of a copied tree, hostile:
built at test time and read through `facts --root`. A garbled file leaves its figures out; it
never stops the run with an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sysctl_advisor.sources.proc_readers import parse_netstat, parse_sockstat
from tests.conftest import invoke

HEADER = (
    "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors "
    "IgnoredMulti MemErrors\n"
)
VALUES = "Udp: 1000 5 10 900 10 0 0 0 0\n"
SOCKSTAT = "sockets: used 1\nUDP: inuse 3 mem 7\n"
HUGE = "9" * 10_000  # int() refuses more than 4300 digits


def facts_of(tmp_path: Path, files: dict[str, str]) -> dict:
    root = tmp_path / "root"
    for name, text in {"proc/meminfo": "MemTotal: 8000000 kB\n", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    result = invoke("facts", "--root", str(root), "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    return json.loads(result.stdout)


def udp_of(tmp_path: Path, snmp: str, sockstat: str = SOCKSTAT) -> dict | None:
    facts = facts_of(tmp_path, {"proc/net/snmp": snmp, "proc/net/sockstat": sockstat})
    return facts.get("observed", {}).get("udp")


def test_the_counters_as_the_kernel_prints_them(tmp_path: Path) -> None:
    udp = udp_of(tmp_path, HEADER + VALUES)
    assert udp is not None
    assert (udp["in_datagrams"], udp["rcvbuf_errors"], udp["mem_pages_peak"]) == (1000, 10, 7)


@pytest.mark.parametrize(
    "files",
    [
        {"proc/net/snmp": HEADER + f"Udp: {HUGE} 5 10 900 10 0 0 0 0\n"},
        {"proc/net/snmp": HEADER + VALUES, "proc/net/sockstat": f"UDP: inuse 1 mem {HUGE}\n"},
        {"proc/net/sockstat": f"TCP: inuse 1 orphan {HUGE} tw 1 alloc 1 mem 1\n"},
        {"proc/meminfo": f"MemTotal: 8000000 kB\nMemFree: {HUGE} kB\n"},
        {"proc/net/netstat": f"TcpExt: ListenOverflows ListenDrops\nTcpExt: {HUGE} 1\n"},
        {"proc/net/dev": f"Inter-|\n eth0: {HUGE} 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"},
        {"sys/devices/system/cpu/online": f"0-{HUGE}\n"},
    ],
)
def test_a_figure_of_thousands_of_digits_is_left_out(tmp_path: Path, files: dict[str, str]) -> None:
    """Was exit 3, `internal error: ValueError: Exceeds the limit (4300 digits)`."""
    facts_of(tmp_path, files)


def test_a_column_named_twice_leaves_it_out(tmp_path: Path) -> None:
    """RcvbufErrors twice: the last one was taken, though either could be the figure."""
    assert udp_of(tmp_path, HEADER.replace("NoPorts", "RcvbufErrors") + VALUES) is None
    assert parse_netstat("Udp: A B A\nUdp: 1 2 3\n") == {"Udp": {"B": 2}}


def test_a_protocol_printed_twice_leaves_it_out(tmp_path: Path) -> None:
    twice = HEADER + VALUES + HEADER + "Udp: 1 1 1 1 1 1 1 1 1\n"
    assert udp_of(tmp_path, twice) is None
    assert udp_of(tmp_path, (HEADER + VALUES) * 1000) is None
    assert parse_sockstat("UDP: inuse 1 mem 2\nUDP: inuse 3 mem 4\nTCP: inuse 1\n") == {
        "TCP": {"inuse": 1}
    }
    assert parse_sockstat("UDP: inuse 1 mem 2 mem 4\n") == {"UDP": {"inuse": 1}}


@pytest.mark.parametrize(
    "snmp",
    [
        HEADER,  # no values
        VALUES,  # no header
        VALUES + HEADER,
        HEADER.replace(" RcvbufErrors", "") + "Udp: 1000 5 10 900 0 0 0 0\n",
        HEADER + "Udp: 1000 5\n",  # a short row
        HEADER + "Udp: -1000 5 10 900 10 0 0 0 0\n",
        HEADER + "Udp: \u0661\u0660 5 10 900 10 0 0 0 0\n",
        HEADER + "Udp: 0x10 5 10 900 10 0 0 0 0\n",
        HEADER + "Udp: 1000\x005 10 900 10 0 0 0 0\n",
        "UdpLite: InDatagrams RcvbufErrors\nUdpLite: 5 6\n",
    ],
)
def test_a_garbled_udp_row_gives_no_counters(tmp_path: Path, snmp: str) -> None:
    assert udp_of(tmp_path, snmp) is None


def test_extra_columns_and_a_third_row_are_ignored(tmp_path: Path) -> None:
    extra = HEADER.rstrip("\n") + " Foo Bar\n" + VALUES.rstrip("\n") + " 1 2\n"
    assert udp_of(tmp_path, extra) == udp_of(tmp_path / "2", HEADER + VALUES)
    assert udp_of(tmp_path / "3", HEADER + VALUES + VALUES) == udp_of(
        tmp_path / "2", HEADER + VALUES
    )
