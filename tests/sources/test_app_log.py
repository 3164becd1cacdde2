"""The application log source (observed.app_events): the journal of the families' units and
their log files, hostile input built at test time, and the facts round trip."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.knowledge.app_messages import app_readers, load_app_families
from sysctl_advisor.knowledge.resources import data_dir
from sysctl_advisor.model.errors import InputError, NotFound
from sysctl_advisor.model.host_facts import Observed, facts_from_data, facts_to_data
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources import app_log, kernel_log_input
from sysctl_advisor.sources.app_log import read_app_log
from sysctl_advisor.sources.facts_file import facts_from_text

READERS = app_readers(load_app_families(data_dir("rules") / "catalog" / "app-messages.yaml"))
REDIS_LOG = "var/log/redis/redis-server.log"
BACKLOG = (
    "1:M 15 Dec 2019 16:48:53.528 # WARNING: The TCP backlog setting of 511 cannot be enforced "
    "because /proc/sys/net/core/somaxconn is set to the lower value of 128."
)
OVERCOMMIT = "1:M 15 Dec 2019 16:48:53.528 # WARNING overcommit_memory is set to 0! Background"


def tree(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def read(root: Path) -> dict[str, dict[str, Any]]:
    found = read_app_log(READERS, root=root)
    assert found is not None
    validate(Observed, {"app_events": found})  # every result is a valid part of the facts
    return {e["family"]: e for e in found}


def test_a_copied_trees_redis_log(tmp_path: Path) -> None:
    text = f"{BACKLOG}\n# Server initialized\n{OVERCOMMIT}\n{OVERCOMMIT}\n"
    events = read(tree(tmp_path, {REDIS_LOG: text.encode()}))
    assert events["redis.tcp-backlog"] == {
        "family": "redis.tcp-backlog",
        "count": 1,
        "example": BACKLOG,
        "unit": "/" + REDIS_LOG,
        "wants": 511,
    }
    assert events["redis.overcommit-memory"]["count"] == 2
    assert "wants" not in events["redis.overcommit-memory"]
    assert "first_seen" not in events["redis.overcommit-memory"]  # a file's lines: no time


def test_nothing_to_read_is_none_and_a_quiet_log_is_empty(tmp_path: Path) -> None:
    assert read_app_log(READERS, root=tree(tmp_path, {})) is None
    root = tree(tmp_path, {"var/log/elasticsearch/elasticsearch.log": b"started\n"})
    assert read_app_log(READERS, root=root) == []


def test_a_copied_tree_never_runs_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(argv: list[str]) -> bytes | None:
        raise AssertionError(f"ran {argv}")

    monkeypatch.setattr(kernel_log_input, "_run", refuse)
    assert read_app_log(READERS, root=tree(tmp_path, {})) is None


def test_a_huge_line_is_cut_before_matching(tmp_path: Path) -> None:
    huge = b"x" * (kernel_log_input.MAX_RAW_LINE * 3) + BACKLOG.encode()
    line = b"y" * 5000 + b" " + BACKLOG.encode()  # the match lies past MAX_LINE characters
    root = tree(tmp_path, {REDIS_LOG: huge + b"\n" + line + b"\n" + OVERCOMMIT.encode() * 40})
    events = read(root)
    assert set(events) == {"redis.overcommit-memory"}
    assert len(events["redis.overcommit-memory"]["example"]) <= 512


def test_nul_bytes_and_non_utf8_do_not_reach_the_example(tmp_path: Path) -> None:
    line = b"\x00\xff\xfe\x1b[31m" + BACKLOG.encode() + b"\x00\x85\xe2\x80\xae tail\r\n"
    events = read(tree(tmp_path, {REDIS_LOG: line}))
    example = events["redis.tcp-backlog"]["example"]
    assert "\x00" not in example and "\x1b" not in example and "\u202e" not in example
    assert "\r" not in example and "\ufffd" in example  # invalid UTF-8, replaced and visible
    assert events["redis.tcp-backlog"]["wants"] == 511


def test_a_symlink_out_of_a_copied_tree_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.log"
    outside.write_text(BACKLOG + "\n")
    root = tree(tmp_path, {})
    (root / "var/log/redis").mkdir(parents=True)
    (root / REDIS_LOG).symlink_to(outside)
    (root / "var/log/redis/redis.log").symlink_to("../../../../outside.log")
    assert read_app_log(READERS, root=root) is None


def test_a_symlink_inside_the_tree_is_read(tmp_path: Path) -> None:
    root = tree(tmp_path, {"var/log/redis/real.log": (BACKLOG + "\n").encode()})
    (root / REDIS_LOG).symlink_to("real.log")
    assert read(root)["redis.tcp-backlog"]["count"] == 1


def test_a_fifo_is_skipped_without_blocking(tmp_path: Path) -> None:
    root = tree(tmp_path, {"var/log/redis/redis.log": (OVERCOMMIT + "\n").encode()})
    os.mkfifo(root / REDIS_LOG)  # nothing ever writes to it: opening it to read would block
    assert set(read(root)) == {"redis.overcommit-memory"}


def test_a_directory_where_the_log_should_be_is_skipped(tmp_path: Path) -> None:
    root = tree(tmp_path, {})
    (root / REDIS_LOG).mkdir(parents=True)
    assert read_app_log(READERS, root=root) is None


class FakeJournal:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, output: bytes | None) -> None:
        self.output = output
        self.calls: list[list[str]] = []
        monkeypatch.setattr(kernel_log_input, "_run", self.run)
        # the live host's log files: none in these tests
        monkeypatch.setattr(app_log, "file_lines", self.no_file)

    def run(self, argv: list[str]) -> bytes | None:
        self.calls.append(argv)
        return self.output

    @staticmethod
    def no_file(path: Path, allowed: object = None) -> tuple[list[bytes], bool]:
        raise NotFound("no such file", path=path)


def entry(message: Any, when: str | None = None, unit: Any = "redis-server.service") -> bytes:
    fields: dict[str, Any] = {"MESSAGE": message, "_SYSTEMD_UNIT": unit}
    if when is not None:
        moment = datetime.fromisoformat(when).replace(tzinfo=timezone.utc)
        fields["__REALTIME_TIMESTAMP"] = str(int(moment.timestamp() * 1e6))
    return json.dumps(fields).encode() + b"\n"


def test_the_live_journal_of_the_families_units(monkeypatch: pytest.MonkeyPatch) -> None:
    newest_first = entry(BACKLOG, "2026-11-22T08:00:00") + entry(
        BACKLOG.replace("511", "1024"), "2026-11-20T08:00:00", "valkey.service"
    )
    journal = FakeJournal(monkeypatch, newest_first)
    events = read(Path("/"))
    backlog = events["redis.tcp-backlog"]
    assert backlog["count"] == 2
    assert (backlog["first_seen"], backlog["last_seen"]) == (
        "2026-11-20T08:00:00Z",
        "2026-11-22T08:00:00Z",
    )
    assert backlog["unit"] == "redis-server.service" and backlog["wants"] == 511  # the newest
    argv = journal.calls[0]
    assert argv[:2] == ["journalctl", "-o"] and "-b" in argv  # the current boot only
    assert "--unit=redis*.service" in argv and "--unit=elasticsearch*.service" in argv
    assert not any(a.startswith("-u") or a == "-k" for a in argv)


@pytest.mark.parametrize(
    "line",
    [
        b"not json at all " + BACKLOG.encode(),
        b"[1, 2, 3]",
        b'{"MESSAGE": null}',
        b'{"MESSAGE": [300, 1, 2]}',
        b'{"MESSAGE": {"nested": "' + BACKLOG.encode() + b'"}}',
        b"[" * 100_000,
        b'{"MESSAGE": "' + BACKLOG.encode() + b'", "MESSAGE": 1}',
    ],
)
def test_hostile_journal_lines_count_nothing(monkeypatch: pytest.MonkeyPatch, line: bytes) -> None:
    FakeJournal(monkeypatch, line + b"\n")
    assert read_app_log(READERS, root=Path("/")) == []


@pytest.mark.parametrize(
    ("unit", "kept"),
    [
        ("redis-server.service", "redis-server.service"),
        ("redis\n.service", None),
        ("-u.service", None),
        ("x" * 300, None),
        (17, None),
        ("r\u00e9dis.service", None),
    ],
)
def test_a_hostile_unit_name_is_dropped(
    monkeypatch: pytest.MonkeyPatch, unit: Any, kept: str | None
) -> None:
    FakeJournal(monkeypatch, entry(BACKLOG, "2026-11-22T08:00:00", unit))
    assert read(Path("/"))["redis.tcp-backlog"].get("unit") == kept


def test_a_non_utf8_journal_message_and_a_time_out_of_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = list(b"\xff\x00" + OVERCOMMIT.encode())
    far = json.dumps({"MESSAGE": raw, "__REALTIME_TIMESTAMP": "9" * 19}).encode()
    FakeJournal(monkeypatch, far + b"\n")
    event = read(Path("/"))["redis.overcommit-memory"]
    assert "last_seen" not in event and "\x00" not in event["example"]


def test_no_journal_on_the_live_host(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeJournal(monkeypatch, None)
    assert read_app_log(READERS, root=Path("/")) is None


FACTS = {
    "memory": {"total": "8 GiB"},
    "observed": {
        "app_events": [
            {
                "family": "redis.tcp-backlog",
                "count": 2,
                "first_seen": "2026-11-20T08:00:00Z",
                "last_seen": "2026-11-22T08:00:00Z",
                "example": BACKLOG,
                "unit": "redis-server.service",
                "wants": 511,
            },
            {"family": "elasticsearch.memory-lock", "count": 1, "example": "memory locking"},
        ]
    },
}


def test_the_facts_round_trip() -> None:
    facts = facts_from_data(FACTS)
    data = facts_to_data(facts)
    assert data["observed"]["app_events"] == FACTS["observed"]["app_events"]
    assert facts_to_data(facts_from_data(data)) == data


def test_the_facts_command_writes_the_events(tmp_path: Path) -> None:
    from sysctl_advisor.commands.facts import facts as facts_command

    root = tree(
        tmp_path,
        {
            "proc/meminfo": b"MemTotal: 8000000 kB\n",
            REDIS_LOG: (BACKLOG + "\n").encode(),
        },
    )
    out = tmp_path / "facts.yaml"
    assert facts_command(root=root, output=out) == 0
    written = facts_from_text(out, out.read_text())
    assert written.observed.app_events is not None
    (event,) = written.observed.app_events
    assert (event.family, event.count, event.wants, event.unit) == (
        "redis.tcp-backlog",
        1,
        511,
        "/" + REDIS_LOG,
    )


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"family": "Redis Backlog"}, "family"),
        ({"count": -1}, "count"),
        ({"count": 10**16}, "count"),
        ({"example": "two\nlines"}, "example"),
        ({"example": "x" * 513}, "example"),
        ({"unit": "redis\x1b.service"}, "unit"),
        ({"unit": "a b"}, "unit"),
        ({"wants": -1}, "wants"),
        ({"wants": 2**63}, "wants"),
        ({"last_seen": "yesterday"}, "last_seen"),
        ({"extra": 1}, "extra"),
    ],
)
def test_a_bad_event_in_a_facts_file_is_one_line(
    tmp_path: Path, event: dict[str, Any], field: str
) -> None:
    good = {"family": "redis.tcp-backlog", "count": 1, "example": "x"}
    path = tmp_path / "facts.yaml"
    text = json.dumps({"memory": {"total": 1 << 30}, "observed": {"app_events": [good | event]}})
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        facts_from_text(path, text)
    assert f"observed.app_events.0.{field}" in str(caught.value)
    assert "\n" not in str(caught.value)
