"""Host facts: the validated description of one machine (the facts-file contract is
docs/evidence.md#host-facts)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.model_base import (
    After,
    Before,
    Field,
    Record,
    exactly,
    model,
    plain_data,
    validate,
)
from sysctl_advisor.model.sysctl_writers import SysctlWriters
from sysctl_advisor.model.text_escape import plain_line
from sysctl_advisor.model.timestamps import moment
from sysctl_advisor.model.units import parse_size
from sysctl_advisor.model.vocabulary import (
    OneLine,
    ProcessName,
    SysctlKey,
    SysctlKeyGlob,
    Timestamp,
)

# `uname -m` values of 32-bit kernels. Anything else (x86_64, aarch64, ppc64le, s390x…) is 64-bit.
THIRTY_TWO_BIT_ARCHES = frozenset(
    {
        "i386",
        "i486",
        "i586",
        "i686",
        "x86",
        "armv5l",
        "armv6l",
        "armv7l",
        "armv7hl",
        "armhf",
        "arm",
        "mips",
        "mipsel",
        "ppc",
        "powerpc",
        "s390",
        "sparc",
        "m68k",
        "sh4",
        "riscv32",
    }
)
# `uname -m` (and Ansible's architecture fact) of 64-bit kernels; an arch in neither list is
# refused rather than planned as if it were 64-bit.
SIXTY_FOUR_BIT_ARCHES = frozenset(
    {
        "x86_64",
        "amd64",
        "aarch64",
        "arm64",
        "aarch64_be",
        "ppc64",
        "ppc64le",
        "s390x",
        "riscv64",
        "mips64",
        "mips64el",
        "loongarch64",
        "sparc64",
        "ia64",
        "alpha",
        "parisc64",
    }
)
X86_32 = frozenset({"i386", "i486", "i586", "i686", "x86"})
MiB = 1024 * 1024
GiB = 1024 * MiB
# What no kernel of these architectures can have (read at 6.12): the page sizes its Kconfig
# offers (the HAVE_PAGE_SIZE_* options arch/*/Kconfig selects), where they are few;
# architectures not listed are not checked.
PAGE_SIZES_BY_ARCH = {
    **dict.fromkeys(["x86_64", "amd64", *X86_32], frozenset({4096})),
    **dict.fromkeys(["armv5l", "armv6l", "armv7l", "armv7hl", "armhf", "arm"], frozenset({4096})),
    **dict.fromkeys(["s390", "s390x", "riscv32", "riscv64"], frozenset({4096})),
    **dict.fromkeys(
        ["aarch64", "arm64", "aarch64_be", "loongarch64"], frozenset({4096, 16384, 65536})
    ),
}
# A 32-bit x86 kernel addresses at most 2^36 bytes of RAM (MAX_PHYSMEM_BITS with PAE, 32
# without: arch/x86/include/asm/sparsemem.h), so MemTotal is never above 64 GiB; and no
# 32-bit kernel maps more than its 4 GiB address space directly (LowTotal).
X86_32_MAX_MEMORY = 64 * GiB
MAX_LOWMEM_32 = 4 * GiB
# The most CPUs any kernel is built for: CONFIG_NR_CPUS at most 8192 (x86_64 with
# CPUMASK_OFFSTACK, powerpc; arm64 4096, sparc64 4096, s390 512 … at 6.12).
MAX_CPUS = 8192
# Directly mapped memory (lowmem) of 32-bit kernels with their default address split, for
# facts that do not give LowTotal. x86 VMSPLIT_3G: 1 GiB of kernel space minus the 128 MiB
# vmalloc reserve (arch/x86 MAXMEM). ARM VMSPLIT_3G: up to VMALLOC_END minus 240 MiB of vmalloc
# and an 8 MiB gap (arch/arm/mm/mmu.c vmalloc_min). MIPS32: KSEG0, 512 MiB. Other 32-bit
# architectures have no default here: their facts must give memory.lowmem.
DEFAULT_LOWMEM_BY_FAMILY = {"x86": 896 * MiB, "arm": 768 * MiB, "mips": 512 * MiB}

Size = Annotated[int, Before(parse_size)]

# Text that reaches outputs must not carry a line break or any other control, format or
# separator character (a hostname with a newline would become a live line of a sysctl file).
# RFC 1123 labels; underscores too, which Linux accepts and many inventories use. Nothing a
# renderer, a YAML document or a file name could take for syntax.
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
    r"(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$"
)
_RELEASE = re.compile(r"^[0-9][0-9A-Za-z._+~-]{0,127}$")
_ARCH = re.compile(r"^[A-Za-z0-9_]{1,32}$")
_DRIVER = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SERVICE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_COUNT = 10**15  # above any counter a host reports; a bigger number is not a measurement
MAX_KERNEL_NUMBER = 2**64  # no sysctl holds a larger integer
MAX_KERNEL_LOG = 768 * 1024  # characters of observed.kernel_messages, all lines together


# The longest value a sysctl prints: a port bitmap of every other port is about 190 KB.
MAX_SYSCTL_TEXT = 256 * 1024


def _pattern(regex: re.Pattern[str], what: str) -> Any:
    def check(value: str) -> str:
        plain_line(value, what)
        if not regex.match(value):
            raise ValueError(f"not a valid {what}: {value[:80]!r}")
        return value

    return After(check)


# The bytes dev_valid_name() refuses in a name besides / and : (net/core/dev.c, Linux 6.18):
# those the kernel's isspace() takes for space (lib/ctype.c: 9-13, 32 and 160, so a UTF-8
# character whose encoding holds the byte 0xa0, such as "à", is refused too).
_KERNEL_NAME_REFUSED = frozenset(b"/:\t\n\v\f\r \xa0")


def interface_name(value: str) -> str:
    """The kernel's dev_valid_name() on the name's UTF-8 bytes: 1-15 bytes, not . or .., no
    /, : or byte the kernel's isspace() takes; and, as every facts text, printable. A name
    may still hold `$`, `(`, `;`, quotes: commands built from it quote it for the shell."""
    plain_line(value, "interface name")
    raw = value.encode()
    if not raw or len(raw) > 15 or value in (".", "..") or not _KERNEL_NAME_REFUSED.isdisjoint(raw):
        raise ValueError(f"not a valid interface name (IFNAMSIZ rules): {value[:40]!r}")
    return value


Hostname = Annotated[str, _pattern(_HOSTNAME, "hostname (RFC 1123 labels)")]


def _release(value: str) -> str:
    plain_line(value, "kernel release")
    if not _RELEASE.match(value):
        raise ValueError(
            f"cannot read a kernel version from {value[:80]!r} (e.g. 5.15.0-91-generic)"
        )
    return value


Release = Annotated[str, After(_release)]


def _known_arch(value: str) -> str:
    if value.lower() not in THIRTY_TWO_BIT_ARCHES | SIXTY_FOUR_BIT_ARCHES:
        raise ValueError(
            f"{value[:32]!r} is not an architecture the advisor knows (uname -m, e.g. x86_64, "
            "aarch64, ppc64le, s390x, i686, armv7l)"
        )
    return value


Arch = Annotated[str, _pattern(_ARCH, "architecture"), After(_known_arch)]
Driver = Annotated[str, _pattern(_DRIVER, "driver name")]
InterfaceName = Annotated[str, After(interface_name)]
ServiceName = Annotated[str, _pattern(_SERVICE, "service name")]
ModuleName = Annotated[str, _pattern(re.compile(r"^[a-z0-9_]{1,56}$"), "kernel module name")]


def _count(value: int) -> int:
    if not 0 <= value <= MAX_COUNT:
        raise ValueError(f"a count lies between 0 and {MAX_COUNT:.0e}, got {value}")
    return value


Count = Annotated[int, After(_count)]


def _none_if_nonpositive(value: Any) -> Any:
    # Ansible and /sys report unknown link speed as -1.
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        return None
    return value


def sysctl_text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | str):
        text = " ".join(str(value).split())
    elif isinstance(value, list) and all(isinstance(v, int | str) for v in value):
        text = " ".join(str(v) for v in value)
    else:
        raise ValueError("a sysctl value must be a string, a number or a list of numbers")
    plain_line(text, "sysctl value", MAX_SYSCTL_TEXT)
    for word in text.split():
        digits = word.lstrip("-")
        if digits.isascii() and digits.isdigit() and len(digits) > 20:
            raise ValueError(f"{word[:24]}... is larger than any kernel value")
        if digits.isascii() and digits.isdigit() and int(digits) > MAX_KERNEL_NUMBER:
            raise ValueError(f"{word} is larger than any kernel value")
    return text


def _plausible_total(value: int) -> int:
    if not 16 * MiB <= value <= 64 * 2**50:
        raise ValueError(f"memory.total must lie between 16 MiB and 64 PiB, got {value} bytes")
    return value


def _plausible_lowmem(value: int) -> int:
    # the kernel's own shares of lowmem size tcp_mem and udp_mem on 32-bit: a LowTotal of a
    # few pages would have a plan write 0 0 0 (no socket could hold a byte)
    if value < 16 * MiB:
        raise ValueError(
            f"memory.lowmem (LowTotal) must be at least 16 MiB, as memory.total, got {value} bytes"
        )
    return value


def is_huge_page_size(value: int) -> bool:
    """A Hugepagesize a kernel prints: a power of two from 64 KiB to 16 GiB."""
    return not value & (value - 1) and 64 * 1024 <= value <= 16 * 2**30


def _huge_page_size(value: int) -> int:
    if not is_huge_page_size(value):
        raise ValueError(
            f"memory.huge_page_size (Hugepagesize) is a power of two from 64 KiB to 16 GiB, "
            f"got {value} bytes"
        )
    return value


@model
class Memory(Record):
    total: Annotated[Size, After(_plausible_total)] = Field(
        description="MemTotal: integer bytes, or a number with a unit (16 MiB .. 64 PiB)"
    )
    lowmem: Annotated[Size, After(_plausible_lowmem)] | None = Field(
        default=None,
        description="LowTotal on 32-bit kernels: part of MemTotal, 16 MiB .. 4 GiB",
    )
    numa_nodes: int | None = Field(
        default=None, ge=1, le=1024, description="NUMA nodes with memory (/sys/devices/system/node)"
    )
    huge_page_size: Annotated[Size, After(_huge_page_size)] | None = Field(
        default=None,
        description="Hugepagesize in /proc/meminfo: the default huge page size, the unit of "
        "vm.nr_hugepages (a power of two, 64 KiB .. 16 GiB); absent: not known",
    )

    def __post_init__(self) -> None:
        if self.lowmem is not None and self.lowmem > self.total:
            raise ValueError(
                f"lowmem ({self.lowmem} bytes) is more than total ({self.total}): LowTotal is "
                "part of MemTotal"
            )


@model
class Cpu(Record):
    threads: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CPUS,
        description="CPUs the kernel runs on; no kernel is built for more than 8192 (NR_CPUS)",
    )


@model
class Nic(Record):
    name: InterfaceName
    driver: Driver | None = None
    speed_mbps: Annotated[int | None, Before(_none_if_nonpositive)] = Field(
        default=None, le=10_000_000
    )
    mtu: int | None = Field(default=None, ge=68, le=65536)
    rx_overruns: Count | None = Field(default=None, description="fifo column of /proc/net/dev")


@model
class Listen(Record):
    """One `listen` directive of a server's configuration, as parsed from its files."""

    address: OneLine = Field(description="the directive's first argument, e.g. 80 or [::]:443")
    backlog: int | None = Field(
        default=None, ge=-1, le=2**31 - 1, description="backlog=N; absent means the default"
    )
    file: OneLine
    line: int = Field(ge=1, le=10**9)
    text: OneLine = Field(description="the directive as written, without the semicolon")


_DIGITS = re.compile(r"[0-9]{1,5}")  # ASCII digits only (str.isdecimal takes any script's)


def _port_range(value: str) -> str:
    plain_line(value, "port range")
    first, dash, last = value.partition("-")
    if not (dash and _DIGITS.fullmatch(first) and _DIGITS.fullmatch(last)):
        raise ValueError(f"not a port range such as 30000-32767: {value[:40]!r}")
    if not 1 <= int(first) <= int(last) <= 65535:
        raise ValueError(f"not a port range within 1-65535: {value!r}")
    return value


# What the collector reads itself (listening sockets from sock_diag, the kubelet's port from
# its configuration), never typed by hand: such figures must be exactly ints and booleans, not
# text, floats or booleans that would convert.
StrictInt = Annotated[int, exactly(int)]
StrictBool = Annotated[bool, exactly(bool)]
StrictText = Annotated[OneLine, exactly(str)]


@model
class Kubernetes(Record):
    """What the operator (or an inventory) says of the host's place in a Kubernetes cluster;
    without it, the advisor recognises a node from its interfaces (links, nics), listeners
    and kubelet or CNI files (kubernetes_files)."""

    node: bool | None = Field(
        default=None, description="true: a Kubernetes node; false: not one, whatever it shows"
    )
    node_port_range: Annotated[str, After(_port_range)] | None = Field(
        default=None,
        description="the API server's --service-node-port-range (default 30000-32767)",
    )
    namespace: Literal["node", "pod"] | None = Field(
        default=None,
        description="whose network namespace the facts' per-namespace values are: the node's "
        "own (the default), or a pod's (read inside a pod, or planned for a pod's fresh "
        "namespace), which serves no NodePort and needs no reservation for one",
    )


# A file `facts` looks for (rules/catalog/kubernetes.yaml `node.files`): an absolute path of
# plain name parts, as the host has it.
_NODE_FILE = re.compile(r"^(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}){1,12}$")
NodeFile = Annotated[str, _pattern(_NODE_FILE, "absolute file path")]


@model
class KubernetesFiles(Record):
    """The kubelet's and the CNI plugins' configuration files `facts` found, on the live host
    or in a copied tree (regular files inside it); present: they were looked for, so an
    empty list says none is there. Where it looks is rules/catalog/kubernetes.yaml
    (`node.files`); its knowledge turns what it found into signs of a node."""

    found: list[NodeFile] = Field(
        default_factory=list,
        max_length=64,
        description="each file found, by its path on the host (/var/lib/kubelet/config.yaml)",
    )
    kubelet_port: StrictInt | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="the `port:` of the kubelet configuration found; absent: not given there",
    )


@model
class KernelModules(Record):
    """Congestion control (tcp_*) and qdisc (sch_*) modules of the running kernel, from
    /lib/modules/<release>/modules.dep and modules.builtin: what `modprobe` could load."""

    loadable: list[ModuleName] = Field(default_factory=list, max_length=1024)
    builtin: list[ModuleName] = Field(default_factory=list, max_length=1024)


@model
class Service(Record):
    listen_backlog: int | None = Field(
        default=None,
        ge=1,
        le=2**31 - 1,
        description="the backlog the server asks for (Redis and Valkey: tcp-backlog, filled "
        "from `config` when it sets it)",
    )
    maxconn: int | None = Field(
        default=None,
        ge=1,
        le=2**31 - 1,
        description="HAProxy: the frontend's maxconn (its backlog if unset)",
    )
    connections: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="nginx, HAProxy: connections the server holds now, from its own status "
        "(HAProxy `show info` CurrConns; nginx stub_status `Active connections`)",
    )
    connection_limit: int | None = Field(
        default=None,
        ge=1,
        le=2**31 - 1,
        description="nginx, HAProxy: the connections it holds before it stops accepting "
        "(HAProxy `show info` Maxconn, the global maxconn, else `maxconn`; nginx "
        "worker_processes x worker_connections)",
    )
    config: OneLine | None = None
    config_root: OneLine | None = Field(
        default=None, description="directory standing for / in the config's absolute include paths"
    )
    listens: list[Listen] = Field(
        default_factory=list,
        max_length=100_000,
        description="nginx's listening sockets: filled from `config` when the facts are loaded, "
        "or as `facts` read them (`config_read_at`)",
    )
    config_error: OneLine | None = Field(default=None, description="why `config` could not be read")
    config_read_at: Timestamp | None = Field(
        default=None,
        description="when `facts` read `config` on the host (UTC, ISO 8601): `listens`, "
        "`listen_backlog`, `max_connections`, `shared_buffers` and `config_error` are what it "
        "read then, and `config` is not read again (--nginx-conf still is); absent: `config` "
        "is read when the facts are loaded, and what it sets wins",
    )
    max_connections: int | None = Field(
        default=None,
        ge=1,
        le=262143,
        description="PostgreSQL: max_connections (MAX_BACKENDS 2^18 - 1 at most); filled from "
        "`config` when it sets it",
    )
    shared_buffers: Size | None = Field(
        default=None,
        ge=131072,
        le=2**44,
        description="PostgreSQL: shared_buffers in bytes (128 kB .. 16 TiB); filled from "
        "`config` when it sets it",
    )
    shared_memory_size_in_huge_pages: int | None = Field(
        default=None,
        ge=1,
        le=2**30,
        description="PostgreSQL 15 and later: the huge pages its shared memory needs, as "
        "`postgres -D $PGDATA -C shared_memory_size_in_huge_pages` prints it (in pages of the "
        "default huge page size)",
    )

    def __post_init__(self) -> None:
        if self.config_read_at is not None and self.config is None:
            raise ValueError("config_read_at: says when `config` was read, but no config is named")


_FAMILY = re.compile(r"^[a-z0-9][a-z0-9.-]{0,63}$")
Family = Annotated[str, _pattern(_FAMILY, "message family id")]
MAX_WINDOW = 400 * 86400  # longer than any monitoring retention the peaks could come from


@model
class ObservedPeriod(Record):
    """Over what the observed figures were taken: a snapshot now, or history from monitoring.

    Absent from a facts file: the operator wrote the figures (taken as the peaks they are
    called)."""

    kind: Literal["snapshot", "history"] = Field(
        description="snapshot: sockstat now (the *_peak fields are not peaks); history: "
        "max_over_time/increase over `window_seconds`"
    )
    source: OneLine = Field(
        description="where the figures came from, e.g. /proc or a Prometheus URL"
    )
    at: Timestamp = Field(description="when they were read (UTC, ISO 8601)")
    window_seconds: int | None = Field(default=None, ge=1, le=MAX_WINDOW)
    gaps: list[OneLine] = Field(
        default_factory=list,
        max_length=64,
        description="figures the source could not give, each with the reason",
    )

    def __post_init__(self) -> None:
        if self.kind == "history" and self.window_seconds is None:
            raise ValueError("a history period needs window_seconds")


@model
class KernelEvent(Record):
    """One family of kernel messages found in the log, with how often and when."""

    family: Family = Field(description="id of the message family (rules/catalog/kernel-messages)")
    count: Count = Field(ge=1, description="lines of the family read (at least one)")
    first_seen: Timestamp | None = None
    last_seen: Timestamp | None = None
    example: OneLine = Field(max_length=512, description="one line as the kernel logged it")


@model
class KernelLog(Record):
    """Which kernel log was read for `kernel_events`."""

    source: OneLine = Field(description="journal, /var/log/kern.log, dmesg or a --kernel-log file")
    since: Timestamp | None = None
    lines: Count = Field(description="kernel log lines read")


MAX_WANTS = 2**62  # above any figure an application asks of a sysctl or a limit
_UNIT_OR_LOG = re.compile(r"^[A-Za-z0-9/_][A-Za-z0-9:_.@/\\-]{0,254}$")


@model
class AppEvent(Record):
    """One family of application start-up messages found in its log (journal or log file):
    what the application stated about a setting in force when it started."""

    family: Family = Field(description="id of the message family (rules/catalog/app-messages)")
    # An event is a line read: a count of 0 would have the evidence rules act on no line.
    count: Count = Field(ge=1, description="lines of the family read (at least one)")
    first_seen: Timestamp | None = None
    last_seen: Timestamp | None = None
    example: OneLine = Field(
        max_length=512, description="the newest line as the application wrote it"
    )
    unit: Annotated[str, _pattern(_UNIT_OR_LOG, "systemd unit or log file")] | None = Field(
        default=None, description="the systemd unit or log file of the example line"
    )
    wants: Annotated[int, exactly(int)] | None = Field(  # digits read by app_log: no true or "5"
        default=None,
        ge=0,
        le=MAX_WANTS,
        description="the figure the example line asks for (a backlog, map areas, bytes)",
    )


@model
class SoftnetCpu(Record):
    """One line of /proc/net/softnet_stat (all counters since boot, per CPU)."""

    cpu: int = Field(ge=0, le=65535)
    processed: Count
    dropped: Count = Field(description="input backlog (netdev_max_backlog) full")
    time_squeeze: Count = Field(description="a poll ran out of netdev_budget or its time")
    received_rps: Count | None = Field(
        default=None, description="packets other CPUs steered here (RPS/RFS); absent before 2.6.35"
    )


@model
class UdpCounters(Record):
    """The `Udp:` rows of /proc/net/snmp (counters since boot, of the network namespace read)
    and sockstat's UDP memory. InDatagrams counts the datagrams applications read
    (udp_recvmsg()); RcvbufErrors the ones dropped because the socket's receive buffer was
    full; the share of arrivals lost there is RcvbufErrors / (InDatagrams + RcvbufErrors)."""

    in_datagrams: Count = Field(description="InDatagrams: datagrams read by applications")
    rcvbuf_errors: Count = Field(
        description="RcvbufErrors: datagrams dropped, the socket's receive buffer full"
    )
    no_ports: Count | None = Field(default=None, description="NoPorts: no socket on the port")
    in_errors: Count | None = Field(
        default=None, description="InErrors: every receive drop (RcvbufErrors included)"
    )
    out_datagrams: Count | None = Field(default=None, description="OutDatagrams: datagrams sent")
    sndbuf_errors: Count | None = Field(
        default=None, description="SndbufErrors: sends refused, the send buffer or queue full"
    )
    mem_errors: Count | None = Field(
        default=None, description="MemErrors (5.15 and later): dropped, UDP above udp_mem"
    )
    mem_pages_peak: Count | None = Field(
        default=None, description="sockstat UDP mem (pages, what udp_mem is compared with)"
    )


def _bounded_log(messages: list[str]) -> list[str]:
    # Rules read the messages joined into one text, which the sandbox bounds.
    if sum(len(m) + 1 for m in messages) > MAX_KERNEL_LOG:
        raise ValueError(
            f"more than {MAX_KERNEL_LOG // 1024} KiB of kernel messages; keep the lines "
            "that name a problem (page allocation failure, out of socket memory, SYN "
            "flooding, dropped packets)"
        )
    return messages


@model
class Observed(Record):
    period: ObservedPeriod | None = None
    orphans_peak: Count | None = None
    time_wait_peak: Count | None = None
    connections_peak: Count | None = None
    listen_overflows: Count | None = None
    listen_drops: Count | None = None
    rx_overruns: Count | None = None
    tcp_mem_pages_peak: Count | None = Field(default=None, description="sockstat TCP mem at peak")
    softnet_dropped: Count | None = Field(
        default=None, description="/proc/net/softnet_stat column 2: input backlog full, all CPUs"
    )
    softnet_time_squeeze: Count | None = Field(
        default=None, description="/proc/net/softnet_stat column 3: NAPI budget or time ran out"
    )
    softnet: list[SoftnetCpu] | None = Field(default=None, max_length=65536)
    udp: UdpCounters | None = Field(default=None, description="/proc/net/snmp Udp: counters")
    kernel_messages: Annotated[list[OneLine], After(_bounded_log)] = Field(
        default_factory=list, max_length=100_000
    )
    kernel_events: list[KernelEvent] | None = Field(
        default=None, max_length=1024, description="message families counted in the kernel log"
    )
    kernel_log: KernelLog | None = None
    app_events: list[AppEvent] | None = Field(
        default=None,
        max_length=1024,
        description="applications' start-up warnings counted in their logs",
    )

    def __post_init__(self) -> None:
        cpus = [line.cpu for line in self.softnet or []]
        if len(set(cpus)) != len(cpus):
            twice = sorted({cpu for cpu in cpus if cpus.count(cpu) > 1})[0]
            raise ValueError(
                f"softnet: CPU {twice} is listed twice (softnet_stat has one line per CPU)"
            )
        read = self.kernel_log.lines if self.kernel_log is not None else None
        for i, event in enumerate(self.kernel_events or []):
            if read is not None and event.count > read:
                raise ValueError(
                    f"kernel_events[{i}]: {event.count} lines of {event.family} counted, more "
                    f"than the {read} kernel_log says were read"
                )
        dated: list[tuple[str, str | None, str | None]] = [
            (f"kernel_events[{i}]", e.first_seen, e.last_seen)
            for i, e in enumerate(self.kernel_events or [])
        ] + [
            (f"app_events[{i}]", e.first_seen, e.last_seen)
            for i, e in enumerate(self.app_events or [])
        ]
        for where, first_seen, last_seen in dated:
            first, last = moment(first_seen), moment(last_seen)
            if first is not None and last is not None and first > last:
                raise ValueError(f"{where}: first_seen {first_seen} is after last_seen {last_seen}")


@model
class ListenerProcess(Record):
    """The process holding a listening socket (the lowest pid among those sharing it)."""

    pid: StrictInt = Field(ge=1, le=2**22)
    command: StrictText = Field(max_length=64, description="/proc/PID/comm")
    executable: StrictText | None = Field(
        default=None, max_length=255, description="file name of /proc/PID/exe"
    )
    go: StrictBool = Field(
        default=False, description="a Go program (the executable has .go.buildinfo)"
    )
    java_main: StrictText | None = Field(
        default=None, max_length=255, description="the main class or jar a java process runs"
    )


def _ip_address(value: str) -> str:
    plain_line(value, "address")
    if "%" in value:  # sock_diag reports no zone id; `fe80::1%<any text>` would be prose
        raise ValueError(f"an address with a zone id: {value[:60]!r}")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"not an IP address: {value[:60]!r}") from None


@model
class Listener(Record):
    """One listening TCP socket as the kernel reports it (netlink sock_diag, as `ss -ltn`)."""

    address: Annotated[str, exactly(str), After(_ip_address)]
    port: StrictInt = Field(ge=0, le=65535)
    backlog: StrictInt = Field(
        ge=0, le=2**32 - 1, description="sk_max_ack_backlog: min(listen() backlog, somaxconn)"
    )
    queue: Annotated[Count, exactly(int)] = Field(
        description="connections waiting in the accept queue now"
    )
    process: ListenerProcess | None = Field(default=None, description="absent: not readable")


@model
class Calibration(Record):
    """Per-socket costs measured on the host by `sysctl-advisor calibrate`."""

    kernel: Release = Field(description="uname -r of the kernel measured; used only on that kernel")
    sockets: int = Field(
        ge=2, le=MAX_COUNT, description="loopback sockets measured (two per connection)"
    )
    slab_bytes_per_socket: int = Field(ge=256, le=1 << 20, description="Slab growth per socket")
    tcp_mem_pages_per_idle_socket: float = Field(ge=0, le=64)
    tcp_mem_pages_per_queued_socket: float = Field(
        ge=0, le=64, description="sockstat TCP mem per socket holding a few unread bytes"
    )
    queued_bytes: int = Field(ge=1, le=2**31, description="bytes left unread in each socket")


def _kernel_release(value: str | None) -> str | None:
    if value is not None:
        KernelVersion.parse(value)  # raises ValueError with an example of the format
    return value


def _power_of_two(value: int) -> int:
    if value & (value - 1):
        raise ValueError(f"page_size must be a power of two, got {value}")
    return value


@model
class KernelBuild(Record):
    """What the running kernel was built with, from its build configuration."""

    config: OneLine = Field(
        description="where it was read: /proc/config.gz or /boot/config-RELEASE"
    )
    default_qdisc: Annotated[str, _pattern(re.compile(r"^[a-z_]{1,15}$"), "qdisc name")] | None = (
        Field(
            default=None,
            description="CONFIG_DEFAULT_NET_SCH where it is built in (pfifo_fast without "
            "CONFIG_NET_SCH_DEFAULT); absent when the qdisc chosen is a module (whether it is "
            "loaded in time depends on the initramfs)",
        )
    )


@model
class FileSetting(Record):
    """What the sysctl file that sets a key (`sysctl_files`) writes, and when it was written."""

    value: Annotated[str, Before(sysctl_text)] = Field(description="the file's value")
    modified: Timestamp | None = Field(
        default=None,
        description="when the file was last modified (UTC, ISO 8601): where the value in force "
        "is the file's, it holds since then, and evidence logged before is not evidence "
        "against it",
    )


@model
class HostFacts(Record):
    hostname: Hostname | None = None
    kernel: Annotated[Release | None, After(_kernel_release)] = None
    arch: Arch | None = None
    memory: Memory
    page_size: Annotated[int, After(_power_of_two)] = Field(default=4096, ge=4096, le=65536)
    cpu: Cpu = Field(default_factory=Cpu)
    nics: list[Nic] = Field(default_factory=list, max_length=4096)
    sysctl: dict[SysctlKey, Annotated[str, Before(sysctl_text)]] = Field(
        default_factory=dict, max_length=100_000
    )
    sysctl_files: dict[SysctlKeyGlob, OneLine] | None = Field(
        default=None,
        description="key -> the sysctl.d file and line that sets it at boot, or a tuning "
        "daemon's profile file (tuned's tuned.conf); a key of `sysctl` missing here was set "
        "by no file. Absent: not known.",
    )
    sysctl_file_settings: dict[SysctlKeyGlob, FileSetting] | None = Field(
        default=None,
        max_length=100_000,
        description="for keys of `sysctl_files`: the value that file sets and when it was last "
        "modified (a value in force unlike the file's was written after boot by another "
        "program); absent: not known",
    )
    kernel_build: KernelBuild | None = Field(
        default=None, description="the running kernel's build options that set defaults"
    )
    processes: list[ProcessName] | None = Field(
        default=None,
        max_length=65536,
        description="the names (/proc/PID/comm) of the programs running, each once: the "
        "writers catalog (rules/catalog/writers.yaml) knows which of them write sysctls; "
        "absent: not read",
    )
    observed: Observed = Field(default_factory=Observed)
    services: dict[ServiceName, Service] = Field(default_factory=dict, max_length=64)
    transparent_hugepage: Literal["always", "madvise", "never"] | None = Field(
        default=None,
        description="/sys/kernel/mm/transparent_hugepage/enabled (RHEL 6: "
        "/sys/kernel/mm/redhat_transparent_hugepage/enabled); raises min_free_kbytes",
    )
    calibration: Calibration | None = None
    listeners: list[Listener] | None = Field(
        default=None,
        max_length=100_000,
        description="TCP listening sockets (netlink sock_diag); absent: not read",
    )
    kernel_modules: KernelModules | None = Field(
        default=None, description="the networking modules the kernel has; absent: not read"
    )
    links: list[InterfaceName] | None = Field(
        default=None,
        max_length=65536,
        description="every network interface's name (/sys/class/net), virtual ones too: "
        "CNI links show a Kubernetes node; absent: not read",
    )
    kubernetes: Kubernetes | None = None
    kubernetes_files: KubernetesFiles | None = Field(
        default=None,
        description="the kubelet and CNI configuration files `facts` found; absent: not looked for",
    )
    read_as_root: bool | None = Field(
        default=None,
        description="whether `facts` read this host (live, not a copied tree) as root, who "
        "sees the owner of every listening socket in its PID namespace; absent: not known",
    )
    writers: SysctlWriters | None = Field(
        default=None,
        description="the sysctl writes seen on the host and who made them (`facts --watch`, "
        "or the record `facts --install` leaves); absent: not watched",
    )

    def __post_init__(self) -> None:
        if self.sysctl_file_settings:
            stray = sorted(set(self.sysctl_file_settings) - set(self.sysctl_files or {}))
            if stray:
                raise ValueError(
                    f"sysctl_file_settings: {stray[0]} is set by no file of sysctl_files"
                )
        names = [nic.name for nic in self.nics]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"nics: {twice[0]} is listed twice (an interface name is unique)")
        arch = (self.arch or "").lower()
        sizes = PAGE_SIZES_BY_ARCH.get(arch)
        if sizes is not None and self.page_size not in sizes:
            offered = ", ".join(f"{size // 1024} KiB" for size in sorted(sizes))
            raise ValueError(
                f"page_size: a kernel for {self.arch} has pages of {offered}, not "
                f"{self.page_size} bytes"
            )
        if arch in X86_32 and self.memory.total > X86_32_MAX_MEMORY:
            raise ValueError(
                f"memory.total: a 32-bit x86 kernel addresses at most 64 GiB (PAE), not "
                f"{self.memory.total} bytes; a larger host runs a 64-bit kernel (arch x86_64)"
            )
        if self.bits == 32 and (self.memory.lowmem or 0) > MAX_LOWMEM_32:
            raise ValueError(
                f"memory.lowmem: a 32-bit kernel maps at most 4 GiB directly, not "
                f"{self.memory.lowmem} bytes"
            )
        if self.bits == 32 and self.memory.lowmem is None and self.arch_family is None:
            raise ValueError(
                f"memory.lowmem: the default lowmem of a 32-bit {self.arch} kernel is not "
                "modelled; give LowTotal from /proc/meminfo"
            )

    @property
    def bits(self) -> Literal[32, 64]:
        return 32 if (self.arch or "").lower() in THIRTY_TWO_BIT_ARCHES else 64

    @property
    def arch_family(self) -> str | None:
        """x86, arm or mips for the 32-bit architectures whose lowmem split is modelled."""
        arch = (self.arch or "").lower()
        if arch in X86_32:
            return "x86"
        if arch.startswith("arm"):
            return "arm"
        if arch.startswith("mips"):
            return "mips"
        return None

    @property
    def lowmem(self) -> int:
        """Directly mapped memory the kernel sizes network memory from (all RAM on 64-bit)."""
        if self.bits == 64:
            return self.memory.total
        default = DEFAULT_LOWMEM_BY_FAMILY.get(self.arch_family or "", self.memory.total)
        return min(self.memory.lowmem or default, self.memory.total)

    @property
    def has_highmem(self) -> bool:
        """A 32-bit kernel with RAM beyond lowmem: only then does a 64-bit kernel add memory
        the network stack can use."""
        return self.bits == 32 and self.memory.total > self.lowmem

    @property
    def fastest_nic_mbps(self) -> int | None:
        speeds = [n.speed_mbps for n in self.nics if n.speed_mbps]
        return max(speeds) if speeds else None

    @property
    def values_read_at(self) -> str | None:
        """When the values in force (`sysctl`) were read: the time of the facts' snapshot;
        None when the facts do not say (no period, or figures over a window)."""
        period = self.observed.period
        return period.at if period is not None and period.kind == "snapshot" else None

    def _evidence_basis(self) -> dict[str, str]:
        """How rules name what the observed figures are: `peaks_from` for the *_peak fields
        and `counted_over` for the counters (listen_overflows, rx_overruns, softnet_*)."""
        period = self.observed.period
        if period is None:
            return {"peaks_from": "as given in the facts", "counted_over": "as given in the facts"}
        if period.kind == "snapshot":
            return {
                "peaks_from": f"a snapshot at {period.at}, not a peak: run `facts` at peak "
                "time, or with --prometheus for the peak over days",
                "counted_over": "since boot",
            }
        window = _duration_words(period.window_seconds or 0)
        return {
            "peaks_from": f"the peak over the {window} to {period.at}",
            "counted_over": f"over the {window} to {period.at}",
        }

    def expression_data(self) -> dict[str, Any]:
        """The facts as rule expressions see them: plain mappings, lists, strings and numbers
        (nothing callable), plus the derived figures `bits`, `lowmem`, `has_highmem`,
        `arch_family` and `fastest_nic_mbps`."""
        data: dict[str, Any] = plain_data(self)
        data["observed"].update(self._evidence_basis())
        data.update(
            bits=self.bits,
            lowmem=self.lowmem,
            has_highmem=self.has_highmem,
            arch_family=self.arch_family,
            fastest_nic_mbps=self.fastest_nic_mbps,
        )
        return data


def _duration_words(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"last {count} {unit}{'s' if count != 1 else ''}"
    return f"last {seconds} seconds"


def facts_from_data(data: Any, path: Path | None = None, text: str | None = None) -> HostFacts:
    if not isinstance(data, dict):
        raise InputError("a facts file must be a mapping with at least memory.total", path=path)
    return validate(HostFacts, data, path, text)


def facts_to_data(facts: HostFacts) -> dict[str, Any]:
    """A facts-file mapping: unknowns and empty sections left out. What a service's config
    gave is kept where the facts say when it was read (`config_read_at`: the facts are
    complete away from the host); elsewhere it is dropped, so that loading the file parses
    the config afresh."""
    data: dict[str, Any] = _known(plain_data(facts))
    for service in data.get("services", {}).values():
        if "config_read_at" not in service:
            service.pop("listens", None)
            service.pop("config_error", None)
    return _prune(data)


def _known(value: Any) -> Any:
    """Every field that is not None (in nested records and in lists of them too)."""
    if isinstance(value, dict):
        return {key: _known(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_known(item) for item in value]
    return value


_READ_AND_EMPTY = frozenset(
    {
        "sysctl_files",
        "sysctl_file_settings",
        "processes",
        "listeners",
        "kernel_events",
        "kernel_modules",
        "loadable",
        "builtin",
        "kubernetes_files",
        "found",
        "listens",  # kept only where the config was read (config_read_at): none found
    }
)


def _prune(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and key != "sysctl":
            value = _prune(value)
        # an empty list or mapping here says something (read, and none found): no file sets
        # any of these keys; no socket listens; no known message in the kernel log
        if value not in ({}, []) or key in _READ_AND_EMPTY:
            out[key] = value
    return out
