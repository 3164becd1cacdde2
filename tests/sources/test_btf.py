"""The BTF reader: member offsets through anonymous structs and unions and typedefs, from a
blob laid out as Linux v6.18 Documentation/bpf/btf.rst describes (no root needed), and from
the running kernel's own BTF where it has one."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from sysctl_advisor.sources.bpf import btf, program


def _blob() -> bytes:
    strings = b"\0int\0inum\0ns_common\0count\0nsc_t\0net\0pad\0ns\0"

    def name(text: str) -> int:
        return strings.index(text.encode() + b"\0") if text else 0

    def kind(k: int, vlen: int = 0) -> int:
        return (k << 24) | vlen

    def members(*items: tuple[str, int, int]) -> bytes:
        return b"".join(struct.pack("<III", name(n), t, off) for n, t, off in items)

    types = b"".join(
        [
            struct.pack("<IIII", name("int"), kind(btf.INT), 4, 32),  # 1
            struct.pack("<III", 0, kind(btf.STRUCT, 1), 8) + members(("inum", 1, 32)),  # 2
            struct.pack("<III", 0, kind(btf.UNION, 1), 8) + members(("", 2, 0)),  # 3
            struct.pack("<III", name("ns_common"), kind(btf.STRUCT, 2), 16)
            + members(("count", 1, 0), ("", 3, 64)),  # 4
            struct.pack("<III", name("nsc_t"), kind(btf.TYPEDEF), 4),  # 5
            struct.pack("<III", name("net"), kind(btf.STRUCT, 2), 32)
            + members(("pad", 1, 0), ("ns", 5, 128)),  # 6
        ]
    )
    header = btf.HEADER.pack(btf.MAGIC, 1, 0, btf.HEADER.size, 0, len(types), len(types), 0)
    header = header[:-4] + struct.pack("<I", len(strings))
    return header + types + strings


def test_a_member_inside_anonymous_unions_and_structs_is_found() -> None:
    types = btf.BTF(_blob())
    assert types.offset("ns_common.inum") == 12  # 8 (the union) + 4 (inum in its struct)
    assert types.offset("net.ns") == 16
    assert types.offset("net.ns.inum") == 28  # through the typedef


@pytest.mark.parametrize("path", ["net.nothing", "task_struct.tgid", "net"])
def test_a_missing_member_or_struct_is_an_error(path: str) -> None:
    with pytest.raises(btf.BTFError):
        btf.BTF(_blob()).offset(path)


def test_a_file_that_is_no_btf_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "vmlinux").write_bytes(b"\x7fELF" + bytes(64))
    with pytest.raises(btf.BTFError, match="not BTF"):
        btf.vmlinux(tmp_path / "vmlinux")
    with pytest.raises(btf.BTFError, match="cannot read"):
        btf.vmlinux(tmp_path / "absent")


@pytest.mark.skipif(not btf.VMLINUX.exists(), reason="the kernel has no BTF")
def test_the_running_kernel_gives_the_offsets_the_program_reads() -> None:
    types = btf.vmlinux()
    found = {path: types.offset(path) for path in program.PATHS.values()}
    assert all(offset >= 0 for offset in found.values())
    assert found["task_struct.tgid"] != found["task_struct.real_parent"]
