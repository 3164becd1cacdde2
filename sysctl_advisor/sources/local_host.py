"""Read the machine we run on (or a copied tree of it) into host facts.

The only module that touches the host. It reads, never writes. `root` points it at a copy of
`/proc`, `/sys` and `/etc` so tests (and operators collecting from a rescue shell) can read
another machine's files. Figures from /proc/net are a snapshot taken now: counters such as
ListenOverflows are totals since boot, but sockstat's orphans or TIME-WAIT are only what
exists at this moment — run `facts` at peak time, or edit the figures, to size for peaks.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import (
    HostFacts,
    facts_from_data,
    interface_name,
    is_huge_page_size,
    sysctl_text,
)
from sysctl_advisor.model.units import is_decimal
from sysctl_advisor.sources.module_lists import kernel_modules
from sysctl_advisor.sources.node_files import NodePlaces, read_node_files
from sysctl_advisor.sources.proc_readers import (
    count_cpu_list,
    count_cpuinfo,
    count_numa_nodes,
    kernel_build,
    parse_meminfo,
    parse_net_dev,
    parse_netstat,
    parse_sockstat,
    parse_softnet_cpus,
    selected_mode,
    softnet_totals,
    udp_counters,
)
from sysctl_advisor.sources.tree_paths import (
    LIVE_ROOT,
    inside,
    listed_names,
    open_regular,
    read_regular,
)

NGINX_CONFIGS = ("etc/nginx/nginx.conf", "usr/local/nginx/conf/nginx.conf")
# Transparent hugepages' mode; RHEL 6's kernels name the directory redhat_transparent_hugepage
THP_ENABLED = "sys/kernel/mm/transparent_hugepage/enabled"
RHEL6_THP_ENABLED = "sys/kernel/mm/redhat_transparent_hugepage/enabled"

# Distribution kernels name the architecture at the end of the release string.
_RELEASE_ARCH_SUFFIXES = {
    ".i686": "i686",
    ".i386": "i386",
    ".x86_64": "x86_64",
    ".aarch64": "aarch64",
    ".ppc64le": "ppc64le",
    ".s390x": "s390x",
    "-amd64": "x86_64",
    "-686": "i686",
    "-686-pae": "i686",
    "-arm64": "aarch64",
    "-armmp": "armv7l",
}


DEFAULT_WINDOW = 14 * 86400  # `facts --since` default: how far back the kernel log is read
MAX_PROC_FILE = 1 << 20  # no /proc or /sys file the collector reads is near this


CAP_SYS_PTRACE = 19  # include/uapi/linux/capability.h


def _may_trace(status: str | None) -> bool:
    """Whether /proc/self/status's CapEff holds CAP_SYS_PTRACE."""
    for line in (status or "").splitlines():
        name, _, value = line.partition(":")
        if name == "CapEff":
            try:
                return bool(int(value.strip(), 16) >> CAP_SYS_PTRACE & 1)
            except ValueError:
                return False
    return False


def _read(
    path: Path, root: Path = Path("/"), limit: int = MAX_PROC_FILE, strip: bool = True
) -> str | None:
    """A /proc or /sys file's text, or None (see _read_bytes)."""
    data = _read_bytes(path, root, limit)
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    return text.strip() if strip else text


def _read_bytes(path: Path, root: Path = Path("/"), limit: int = MAX_PROC_FILE) -> bytes | None:
    """A /proc or /sys file's bytes, or None. Under a copied tree (`--root`), a file whose links
    lead out of the tree is not read (its absolute links would name the host running the
    advisor: `somaxconn -> /etc/shadow`), judged by the descriptor opened; nor is anything but
    a regular file, which is told before it is opened for reading (open_regular: a device
    node in a tree never runs its driver)."""
    return read_regular(path, None if root == LIVE_ROOT else root, limit)


def _reachable(root: Path, path: Path) -> bool:
    """Whether `path` may be looked at: always on the live host; under a copied tree only
    when its links resolve inside the tree (a directory link to /sys/class/net would list the
    NICs of the host running the advisor)."""
    return root == LIVE_ROOT or inside(root, path)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _arch(root: Path, release: str | None, live: bool) -> str | None:
    arch = _read(root / "proc/sys/kernel/arch", root)  # present since Linux 6.1
    if arch:
        return arch
    if live:
        return platform.machine() or None
    for suffix, name in _RELEASE_ARCH_SUFFIXES.items():
        if release and release.endswith(suffix):
            return name
    return None


def _cpu_threads(root: Path, live: bool) -> int | None:
    online = _read(root / "sys/devices/system/cpu/online", root)
    count = count_cpu_list(online) if online else None
    if count is None:
        cpuinfo = _read(root / "proc/cpuinfo", root)
        count = count_cpuinfo(cpuinfo) if cpuinfo else None
    if count is None and live:
        count = os.cpu_count()
    return count


def _page_size(root: Path, live: bool) -> int:
    if live:
        return os.sysconf("SC_PAGE_SIZE")
    smaps = _read(root / "proc/self/smaps", root) or ""
    for line in smaps.splitlines():
        if line.startswith("KernelPageSize:"):
            parts = line.split()
            if len(parts) >= 2 and is_decimal(parts[1]):
                return int(parts[1]) * 1024
    return 4096


MAX_LINKS = 65536  # a node with many pods has a veth each


def _listed(
    root: Path, path: Path, limit: int, keep: Callable[[os.DirEntry[str]], bool] | None = None
) -> list[str] | None:
    """listed_names, inside the tree at `root` (anything on the live host)."""
    return listed_names(path, lambda real: _reachable(root, real), limit, keep)


def _links(root: Path) -> list[str] | None:
    """Every interface name in /sys/class/net (virtual links too); None when unreadable."""
    names = _listed(root, root / "sys/class/net", MAX_LINKS)
    if names is None:
        return None
    return sorted(name for name in names if _valid_link(name))


def _valid_link(name: str) -> bool:
    """A name the kernel could have given (a copied tree may hold anything)."""
    try:
        interface_name(name)
    except ValueError:
        return False
    return True


def _nics(root: Path, names: list[str], rx: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    nics: list[dict[str, Any]] = []
    net = root / "sys/class/net"
    for name in names:
        device = net / name / "device"
        if not (_reachable(root, net / name) and _reachable(root, device)):
            continue
        if name == "lo" or not (device.exists() or device.is_symlink()):
            continue  # loopback and virtual links (bridges, veth, bonds) have no device
        nic: dict[str, Any] = {"name": name}
        driver_link = device / "driver"
        if driver_link.is_symlink():
            nic["driver"] = os.path.basename(os.readlink(driver_link))
        speed = _int(_read(net / name / "speed", root))  # -1 or unreadable when the link is down
        if speed and speed > 0:
            nic["speed_mbps"] = speed
        mtu = _int(_read(net / name / "mtu", root))
        if mtu:
            nic["mtu"] = mtu
        if name in rx:
            nic["rx_overruns"] = rx[name]["fifo"]
        nics.append(nic)
    return nics


def _sysctls(root: Path, keys: Iterable[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for key in keys:
        text = _read(root / "proc/sys" / key.replace(".", "/"), root)
        if text is not None:
            values[key] = " ".join(text.split())
    return values


def _observed(root: Path, nics: list[dict[str, Any]], at: str) -> dict[str, Any]:
    observed: dict[str, Any] = {
        # sockstat is what exists at `at`: the *_peak fields below are a snapshot, and say so
        "period": {"kind": "snapshot", "source": f"{root / 'proc'}", "at": at},
    }
    sockstat_table = parse_sockstat(_read(root / "proc/net/sockstat", root) or "")
    sockstat = sockstat_table.get("TCP", {})
    for field, column in (
        ("connections_peak", "inuse"),
        ("orphans_peak", "orphan"),
        ("time_wait_peak", "tw"),
        ("tcp_mem_pages_peak", "mem"),
    ):
        if column in sockstat:
            observed[field] = sockstat[column]
    tcp_ext = parse_netstat(_read(root / "proc/net/netstat", root) or "").get("TcpExt", {})
    if "ListenOverflows" in tcp_ext:
        observed["listen_overflows"] = tcp_ext["ListenOverflows"]
    if "ListenDrops" in tcp_ext:
        observed["listen_drops"] = tcp_ext["ListenDrops"]
    udp = udp_counters(
        parse_netstat(_read(root / "proc/net/snmp", root) or "").get("Udp", {}),
        sockstat_table.get("UDP", {}),
    )
    if udp:
        observed["udp"] = udp
    overruns = [n["rx_overruns"] for n in nics if "rx_overruns" in n]
    if overruns:
        observed["rx_overruns"] = sum(overruns)
    softnet_text = _read(root / "proc/net/softnet_stat", root) or ""
    cpus = parse_softnet_cpus(softnet_text)
    if cpus:  # the totals are the per-CPU lines summed: the two can never disagree
        totals = softnet_totals(cpus)
        observed["softnet_dropped"] = totals["dropped"]
        observed["softnet_time_squeeze"] = totals["time_squeeze"]
        observed["softnet"] = cpus
    return observed


def utc_text(moment: float) -> str:
    return datetime.fromtimestamp(int(moment), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _date(moment: float) -> str | None:
    """utc_text, or None where the time is no date of four digits (a copied tree's
    modification times are anything its owner set: before year 1000, which strftime writes
    with fewer digits, after 9999, beyond what the C library holds)."""
    try:
        text = utc_text(moment)
    except (OverflowError, OSError, ValueError):
        return None
    return text if len(text.partition("-")[0]) == 4 else None


# The copied tree's file whose modification time says when the copy was taken: sockstat, whose
# figures the snapshot time qualifies, else meminfo, which every tree has.
_SNAPSHOT_FILES = ("proc/net/sockstat", "proc/meminfo")


def _modified(fd: int) -> float:
    return os.fstat(fd).st_mtime


def snapshot_time(root: Path, live: bool) -> float:
    """When the host was in the state its figures describe: now, on the live host; for a copied
    tree, when its copy of proc/net/sockstat (else proc/meminfo) was written, which is when the
    copy read /proc. The time the advisor reads the copy is no fact of the host, so it is never
    written: the same tree gives the same facts, and its kernel log window ends there too."""
    if live:
        return time.time()
    for relative in _SNAPSHOT_FILES:
        fd = open_regular(root / relative, root)
        if fd is None:
            continue
        try:
            moment = _modified(fd)
        finally:
            os.close(fd)
        try:
            utc_text(moment)
        except (OverflowError, OSError, ValueError):
            raise InputError(
                "its modification time (when the tree was copied) is not a date",
                path=root / relative,
            ) from None
        return moment
    raise InputError("cannot read the memory size (no /proc/meminfo)", path=root / "proc/meminfo")


MAX_NODE_ENTRIES = 4096  # node0 to node1023 (NODES_SHIFT is at most 10) and a few files


def _numa_nodes(root: Path) -> int | None:
    names = _listed(root, root / "sys/devices/system/node", MAX_NODE_ENTRIES)
    return count_numa_nodes(names) if names is not None else None


# A tuning daemon's places: its active-profile file and its profile directories (the catalog's
# `tuning_daemons`, which the command reading the host passes in).
TunedPlaces = tuple[str, Sequence[str], Sequence[str]]  # active profile, profile dirs, reapplied


def _sysctl_files(
    root: Path, keys: Iterable[str], tuned: TunedPlaces | None = None
) -> tuple[dict[str, str] | None, dict[str, dict[str, str]] | None]:
    """Which catalog keys the host's sysctl.d files (and sysctl.conf) set at boot, and where,
    and the ones tuned's active profile sets that no such file does (tuned applies sysctl.d
    again after its profile: reapply_sysctl, on by default); None when the host has none of
    those files to read. With them, for each key a file sets, the file's value and when the
    file was last modified (the facts' sysctl_file_settings)."""
    from sysctl_advisor.sources.sysctl_files import SYSCTL_CONF, SYSCTL_D_DIRS, read_tree
    from sysctl_advisor.sources.tuned_profile import tuned_sysctls

    keys = tuple(keys)
    by_tuned: dict[str, str] = {}
    reapplied: Sequence[str] = ()
    if tuned is not None:
        active, dirs, reapplied = tuned
        by_tuned = tuned_sysctls(
            lambda path: _read(path, root, strip=False), root, active, dirs, keys
        )
    if not any((root / d).is_dir() for d in SYSCTL_D_DIRS) and not (root / SYSCTL_CONF).exists():
        return by_tuned or None, None
    try:
        config = read_tree(root, keys)
    except InputError:
        return by_tuned or None, None
    wanted = set(keys)
    files = {k: v.source for k, v in config.values.items() if k in wanted}
    # tuned applies some files again after its profile: those win over it, the rest lose
    chosen = {
        **{k: v for k, v in files.items() if k not in by_tuned},
        **by_tuned,
        **{k: v for k, v in files.items() if k in by_tuned and _reapplied(v, reapplied)},
    }
    settings: dict[str, dict[str, str]] = {}
    for key, found in config.values.items():
        if chosen.get(key) != found.source:
            continue  # tuned's profile sets it (or it is no catalog key)
        modified = config.modified.get(found.file or found.source.rpartition(":")[0])
        try:
            value = sysctl_text(found.value)
        except ValueError:
            continue  # a line no key holds: no value the file sets
        setting = {"value": value}
        when = _date(modified) if modified is not None else None
        if when is not None:  # a time no date can hold (a tree's file set to year 36812): none
            setting["modified"] = when
        settings[key] = setting
    return chosen, settings


def _reapplied(source: str, reapplied: Sequence[str]) -> bool:
    """Whether a sysctl file ("path:line", relative to the tree read) is one tuned applies
    again after its profile."""
    path = "/" + (source.rpartition(":")[0] or source).lstrip("/")
    return any(path == r or (r.endswith("/") and path.startswith(r)) for r in reapplied)


MAX_CONFIG = 1 << 20  # a distribution kernel's .config is about 250 KiB


def _kernel_build(root: Path, release: str | None) -> dict[str, Any] | None:
    """The running kernel's build options (proc_readers.kernel_build), from /proc/config.gz
    (CONFIG_IKCONFIG_PROC) or /boot/config-RELEASE; None where neither is readable. The gzip
    is inflated to at most MAX_CONFIG bytes (a hostile tree could hold a bomb)."""
    import zlib

    packed = _read_bytes(root / "proc/config.gz", root, MAX_CONFIG)
    text: str | None = None
    shown = "/proc/config.gz"
    if packed:
        try:
            inflate = zlib.decompressobj(wbits=47)  # gzip or zlib header
            data = inflate.decompress(packed, MAX_CONFIG)
            # the whole stream, within the cap: a truncated one (or one cut at MAX_CONFIG read)
            # ends anywhere, and its last options would be read wrong
            whole = inflate.eof and not inflate.unconsumed_tail
            text = data.decode("utf-8", errors="replace") if whole else None
        except zlib.error:
            text = None
    if text is None and release and "/" not in release and release not in (".", ".."):
        shown = f"/boot/config-{release}"
        text = _read(root / "boot" / f"config-{release}", root, MAX_CONFIG, strip=False)
    if not text:
        return None
    return {"config": shown, **kernel_build(text)}


MAX_PROCESSES = 1 << 16  # /proc entries looked at; a host runs far fewer programs
COMM_BYTES = 16  # /proc/PID/comm: at most TASK_COMM_LEN - 1 bytes and its line feed


def _processes(root: Path) -> list[str] | None:
    """The names (comm) of the programs running, each once, sorted: who else may write
    sysctls (rules/catalog/writers.yaml); on the live host, root's programs only. None when
    /proc lists no process (a copied tree without them); a name that is no plain text is left
    out."""
    proc = root / "proc"
    live = root == LIVE_ROOT
    pids = _listed(
        root,
        proc,
        MAX_PROCESSES,
        # on the live host only root's programs: the writers of sysctls run as root, and any
        # user may name a program of their own `kubelet`
        lambda e: e.name.isdigit() and (not live or _owned_by_root(e)),
    )
    if not pids:
        return None
    names: set[str] = set()
    for pid in pids:
        if not _read(proc / pid / "cmdline", root, limit=1, strip=False):
            continue  # a kernel thread (or a zombie): no program
        # read no more than a comm holds: a copied tree's comm files can be anything (65,536
        # sparse files of 1 MiB each took minutes to read whole)
        data = _read_bytes(proc / pid / "comm", root, COMM_BYTES + 1)
        if data is None or len(data) > COMM_BYTES:
            continue
        name = data.decode("utf-8", errors="replace").strip()
        if name and name.isprintable() and len(name) <= 15:
            names.add(name)
    return sorted(names)


def _owned_by_root(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.stat(follow_symlinks=False).st_uid == 0
    except OSError:
        return False


def _services(root: Path) -> dict[str, Any]:
    base = root.resolve()
    for relative in NGINX_CONFIGS:
        path = base / relative
        if _reachable(base, path) and path.is_file():
            nginx: dict[str, Any] = {"config": str(path)}
            if base != LIVE_ROOT:
                nginx["config_root"] = str(base)  # absolute includes point into the tree
            return {"nginx": nginx}
    return {}


def collect_data(
    keys: Iterable[str],
    root: Path = LIVE_ROOT,
    message_matchers: Mapping[str, Sequence[str]] | None = None,
    kernel_log: Path | None = None,
    since_seconds: int | None = None,
    tuned: TunedPlaces | None = None,
    app_readers: Mapping[str, Mapping[str, Any]] | None = None,
    node_places: NodePlaces | None = None,
) -> dict[str, Any]:
    """The facts of the host under `root` as plain data (a facts-file mapping).

    On the live host also its listening sockets (netlink); given message families, the kernel
    log (`kernel_log`, else the journal, kern.log or dmesg; only the files under a copied
    tree) counted over the `since_seconds` before the snapshot (snapshot_time); given
    application families (`app_readers`), the applications' start-up warnings
    (`observed.app_events`, sources/app_log.py); given the places of the kubelet's and the CNI
    plugins' files (`node_places`), those found (`kubernetes_files`, sources/node_files.py)."""
    keys = tuple(keys)
    live = root.resolve() == LIVE_ROOT
    meminfo_path = root / "proc/meminfo"
    meminfo_text = _read(meminfo_path, root)
    if meminfo_text is None:
        raise InputError("cannot read the memory size (no /proc/meminfo)", path=meminfo_path)
    meminfo = parse_meminfo(meminfo_text)
    if "MemTotal" not in meminfo:
        raise InputError("no MemTotal line", path=meminfo_path)
    memory: dict[str, int] = {"total": meminfo["MemTotal"]}
    if meminfo.get("LowTotal"):  # only 32-bit kernels with highmem print LowTotal
        memory["lowmem"] = meminfo["LowTotal"]
    huge_page_size = meminfo.get("Hugepagesize", 0)  # kernels built with HugeTLB print it
    if is_huge_page_size(huge_page_size):  # else not one a kernel prints: not known
        memory["huge_page_size"] = huge_page_size
    nodes = _numa_nodes(root)
    if nodes:
        memory["numa_nodes"] = nodes
    uname = platform.uname()
    kernel = _read(root / "proc/sys/kernel/osrelease", root) or (uname.release if live else None)
    hostname = _read(root / "proc/sys/kernel/hostname", root) or (uname.node if live else None)
    moment = snapshot_time(root, live)
    rx = parse_net_dev(_read(root / "proc/net/dev", root) or "")
    links = _links(root)
    nics = _nics(root, links or [], rx)
    files, file_settings = _sysctl_files(root, keys, tuned)
    data: dict[str, Any] = {
        "hostname": hostname,
        "kernel": kernel,
        "arch": _arch(root, kernel, live),
        "memory": memory,
        "page_size": _page_size(root, live),
        "cpu": {"threads": _cpu_threads(root, live)},
        "nics": nics,
        "sysctl": _sysctls(root, keys),
        "sysctl_files": files,
        "sysctl_file_settings": file_settings,
        "processes": _processes(root),
        "observed": _observed(root, nics, utc_text(moment)),
        "services": _services(root),
    }
    if links is not None:
        data["links"] = links
    if node_places is not None:
        data["kubernetes_files"] = read_node_files(root, node_places, live)
    modules = kernel_modules(root, kernel)
    if modules is not None:
        data["kernel_modules"] = modules
    build = _kernel_build(root, kernel)
    if build is not None:
        data["kernel_build"] = build
    thp_text = _read(root / THP_ENABLED, root) or _read(root / RHEL6_THP_ENABLED, root)
    thp = selected_mode(thp_text or "")
    if thp:
        data["transparent_hugepage"] = thp
    if live:
        from sysctl_advisor.sources.listeners import read_listeners

        data["listeners"] = read_listeners(root / "proc")
        # root sees every listener's owner, when it may trace other users' processes (reading
        # /proc/PID/fd asks ptrace_may_access(), which a container's root without
        # CAP_SYS_PTRACE fails): a hint to run as root is then none for it
        data["read_as_root"] = os.geteuid() == 0 and _may_trace(
            _read(root / "proc/self/status", root)
        )
    if message_matchers is not None:
        from sysctl_advisor.sources.kernel_log import read_kernel_log

        log = read_kernel_log(
            message_matchers, path=kernel_log, since_seconds=since_seconds, root=root, now=moment
        )
        if log is not None:
            data["observed"].update(log)
    if app_readers is not None:
        from sysctl_advisor.sources.app_log import read_app_log

        app_events = read_app_log(app_readers, root=root)
        if app_events is not None:
            data["observed"]["app_events"] = app_events
    return data


def collect(
    keys: Iterable[str],
    root: Path = LIVE_ROOT,
    message_matchers: Mapping[str, Sequence[str]] | None = None,
    since: int | None = None,
    tuned: TunedPlaces | None = None,
    app_readers: Mapping[str, Mapping[str, Any]] | None = None,
    node_places: NodePlaces | None = None,
) -> HostFacts:
    return facts_from_data(
        collect_data(keys, root, message_matchers, None, since, tuned, app_readers, node_places),
        path=root,
    )
