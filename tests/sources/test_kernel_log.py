"""The kernel log source: counts, first/last seen and examples from every log format and era,
the live host's order of sources, hostile input, and this machine's own log."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.knowledge.kernel_messages import load_message_families, matchers
from sysctl_advisor.knowledge.resources import data_dir
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import Observed
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources import kernel_log, kernel_log_input, kernel_log_lines
from sysctl_advisor.sources.kernel_log import read_kernel_log
from tests.conftest import HANG_SECONDS, TESTS

FIXTURES = TESTS / "fixtures" / "kernel-log"
MATCHERS = matchers(load_message_families(data_dir("rules") / "catalog" / "kernel-messages.yaml"))
NOW = datetime(2026, 11, 23, tzinfo=timezone.utc).timestamp()


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def set_timezone(monkeypatch: pytest.MonkeyPatch, zone: str) -> None:
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    kernel_log_lines._local_time.cache_clear()


@pytest.fixture(autouse=True)
def in_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Syslog and dmesg -T times are local: the tests fix the zone, then restore it."""
    set_timezone(monkeypatch, "UTC")
    yield
    monkeypatch.undo()
    time.tzset()
    kernel_log_lines._local_time.cache_clear()


def read(path: Path, **options: Any) -> dict[str, Any]:
    result = read_kernel_log(MATCHERS, path=path, now=NOW, **options)
    assert result is not None
    validate(Observed, result)  # every result is a valid part of the facts
    return result


def events(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["family"]: e for e in result["kernel_events"]}


def test_syslog_of_a_2_6_kernel() -> None:
    result = read(FIXTURES / "syslog-2.6.log")
    found = events(result)
    assert {f: e["count"] for f, e in found.items()} == {
        "tcp.syn-flood": 3,
        "tcp.out-of-socket-memory": 1,  # myapp's own "Out of socket memory" is not the kernel's
        "tcp.too-many-orphans": 1,
        "mm.page-allocation-failure": 1,
        "netfilter.conntrack-table-full": 3,
        "neigh.table-overflow": 1,
        "tcp.time-wait-overflow": 1,
    }
    syn = found["tcp.syn-flood"]
    # out of order in the file: first/last are the earliest and latest times, in 2026 (no year
    # in the line: the latest year not in the future of NOW)
    assert syn["first_seen"] == "2026-11-02T08:00:00Z"
    assert syn["last_seen"] == "2026-11-20T03:15:07Z"
    assert syn["example"] == "possible SYN flooding on port 80. Sending cookies."
    # klogd's [uptime] is not part of the message
    assert found["mm.page-allocation-failure"]["example"] == (
        "java: page allocation failure. order:0, mode:0x20"
    )
    assert result["kernel_log"] == {"source": str(FIXTURES / "syslog-2.6.log"), "lines": 12}
    # one example per family, in the catalog's order, for the rules that read kernel_messages
    assert result["kernel_messages"] == [e["example"] for e in result["kernel_events"]]
    assert [e["family"] for e in result["kernel_events"]] == [f for f in MATCHERS if f in found]


def test_rfc3339_syslog_of_a_3_x_kernel() -> None:
    found = events(read(FIXTURES / "kern-3.x.log"))
    assert {f: e["count"] for f, e in found.items()} == {
        "tcp.syn-flood": 2,
        "tcp.too-many-orphans": 1,
        "tcp.out-of-memory": 2,
        "mm.page-allocation-failure": 1,
    }
    syn = found["tcp.syn-flood"]
    assert (syn["first_seen"], syn["last_seen"]) == ("2026-11-22T08:00:00Z", "2026-11-22T08:05:00Z")
    assert syn["example"] == (
        "TCP: TCPv6: Possible SYN flooding on port 5432. Dropping request.  Check SNMP counters."
    )
    assert found["tcp.out-of-memory"]["last_seen"] == "2026-11-22T09:00:02Z"


def test_dmesg_of_a_5_x_kernel_has_no_wall_clock_times() -> None:
    result = read(FIXTURES / "dmesg-5.x.txt")
    found = events(result)
    assert {f: e["count"] for f, e in found.items()} == {
        "tcp.syn-flood": 2,
        "netfilter.conntrack-table-full": 2,  # the expectation table line is not one
        "mm.page-allocation-failure": 1,
        "neigh.table-overflow": 1,
    }
    assert all("first_seen" not in e and "last_seen" not in e for e in found.values())
    assert found["tcp.syn-flood"]["example"] == (
        "TCP: request_sock_TCPv6: Possible SYN flooding on port 443. Dropping request.  "
        "Check SNMP counters."
    )
    assert result["kernel_log"]["lines"] == 10


def test_a_negative_window_is_bad_input() -> None:
    with pytest.raises(InputError, match="--since: must not be negative"):
        read_kernel_log(MATCHERS, path=FIXTURES / "dmesg-5.x.txt", since_seconds=-1)


def test_a_window_cannot_be_applied_to_seconds_since_boot() -> None:
    result = read(FIXTURES / "dmesg-5.x.txt", since_seconds=3600)
    assert "since" not in result["kernel_log"]  # every line counted, and the log says so
    assert result["kernel_log"]["lines"] == 10


def test_dmesg_t_times_are_local_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    found = events(read(FIXTURES / "dmesg-T.txt"))
    assert found["tcp.syn-flood"]["count"] == 2
    assert found["tcp.syn-flood"]["first_seen"] == "2026-11-22T10:00:00Z"
    assert found["tcp.syn-flood"]["example"] == (
        "TCP: request_sock_TCP: Possible SYN flooding on port 0.0.0.0:7070. Sending cookies."
    )
    set_timezone(monkeypatch, "CET-1")  # POSIX: one hour east of UTC, no DST
    found = events(read(FIXTURES / "dmesg-T.txt"))
    assert found["tcp.syn-flood"]["last_seen"] == "2026-11-22T09:30:00Z"


def test_further_lines_of_a_message_take_its_time(tmp_path: Path) -> None:
    path = tmp_path / "dmesg-T.txt"
    path.write_text(
        "[Sun Nov 22 10:00:00 2026] swapper/0: page allocation failure: order:0, mode:0x20\n"
        "[Sun Nov 22 10:05:00 2026] BUG: something\n"
        "                           TCP: too many orphaned sockets\n"
    )
    result = read(path, since_seconds=86400)
    orphans = events(result)["tcp.too-many-orphans"]
    assert orphans["first_seen"] == "2026-11-22T10:05:00Z"
    assert orphans["example"] == "TCP: too many orphaned sockets"
    assert result["kernel_log"]["since"] == "2026-11-22T00:00:00Z"


def test_dmesg_iso_time_format(tmp_path: Path) -> None:
    path = tmp_path / "dmesg-iso.txt"
    path.write_text(
        "2026-11-21T20:25:57,000000+00:00 Linux version 6.18.44\n"
        "2026-11-22T10:00:00,123456+01:00 TCP: out of memory -- consider tuning tcp_mem\n"
    )
    result = read(path)
    assert events(result)["tcp.out-of-memory"]["first_seen"] == "2026-11-22T09:00:00Z"
    assert events(result)["tcp.out-of-memory"]["example"] == (
        "TCP: out of memory -- consider tuning tcp_mem"
    )


def test_journal_json_lines() -> None:
    result = read(FIXTURES / "journal.json")
    found = events(result)
    assert {f: e["count"] for f, e in found.items()} == {
        "tcp.out-of-memory": 1,
        "tcp.syn-flood": 2,
        "mm.page-allocation-failure": 1,  # MESSAGE as an array of bytes (not UTF-8)
    }
    assert found["tcp.syn-flood"]["first_seen"] == "2026-11-22T08:00:00Z"
    assert found["tcp.syn-flood"]["last_seen"] == "2026-11-22T09:00:00Z"
    assert found["tcp.syn-flood"]["example"] == (
        "TCP: request_sock_TCP: Possible SYN flooding on port 0.0.0.0:80. Sending cookies."
    )
    assert found["mm.page-allocation-failure"]["example"] == (
        "\ufffdswapper/0: page allocation failure: order:0, mode:0x820(GFP_ATOMIC), "
        "nodemask=(null),cpuset=/,mems_allowed=0\ufffd"
    )
    # five kernel entries (one with a null MESSAGE); the syslog entry and the non-JSON line
    # are not kernel lines
    assert result["kernel_log"]["lines"] == 5


def test_since_keeps_the_window() -> None:
    week = 7 * 86400
    result = read(FIXTURES / "journal.json", since_seconds=week)
    assert "tcp.out-of-memory" not in events(result)  # 2026-11-10 is 13 days before NOW
    assert result["kernel_log"]["since"] == "2026-11-16T00:00:00Z"
    assert result["kernel_log"]["lines"] == 4
    result = read(FIXTURES / "syslog-2.6.log", since_seconds=2 * 86400)
    assert "tcp.syn-flood" not in events(result)  # all three are older than two days
    assert events(result)["netfilter.conntrack-table-full"]["count"] == 3
    assert result["kernel_log"]["since"] == "2026-11-21T00:00:00Z"
    assert result["kernel_log"]["lines"] == 7  # the kernel lines of Nov 21


def test_a_syslog_year_is_the_latest_not_in_the_future(tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_text(
        "Dec 31 23:59:00 h kernel: TCP: too many orphaned sockets\n"
        "Jan  1 00:10:00 h kernel: TCP: too many orphaned sockets\n"
    )
    new_year = datetime(2027, 1, 1, 0, 30, tzinfo=timezone.utc).timestamp()
    result = read_kernel_log(MATCHERS, path=path, now=new_year)
    assert result is not None
    orphans = events(result)["tcp.too-many-orphans"]
    assert (orphans["first_seen"], orphans["last_seen"]) == (
        "2026-12-31T23:59:00Z",
        "2027-01-01T00:10:00Z",
    )
    # read before midnight (a clock a few minutes behind the logging host): still next year
    before = datetime(2026, 12, 31, 23, 59, 30, tzinfo=timezone.utc).timestamp()
    result = read_kernel_log(MATCHERS, path=path, now=before)
    assert result is not None
    assert events(result)["tcp.too-many-orphans"]["last_seen"] == "2027-01-01T00:10:00Z"
    # a Feb 29 goes back to the last leap year
    path.write_text("Feb 29 12:00:00 h kernel: TCP: too many orphaned sockets\n")
    result = read_kernel_log(MATCHERS, path=path, now=NOW)
    assert result is not None
    assert events(result)["tcp.too-many-orphans"]["first_seen"] == "2024-02-29T12:00:00Z"


def test_syslog_times_are_local(monkeypatch: pytest.MonkeyPatch) -> None:
    set_timezone(monkeypatch, "CET-1")
    syn = events(read(FIXTURES / "syslog-2.6.log"))["tcp.syn-flood"]
    assert syn["last_seen"] == "2026-11-20T02:15:07Z"


# --- hostile input -------------------------------------------------------------------------


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        read_kernel_log(MATCHERS, path=fifo)
    assert time.monotonic() - started < HANG_SECONDS
    assert caught.value.field == "--kernel-log"
    assert "not a regular file" in str(caught.value)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda d: d, "is a directory"),
        (lambda d: d / "missing.log", "no such file"),
        (lambda d: Path("/dev/zero"), "not a regular file"),
    ],
)
def test_an_unreadable_kernel_log_is_one_line(tmp_path: Path, make: Any, words: str) -> None:
    with pytest.raises(InputError) as caught:
        read_kernel_log(MATCHERS, path=make(tmp_path))
    assert caught.value.field == "--kernel-log"
    assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_file_without_read_permission(tmp_path: Path) -> None:
    path = tmp_path / "secret.log"
    path.write_text("Out of socket memory\n")
    path.chmod(0)
    with pytest.raises(InputError, match="cannot read: Permission denied"):
        read_kernel_log(MATCHERS, path=path)


def test_an_empty_file_is_read_with_nothing_found(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    result = read(path)
    assert result["kernel_events"] == [] and result["kernel_messages"] == []
    assert result["kernel_log"]["lines"] == 0


def test_control_characters_do_not_reach_the_example(tmp_path: Path) -> None:
    path = tmp_path / "dmesg.txt"
    path.write_bytes(
        b"[1.0] \x1b[31mOut of socket memory\x1b[0m\x07\x00 \xe2\x80\xae evil\r\tend\n"
        b"[2.0] TCP: too many orphaned sockets\x85\xff\n"
    )
    found = events(read(path))
    example = found["tcp.out-of-socket-memory"]["example"]
    assert example.isprintable()
    assert example.startswith("\\x1b[31mOut of socket memory\\x1b[0m\\x07\\x00 \\u202e evil")
    assert found["tcp.too-many-orphans"]["example"].isprintable()


def test_a_huge_line_is_cut_before_matching(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with path.open("wb") as out:
        out.write(b"[1.0] page allocation failure " + b"A" * (20 * 1024 * 1024) + b"\n")
        out.write(b"[2.0] " + b"B" * 5000 + b" Out of socket memory\n")  # past MAX_LINE
        out.write(b"[3.0] TCP: too many orphaned sockets\n")
    started = time.monotonic()
    result = read(path)
    assert time.monotonic() - started < HANG_SECONDS
    found = events(result)
    assert found["mm.page-allocation-failure"]["count"] == 1
    assert len(found["mm.page-allocation-failure"]["example"]) <= kernel_log_lines.MAX_EXAMPLE
    assert "tcp.out-of-socket-memory" not in found
    assert found["tcp.too-many-orphans"]["count"] == 1  # the line after the huge one is read
    assert result["kernel_log"]["lines"] == 3


def test_counting_is_linear_in_near_misses(tmp_path: Path) -> None:
    """Lines built to make a naive matcher backtrack: prefixes of every substring repeated."""
    prefixes = " ".join(s[:-1] for subs in MATCHERS.values() for s in subs)
    line = (prefixes + " ") * (kernel_log_lines.MAX_LINE // len(prefixes) + 1)
    path = tmp_path / "near.log"
    path.write_text(("[1.0] " + line[: kernel_log_lines.MAX_LINE] + "\n") * 10_000)
    started = time.monotonic()
    result = read(path)
    assert time.monotonic() - started < HANG_SECONDS
    assert result["kernel_events"] == []
    assert result["kernel_log"]["lines"] == 10_000


def test_only_the_newest_lines_of_a_log_of_many_short_lines_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """66 MB of `ab` lines once took two minutes and 1.3 GB: the line count is bounded too."""
    monkeypatch.setattr(kernel_log_input, "MAX_LOG_LINES", 1000)
    path = tmp_path / "short-lines.log"
    path.write_text(
        "[1.0] Out of socket memory\n" * 5
        + "ab\n" * 5000
        + "[2.0] TCP: too many orphaned sockets\n"
    )
    result = read(path)
    found = events(result)
    assert result["kernel_log"]["lines"] == 1000
    assert "1,000 lines" in result["kernel_log"]["source"]
    assert set(found) == {"tcp.too-many-orphans"}


def test_only_the_end_of_a_long_log_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernel_log_input, "MAX_LOG_BYTES", 200)
    path = tmp_path / "long.log"
    old = "[1.0] Out of socket memory\n" * 20
    path.write_text(old + "[2.0] TCP: too many orphaned sockets\n" * 3)
    result = read(path)
    found = events(result)
    assert result["kernel_log"]["source"] == (
        f"{path} (its newest lines: at most {200 / 2**20:g} MiB, 1,000,000 lines)"
    )
    assert found["tcp.too-many-orphans"]["count"] == 3
    # the cut line at the start of the tail is not counted as a line
    assert result["kernel_log"]["lines"] * len("[1.0] Out of socket memory\n") <= 200


@pytest.mark.parametrize(
    "line",
    [
        "[" * 100_000,
        '{"MESSAGE": [256, 1], "_TRANSPORT": "kernel"}',
        '{"MESSAGE": ["x"], "_TRANSPORT": "kernel"}',
        '{"MESSAGE": {"a": 1}, "__REALTIME_TIMESTAMP": "9' + "9" * 40 + '"}',
        '{"MESSAGE": "Out of socket memory", "__REALTIME_TIMESTAMP": "-5"}',
        '{"MESSAGE": "x", "__REALTIME_TIMESTAMP": 1' + "0" * 5000 + "}",
        '{"MESSAGE": "Out of socket memory", "__REALTIME_TIMESTAMP": "9999999999999999999"}',
        "[1, 2, 3]",
    ],
)
def test_hostile_journal_lines(tmp_path: Path, line: str) -> None:
    path = tmp_path / "journal.json"
    path.write_text('{"MESSAGE": "start", "_TRANSPORT": "kernel"}\n' + line + "\n")
    result = read(path)
    for event in result["kernel_events"]:
        assert "first_seen" not in event  # no time taken from a malformed timestamp


@pytest.mark.parametrize(
    "line",
    [
        "0001-01-01T00:00:00+01:00 h kernel: Out of socket memory",
        "9999-12-31T23:59:59-12:00 h kernel: Out of socket memory",
        "2026-02-30T10:00:00+00:00 h kernel: Out of socket memory",
        "2026-11-22T10:00:00+99:00 h kernel: Out of socket memory",
    ],
)
def test_times_out_of_range_are_dropped(tmp_path: Path, line: str) -> None:
    path = tmp_path / "kern.log"
    path.write_text(line + "\n")
    event = events(read(path))["tcp.out-of-socket-memory"]
    assert event["count"] == 1 and "first_seen" not in event


def test_printk_caller_ids_are_not_part_of_the_message(tmp_path: Path) -> None:
    path = tmp_path / "dmesg.txt"
    path.write_text(
        "[  601.749973][T19113] TCP: request_sock_TCP: Possible SYN flooding on port "
        "127.0.0.1:23456. Sending cookies.\n[  602.1][    C2] Out of socket memory\n"
    )
    found = events(read(path))
    assert found["tcp.syn-flood"]["example"].startswith("TCP: request_sock_TCP:")
    assert found["tcp.out-of-socket-memory"]["example"] == "Out of socket memory"


def test_a_family_list_from_a_hostile_rules_dir(tmp_path: Path) -> None:
    """Empty substrings would match every line; family ids reach the facts as given."""
    path = tmp_path / "k.log"
    path.write_text("[1.0] hello\n")
    result = read_kernel_log({"x.y": ["", "HELLO"]}, path=path, now=NOW)
    assert result is not None and events(result)["x.y"]["count"] == 1
    result = read_kernel_log({"x.y": [""]}, path=path, now=NOW)
    assert result is not None and result["kernel_events"] == []


# --- sources on a copied tree and on the live host -----------------------------------------


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "root"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    root.mkdir(exist_ok=True)
    return root


def test_a_copied_tree_reads_kern_log(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "var/log/kern.log": (FIXTURES / "syslog-2.6.log").read_text(),
            "var/log/messages": "Nov 20 03:14:07 h kernel: TCP: too many orphaned sockets\n",
        },
    )
    result = read_kernel_log(MATCHERS, root=root, now=NOW)
    assert result is not None
    assert result["kernel_log"]["source"] == str(root / "var/log/kern.log")
    assert events(result)["tcp.syn-flood"]["count"] == 3


def test_messages_counts_only_kernel_lines(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "var/log/messages": "Nov 20 03:14:07 h kernel: TCP: too many orphaned sockets\n"
            "Nov 20 03:14:08 h app[1]: TCP: too many orphaned sockets\n"
            "TCP: too many orphaned sockets (not a syslog line)\n"
        },
    )
    result = read_kernel_log(MATCHERS, root=root, now=NOW)
    assert result is not None
    assert result["kernel_log"] == {"source": str(root / "var/log/messages"), "lines": 1}
    assert events(result)["tcp.too-many-orphans"]["count"] == 1


def test_links_out_of_a_copied_tree_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.log"
    outside.write_text("[1.0] Out of socket memory\n")
    root = tree(tmp_path, {})
    (root / "var/log").mkdir(parents=True)
    (root / "var/log/kern.log").symlink_to(outside)
    (root / "var/log/messages").symlink_to("../../../outside.log")
    assert read_kernel_log(MATCHERS, root=root, now=NOW) is None


def test_a_fifo_in_a_copied_tree_is_skipped(tmp_path: Path) -> None:
    root = tree(tmp_path, {"var/log/messages": "Nov 20 03:14:07 h kernel: Out of socket memory\n"})
    os.mkfifo(root / "var/log/kern.log")
    result = read_kernel_log(MATCHERS, root=root, now=NOW)
    assert result is not None
    assert result["kernel_log"]["source"] == str(root / "var/log/messages")


def test_a_copied_tree_never_runs_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(argv: list[str]) -> bytes | None:
        raise AssertionError(f"ran {argv}")

    monkeypatch.setattr(kernel_log_input, "_run", refuse)
    assert read_kernel_log(MATCHERS, root=tree(tmp_path, {}), now=NOW) is None


class FakeHost:
    """The live host's commands and files, faked: what each command prints (None: missing or
    refused), and kern.log/messages redirected into a temporary directory."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        self.outputs: dict[str, bytes | None] = {"journalctl": None, "dmesg": None}
        self.calls: list[list[str]] = []
        monkeypatch.setattr(kernel_log_input, "_run", self.run)
        self.kern_log = tmp_path / "kern.log"
        self.messages = tmp_path / "messages"
        monkeypatch.setattr(kernel_log, "KERN_LOG", str(self.kern_log).lstrip("/"))
        monkeypatch.setattr(kernel_log, "MESSAGES", str(self.messages).lstrip("/"))

    def run(self, argv: list[str]) -> bytes | None:
        self.calls.append(argv)
        return self.outputs[argv[0]]


def journal_line(message: str, when: str) -> bytes:
    stamp = str(int(utc(when) * 1e6))
    entry = {"__REALTIME_TIMESTAMP": stamp, "_TRANSPORT": "kernel", "MESSAGE": message}
    return json.dumps(entry).encode() + b"\n"


def test_live_host_prefers_the_journal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    host = FakeHost(monkeypatch, tmp_path)
    host.outputs["journalctl"] = journal_line("Out of socket memory", "2026-11-22T08:00:00")
    host.outputs["dmesg"] = b"[1.0] TCP: too many orphaned sockets\n"
    host.kern_log.write_text("Nov 20 03:14:07 h kernel: TCP: too many orphaned sockets\n")
    result = read_kernel_log(MATCHERS, now=NOW)
    assert result is not None
    assert result["kernel_log"] == {"source": "journal", "lines": 1}
    assert [e["family"] for e in result["kernel_events"]] == ["tcp.out-of-socket-memory"]
    argv = host.calls[0]
    assert argv[0] == "journalctl" and "-k" in argv  # the current boot
    assert {"-o", "json", "--no-pager"} <= set(argv)


def test_live_journal_with_a_window_covers_every_boot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    host = FakeHost(monkeypatch, tmp_path)
    host.outputs["journalctl"] = journal_line(
        "Out of socket memory", "2026-11-22T08:00:00"
    ) + journal_line("Out of socket memory", "2026-11-01T08:00:00")
    result = read_kernel_log(MATCHERS, now=NOW, since_seconds=86400)
    assert result is not None
    argv = host.calls[0]
    assert "-k" not in argv and "_TRANSPORT=kernel" in argv
    assert f"--since=@{int(NOW) - 86400}" in argv
    assert result["kernel_log"] == {
        "source": "journal",
        "since": "2026-11-22T00:00:00Z",
        "lines": 1,
    }


def test_live_host_falls_back_to_kern_log_then_messages_then_dmesg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    host = FakeHost(monkeypatch, tmp_path)
    host.outputs["journalctl"] = b""  # runs, but holds no kernel line (a container)
    host.outputs["dmesg"] = b"[1.0] TCP: too many orphaned sockets\n"
    host.messages.write_text("Nov 20 03:14:07 h kernel: Out of socket memory\n")
    host.kern_log.write_text("Nov 20 03:14:07 h kernel: TCP: time wait bucket table overflow\n")
    result = read_kernel_log(MATCHERS, now=NOW)
    assert result is not None and result["kernel_log"]["source"] == str(host.kern_log)
    host.kern_log.unlink()
    result = read_kernel_log(MATCHERS, now=NOW)
    assert result is not None and result["kernel_log"]["source"] == str(host.messages)
    host.messages.unlink()
    result = read_kernel_log(MATCHERS, now=NOW)
    assert result is not None and result["kernel_log"]["source"] == "dmesg"
    assert events(result)["tcp.too-many-orphans"]["count"] == 1
    # dmesg refused (kernel.dmesg_restrict = 1 without CAP_SYSLOG): the empty journal was read
    host.outputs["dmesg"] = None
    result = read_kernel_log(MATCHERS, now=NOW)
    assert result == {
        "kernel_events": [],
        "kernel_log": {"source": "journal", "lines": 0},
        "kernel_messages": [],
    }
    host.outputs["journalctl"] = None  # no journalctl either: no kernel log at all
    assert read_kernel_log(MATCHERS, now=NOW) is None


def test_live_dmesg_window_uses_the_monotonic_clock(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    host = FakeHost(monkeypatch, tmp_path)
    monkeypatch.setattr(kernel_log.time, "monotonic", lambda: 10_000.0)
    host.outputs["dmesg"] = (
        b"[ 5000.000000] Out of socket memory\n"
        b"               TCP: too many orphaned sockets (a further line, as dmesg indents it)\n"
        b"[ 9500.000000] Out of socket memory\n"
        b"               second line of the new message\n"
    )
    result = read_kernel_log(MATCHERS, now=NOW, since_seconds=1000)
    assert result is not None
    # every line has a time (its own or its message's): the window applies to all of them
    assert result["kernel_log"] == {"source": "dmesg", "since": "2026-11-22T23:43:20Z", "lines": 2}
    assert [e["family"] for e in result["kernel_events"]] == ["tcp.out-of-socket-memory"]
    assert events(result)["tcp.out-of-socket-memory"]["count"] == 1


def test_commands_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kernel_log_input._run(["no-such-command-for-sysctl-advisor"]) is None
    assert kernel_log_input._run(["false"]) is None  # failed without output: refused
    assert kernel_log_input._run(["true"]) == b""  # ran and printed nothing
    # a failing journalctl may still print entries (a corrupt journal file): they are kept
    assert kernel_log_input._run(["sh", "-c", "echo one; echo two; exit 1"]) == b"one\ntwo\n"
    monkeypatch.setattr(kernel_log_input, "MAX_LOG_BYTES", 10_000)
    output = kernel_log_input._run(["yes", "Out of socket memory"])  # never ends by itself
    assert output is not None and 0 < len(output) <= 10_000 and output.endswith(b"\n")
    monkeypatch.setattr(kernel_log_input, "COMMAND_TIMEOUT", 0.5)
    started = time.monotonic()
    assert kernel_log_input._run(["sleep", "600"]) is None  # killed at the timeout, not at its end
    assert time.monotonic() - started < HANG_SECONDS


def test_this_machines_kernel_log() -> None:
    """The real journal, kern.log or dmesg of the machine running the tests."""
    result = read_kernel_log(MATCHERS, since_seconds=30 * 86400)
    if result is None:
        pytest.skip("no kernel log readable here (no journal, kern.log, messages or dmesg)")
    observed = validate(Observed, result)
    assert observed.kernel_log is not None and observed.kernel_events is not None
    source = observed.kernel_log.source
    assert source in {"journal", "dmesg"} or source.startswith(
        ("/var/log/kern.log", "/var/log/messages")
    )
    assert {e.family for e in observed.kernel_events} <= set(MATCHERS)
    assert all(e.count >= 1 for e in observed.kernel_events)
    assert observed.kernel_messages == [e.example for e in observed.kernel_events]
    result = read_kernel_log(MATCHERS)  # without a window: the current boot
    assert result is not None
    validate(Observed, result)
