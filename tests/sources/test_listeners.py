"""The listener reader: sock_diag in a private network namespace against `ss -ltn`, owners
through a /proc tree built at test time, Go detection on ELF files built at test time, and the
java main-class reader."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources.listeners import (
    FIRST_FDS,
    _owners,
    describe_process,
    is_go_binary,
    java_main,
)
from tests.conftest import ROOT
from tests.namespaces import in_namespace, needs_netns


def test_java_main_class_or_jar() -> None:
    assert java_main(["java", "-Xmx1g", "-cp", "a.jar:b.jar", "org.Main", "x"]) == "org.Main"
    assert java_main(["java", "-Dcatalina.base=/x", "-classpath", "b.jar",
                      "org.apache.catalina.startup.Bootstrap", "start"]) == (
        "org.apache.catalina.startup.Bootstrap"
    )  # fmt: skip
    assert java_main(["/usr/bin/java", "-jar", "/opt/app/app.jar"]) == "app.jar"
    assert java_main(["java", "-m", "mod/org.Main"]) == "org.Main"
    assert java_main(["java", "-version"]) is None
    assert java_main([]) is None


def _fake_process(proc: Path, pid: int, comm: str, exe: str, fds: dict[str, str]) -> None:
    directory = proc / str(pid)
    (directory / "fd").mkdir(parents=True)
    (directory / "comm").write_text(comm + "\n")
    os.symlink(exe, directory / "exe")
    (directory / "cmdline").write_bytes(b"\0".join(w.encode() for w in comm.split()) + b"\0")
    for fd, target in fds.items():
        os.symlink(target, directory / "fd" / fd)


def test_owner_is_the_lowest_pid_holding_the_socket(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _fake_process(proc, 120, "nginx", "/usr/sbin/nginx", {"6": "socket:[5001]"})  # a worker
    _fake_process(proc, 100, "nginx", "/usr/sbin/nginx", {"6": "socket:[5001]", "7": "pipe:[9]"})
    _fake_process(proc, 300, "redis-server", "/usr/bin/redis-server", {"3": "socket:[5002]"})
    (proc / "self").mkdir()  # not a pid
    assert _owners({5001, 5002, 5003}, proc) == {5001: 100, 5002: 300}


@pytest.fixture
def readlinks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every descriptor target read, in order, from directories listed as /proc lists them."""
    read: list[str] = []
    real = os.readlink

    def counted(path: str) -> str:
        read.append(target := real(path))
        return target

    monkeypatch.setattr(os, "readlink", counted)
    real_scandir = os.scandir

    class InOrder:  # /proc lists a process's descriptors in order (proc_readfd_common)
        def __init__(self, path: Any) -> None:
            with real_scandir(path) as entries:
                self.entries = sorted(
                    entries, key=lambda e: int(e.name) if e.name.isdigit() else -1
                )

        def __enter__(self) -> list[os.DirEntry[str]]:
            return self.entries

        def __exit__(self, *_: object) -> None:
            return None

    monkeypatch.setattr(os, "scandir", InOrder)
    return read


def test_owners_stop_reading_descriptors_once_every_listener_is_found(
    tmp_path: Path, readlinks: list[str]
) -> None:
    """A server holding thousands of connections besides its listener: once every listener's
    owner is known no other descriptor is read, so `facts` on a namespace full of connections
    takes what it takes on an idle one (benchmarks/facts_many_sockets.py)."""
    proc = tmp_path / "proc"
    connections = {str(fd): f"socket:[{9000 + fd}]" for fd in range(4, 2004)}
    _fake_process(proc, 100, "nginx", "/usr/sbin/nginx", {"3": "socket:[5001]", **connections})
    _fake_process(proc, 200, "redis-server", "/usr/bin/redis-server", connections)
    assert _owners({5001}, proc) == {5001: 100}
    assert readlinks[-1] == "socket:[5001]"


def test_servers_full_of_connections_are_read_only_to_their_first_descriptors(
    tmp_path: Path, readlinks: list[str]
) -> None:
    """Three servers, each its listener at fd 3 and 1,000 connections after it: the owners are
    found without reading one connection past each server's first descriptors, where servers
    open their listeners."""
    proc = tmp_path / "proc"
    for pid, inode in ((100, 5001), (200, 5002), (300, 5003)):
        connections = {str(fd): f"socket:[{pid * 10_000 + fd}]" for fd in range(4, 1004)}
        _fake_process(
            proc, pid, "server", "/usr/sbin/server", {"3": f"socket:[{inode}]", **connections}
        )
    assert _owners({5001, 5002, 5003}, proc) == {5001: 100, 5002: 200, 5003: 300}
    read = [int(target[8:-1]) % 10_000 for target in readlinks if int(target[8:-1]) > 9_999]
    assert read and max(read) < FIRST_FDS


def test_a_listener_opened_late_is_still_found_and_the_lowest_pid_owns_a_shared_one(
    tmp_path: Path, readlinks: list[str]
) -> None:
    proc = tmp_path / "proc"
    # socket 8 opened after many others; pid 11 a worker sharing its master's listener
    _fake_process(proc, 10, "server", "/usr/sbin/server", {"3": "socket:[7]", "5000": "socket:[8]"})
    _fake_process(proc, 11, "server", "/usr/sbin/server", {"3": "socket:[7]"})
    assert _owners({7, 8}, proc) == {7: 10, 8: 10}


def test_process_description_keeps_no_arguments(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _fake_process(proc, 7, "redis-server", "/usr/bin/redis-server (deleted)", {})
    (proc / "7" / "cmdline").write_bytes(b"redis-server\0--requirepass\0s3cret\0")
    described = describe_process(proc / "7", 7)
    assert described == {"pid": 7, "command": "redis-server", "executable": "redis-server"}
    assert "s3cret" not in json.dumps(described)


def test_hostile_process_names_are_made_printable(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    hostile = "evil\x1b[2J\nname"
    _fake_process(proc, 9, "x", "/tmp/" + hostile.replace("/", ""), {})
    (proc / "9" / "comm").write_text(hostile)
    described = describe_process(proc / "9", 9)
    assert described is not None
    assert described["command"].isprintable() and described["executable"].isprintable()
    assert described["command"] == "evil\\x1b[2J\\x0aname"  # visible, as every output escapes
    validate(HostFacts,
        {"memory": {"total": "1 GiB"}, "listeners": [
            {"address": "0.0.0.0", "port": 1, "backlog": 1, "queue": 0, "process": described}
        ]}
    )  # fmt: skip


def _elf_with_section(tmp_path: Path, section: str | None) -> Path:
    source = tmp_path / "main.c"
    source.write_text("int main(void) { return 0; }\n")
    binary = tmp_path / f"prog-{section or 'plain'}".replace(".", "_")
    subprocess.run(["gcc", "-o", str(binary), str(source)], check=True)
    if section:
        payload = tmp_path / "payload"
        payload.write_bytes(b"\xff Go buildinf:" + bytes(16))
        subprocess.run(
            ["objcopy", "--add-section", f"{section}={payload}", str(binary)], check=True
        )
    return binary


@pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("objcopy")), reason="needs gcc and objcopy"
)
def test_go_binaries_are_told_by_their_sections(tmp_path: Path) -> None:
    assert is_go_binary(_elf_with_section(tmp_path, ".go.buildinfo"))
    assert is_go_binary(_elf_with_section(tmp_path, ".note.go.buildid"))
    assert not is_go_binary(_elf_with_section(tmp_path, None))
    assert not is_go_binary(Path(sys.executable))


def test_truncated_or_hostile_elf_files_are_not_go(tmp_path: Path) -> None:
    cases = {
        "empty": b"",
        "magic only": b"\x7fELF",
        "header only": b"\x7fELF\x02\x01\x01" + bytes(9) + bytes(48),
        # a section table claimed far beyond the file, and a huge section count
        "bad offsets": b"\x7fELF\x02\x01\x01" + bytes(9)
        + (2).to_bytes(2, "little") * 2 + bytes(4) + bytes(8) + bytes(8)
        + (2**62).to_bytes(8, "little") + bytes(4) + (64).to_bytes(2, "little") * 3
        + (65535).to_bytes(2, "little") * 2 + (1).to_bytes(2, "little"),
        "random": os.urandom(4096),
    }  # fmt: skip
    for name, data in cases.items():
        path = tmp_path / name.replace(" ", "-")
        path.write_bytes(data)
        assert not is_go_binary(path), name
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert not is_go_binary(fifo)  # not opened for reading: it would block
    assert not is_go_binary(tmp_path / "missing")


# A server with two listeners and one waiting connection; the reader and `ss -ltn` must agree.
SCRIPT = """
python3 - <<'PY' &
import socket, time
a = socket.socket(); a.bind(("127.0.0.1", 7000)); a.listen(1000)
b = socket.socket(socket.AF_INET6); b.bind(("::", 7001)); b.listen(5)
c = socket.create_connection(("127.0.0.1", 7000))
open("{ready}", "w").close()
time.sleep(30)
PY
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
i=0; while [ ! -e "{ready}" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
echo "== ss"; ss -Hltn
echo "== advisor"; cd "{root}" && "{python}" -c '
import json; from sysctl_advisor.sources.listeners import read_listeners
print(json.dumps(read_listeners()))'
"""


@needs_netns
@pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2 ss")
def test_listeners_match_ss_in_a_private_namespace(tmp_path: Path) -> None:
    script = SCRIPT.format(ready=tmp_path / "ready", root=ROOT, python=sys.executable)
    result = in_namespace(script, timeout=60)
    assert result.returncode == 0, result.stderr
    ss_part, advisor_part = result.stdout.split("== advisor\n")
    ss = {}
    for line in ss_part.splitlines()[1:]:
        _state, recv_q, send_q, local, *_ = line.split()
        # ss writes a dual-stack [::] listener as *
        ss[local.replace("*:", "[::]:", 1)] = (int(recv_q), int(send_q))
    listeners = json.loads(advisor_part)
    seen = {
        f"{'[' + l['address'] + ']' if ':' in l['address'] else l['address']}:{l['port']}": (
            l["queue"],
            l["backlog"],
        )
        for l in listeners  # noqa: E741
    }
    assert seen == ss == {"127.0.0.1:7000": (1, 1000), "[::]:7001": (0, 5)}
    owners = {l["port"]: l["process"]["command"] for l in listeners}  # noqa: E741
    assert owners == {7000: "python3", 7001: "python3"}


def test_read_and_empty_survives_the_facts_file() -> None:
    """`listeners: []` (read: nothing listens) and `kernel_events: []` (read: no known message)
    are evidence; only an absent field means "not read"."""
    from sysctl_advisor.model.host_facts import facts_from_data, facts_to_data

    data = {
        "memory": {"total": "1 GiB"},
        "listeners": [],
        "observed": {"kernel_events": [], "kernel_log": {"source": "dmesg", "lines": 3}},
    }
    again = facts_from_data(facts_to_data(facts_from_data(data)))
    assert again.listeners == [] and again.observed.kernel_events == []
    assert facts_from_data({"memory": {"total": "1 GiB"}}).listeners is None


@pytest.mark.parametrize(
    ("listener", "why"),
    [
        ({"address": "fe80::1%a b\"c'd=e]: f", "port": 1}, "zone id"),
        ({"address": "localhost", "port": 1}, "not an IP address"),
        ({"address": "0.0.0.0", "port": True}, "listeners.0.port"),
        ({"address": "0.0.0.0", "port": "80"}, "listeners.0.port"),
        ({"address": "0.0.0.0", "port": 1, "process": {"pid": 1, "command": "x", "go": "yes"}},
         "listeners.0.process.go"),
    ],
)  # fmt: skip
def test_hostile_listener_fields_are_refused(listener: dict[str, object], why: str) -> None:
    from sysctl_advisor.model.errors import InputError
    from sysctl_advisor.model.host_facts import facts_from_data

    entry = {"backlog": 1, "queue": 0, **listener}
    with pytest.raises(InputError, match=why):
        facts_from_data({"memory": {"total": "1 GiB"}, "listeners": [entry]})


@pytest.mark.parametrize(
    "period",
    [
        {"kind": "history", "source": "p", "at": "2026-11-22T10:00:00Z"},  # no window
        {"kind": "snapshot", "source": "p", "at": "::::::::"},
        {"kind": "snapshot", "source": "p", "at": "2026-11-22T10:00:00Z extra"},
    ],
)
def test_bad_observed_periods_are_refused(period: dict[str, object]) -> None:
    from sysctl_advisor.model.errors import InputError
    from sysctl_advisor.model.host_facts import facts_from_data

    with pytest.raises(InputError):
        facts_from_data({"memory": {"total": "1 GiB"}, "observed": {"period": period}})


def _crafted_elf(path: Path, shoff: int, shentsize: int, shnum: int, size: int) -> None:
    header = bytearray(b"\x7fELF\x02\x01\x01" + bytes(9))
    header += (2).to_bytes(2, "little") + (62).to_bytes(2, "little") + (1).to_bytes(4, "little")
    header += bytes(8) + bytes(8) + shoff.to_bytes(8, "little")  # entry, phoff, shoff
    header += bytes(4) + (64).to_bytes(2, "little") * 3  # flags, ehsize, phentsize, phnum
    header += shentsize.to_bytes(2, "little") + shnum.to_bytes(2, "little")
    header += (shnum - 1).to_bytes(2, "little")  # the section-name table: the last one
    with open(path, "wb") as handle:
        handle.write(header)
        handle.truncate(size)  # sparse: no disk used


class _CountingReader:
    """A binary file that counts the bytes read from it."""

    def __init__(self, path: Path) -> None:
        self.handle = open(path, "rb")  # noqa: SIM115  (closed by the test)
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.read_bytes += len(data)
        return data

    def seek(self, offset: int) -> int:
        return self.handle.seek(offset)

    def fileno(self) -> int:
        return self.handle.fileno()


@pytest.mark.parametrize(
    ("shoff", "shentsize", "shnum", "why"),
    [
        (4096, 4096, 4096, "16 MiB of 4 KiB section headers (real ones are 64 bytes)"),
        (8 * 1024 * 1024 - 1024, 64, 4096, "a table that runs past the end of the file"),
    ],
)
def test_a_crafted_section_table_is_refused_before_it_is_read(
    tmp_path: Path, shoff: int, shentsize: int, shnum: int, why: str
) -> None:
    """The Go check reads at most the 64-byte ELF header of a crafted executable (an
    unprivileged user's listener could otherwise make root's `facts` read megabytes)."""
    from sysctl_advisor.sources.listeners import _has_go_section

    path = tmp_path / "crafted"
    _crafted_elf(path, shoff, shentsize, shnum, size=8 * 1024 * 1024)
    reader = _CountingReader(path)
    try:
        assert not _has_go_section(reader), why
    finally:
        reader.handle.close()
    assert reader.read_bytes <= 64, why
    assert not is_go_binary(path)


class _Datagrams:
    """A stand-in netlink socket that answers with the datagrams given."""

    def __init__(self, datagrams: list[bytes]) -> None:
        self.datagrams = list(datagrams)

    def recv(self, size: int) -> bytes:
        return self.datagrams.pop(0) if self.datagrams else b""


def _message(kind: int, seq: int, payload: bytes) -> bytes:
    from sysctl_advisor.sources.listeners import _HEADER

    body = _HEADER.pack(_HEADER.size + len(payload), kind, 0, seq, 0) + payload
    return body + b"\0" * (-len(body) % 4)


def _listen_record(port: int, backlog: int, queue: int, inode: int) -> bytes:
    from sysctl_advisor.sources.listeners import _MESSAGE

    src = bytes([127, 0, 0, 1]) + bytes(12)
    return _MESSAGE.pack(
        2, 10, 0, 0, port.to_bytes(2, "big"), bytes(2), src, bytes(16), 0, bytes(8),
        0, queue, backlog, 0, inode,
    )  # fmt: skip


def test_the_sock_diag_reader_parses_records_across_datagrams_and_stops_at_done() -> None:
    from sysctl_advisor.sources.listeners import NLMSG_DONE, SOCK_DIAG_BY_FAMILY, _dump, _listener

    first = _message(SOCK_DIAG_BY_FAMILY, 1, _listen_record(80, 511, 3, 77))
    first += _message(SOCK_DIAG_BY_FAMILY, 9, _listen_record(1, 1, 1, 1))  # another dump's
    second = _message(SOCK_DIAG_BY_FAMILY, 1, _listen_record(443, 4096, 0, 78))
    second += _message(NLMSG_DONE, 1, bytes(4))
    payloads = list(_dump(_Datagrams([first, second]), 1))  # type: ignore[arg-type]
    assert [_listener(p) for p in payloads] == [
        (77, {"address": "127.0.0.1", "port": 80, "backlog": 511, "queue": 3}),
        (78, {"address": "127.0.0.1", "port": 443, "backlog": 4096, "queue": 0}),
    ]


@pytest.mark.parametrize(
    "datagrams",
    [
        [],  # the socket closed before NLMSG_DONE
        [b"\xff\x00\x00\x00" + bytes(12)],  # a length past the datagram
        [b"\x04\x00\x00\x00" + bytes(12)],  # a length shorter than the header
    ],
)
def test_a_broken_dump_is_an_error_not_a_hang(datagrams: list[bytes]) -> None:
    from sysctl_advisor.sources.listeners import _dump

    with pytest.raises(ValueError):
        list(_dump(_Datagrams(datagrams), 1))  # type: ignore[arg-type]


def test_a_netlink_error_is_raised_with_its_errno() -> None:
    import errno
    import struct

    from sysctl_advisor.sources.listeners import NLMSG_ERROR, _dump

    error = _message(NLMSG_ERROR, 1, struct.pack("=i", -errno.ENOENT) + bytes(16))
    with pytest.raises(OSError) as caught:
        list(_dump(_Datagrams([error]), 1))  # type: ignore[arg-type]
    assert caught.value.errno == errno.ENOENT
