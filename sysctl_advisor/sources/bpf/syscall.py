"""The bpf(2) commands the sysctl watch needs, called through ctypes with the attribute union
laid out by hand (Linux v6.18, include/uapi/linux/bpf.h: `union bpf_attr`). Each call raises
OSError with the kernel's errno; a refused program load carries the verifier's log."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

# enum bpf_cmd
MAP_CREATE, MAP_LOOKUP_ELEM, MAP_GET_NEXT_KEY = 0, 1, 4
PROG_LOAD, OBJ_PIN, OBJ_GET, PROG_ATTACH, PROG_DETACH = 5, 6, 7, 8, 9
OBJ_GET_INFO_BY_FD, PROG_QUERY, MAP_LOOKUP_AND_DELETE_ELEM = 15, 16, 21
LINK_CREATE = 28  # Linux 5.7+ (include/uapi/linux/bpf.h: absent in 5.4, there in 5.10)
# enum bpf_map_type, enum bpf_prog_type, enum bpf_attach_type
MAP_TYPE_HASH, MAP_TYPE_ARRAY, MAP_TYPE_QUEUE, MAP_TYPE_RINGBUF = 1, 2, 22, 27
PROG_TYPE_CGROUP_SYSCTL = 23
CGROUP_SYSCTL = 18
F_ALLOW_MULTI = 1 << 1

ATTR_SIZE = 128  # bytes of the union passed: the kernel reads zeros past what it knows
# __NR_bpf by machine (arch/*/entry/syscalls, include/uapi/asm-generic/unistd.h)
NR_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "ppc64le": 361, "s390x": 351}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _nr() -> int:
    machine = platform.machine()
    if machine not in NR_BPF:
        raise OSError(errno.ENOSYS, f"bpf(2) is not known on {machine}")
    return NR_BPF[machine]


def bpf(cmd: int, attr: ctypes.Array[ctypes.c_char]) -> int:
    """bpf(cmd, attr, ATTR_SIZE): its result, or OSError with the errno."""
    result = _libc.syscall(_nr(), cmd, attr, ctypes.c_uint(ATTR_SIZE))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def _attr(fmt: str, *values: object) -> ctypes.Array[ctypes.c_char]:
    attr = ctypes.create_string_buffer(ATTR_SIZE)
    struct.pack_into(fmt, attr, 0, *values)
    return attr


def _address(buffer: ctypes.Array[ctypes.c_char] | None) -> int:
    return 0 if buffer is None else ctypes.addressof(buffer)


def map_create(map_type: int, key_size: int, value_size: int, max_entries: int, name: str) -> int:
    """A new map's descriptor."""
    return bpf(
        MAP_CREATE,
        _attr(
            "<IIIIIII16s", map_type, key_size, value_size, max_entries, 0, 0, 0, name.encode()[:15]
        ),
    )


def _elem(
    cmd: int, fd: int, key: ctypes.Array[ctypes.c_char] | None, out: ctypes.Array[ctypes.c_char]
) -> bool:
    try:
        bpf(cmd, _attr("<IxxxxQQQ", fd, _address(key), _address(out), 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    return True


def map_lookup(fd: int, key: bytes, value_size: int) -> bytes | None:
    """The value under `key`; None when there is none."""
    out = ctypes.create_string_buffer(value_size)
    found = _elem(MAP_LOOKUP_ELEM, fd, ctypes.create_string_buffer(key, len(key)), out)
    return out.raw if found else None


def map_next_key(fd: int, key: bytes | None, key_size: int) -> bytes | None:
    """The key after `key` (the first with None); None after the last. Keys removed meanwhile
    restart the walk (the kernel's order)."""
    out = ctypes.create_string_buffer(key_size)
    start = None if key is None else ctypes.create_string_buffer(key, len(key))
    return out.raw if _elem(MAP_GET_NEXT_KEY, fd, start, out) else None


def map_keys(fd: int, key_size: int, limit: int = 1 << 20) -> list[bytes]:
    """Every key of a hash map, at most `limit`."""
    keys: list[bytes] = []
    key = map_next_key(fd, None, key_size)
    while key is not None and len(keys) < limit:
        keys.append(key)
        key = map_next_key(fd, key, key_size)
    return keys


def obj_pin(fd: int, path: str | os.PathLike[str]) -> None:
    """Pin a map, program or link at `path` (a new name in a bpffs)."""
    name = ctypes.create_string_buffer(os.fsencode(path))
    bpf(OBJ_PIN, _attr("<QII", _address(name), fd, 0))


def obj_get(path: str | os.PathLike[str]) -> int:
    """A new descriptor on the object pinned at `path`."""
    name = ctypes.create_string_buffer(os.fsencode(path))
    return bpf(OBJ_GET, _attr("<QII", _address(name), 0, 0))


def map_pop(fd: int, value_size: int) -> bytes | None:
    """The oldest value of a queue map, removed; None when it is empty."""
    out = ctypes.create_string_buffer(value_size)
    return out.raw if _elem(MAP_LOOKUP_AND_DELETE_ELEM, fd, None, out) else None


def prog_load(
    prog_type: int, insns: bytes, expected_attach_type: int, name: str, log_size: int = 1 << 16
) -> int:
    """The loaded program's descriptor; a refusal is OSError whose text ends with the verifier's
    log (its last lines)."""
    code = ctypes.create_string_buffer(insns, len(insns))
    license = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(log_size)
    attr = _attr(
        "<IIQQIIQII16sII",
        prog_type,
        len(insns) // 8,
        _address(code),
        _address(license),
        0,
        0,
        0,
        0,
        0,
        name.encode()[:15],
        0,
        expected_attach_type,
    )
    try:
        return bpf(PROG_LOAD, attr)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EINVAL):
            raise
    # again with the verifier's log, which says why (a first load without it is cheaper)
    struct.pack_into("<IIQ", attr, 24, 1, log_size, _address(log))
    try:
        return bpf(PROG_LOAD, attr)
    except OSError as exc:
        text = log.value.decode(errors="replace").strip().splitlines()[-3:]
        raise OSError(exc.errno, f"{exc.strerror}: {' / '.join(text)}") from None


def prog_attach(target_fd: int, prog_fd: int, attach_type: int, flags: int) -> None:
    bpf(PROG_ATTACH, _attr("<IIIII", target_fd, prog_fd, attach_type, flags, 0))


def link_create(prog_fd: int, target_fd: int, attach_type: int) -> int:
    """A link attaching the program to the cgroup (multi-attach, as BPF_F_ALLOW_MULTI): the
    program stays attached while a descriptor (or a pin) of the link lives, not longer."""
    return bpf(LINK_CREATE, _attr("<IIII", prog_fd, target_fd, attach_type, 0))


def prog_detach(target_fd: int, prog_fd: int, attach_type: int) -> None:
    bpf(PROG_DETACH, _attr("<III", target_fd, prog_fd, attach_type))


def prog_query(target_fd: int, attach_type: int, capacity: int = 64) -> list[int]:
    """The ids of the programs attached to the cgroup `target_fd` for `attach_type` (itself,
    not its ancestors'; BPF_F_QUERY_EFFECTIVE would add theirs)."""
    ids = (ctypes.c_uint32 * capacity)()
    attr = _attr("<IIIIQI", target_fd, attach_type, 0, 0, ctypes.addressof(ids), capacity)
    bpf(PROG_QUERY, attr)
    (count,) = struct.unpack_from("<I", attr, 24)
    return list(ids[: min(count, capacity)])


def prog_id(prog_fd: int) -> int:
    """The kernel's id of a loaded program (struct bpf_prog_info: type, then id)."""
    info = ctypes.create_string_buffer(8)
    bpf(OBJ_GET_INFO_BY_FD, _attr("<IIQ", prog_fd, len(info), ctypes.addressof(info)))
    return int(struct.unpack_from("<I", info, 4)[0])
