"""The BPF_PROG_TYPE_CGROUP_SYSCTL program that records each sysctl write and allows it.

On every path it returns 1 (allow): it observes, it never blocks. For a write (`ctx->write`, the
first u32 of `struct bpf_sysctl`) it builds one event on its stack and hands it to a map: a ring
buffer (bpf_ringbuf_output, Linux 5.8+) or, on older kernels, a queue map the reader pops
(bpf_map_push_elem, 4.20+); or, with `sink="last"`, a hash map keyed by the writer's network
namespace and the sysctl's name that keeps the last write of each key and a count of them
(bpf_map_lookup_elem, then bpf_map_update_elem: two writes of one key at the same instant may
count once). An event the map cannot take adds one to a counter in an array map (an atomic add),
read as `dropped`.

The writer's parent (task->real_parent: its tgid and comm) and its network namespace
(task->nsproxy->net_ns->ns.inum) are read with bpf_get_current_task and
bpf_probe_read_kernel at offsets from the kernel's BTF (`btf.py`). A CGROUP_SYSCTL program
reaches those two helpers through `bpf_base_func_proto`, which hands them only to a loader
with CAP_PERFMON (kernel/bpf/helpers.c: `perfmon_capable()` up to 6.1, `bpf_token_capable(...,
CAP_PERFMON)` in 6.18); Linux 5.10 lists them there, 5.4 does not (there the sysctl program
falls back to `cgroup_base_func_proto` without them). A kernel without them, or without BTF,
loads the program without that part: those fields read as absent.

The helpers and their numbers are Linux v6.18, include/uapi/linux/bpf.h (`___BPF_FUNC_MAPPER`);
which of them this program type may call is kernel/bpf/cgroup.c (`sysctl_func_proto`, then
`cgroup_current_func_proto`, then `bpf_base_func_proto`). A helper some kernel refuses is left
out (`build(without=...)`): its field reads as absent."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sysctl_advisor.sources.bpf import insns as I

# helper ids
MAP_LOOKUP_ELEM, MAP_UPDATE_ELEM = 1, 2
KTIME_GET_NS, GET_CURRENT_PID_TGID, GET_CURRENT_UID_GID, GET_CURRENT_COMM = 5, 14, 15, 16
GET_CURRENT_TASK, GET_CURRENT_CGROUP_ID, MAP_PUSH_ELEM = 35, 80, 87
SYSCTL_GET_NAME, SYSCTL_GET_CURRENT_VALUE, SYSCTL_GET_NEW_VALUE = 101, 102, 103
PROBE_READ_KERNEL, RINGBUF_OUTPUT = 113, 130
TASK_HELPERS = frozenset({GET_CURRENT_TASK, PROBE_READ_KERNEL})  # both, or neither
# what may be left out on a kernel that refuses it; the sysctl helpers and the output may not
OPTIONAL_HELPERS = frozenset(
    {
        KTIME_GET_NS,
        GET_CURRENT_PID_TGID,
        GET_CURRENT_UID_GID,
        GET_CURRENT_COMM,
        GET_CURRENT_CGROUP_ID,
        GET_CURRENT_TASK,
        PROBE_READ_KERNEL,
    }
)
OPTIONAL_ORDER = sorted(OPTIONAL_HELPERS)
# the SysctlWrite fields each optional helper gives
FIELDS = {
    KTIME_GET_NS: ("monotonic_ns", "time"),
    GET_CURRENT_PID_TGID: ("pid", "tid"),
    GET_CURRENT_UID_GID: ("uid",),
    GET_CURRENT_COMM: ("comm",),
    GET_CURRENT_CGROUP_ID: ("cgroup_id",),
    GET_CURRENT_TASK: ("parent_pid", "parent_comm", "netns"),
    PROBE_READ_KERNEL: ("parent_pid", "parent_comm", "netns"),
}

NAME_SIZE, VALUE_SIZE, COMM_SIZE = 96, 128, 16
# the event: u64 time (CLOCK_MONOTONIC ns), pid_tgid, cgroup id, uid_gid; s32 results of the
# three sysctl helpers (negative: -E2BIG truncated, -EINVAL none) and of the parent's and the
# netns's reads (0: read); u32 parent tgid, a reserved u32 (0), the optional helpers called
# (bit n: OPTIONAL_ORDER[n], so that a record read later says what it holds); the comms; then
# the u64 netns inode and the name side by side, the last-writer map's key (a per-namespace
# key written in a pod's namespace is its own entry, not the host's); then the values
EVENT = struct.Struct(
    f"<QQQQiiiiiIII{COMM_SIZE}s{COMM_SIZE}sQ{NAME_SIZE}s{VALUE_SIZE}s{VALUE_SIZE}s"
)
EVENT_SIZE = EVENT.size  # 456
OFF_TIME, OFF_PID, OFF_CGROUP, OFF_UID, OFF_RET = 0, 8, 16, 24, 32
OFF_PARENT_RET, OFF_NETNS_RET, OFF_PARENT_PID, OFF_GIVEN = 44, 48, 52, 60
OFF_COMM = 64
OFF_PARENT_COMM = OFF_COMM + COMM_SIZE
OFF_NETNS = OFF_PARENT_COMM + COMM_SIZE  # u64: the inode's u32, then zeros
OFF_NAME = OFF_NETNS + 8
KEY_SIZE = 8 + NAME_SIZE  # the last-writer map's key: netns inode and name, from OFF_NETNS
OFF_OLD = OFF_NAME + NAME_SIZE
OFF_NEW = OFF_OLD + VALUE_SIZE
# after the event: its count (a "last" map's value is the event and the count), a scratch slot
OFF_COUNT, OFF_SCRATCH = EVENT_SIZE, EVENT_SIZE + 8
LAST_VALUE = struct.Struct(f"<{EVENT_SIZE}sQ")
STACK = EVENT_SIZE + 16  # within the 512-byte stack
BASE = -STACK  # the event's place below the frame pointer
CTX, TASK, ERR = 6, 7, 8  # kept across calls (r1-r5 are clobbered): context, task, read errors
SINKS = ("ring", "queue", "last")


@dataclass(frozen=True)
class Offsets:
    """Byte offsets in the kernel's structs (from its BTF)."""

    real_parent: int  # task_struct.real_parent
    tgid: int  # task_struct.tgid
    comm: int  # task_struct.comm
    nsproxy: int  # task_struct.nsproxy
    net_ns: int  # nsproxy.net_ns
    inum: int  # net.ns.inum


PATHS = {
    "real_parent": "task_struct.real_parent",
    "tgid": "task_struct.tgid",
    "comm": "task_struct.comm",
    "nsproxy": "task_struct.nsproxy",
    "net_ns": "nsproxy.net_ns",
    "inum": "net.ns.inum",
}


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


def _read(offset: int, size: int, base: int | None, field: int, first: bool) -> list[I.Insn]:
    """probe_read_kernel(stack + offset, size, (base is None ? task : *scratch) + field), its
    result or-ed into ERR: no jump, a failed read leaves zeros and a nonzero ERR."""
    source = I.mov_reg(3, TASK) if base is None else I.load(8, 3, I.FP, BASE + base)
    code = _stack_pointer(1, offset) + I.mov_imm(2, size) + source + I.add_imm(3, field)
    code += I.call(PROBE_READ_KERNEL)
    return code + (I.mov_reg(ERR, 0) if first else I.or_reg(ERR, 0))


def _task(offsets: Offsets) -> list[I.Insn]:
    """The parent's tgid and comm, and the network namespace's inode, each with its result."""
    o = offsets
    code = I.call(GET_CURRENT_TASK) + I.mov_reg(TASK, 0)
    code += _read(OFF_SCRATCH, 8, None, o.real_parent, first=True)
    code += _read(OFF_PARENT_PID, 4, OFF_SCRATCH, o.tgid, first=False)
    code += _read(OFF_PARENT_COMM, COMM_SIZE, OFF_SCRATCH, o.comm, first=False)
    code += I.store(4, I.FP, BASE + OFF_PARENT_RET, ERR)
    code += _read(OFF_SCRATCH, 8, None, o.nsproxy, first=True)
    code += _read(OFF_SCRATCH, 8, OFF_SCRATCH, o.net_ns, first=False)
    code += _read(OFF_NETNS, 4, OFF_SCRATCH, o.inum, first=False)
    return code + I.store(4, I.FP, BASE + OFF_NETNS_RET, ERR)


def _last(map_fd: int) -> list[I.Insn]:
    """The write's count (the one before, plus one) and the event into the hash map keyed by
    the network namespace and the name; r0 the update's result."""
    key = _stack_pointer(2, OFF_NETNS)
    code = I.load_map_fd(1, map_fd) + key + I.call(MAP_LOOKUP_ELEM)
    code += I.jeq_imm(0, 0, 2) + I.load(8, 1, 0, EVENT_SIZE) + I.store(8, I.FP, BASE + OFF_COUNT, 1)
    code += I.load(8, 1, I.FP, BASE + OFF_COUNT) + I.add_imm(1, 1)
    code += I.store(8, I.FP, BASE + OFF_COUNT, 1)
    code += I.load_map_fd(1, map_fd) + key + _stack_pointer(3, 0) + I.mov_imm(4, 0)  # BPF_ANY
    return code + I.call(MAP_UPDATE_ELEM)


def _count_drop(drops_fd: int) -> list[I.Insn]:
    """If r0 (the output's result) is not 0: drops[0] += 1."""
    code = I.store_imm(4, I.FP, BASE + OFF_SCRATCH, 0)
    code += I.load_map_fd(1, drops_fd) + _stack_pointer(2, OFF_SCRATCH) + I.call(MAP_LOOKUP_ELEM)
    code += I.jeq_imm(0, 0, 2) + I.mov_imm(1, 1) + I.atomic_add(8, 0, 0, 1)
    return I.jeq_imm(0, 0, len(code)) + code


def build(
    map_fd: int,
    sink: str,
    drops_fd: int,
    without: frozenset[int] = frozenset(),
    offsets: Offsets | None = None,
) -> Built:
    """The program's instructions: `map_fd` the ring buffer, queue or last-writer map
    (`sink`) it writes to, `drops_fd` the array map whose one u64 counts what it could not.
    Without `offsets` (no BTF) the parent and netns are left out, as if refused."""
    if sink not in SINKS:
        raise ValueError(f"no such sink: {sink}")
    if offsets is None:
        without = without | TASK_HELPERS
    body: list[I.Insn] = []
    # the whole event zeroed first: a helper's output is read from initialised stack only
    for offset in range(0, STACK, 8):
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
    if offsets is not None and not TASK_HELPERS & without:
        body += _task(offsets)
    given = sum(1 << n for n, helper in enumerate(OPTIONAL_ORDER) if helper not in without)
    body += I.store_imm(4, I.FP, BASE + OFF_GIVEN, given)
    body += _sysctl(SYSCTL_GET_NAME, OFF_NAME, NAME_SIZE, 0)
    body += _sysctl(SYSCTL_GET_CURRENT_VALUE, OFF_OLD, VALUE_SIZE, 1)
    body += _sysctl(SYSCTL_GET_NEW_VALUE, OFF_NEW, VALUE_SIZE, 2)
    if sink == "last":
        body += _last(map_fd)
    else:
        body += I.load_map_fd(1, map_fd) + _stack_pointer(2, 0)
        if sink == "ring":
            body += I.mov_imm(3, EVENT_SIZE) + I.mov_imm(4, 0) + I.call(RINGBUF_OUTPUT)
        else:
            body += I.mov_imm(3, 0) + I.call(MAP_PUSH_ELEM)  # BPF_ANY; a full queue refuses
    body += _count_drop(drops_fd)
    allow = I.mov_imm(0, 1) + I.exit_()
    head = I.mov_reg(CTX, 1) + I.load(4, 0, CTX, 0) + I.jeq_imm(0, 0, len(body))  # a read: allow
    return Built(I.assemble(head + body + allow), without)


def left_out(given: int) -> frozenset[int]:
    """The optional helpers a record's `given` bits say the program did not call."""
    return frozenset(h for n, h in enumerate(OPTIONAL_ORDER) if not given >> n & 1)
