"""The last write of each sysctl under a cgroup, kept by the kernel in a hash map for as long as
the program stays attached (a pinned link and map outlive this process): the sysctl-write
program (sources/bpf/program.py) with `sink="last"`, keyed by the writer's network namespace and
the sysctl's name (KEY_SIZE bytes: a u64 inode, the name zero-padded), each value the event and
the number of writes of that key since it was attached. A later process opens the pinned map
(`syscall.obj_get`) and reads it here; each record says which of the optional fields its program
gave."""

from __future__ import annotations

import os
from dataclasses import dataclass

from sysctl_advisor.sources.bpf import program, syscall
from sysctl_advisor.sources.sysctl_watch import (
    SysctlWrite,
    create_drops_map,
    load,
    offsets,
    parse,
    realtime_offset_ns,
)

MAX_KEYS = 8192  # sysctls a host has: some 2,000 plus per-device ones


@dataclass(frozen=True)
class LastWrite:
    write: SysctlWrite
    count: int  # writes of the key since the program was attached


@dataclass(frozen=True)
class Loaded:
    map_fd: int  # the last-writer map
    drops_fd: int  # the u64 count of writes the map could not take (it was full)
    prog_fd: int
    left_out: frozenset[int]  # the optional helpers left out

    def close(self) -> None:
        for fd in (self.prog_fd, self.drops_fd, self.map_fd):
            os.close(fd)


def create_map(max_keys: int = MAX_KEYS) -> int:
    return syscall.map_create(
        syscall.MAP_TYPE_HASH,
        program.KEY_SIZE,
        program.LAST_VALUE.size,
        max_keys,
        "sysctl_last",
    )


def load_last_writes(max_keys: int = MAX_KEYS) -> Loaded:
    """The maps and the loaded program, not yet attached (`sysctl_watch.attach`, or
    `syscall.link_create` for a link to pin). OSError when the kernel refuses."""
    map_fd = create_map(max_keys)
    try:
        drops_fd = create_drops_map()
        try:
            prog_fd, without = load(map_fd, "last", drops_fd, offsets())
        except BaseException:
            os.close(drops_fd)
            raise
    except BaseException:
        os.close(map_fd)
        raise
    return Loaded(map_fd, drops_fd, prog_fd, without)


def _by_name(key: bytes) -> tuple[bytes, bytes]:
    return key[8:], key[:8]  # the name, then the namespace


def read_last_writes(map_fd: int) -> list[LastWrite]:
    """The last write of each key in each network namespace in the map, by key."""
    offset = realtime_offset_ns()
    found = []
    for key in sorted(syscall.map_keys(map_fd, program.KEY_SIZE), key=_by_name):
        value = syscall.map_lookup(map_fd, key, program.LAST_VALUE.size)
        if value is None:
            continue  # removed meanwhile
        record, count = program.LAST_VALUE.unpack(value)
        given = int.from_bytes(record[program.OFF_GIVEN : program.OFF_GIVEN + 4], "little")
        found.append(LastWrite(parse(record, program.left_out(given), offset), count))
    return found
