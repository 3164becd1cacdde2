"""Read the basics of the machine we run on: memory, arch, kernel, CPUs, NICs, catalog keys.

The only module besides file readers that touches the host. Reads, never writes. `root` lets
tests point it at a copied tree.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.facts import HostFacts, facts_from_data


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _meminfo(root: Path) -> dict[str, int]:
    text = _read(root / "proc/meminfo")
    if text is None:
        raise InputError("cannot read memory size", path=root / "proc/meminfo")
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            factor = 1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1
            values[name.strip()] = int(parts[0]) * factor
    return values


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _nics(root: Path) -> list[dict[str, Any]]:
    nics: list[dict[str, Any]] = []
    net = root / "sys/class/net"
    try:
        names = sorted(p.name for p in net.iterdir())
    except OSError:
        return nics
    for name in names:
        device = net / name / "device"
        if name == "lo" or not device.exists():
            continue  # loopback and virtual links have no device
        driver_link = device / "driver"
        driver = os.path.basename(os.readlink(driver_link)) if driver_link.is_symlink() else None
        speed = _int(_read(net / name / "speed"))
        nic: dict[str, Any] = {"name": name, "driver": driver}
        if speed and speed > 0:
            nic["speed_mbps"] = speed
        mtu = _int(_read(net / name / "mtu"))
        if mtu:
            nic["mtu"] = mtu
        nics.append(nic)
    return nics


def _sysctls(root: Path, keys: Iterable[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for key in keys:
        text = _read(root / "proc/sys" / key.replace(".", "/"))
        if text is not None:
            values[key] = " ".join(text.split())
    return values


def collect(keys: Iterable[str], root: Path = Path("/")) -> HostFacts:
    meminfo = _meminfo(root)
    if "MemTotal" not in meminfo:
        raise InputError("no MemTotal line", path=root / "proc/meminfo")
    memory: dict[str, int] = {"total": meminfo["MemTotal"]}
    if meminfo.get("LowTotal"):
        memory["lowmem"] = meminfo["LowTotal"]
    live = root == Path("/")
    uname = platform.uname()
    kernel = _read(root / "proc/sys/kernel/osrelease") or (uname.release if live else None)
    data: dict[str, Any] = {
        "hostname": _read(root / "proc/sys/kernel/hostname") or (uname.node if live else None),
        "kernel": kernel,
        "arch": uname.machine if live else None,
        "memory": memory,
        "page_size": os.sysconf("SC_PAGE_SIZE") if live else 4096,
        "cpu": {"threads": os.cpu_count() if live else None},
        "nics": _nics(root),
        "sysctl": _sysctls(root, keys),
    }
    return facts_from_data(data, path=root)
