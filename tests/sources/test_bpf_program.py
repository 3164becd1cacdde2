"""The instruction encoder, the sysctl-write program's shape and the parsing of its events: no
root needed. Expected bytes are hand-assembled from the opcode tables of Linux v6.18,
Documentation/bpf/standardization/instruction-set.rst (opcode; dst in the low nibble, src in
the high nibble of the second byte; little-endian s16 offset and s32 immediate)."""

from __future__ import annotations

import errno
import struct

import pytest

from sysctl_advisor.sources.bpf import insns as I
from sysctl_advisor.sources.bpf import program
from sysctl_advisor.sources.sysctl_watch import parse


@pytest.mark.parametrize(
    ("insn", "expected"),
    [
        (I.mov_imm(0, 1), "b7 00 0000 01000000"),  # r0 = 1
        (I.mov_reg(6, 1), "bf 16 0000 00000000"),  # r6 = r1
        (I.add_imm(2, -16), "07 02 0000 f0ffffff"),  # r2 += -16
        (I.load(4, 0, 6, 0), "61 60 0000 00000000"),  # r0 = *(u32 *)(r6 + 0)
        (I.store(8, 10, -8, 0), "7b 0a f8ff 00000000"),  # *(u64 *)(r10 - 8) = r0
        (I.store(4, 10, -4, 0), "63 0a fcff 00000000"),  # *(u32 *)(r10 - 4) = r0
        (I.store_imm(8, 10, -16, 0), "7a 0a f0ff 00000000"),  # *(u64 *)(r10 - 16) = 0
        (I.jeq_imm(0, 0, 3), "15 00 0300 00000000"),  # if r0 == 0 goto +3
        (I.call(130), "85 00 0000 82000000"),  # call bpf_ringbuf_output
        (I.exit_(), "95 00 0000 00000000"),  # exit
        # r1 = map by fd 5: a wide instruction, src_reg BPF_PSEUDO_MAP_FD, the second slot zero
        (I.load_map_fd(1, 5), "18 11 0000 05000000 00 00 0000 00000000"),
    ],
)
def test_instructions_encode_as_the_kernel_documents(insn: list[I.Insn], expected: str) -> None:
    assert I.assemble(insn) == bytes.fromhex(expected)


def test_a_register_beyond_r10_is_refused() -> None:
    with pytest.raises(ValueError, match="r11"):
        I.Insn(I.ALU64 | I.MOV, dst=11).encode()


def _decoded(code: bytes) -> list[tuple[int, int, int, int, int]]:
    return [
        (op, regs & 0xF, regs >> 4, off, imm)
        for op, regs, off, imm in struct.iter_unpack("<BBhi", code)
    ]


@pytest.mark.parametrize("ringbuf", [True, False], ids=["ring buffer", "queue"])
@pytest.mark.parametrize("without", [frozenset(), program.OPTIONAL_HELPERS], ids=["all", "fewest"])
def test_every_path_of_the_program_allows(ringbuf: bool, without: frozenset[int]) -> None:
    """One exit, right after r0 = 1, and every jump lands on that r0 = 1: whatever the
    helpers return, the write goes through."""
    code = _decoded(program.build(7, ringbuf, without).insns)
    exits = [n for n, (op, *_) in enumerate(code) if op == 0x95]
    assert exits == [len(code) - 1]
    assert code[-2] == (0xB7, 0, 0, 0, 1)
    for n, (op, _, _, off, _) in enumerate(code):
        if op & 0x07 == I.JMP and op not in (0x85, 0x95):
            assert n + 1 + off == len(code) - 2
    assert not any(op == 0x85 and imm in without for op, _, _, _, imm in code)
    assert any(op == 0x85 and imm == (130 if ringbuf else 87) for op, _, _, _, imm in code)


def test_the_event_fits_the_stack() -> None:
    assert program.EVENT_SIZE <= 512 and program.EVENT_SIZE % 8 == 0


def _record(name: bytes, old: bytes, new: bytes, rets: tuple[int, int, int] = (0, 0, 0)) -> bytes:
    return program.EVENT.pack(
        1_000_000_000, (4242 << 32) | 4243, 25, (1000 << 32) | 1000, *rets, 0, b"sh", name, old, new
    )


def test_an_event_reads_as_sysctl_names_it() -> None:
    event = parse(_record(b"net/ipv4/conf/eth0.100/rp_filter", b"1\n", b"2\n"), frozenset(), 5)
    assert event.key == "net.ipv4.conf.eth0/100.rp_filter"
    assert (event.old, event.new, event.truncated) == ("1\n", "2\n", False)
    assert (event.pid, event.tid, event.uid, event.comm, event.cgroup_id) == (
        4242,
        4243,
        1000,
        "sh",
        25,
    )
    assert event.monotonic_ns == 1_000_000_000 and event.time == pytest.approx(1.000000005)


def test_a_long_value_is_marked_truncated_and_a_missing_one_absent() -> None:
    record = _record(b"kernel/core_pattern", b"", b"x" * 127, (0, -errno.EINVAL, -errno.E2BIG))
    event = parse(record, frozenset(), 0)
    assert event.truncated and event.old is None and event.new == "x" * 127


def test_the_fields_of_a_refused_helper_are_absent() -> None:
    event = parse(_record(b"vm/swappiness", b"60\n", b"10\n"), program.OPTIONAL_HELPERS, 0)
    assert event.key == "vm.swappiness"
    assert (event.pid, event.comm, event.uid, event.cgroup_id, event.time) == (None,) * 5
