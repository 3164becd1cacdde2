"""An encoder for the eBPF instructions the sysctl-write program uses, and no others.

Each instruction is 8 bytes, little-endian on the machines this runs on: the opcode (class,
source, operation or size and mode), a byte with the destination register in its low nibble and
the source register in its high one, a signed 16-bit offset and a signed 32-bit immediate; a
64-bit immediate load takes two such slots (Linux v6.18,
Documentation/bpf/standardization/instruction-set.rst)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

# instruction classes
LD, LDX, ST, STX, JMP, ALU64 = 0x00, 0x01, 0x02, 0x03, 0x05, 0x07
# operand source (ALU, JMP): the immediate (K) or the source register (X)
K, X = 0x00, 0x08
# ALU operations (ADD is also the atomic operation's immediate)
ADD, OR, MOV = 0x00, 0x40, 0xB0
# jump operations
JEQ, CALL, EXIT = 0x10, 0x80, 0x90
# load and store: sizes and modes
W, DW = 0x00, 0x18
IMM, MEM, ATOMIC = 0x00, 0x60, 0xC0
SIZES = {4: W, 8: DW}

PSEUDO_MAP_FD = 1  # src_reg of a 64-bit immediate load whose value is a map's descriptor
FP = 10  # the read-only frame pointer; the stack lies below it


@dataclass(frozen=True)
class Insn:
    code: int
    dst: int = 0
    src: int = 0
    off: int = 0
    imm: int = 0

    def encode(self) -> bytes:
        if not (0 <= self.dst <= FP and 0 <= self.src <= FP):
            raise ValueError(f"no such register: r{self.dst}, r{self.src}")
        return struct.pack("<BBhi", self.code, (self.src << 4) | self.dst, self.off, self.imm)


def mov_reg(dst: int, src: int) -> list[Insn]:
    return [Insn(ALU64 | X | MOV, dst, src)]


def mov_imm(dst: int, imm: int) -> list[Insn]:
    return [Insn(ALU64 | K | MOV, dst, imm=imm)]


def add_imm(dst: int, imm: int) -> list[Insn]:
    return [Insn(ALU64 | K | ADD, dst, imm=imm)]


def or_reg(dst: int, src: int) -> list[Insn]:
    return [Insn(ALU64 | X | OR, dst, src)]


def load(size: int, dst: int, src: int, off: int) -> list[Insn]:
    """dst = *(uSIZE *)(src + off)"""
    return [Insn(LDX | MEM | SIZES[size], dst, src, off)]


def store(size: int, dst: int, off: int, src: int) -> list[Insn]:
    """*(uSIZE *)(dst + off) = src"""
    return [Insn(STX | MEM | SIZES[size], dst, src, off)]


def store_imm(size: int, dst: int, off: int, imm: int) -> list[Insn]:
    """*(uSIZE *)(dst + off) = imm"""
    return [Insn(ST | MEM | SIZES[size], dst, off=off, imm=imm)]


def atomic_add(size: int, dst: int, off: int, src: int) -> list[Insn]:
    """lock *(uSIZE *)(dst + off) += src (BPF_XADD before Linux 5.12 named it)"""
    return [Insn(STX | ATOMIC | SIZES[size], dst, src, off, imm=ADD)]


def jeq_imm(dst: int, imm: int, off: int) -> list[Insn]:
    """if dst == imm: skip `off` instructions"""
    return [Insn(JMP | K | JEQ, dst, off=off, imm=imm)]


def call(helper: int) -> list[Insn]:
    return [Insn(JMP | CALL, imm=helper)]


def exit_() -> list[Insn]:
    return [Insn(JMP | EXIT)]


def load_map_fd(dst: int, fd: int) -> list[Insn]:
    """dst = the map whose descriptor is `fd` (a 64-bit immediate load: two slots)."""
    return [Insn(LD | IMM | DW, dst, PSEUDO_MAP_FD, imm=fd), Insn(0)]


def assemble(program: list[Insn]) -> bytes:
    return b"".join(insn.encode() for insn in program)
