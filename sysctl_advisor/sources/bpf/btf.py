"""Byte offsets of struct members, from the kernel's own type information (BTF), so that the
program never carries an offset for one kernel build (Linux v6.18, Documentation/bpf/btf.rst:
the header, then the types, then the strings; each type a 12-byte `struct btf_type` followed by
its kind's data; a struct's or union's members give their offsets in bits). A member may sit in
an anonymous struct or union: the search goes down through those."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from sysctl_advisor.model.documents import read_bytes
from sysctl_advisor.model.errors import InputError

VMLINUX = Path("/sys/kernel/btf/vmlinux")
LIMIT = 64 << 20  # vmlinux BTF is some 5 MiB on distribution kernels
MAGIC = 0xEB9F
HEADER = struct.Struct("<HBBIIIII")
TYPE = struct.Struct("<III")
# enum btf_kind (include/uapi/linux/btf.h)
INT, PTR, ARRAY, STRUCT, UNION, ENUM = 1, 2, 3, 4, 5, 6
TYPEDEF, VOLATILE, CONST, RESTRICT = 8, 9, 10, 11
FUNC_PROTO, VAR, DATASEC, DECL_TAG, TYPE_TAG, ENUM64 = 13, 14, 15, 17, 18, 19
# bytes of each kind's data after the struct btf_type: a fixed part, and per vlen item
_EXTRA = {INT: (4, 0), ARRAY: (12, 0), STRUCT: (0, 12), UNION: (0, 12), ENUM: (0, 8)}
_EXTRA |= {FUNC_PROTO: (0, 8), VAR: (4, 0), DATASEC: (0, 12), DECL_TAG: (4, 0)}
_EXTRA |= {ENUM64: (0, 12)}
_MODIFIERS = frozenset({TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG})


class BTFError(Exception):
    """No usable BTF: the one-line reason."""


@dataclass(frozen=True)
class _Type:
    kind: int
    ref: int  # the type referred to (modifiers, pointers); a struct's size otherwise
    members: tuple[tuple[str, int, int], ...]  # name, type id, bit offset


class BTF:
    def __init__(self, data: bytes) -> None:
        if len(data) < HEADER.size:
            raise BTFError("BTF shorter than its header")
        magic, _version, _flags, hdr_len, type_off, type_len, str_off, str_len = HEADER.unpack_from(
            data
        )
        if magic != MAGIC:
            raise BTFError(f"not BTF (magic {magic:#x})")
        types = data[hdr_len + type_off : hdr_len + type_off + type_len]
        self._strings = data[hdr_len + str_off : hdr_len + str_off + str_len]
        self._types: list[_Type | None] = [None]  # type id 0 is void
        self._by_name: dict[str, int] = {}
        at = 0
        while at + TYPE.size <= len(types):
            name_off, info, ref = TYPE.unpack_from(types, at)
            at += TYPE.size
            kind, vlen, bitfields = (info >> 24) & 0x1F, info & 0xFFFF, info >> 31
            fixed, each = _EXTRA.get(kind, (0, 0))
            members: tuple[tuple[str, int, int], ...] = ()
            if kind in (STRUCT, UNION):
                members = tuple(
                    (self._name(m_name), m_type, m_off & 0xFFFFFF if bitfields else m_off)
                    for m_name, m_type, m_off in struct.iter_unpack(
                        "<III", types[at : at + 12 * vlen]
                    )
                )
            at += fixed + each * vlen
            if kind in (STRUCT, UNION) and name_off:
                self._by_name.setdefault(self._name(name_off), len(self._types))
            self._types.append(_Type(kind, ref, members))

    def _name(self, offset: int) -> str:
        end = self._strings.find(b"\0", offset)
        return self._strings[offset : end if end >= 0 else None].decode(errors="replace")

    def _resolve(self, type_id: int) -> _Type | None:
        """The type behind typedefs and qualifiers."""
        for _ in range(32):
            if not 0 < type_id < len(self._types):
                return None
            found = self._types[type_id]
            if found is None or found.kind not in _MODIFIERS:
                return found
            type_id = found.ref
        return None

    def _member(self, owner: _Type, name: str) -> tuple[int, int] | None:
        """(type id, bit offset) of `name` in `owner`, looking into anonymous members."""
        for m_name, m_type, m_off in owner.members:
            if m_name == name:
                return m_type, m_off
            inner = self._resolve(m_type) if not m_name else None
            if inner is not None and inner.kind in (STRUCT, UNION):
                found = self._member(inner, name)
                if found is not None:
                    return found[0], m_off + found[1]
        return None

    def offset(self, path: str) -> int:
        """The byte offset of `struct.member[.member...]` (members of embedded structs, not
        through pointers): `task_struct.tgid`, `net.ns.inum`."""
        struct_name, *names = path.split(".")
        if struct_name not in self._by_name or not names:
            raise BTFError(f"no struct {struct_name} in the kernel's BTF")
        owner = self._types[self._by_name[struct_name]]
        bits = 0
        for name in names:
            found = self._member(owner, name) if owner is not None else None
            if found is None:
                raise BTFError(f"no member {path} in the kernel's BTF")
            bits += found[1]
            owner = self._resolve(found[0])
        if bits % 8:
            raise BTFError(f"{path} is a bit field")
        return bits // 8


def vmlinux(path: Path = VMLINUX) -> BTF:
    """The running kernel's BTF (read as any input: a regular file, within a size cap)."""
    try:
        return BTF(read_bytes(path, limit=LIMIT))
    except OSError as exc:
        raise BTFError(f"cannot read {path}: {exc.strerror}") from None
    except InputError as exc:
        raise BTFError(f"cannot read {path}: {exc}") from None
