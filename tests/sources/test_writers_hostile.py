"""What a hostile host can put in a write the watch or the persistent record saw: a process
name of escapes, a cgroup named with bytes that are no UTF-8, a written value holding NULs, an
interface whose name no key can hold, a record's map rewritten with counts and times past any
bound. Each is kept escaped and bounded, or counted in `dropped`; nothing fails."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from sysctl_advisor.model.model_base import plain_data, validate
from sysctl_advisor.model.sysctl_writers import ObservedWrite, SysctlWriters
from sysctl_advisor.sources import sysctl_provenance, sysctl_record, sysctl_watch, write_readback
from sysctl_advisor.sources.bpf import program
from sysctl_advisor.sources.observed_writes import Places, observed_writes
from sysctl_advisor.sources.sysctl_last_writes import LastWrite
from sysctl_advisor.sources.sysctl_watch import SysctlWrite, parse
from tests.conftest import HANG_SECONDS
from tests.sources.test_observed_writes import HOST_NETNS, _write

ODD_INTERFACE_KEY = "net.ipv4.conf.e\x1b[1m\\xff@x/y.rp_filter"  # `ip link add name e<ESC>[1m…`


def _places(tmp_path: Path) -> Places:
    (tmp_path / "cgroup").mkdir()
    (tmp_path / "proc").mkdir()
    return Places(
        cgroup_root=tmp_path / "cgroup",
        own_netns=HOST_NETNS,
        proc=tmp_path / "proc",
        pods=tmp_path / "pods",
        containers=tmp_path / "containers",
    )


def _one(write: SysctlWrite, places: Places) -> ObservedWrite:
    [observed] = observed_writes([write], places)
    return validate(ObservedWrite, plain_data(observed))


def test_a_process_name_cut_to_fit_says_so_and_names_no_other_process(tmp_path: Path) -> None:
    places = _places(tmp_path)
    # "tuned" and a right-to-left override: the override's escape does not fit in 15
    assert _one(_write(comm="tuned\u202e"), places).comm == "tuned…"
    # 15 bytes that are no UTF-8, as the watch decodes them: never an escape cut in two
    comm = _one(_write(comm="\\xff" * 15), places).comm
    assert comm == "\\xff\\xff\\xff…"
    # a name that fits is as it was
    assert _one(_write(comm="\x1b[31m\nrm"), places).comm == "\\x1b[31m\\x0arm"


def test_the_value_before_shows_a_vectors_tabs_as_spaces(tmp_path: Path) -> None:
    places = _places(tmp_path)
    write = _one(_write(key="net.ipv4.tcp_rmem", old="4096\t131072\t6291456\n"), places)
    assert write.old == "4096 131072 6291456"
    assert _one(_write(old="1\x1b[2J\n"), places).old == "1\\x1b[2J"


def test_a_cgroup_named_with_bytes_that_are_no_utf8_shows_those_bytes(tmp_path: Path) -> None:
    places = _places(tmp_path)
    odd = os.path.join(os.fsencode(tmp_path / "cgroup"), b"evil\xff\xfe.service")
    os.mkdir(odd)
    write = _one(_write(cgroup_id=os.stat(odd).st_ino), places)
    assert (write.cgroup, write.unit) == ("/evil\\xff\\xfe.service", None)


def test_a_written_value_holding_nuls_is_shown_whole() -> None:
    new = b"4096 131072 6291456\x00\x1b[2Jjunk"
    record = program.EVENT.pack(
        1_000_000_000, (4242 << 32) | 4242, 25, 0, 20, 5, len(new), -1, -1, 0, 0, 0,
        b"sh", b"", 0, b"net/ipv4/tcp_rmem", b"4096\t131072\t6291456\n", new,
    )  # fmt: skip
    event = parse(record, frozenset(), 0)
    assert event.new == "4096 131072 6291456\x00\x1b[2Jjunk"
    assert event.old == "4096\t131072\t6291456\n"  # a handler's text ends at its NUL


def _record_reading(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    writes: list[LastWrite],
    dropped: int,
    since: float = 1_800_000_000.0,
) -> None:
    places = sysctl_record.Places(
        pin_dir=tmp_path / "pins",
        unit_dir=tmp_path / "units",
        cgroup_root=_places(tmp_path).cgroup_root,  # type: ignore[arg-type]
        command=(),
    )
    monkeypatch.setattr(sysctl_provenance.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sysctl_record.Places, "default", classmethod(lambda cls: places))
    monkeypatch.setattr(
        sysctl_record,
        "read_record",
        lambda _: sysctl_record.Record(since, tuple(writes), dropped),
    )


def test_a_record_of_a_key_no_key_can_name_counts_its_writes_dropped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    writes = [
        LastWrite(_write(key=ODD_INTERFACE_KEY), 3),
        LastWrite(_write(), 2),
    ]
    _record_reading(monkeypatch, tmp_path, writes, 1)
    record = sysctl_provenance.recorded()
    assert record is not None
    assert [(w.key, w.count) for w in record.writes] == [("net.core.somaxconn", 2)]
    assert record.dropped == 1 + 3


def test_a_record_rewritten_past_every_bound_is_read_within_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """bpffs is root's: a colleague with CAP_BPF can write the pinned map."""
    writes = [LastWrite(_write(time=1e300), 2**64 - 1), LastWrite(_write(time=-1e20), 0)]
    _record_reading(monkeypatch, tmp_path, writes, 2**64 - 1)
    record = sysctl_provenance.recorded()
    assert record is not None
    assert [w.count for w in record.writes] == [2**32, 1]  # the most the facts hold
    assert record.dropped == 2**63
    assert all(w.time.endswith("Z") for w in record.writes)
    validate(SysctlWriters, plain_data(record))  # the facts written read back


@pytest.mark.parametrize("since", [1e300, -1e20, float("nan")])
def test_a_pin_time_past_any_date_is_no_since(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, since: float
) -> None:
    """A pin's time is its inode's: root may set it (touch -d) past what a date holds."""
    _record_reading(monkeypatch, tmp_path, [LastWrite(_write(), 1)], 0, since=since)
    record = sysctl_provenance.recorded()
    assert record is not None and record.since is None
    # still attached: the time is no date, the record did not end
    assert (
        record.provenance == "record (since a time that is no date: its pin's time was set by hand)"
    )
    assert [w.key for w in record.writes] == ["net.core.somaxconn"]


def test_a_watch_counts_a_write_no_key_can_name_as_dropped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class Events:
        dropped = 2
        left_out = ()

        def __iter__(self) -> Iterator[SysctlWrite]:
            return iter([_write(key=ODD_INTERFACE_KEY), _write()])

    @contextlib.contextmanager
    def watch(fd: int, seconds: int) -> Iterator[Events]:
        yield Events()

    monkeypatch.setattr(sysctl_provenance, "why_not", lambda _: None)
    monkeypatch.setattr(sysctl_watch, "cgroup2_mount", lambda *_: tmp_path)
    monkeypatch.setattr(sysctl_watch, "watch", watch)
    record = sysctl_provenance.watched(1)
    assert [w.key for w in record.writes] == ["net.core.somaxconn"]
    assert record.dropped == 2 + 1


def test_a_namespace_per_write_is_read_back_for_so_many_namespaces(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A host that makes a network namespace for each write: the read-back (a thread entering
    each in turn) stops at a bound; the writes of the namespaces left are not known."""
    places = _places(tmp_path)
    namespaces = 1100
    for pid in range(1, namespaces + 1):
        (places.proc / str(pid) / "ns").mkdir(parents=True)
        (places.proc / str(pid) / "ns" / "net").symlink_to(f"net:[{4026540000 + pid}]")
    entered: list[int] = []

    def read_in_namespace(
        proc: Path, holder: int, inode: int, keys: list[str]
    ) -> dict[str, str | None]:
        entered.append(inode)
        return dict.fromkeys(keys, "4096\n")

    monkeypatch.setattr(write_readback, "read_in_namespace", read_in_namespace)
    writes = [_write(netns=4026540000 + pid) for pid in range(1, namespaces + 1)]
    observed = observed_writes(writes, places)
    assert 0 < len(entered) <= 1024
    assert [w.applied for w in observed].count(False) == len(entered)  # 4096 there: refused
    assert [w.applied for w in observed].count(None) == namespaces - len(entered)


def test_a_watch_holds_no_more_writes_than_the_facts_keep(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A process writing in a loop for the whole window: the writes past the facts' bound are
    counted as they come, never held (an hour of them would fill memory)."""
    seen = 5000
    alive: weakref.WeakSet[SysctlWrite] = weakref.WeakSet()
    most = [0]

    class Events:
        dropped = 0
        left_out = ()

        def __iter__(self) -> Iterator[SysctlWrite]:
            for index in range(seen):
                write = _write(monotonic_ns=index)
                alive.add(write)
                most[0] = max(most[0], len(alive))
                yield write
                del write

    @contextlib.contextmanager
    def watch(fd: int, seconds: int) -> Iterator[Events]:
        yield Events()

    monkeypatch.setattr(sysctl_provenance, "MAX_WRITES", 10)
    monkeypatch.setattr(sysctl_provenance, "why_not", lambda _: None)
    monkeypatch.setattr(sysctl_watch, "cgroup2_mount", lambda *_: tmp_path)
    monkeypatch.setattr(sysctl_watch, "watch", watch)
    record = sysctl_provenance.watched(1)
    assert len(record.writes) == 10 and record.dropped == seen - 10
    assert most[0] <= 10 + 2


ODD_WRITER = r"""
import ctypes, os, subprocess
odd = b"e\x1b[1m\xff@x.y"  # a link's name may hold anything but '/', ':' and blanks
subprocess.run([b"ip", b"link", b"add", b"name", odd, b"type", b"bridge"], check=True)
ctypes.CDLL(None).prctl(15, b"\x1b[31m\nrm\xe2\x80\xae-rf", 0, 0, 0)  # PR_SET_NAME
def write(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    except OSError:
        pass  # refused: the hook saw it
    finally:
        os.close(fd)
write(b"/proc/sys/net/ipv4/conf/" + odd + b"/rp_filter", b"2\n")
write(b"/proc/sys/net/ipv4/tcp_rmem", b"4096 131072 6291456\x00\x1b[2J\n")
"""


def _live_problem() -> str | None:
    from tests.sources.test_sysctl_watch import _problem

    if (problem := _problem()) is not None:
        return problem
    if shutil.which("ip") is None:
        return "needs ip(8) to make a link"
    made = subprocess.run(
        ["unshare", "-n", "ip", "link", "add", "name", "t0", "type", "bridge"],
        capture_output=True,
        check=False,
    )
    return None if made.returncode == 0 else "the kernel makes no bridge link here"


@pytest.mark.skipif(_live_problem() is not None, reason=str(_live_problem()))
def test_a_hostile_writer_on_this_kernel_is_recorded_escaped_and_counted() -> None:
    """A writer in a throwaway cgroup, in a fresh network namespace, named with escapes, that
    writes a key of a link named with odd bytes and a value holding a NUL."""
    from tests.sources.test_sysctl_watch import _host_settings, _own_cgroup

    own = _own_cgroup()
    assert own is not None
    cgroup = own / f"sysctl-advisor-test-{uuid.uuid4().hex[:12]}"
    cgroup.mkdir()
    before = _host_settings()
    done: list[int] = []

    def writer() -> None:
        deadline = time.monotonic() + HANG_SECONDS
        while not sysctl_watch.attached(cgroup) and time.monotonic() < deadline:
            time.sleep(0.02)
        done.append(
            subprocess.run(
                ["unshare", "-n", sys.executable, "-c", ODD_WRITER],
                preexec_fn=lambda: (cgroup / "cgroup.procs").write_text("0"),
                timeout=HANG_SECONDS,
                check=False,
            ).returncode
        )

    thread = threading.Thread(target=writer)
    try:
        thread.start()
        record = sysctl_provenance.watched(3, cgroup)
        thread.join(HANG_SECONDS)
    finally:
        cgroup.rmdir()
    assert done == [0]
    assert _host_settings() == before, "the host's /proc/sys changed"
    validate(SysctlWriters, plain_data(record))
    [write] = record.writes
    assert write.key == "net.ipv4.tcp_rmem"
    assert write.value == "4096 131072 6291456\\x00\\x1b[2J"
    assert write.old is not None and "\\x09" not in write.old and " " in write.old
    assert write.comm == "\\x1b[31m\\x0arm…"
    assert record.dropped == 1  # the link's key: no key can name it
