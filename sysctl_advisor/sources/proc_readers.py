"""Parsers for the /proc and /sys text formats the collector reads. Pure: text in, numbers out.

Each parser tolerates lines it does not understand (kernels add fields over time) and never
raises on odd text; a missing figure is simply absent from the result.
"""

from __future__ import annotations

import re
from collections import Counter

from sysctl_advisor.model.host_facts import MAX_COUNT
from sysctl_advisor.model.units import is_decimal


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes: `MemTotal:  24576000 kB` -> {"MemTotal": 25165824000}."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and parts and is_decimal(parts[0]):
            factor = 1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1
            values[name.strip()] = int(parts[0]) * factor
    return values


def parse_sockstat(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/sockstat: `TCP: inuse 5 orphan 0 tw 2 alloc 8 mem 1` -> {"TCP": {"inuse": 5, …}}.

    `mem` is in pages (it is tcp_memory_allocated, the figure tcp_mem is compared with).
    A protocol's line printed twice, or a field named twice in it, is garbled (either figure
    could be the one) and left out, as parse_netstat leaves such columns out.
    """
    table: dict[str, dict[str, int]] = {}
    twice: set[str] = set()
    for line in text.splitlines():
        protocol, sep, rest = line.partition(":")
        if not sep:
            continue
        protocol, words = protocol.strip(), rest.split()
        names = words[::2]
        repeated = {name for name, n in Counter(names).items() if n > 1}
        fields: dict[str, int] = {}
        for name, value in zip(names, words[1::2], strict=False):
            if name not in repeated and is_decimal(value):
                fields[name] = int(value)
        if protocol in table:
            twice.add(protocol)
        table[protocol] = fields
    for protocol in twice:
        del table[protocol]
    return table


def parse_netstat(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/netstat (and /proc/net/snmp): pairs of header and value lines per protocol.

    `TcpExt: SyncookiesSent … ListenOverflows ListenDrops …` then `TcpExt: 0 … 12 12 …`.

    The kernel prints each protocol's pair once and each column once: a column named twice,
    or a protocol whose pair comes twice, is a garbled file whose figures could be either, and
    is left out.
    """
    table: dict[str, dict[str, int]] = {}
    pending: dict[str, list[str]] = {}
    twice: set[str] = set()
    for line in text.splitlines():
        protocol, sep, rest = line.partition(":")
        if not sep:
            continue
        protocol, words = protocol.strip(), rest.split()
        if protocol in pending:
            names = pending.pop(protocol)
            if protocol in table:
                twice.add(protocol)
            repeated = {name for name, n in Counter(names).items() if n > 1}
            table[protocol] = {
                name: int(value)
                for name, value in zip(names, words, strict=False)
                if name not in repeated and is_decimal(value.removeprefix("-"))
            }
        else:
            pending[protocol] = words
    for protocol in twice:
        del table[protocol]
    return table


# The /proc/net/snmp `Udp:` columns the facts keep, by the name the facts give them.
_UDP_COLUMNS = {
    "InDatagrams": "in_datagrams",
    "NoPorts": "no_ports",
    "InErrors": "in_errors",
    "OutDatagrams": "out_datagrams",
    "RcvbufErrors": "rcvbuf_errors",
    "SndbufErrors": "sndbuf_errors",
    "MemErrors": "mem_errors",  # 5.15 and later (absent at 5.2)
}


def udp_counters(snmp_udp: dict[str, int], sockstat_udp: dict[str, int]) -> dict[str, int]:
    """The facts' `observed.udp` from /proc/net/snmp's `Udp:` rows (parse_netstat) and
    sockstat's `UDP: inuse N mem M` (parse_sockstat): empty unless both InDatagrams and
    RcvbufErrors were read, since the share of drops needs the two. A figure outside
    0..MAX_COUNT (the kernel prints unsigned counters, so one means a garbled file) is left
    out rather than refused: the rest of the facts still stand."""
    udp = {
        field: snmp_udp[column]
        for column, field in _UDP_COLUMNS.items()
        if 0 <= snmp_udp.get(column, -1) <= MAX_COUNT
    }
    if "in_datagrams" not in udp or "rcvbuf_errors" not in udp:
        return {}
    if 0 <= sockstat_udp.get("mem", -1) <= MAX_COUNT:
        udp["mem_pages_peak"] = sockstat_udp["mem"]
    return udp


# /proc/net/dev receive columns, in order, after the interface name.
_DEV_RX_COLUMNS = ("bytes", "packets", "errs", "drop", "fifo", "frame", "compressed", "multicast")


def parse_net_dev(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/dev receive counters per interface: {"eth0": {"fifo": 1491402, …}}.

    The receive `fifo` column is what ifconfig calls "overruns": frames the NIC dropped because
    its receive ring was full.
    """
    table: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        words = rest.split()
        if not sep or "|" in line or len(words) < len(_DEV_RX_COLUMNS):
            continue
        if not all(is_decimal(w) for w in words[: len(_DEV_RX_COLUMNS)]):
            continue
        table[name.strip()] = {
            column: int(value) for column, value in zip(_DEV_RX_COLUMNS, words, strict=False)
        }
    return table


_HEX = frozenset("0123456789abcdefABCDEF")


def parse_softnet_cpus(text: str) -> list[dict[str, int]]:
    """/proc/net/softnet_stat per CPU: processed, dropped, time_squeeze and, where printed,
    received_rps (column 10: packets another CPU steered here with RPS/RFS). Only online CPUs
    are printed; kernels that print 13 or more columns give the CPU id in column 13
    (net/core/net-procfs.c softnet_seq_show()), older ones are numbered by line."""
    cpus: list[dict[str, int]] = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 3 or not all(w and set(w) <= _HEX and len(w) <= 16 for w in words):
            continue
        cpu = int(words[12], 16) if len(words) >= 13 else len(cpus)
        entry = {
            "cpu": min(cpu, 65535),
            "processed": int(words[0], 16),
            "dropped": int(words[1], 16),
            "time_squeeze": int(words[2], 16),
        }
        if len(words) >= 10:
            entry["received_rps"] = int(words[9], 16)
        cpus.append(entry)
    return cpus


def softnet_totals(cpus: list[dict[str, int]]) -> dict[str, int]:
    """The per-CPU counters summed: column 2 (packets dropped because the per-CPU input backlog
    was full) and column 3 (time_squeeze: polls that ran out of netdev_budget or
    netdev_budget_usecs with work left). Empty when no CPU line was read."""
    if not cpus:
        return {}
    return {
        "dropped": sum(c["dropped"] for c in cpus),
        "time_squeeze": sum(c["time_squeeze"] for c in cpus),
    }


def count_numa_nodes(names: list[str]) -> int | None:
    """Entries of /sys/devices/system/node: `node0`, `node1`, … -> 2."""
    count = sum(1 for n in names if n.startswith("node") and is_decimal(n[4:]))
    return count or None


def count_cpu_list(text: str) -> int | None:
    """/sys/devices/system/cpu/online: `0-3,8-11` -> 8."""
    total = 0
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        if not is_decimal(low) or (high and not is_decimal(high)):
            return None
        total += (int(high) - int(low) + 1) if high else 1
    return total or None


def count_cpuinfo(text: str) -> int | None:
    """/proc/cpuinfo: the number of `processor :` stanzas."""
    count = sum(1 for line in text.splitlines() if line.split(":")[0].strip() == "processor")
    return count or None


def selected_mode(text: str) -> str | None:
    """Bracketed choice of a /sys mode file: `always [madvise] never` -> "madvise"."""
    start, end = text.find("["), text.find("]")
    if start == -1 or end <= start:
        return None
    return text[start + 1 : end].strip() or None


def parse_slabinfo(text: str) -> dict[str, int]:
    """/proc/slabinfo (version 2.1): bytes held by each cache, num_objs x objsize.

    `TCP  3040 3120 2368 13 8 : tunables …` -> {"TCP": 3120 * 2368}.
    """
    caches: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith(("slabinfo", "#")):
            continue
        parts = line.split()
        if len(parts) >= 4 and is_decimal(parts[2]) and is_decimal(parts[3]):
            caches[parts[0]] = int(parts[2]) * int(parts[3])
    return caches


_QDISC = re.compile(r"[A-Za-z_]{1,15}")


def kernel_build(config: str) -> dict[str, str | None]:
    """The defaults a kernel's build configuration (.config text) sets: `default_qdisc`, the
    qdisc CONFIG_DEFAULT_NET_SCH names where CONFIG_NET_SCH_DEFAULT=y and it is built in
    (pfifo_fast always is; without NET_SCH_DEFAULT the kernel keeps pfifo_fast), None where it
    is a module (net/sched/Kconfig, sch_api.c sch_default_qdisc())."""
    options: dict[str, str] = {}
    for line in config.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.startswith("CONFIG_"):
            options[name] = value.strip().strip('"')
    if options.get("CONFIG_NET_SCH_DEFAULT") != "y":
        return {"default_qdisc": "pfifo_fast"}
    chosen = options.get("CONFIG_DEFAULT_NET_SCH", "")
    # ASCII letters only: str.isalpha, upper and lower know all of Unicode ("ſq" upper is
    # "SQ", the Kelvin sign lower is "k"), and a name the facts refuse failed the whole read
    if not _QDISC.fullmatch(chosen):
        return {"default_qdisc": None}
    built_in = chosen == "pfifo_fast" or options.get(f"CONFIG_NET_SCH_{chosen.upper()}") == "y"
    return {"default_qdisc": chosen.lower() if built_in else None}
