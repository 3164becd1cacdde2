"""The BPF_PROG_TYPE_CGROUP_SYSCTL program that records each sysctl write and allows it.

On every path it returns 1 (allow): it observes, it never blocks. For a write (`ctx->write`,
the first u32 of `struct bpf_sysctl`) it builds one event on its stack and hands it to a map:
a ring buffer (bpf_ringbuf_output, Linux 5.8+) or, on older kernels, a queue map the reader
pops (bpf_map_push_elem, 4.20+). The helpers and their numbers are Linux v6.18,
include/uapi/linux/bpf.h (`___BPF_FUNC_MAPPER`); which of them this program type may call is
kernel/bpf/cgroup.c (`sysctl_func_proto`, then `cgroup_current_func_proto`, then
`bpf_base_func_proto`). A helper some kernel refuses is left out (`build(without=...)`): its
field reads as absent."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sysctl_advisor.sources.bpf import insns as I

# helper ids
KTIME_GET_NS, GET_CURRENT_PID_TGID, GET_CURRENT_UID_GID, GET_CURRENT_COMM = 5, 14, 15, 16
GET_CURRENT_CGROUP_ID, MAP_PUSH_ELEM = 80, 87
SYSCTL_GET_NAME, SYSCTL_GET_CURRENT_VALUE, SYSCTL_GET_NEW_VALUE = 101, 102, 103
RINGBUF_OUTPUT = 130
# what may be left out on a kernel that refuses it; the sysctl helpers and the output may not
OPTIONAL_HELPERS = frozenset(
    {
        KTIME_GET_NS,
        GET_CURRENT_PID_TGID,
        GET_CURRENT_UID_GID,
        GET_CURRENT_COMM,
        GET_CURRENT_CGROUP_ID,
    }
)

NAME_SIZE, VALUE_SIZE, COMM_SIZE = 96, 128, 16
# the event: u64 time (CLOCK_MONOTONIC ns), pid_tgid, cgroup id, uid_gid; s32 results of the
# three sysctl helpers (negative: -E2BIG truncated, -EINVAL none); u32 padding; then the texts
EVENT = struct.Struct(f"<QQQQiiiI{COMM_SIZE}s{NAME_SIZE}s{VALUE_SIZE}s{VALUE_SIZE}s")
EVENT_SIZE = EVENT.size  # 416: within the 512-byte stack
BASE = -EVENT_SIZE  # the event's place below the frame pointer
OFF_TIME, OFF_PID, OFF_CGROUP, OFF_UID, OFF_RET = 0, 8, 16, 24, 32
OFF_COMM = 48
OFF_NAME = OFF_COMM + COMM_SIZE
OFF_OLD = OFF_NAME + NAME_SIZE
OFF_NEW = OFF_OLD + VALUE_SIZE
CTX = 6  # r6 keeps the context across calls (r1-r5 are clobbered)


@dataclass(frozen=True)
class Built:
    insns: bytes
    without: frozenset[int]  # the optional helpers left out


def _stack_pointer(reg: int, offset: int) -> list[I.Insn]:
    return I.mov_reg(reg, I.FP) + I.add_imm(reg, BASE + offset)


def _scalar(helper: int, offset: int) -> list[I.Insn]:
    return I.call(helper) + I.store(8, I.FP, BASE + offset, 0)


def _sysctl(helper: int, offset: int, size: int, result: int) -> list[I.Insn]:
    args = I.mov_reg(1, CTX) + _stack_pointer(2, offset) + I.mov_imm(3, size)
    if helper == SYSCTL_GET_NAME:
        args += I.mov_imm(4, 0)  # no BPF_F_SYSCTL_BASE_NAME: the full name, net/core/somaxconn
    return args + I.call(helper) + I.store(4, I.FP, BASE + OFF_RET + 4 * result, 0)


def build(map_fd: int, ringbuf: bool, without: frozenset[int] = frozenset()) -> Built:
    """The program's instructions, `map_fd` the ring buffer (or queue) it writes to."""
    body: list[I.Insn] = []
    # the whole event zeroed first: a helper's output is read from initialised stack only
    for offset in range(0, EVENT_SIZE, 8):
        body += I.store_imm(8, I.FP, BASE + offset, 0)
    for helper, offset in (
        (KTIME_GET_NS, OFF_TIME),
        (GET_CURRENT_PID_TGID, OFF_PID),
        (GET_CURRENT_CGROUP_ID, OFF_CGROUP),
        (GET_CURRENT_UID_GID, OFF_UID),
    ):
        if helper not in without:
            body += _scalar(helper, offset)
    if GET_CURRENT_COMM not in without:
        body += _stack_pointer(1, OFF_COMM) + I.mov_imm(2, COMM_SIZE) + I.call(GET_CURRENT_COMM)
    body += _sysctl(SYSCTL_GET_NAME, OFF_NAME, NAME_SIZE, 0)
    body += _sysctl(SYSCTL_GET_CURRENT_VALUE, OFF_OLD, VALUE_SIZE, 1)
    body += _sysctl(SYSCTL_GET_NEW_VALUE, OFF_NEW, VALUE_SIZE, 2)
    body += I.load_map_fd(1, map_fd) + _stack_pointer(2, 0)
    if ringbuf:
        body += I.mov_imm(3, EVENT_SIZE) + I.mov_imm(4, 0) + I.call(RINGBUF_OUTPUT)
    else:
        body += I.mov_imm(3, 0) + I.call(MAP_PUSH_ELEM)  # BPF_ANY; a full queue drops the event
    allow = I.mov_imm(0, 1) + I.exit_()
    head = I.mov_reg(CTX, 1) + I.load(4, 0, CTX, 0) + I.jeq_imm(0, 0, len(body))  # a read: allow
    return Built(I.assemble(head + body + allow), without)
