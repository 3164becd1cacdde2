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
from sysctl_advisor.sources.sysctl_watch import left_out_fields, parse


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
        (I.or_reg(8, 0), "4f 08 0000 00000000"),  # r8 |= r0
        (I.atomic_add(8, 0, 0, 1), "db 10 0000 00000000"),  # lock *(u64 *)(r0 + 0) += r1
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


OFFSETS = program.Offsets(1280, 1268, 1752, 1840, 40, 184)


@pytest.mark.parametrize("sink", program.SINKS)
@pytest.mark.parametrize(
    ("without", "offsets"),
    [(frozenset(), OFFSETS), (program.OPTIONAL_HELPERS, OFFSETS), (frozenset(), None)],
    ids=["all", "fewest", "no BTF"],
)
def test_every_path_of_the_program_allows(
    sink: str, without: frozenset[int], offsets: program.Offsets | None
) -> None:
    """One exit, right after r0 = 1, and every jump forward and short of the exit: whatever
    the helpers return, the write goes through."""
    built = program.build(7, sink, 8, without, offsets)
    code = _decoded(built.insns)
    exits = [n for n, (op, *_) in enumerate(code) if op == 0x95]
    assert exits == [len(code) - 1]
    assert code[-2] == (0xB7, 0, 0, 0, 1)
    for n, (op, _, _, off, _) in enumerate(code):
        if op & 0x07 == I.JMP and op not in (0x85, 0x95):
            assert off >= 0 and n + 1 + off <= len(code) - 2
    called = {imm for op, _, _, _, imm in code if op == 0x85}
    assert not called & built.without
    assert {"ring": 130, "queue": 87, "last": 2}[sink] in called
    assert (built.without >= program.TASK_HELPERS) == (offsets is None or bool(without))


def test_the_parent_and_netns_are_read_at_the_offsets_given() -> None:
    """probe_read_kernel's source is the task (or the pointer read before) plus the offset."""
    code = _decoded(program.build(7, "ring", 8, frozenset(), OFFSETS).insns)
    added = [imm for op, dst, _, _, imm in code if op == 0x07 and dst == 3]
    assert added == [1280, 1268, 1752, 1840, 40, 184]


def test_the_event_fits_the_stack() -> None:
    assert program.STACK <= 512 and program.EVENT_SIZE % 8 == 0


def _record(
    name: bytes, old: bytes, new: bytes, rets: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
) -> bytes:
    return program.EVENT.pack(
        1_000_000_000,
        (4242 << 32) | 4243,
        25,
        (1000 << 32) | 1000,
        *rets,
        4200,
        0,
        0,
        b"sh",
        b"bash",
        4026531840,
        name,
        old,
        new,
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
    assert (event.parent_pid, event.parent_comm, event.netns) == (4200, "bash", 4026531840)


def test_a_failed_read_of_the_parent_or_netns_is_absent() -> None:
    record = _record(b"net/core/somaxconn", b"4096\n", b"8192\n", (0, 0, 0, -14, 0))
    event = parse(record, frozenset(), 0)
    assert (event.parent_pid, event.parent_comm, event.netns) == (None, None, 4026531840)
    record = _record(b"net/core/somaxconn", b"4096\n", b"8192\n", (0, 0, 0, 0, -14))
    assert parse(record, frozenset(), 0).netns is None


def test_a_record_says_which_fields_its_program_gave() -> None:
    for without in (frozenset(), program.TASK_HELPERS, program.OPTIONAL_HELPERS):
        built = program.build(7, "last", 8, without, OFFSETS)
        code = _decoded(built.insns)
        (given,) = [imm for op, _, _, off, imm in code if op == 0x62 and off == program.BASE + 60]
        assert program.left_out(given) == built.without


def test_a_long_value_is_marked_truncated_and_a_missing_one_absent() -> None:
    record = _record(
        b"kernel/core_pattern", b"", b"x" * 127, (0, -errno.EINVAL, -errno.E2BIG, 0, 0)
    )
    event = parse(record, frozenset(), 0)
    assert event.truncated and event.old is None and event.new == "x" * 127


def test_the_fields_of_a_refused_helper_are_absent() -> None:
    event = parse(_record(b"vm/swappiness", b"60\n", b"10\n"), program.OPTIONAL_HELPERS, 0)
    assert event.key == "vm.swappiness"
    assert (event.pid, event.comm, event.uid, event.cgroup_id, event.time) == (None,) * 5
    assert (event.parent_pid, event.parent_comm, event.netns) == (None,) * 3
    assert left_out_fields(program.OPTIONAL_HELPERS) == (
        "pid",
        "tid",
        "comm",
        "uid",
        "cgroup_id",
        "monotonic_ns",
        "time",
        "parent_pid",
        "parent_comm",
        "netns",
    )
