"""Every listening TCP socket of this host, from the kernel (netlink sock_diag), with its owner.

For a socket in LISTEN state the inet_diag answer carries the accept queue: `idiag_rqueue` is
sk_ack_backlog (connections waiting for accept() now) and `idiag_wqueue` is sk_max_ack_backlog
(the backlog the listener got: min(listen() backlog, somaxconn)); `ss -ltn` prints the same two
figures as Recv-Q and Send-Q (net/ipv4/tcp_diag.c tcp_diag_get_info(), since 2.6.x). The
owning process is found as `ss -p` finds it: the socket's inode among the links in
/proc/PID/fd. Without root only the caller's own processes can be looked at; other listeners
are reported without an owner.

The namespace read is the caller's: run `facts` in the host's network namespace (or a pod's,
to see that pod's listeners).
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sysctl_advisor.model.text_escape import one_line

TCP_LISTEN = 10
MAX_LISTENERS = 100_000
MAX_FDS_SCANNED = 4_000_000  # bounds the /proc walk on a host holding millions of sockets
FIRST_FDS = 64  # a server's listeners are among its first descriptors, before its connections
_JAVA_OPTIONS_WITH_VALUE = frozenset(
    {"-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules", "-d"}
)


def read_listeners(proc: Path = Path("/proc")) -> list[dict[str, Any]] | None:
    """The listeners as facts-file mappings, sorted by port and address; None when the kernel
    cannot be asked (no netlink, no sock_diag module)."""
    sockets = _diag_listeners()
    if sockets is None:
        return None
    owners = _owners({inode for inode, _ in sockets if inode}, proc)
    listeners = []
    for inode, listener in sockets:
        pid = owners.get(inode)
        if pid is not None:
            process = describe_process(proc / str(pid), pid)
            if process is not None:
                listener["process"] = process
        listeners.append(listener)
    listeners.sort(key=lambda item: (item["port"], item["address"]))
    return listeners


# Netlink sock_diag (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h; since 3.3): one
# request per address family, a dump of inet_diag_msg records back. Read with the standard
# library: pyroute2 took 170-200 ms to import here (its package loads IPRoute, NDB, conntrack),
# more than the rest of `facts`.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: len, type, flags, seq, pid
_REQUEST = struct.Struct("=BBBxI48x")  # inet_diag_req_v2: family, protocol, ext, states, id
# inet_diag_msg: family, state, timer, retrans, id (sport, dport, src[16], dst[16], if,
# cookie[2]), expires, rqueue, wqueue, uid, inode
_MESSAGE = struct.Struct("=BBBB2s2s16s16sI8sIIIII")
_MAX_DUMP_BYTES = 256 * 1024 * 1024  # MAX_LISTENERS records, and far more, fit in this


def _diag_listeners() -> list[tuple[int, dict[str, Any]]] | None:
    """(inode, listener) for each TCP socket in LISTEN state, IPv4 then IPv6; None when the
    kernel cannot be asked (no netlink, no inet_diag)."""
    found: list[tuple[int, dict[str, Any]]] = []
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as diag:
            diag.settimeout(10)
            diag.bind((0, 0))
            for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), start=1):
                request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 1 << TCP_LISTEN)
                header = _HEADER.pack(
                    _HEADER.size + len(request),
                    SOCK_DIAG_BY_FAMILY,
                    NLM_F_REQUEST | NLM_F_DUMP,
                    seq,
                    0,
                )
                diag.sendall(header + request)
                for payload in _dump(diag, seq):
                    listener = _listener(payload)
                    if listener is not None:
                        found.append(listener)
                        if len(found) >= MAX_LISTENERS:
                            return found
    except (OSError, ValueError, AttributeError):  # AttributeError: no AF_NETLINK here
        return None
    return found


def _dump(diag: socket.socket, seq: int) -> Iterator[bytes]:
    """The payloads of one dump's messages, until NLMSG_DONE; an NLMSG_ERROR raises."""
    received = 0
    while True:
        data = diag.recv(1 << 16)
        received += len(data)
        if not data or received > _MAX_DUMP_BYTES:
            raise ValueError("sock_diag: the dump did not end")
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, kind, _flags, message_seq, _pid = _HEADER.unpack_from(data, offset)
            if length < _HEADER.size or offset + length > len(data):
                raise ValueError("sock_diag: a truncated message")
            payload = data[offset + _HEADER.size : offset + length]
            offset += (length + 3) & ~3  # NLMSG_ALIGN
            if message_seq != seq:
                continue
            if kind == NLMSG_DONE:
                return
            if kind == NLMSG_ERROR:
                (error,) = struct.unpack_from("=i", payload)
                if error:
                    raise OSError(-error, os.strerror(-error))
                continue
            yield payload


def _listener(payload: bytes) -> tuple[int, dict[str, Any]] | None:
    if len(payload) < _MESSAGE.size:
        raise ValueError("sock_diag: a short inet_diag_msg")
    family, state, _timer, _retrans, sport, _dport, src, *_, rqueue, wqueue, _uid, inode = (
        _MESSAGE.unpack_from(payload)
    )
    if state != TCP_LISTEN or family not in (socket.AF_INET, socket.AF_INET6):
        return None
    address = socket.inet_ntop(family, src[:4] if family == socket.AF_INET else src)
    listener = {
        "address": address,
        "port": int.from_bytes(sport, "big"),
        "backlog": wqueue,
        "queue": rqueue,
    }
    return inode, listener


def _owners(inodes: set[int], proc: Path) -> dict[int, int]:
    """Socket inode -> the lowest pid holding it among every process's first descriptors,
    where a server opens its listeners (nginx's master before its workers), else the lowest
    pid holding it past them: only a listener not found among the first costs reading the rest
    of each process's connections."""
    owners: dict[int, int] = {}
    if not inodes:
        return owners
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    pids = sorted(_pids(proc))
    scanned = 0
    for first in (True, False):  # /proc lists a process's descriptors in order
        for pid in pids:
            try:
                with os.scandir(proc / str(pid) / "fd") as entries:
                    for entry in entries:
                        low = int(entry.name) < FIRST_FDS
                        if first and not low:
                            break  # the rest in the second pass
                        if low and not first:
                            continue  # read in the first pass
                        scanned += 1
                        try:
                            target = os.readlink(entry.path)
                        except OSError:
                            continue
                        inode = wanted.get(target)
                        if inode is not None and inode not in owners:
                            owners[inode] = pid
                            if len(owners) == len(inodes):
                                return owners
            except (OSError, ValueError):
                continue  # gone, another user's process without root, or not a descriptor
            if scanned > MAX_FDS_SCANNED:
                return owners
    return owners


def _pids(proc: Path) -> Iterator[int]:
    try:
        with os.scandir(proc) as entries:
            for entry in entries:
                if entry.name.isdigit():
                    yield int(entry.name)
    except OSError:
        return


def describe_process(directory: Path, pid: int) -> dict[str, Any] | None:
    """pid, comm, the executable's file name, whether it is a Go program, and for java the
    main class or jar. Command-line arguments are not kept (they may hold secrets)."""
    command = _small_text(directory / "comm")
    if not command:
        return None
    process: dict[str, Any] = {"pid": pid, "command": one_line(command)[:64]}
    try:
        executable = os.readlink(directory / "exe").removesuffix(" (deleted)")
    except OSError:
        executable = ""
    name = os.path.basename(executable)
    if name:
        process["executable"] = one_line(name)[:255]
        if is_go_binary(directory / "exe"):
            process["go"] = True
    if name == "java" or command == "java":
        main = java_main(_cmdline(directory / "cmdline"))
        if main:
            process["java_main"] = one_line(main)[:255]
    return process


def _small_text(path: Path, limit: int = 4096) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace").strip()
    except OSError:
        return ""


def _cmdline(path: Path) -> list[str]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(1 << 16)
    except OSError:
        return []
    return [part.decode("utf-8", errors="replace") for part in raw.split(b"\0") if part]


def java_main(argv: list[str]) -> str | None:
    """What a java command line runs: `java -Xmx1g -cp a.jar org.Main x` -> org.Main;
    `java -jar /opt/app/app.jar` -> app.jar; `java -m mod/org.Main` -> org.Main."""
    arguments = iter(argv[1:])
    for argument in arguments:
        if argument in ("-jar",):
            jar = next(arguments, "")
            return os.path.basename(jar) or None
        if argument in ("-m", "--module"):
            module = next(arguments, "")
            return module.rpartition("/")[2] or None
        if argument in _JAVA_OPTIONS_WITH_VALUE:
            next(arguments, None)
            continue
        if argument.startswith("-"):
            continue
        return argument
    return None


_ELF_MAGIC = b"\x7fELF"
_GO_SECTIONS = (b".go.buildinfo", b".note.go.buildid")
MAX_SECTIONS = 4096
MAX_SECTION_TABLE = 256 * 1024  # bytes of section headers read; real binaries use a few KiB
MAX_SECTION_NAMES = 64 * 1024


def is_go_binary(path: Path) -> bool:
    """Whether an ELF executable was built by the Go toolchain: it has a `.go.buildinfo`
    section (Go 1.13 and later) or a `.note.go.buildid` note. Reads only the section table."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
            return _has_go_section(handle)
    except (OSError, struct.error, ValueError):
        return False


def _has_go_section(handle: Any) -> bool:
    ident = handle.read(16)
    if len(ident) < 16 or ident[:4] != _ELF_MAGIC or ident[4] not in (1, 2):
        return False
    wide = ident[4] == 2
    order = "<" if ident[5] == 1 else ">"
    if wide:
        header = struct.unpack(order + "HHIQQQIHHHHHH", handle.read(48))
    else:
        header = struct.unpack(order + "HHIIIIIHHHHHH", handle.read(36))
    shoff, shentsize, shnum, shstrndx = header[5], header[10], header[11], header[12]
    if not shoff or not 0 < shnum <= MAX_SECTIONS or shstrndx >= shnum:
        return False
    entry = "IIQQQQIIQQ" if wide else "IIIIIIIIII"
    size = os.fstat(handle.fileno()).st_size
    if (
        shentsize != struct.calcsize(order + entry)  # 64 or 40: what every linker writes
        or shentsize * shnum > MAX_SECTION_TABLE
        or shoff + shentsize * shnum > size
    ):
        return False
    handle.seek(shoff)
    table = handle.read(shentsize * shnum)
    sections = [
        struct.unpack_from(order + entry, table, i * shentsize)
        for i in range(min(shnum, len(table) // shentsize))
    ]
    if shstrndx >= len(sections):
        return False
    names_offset, names_size = sections[shstrndx][4], sections[shstrndx][5]
    if names_offset >= size:
        return False
    handle.seek(names_offset)
    names = handle.read(min(names_size, MAX_SECTION_NAMES))
    for section in sections:
        start = section[0]
        end = names.find(b"\0", start)
        if start < len(names) and names[start : end if end != -1 else None] in _GO_SECTIONS:
            return True
    return False
