"""Host facts from Ansible's `setup` module: `ansible all -m setup --tree DIR` writes one JSON
file per inventory host, `{"ansible_facts": {...}}`.

Inside that dict the setup module names facts with the `ansible_` prefix
(`ansible_memtotal_mb`); playbooks read them as `ansible_facts['memtotal_mb']`. Both spellings
are accepted here. Interface facts are keyed by the device name with `-` turned into `_`.

What Ansible does not gather, the facts leave unknown: page size (4 KiB assumed), lowmem on
32-bit x86 (896 MiB assumed), the sysctl values in force and sockstat evidence.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from sysctl_advisor.model.documents import parse_json, read_text
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import HostFacts, facts_from_data, interface_name
from sysctl_advisor.model.units import is_decimal


class AnsibleFacts:
    """The `ansible_facts` dict of one host, read with or without the `ansible_` prefix."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self._facts = facts

    def get(self, name: str) -> Any:
        value = self._facts.get("ansible_" + name)
        return self._facts.get(name) if value is None else value

    def interface(self, device: str) -> dict[str, Any] | None:
        for name in (device.replace("-", "_"), device):
            value = self.get(name)
            if isinstance(value, dict):
                return value
        return None


def facts_dict(document: Any, source: str) -> dict[str, Any]:
    """The `ansible_facts` mapping of a --tree file (or a bare facts mapping)."""
    if not isinstance(document, dict):
        raise InputError("not an Ansible facts document (expected a JSON object)", path=source)
    if document.get("unreachable") or document.get("failed"):
        why = " ".join(str(document.get("msg") or "no message").split())
        state = "unreachable" if document.get("unreachable") else "failed"
        raise InputError(f"Ansible reported the host {state}: {why}", path=source)
    facts = document.get("ansible_facts", document)
    if not isinstance(facts, dict):
        raise InputError("ansible_facts is not a mapping", path=source, field="ansible_facts")
    return facts


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and is_decimal(value.strip().removeprefix("-")):
        return int(value)
    return None


def _cpu_threads(facts: AnsibleFacts) -> int | None:
    for name in ("processor_vcpus", "processor_nproc"):
        threads = _int(facts.get(name))
        if threads and threads > 0:
            return threads
    parts = [_int(facts.get(n)) for n in ("processor_count", "processor_cores")]
    per_core = _int(facts.get("processor_threads_per_core")) or 1
    if all(p and p > 0 for p in parts):
        return parts[0] * parts[1] * per_core  # type: ignore[operator]
    return None


def _interface_names(facts: AnsibleFacts) -> list[str] | None:
    """Every interface name (`interfaces`: what the setup module found in /sys/class/net,
    virtual ones too), the facts' `links`; None when Ansible gave no such list. A name no
    kernel could give is left out (a hostile file may hold anything)."""
    names = facts.get("interfaces")
    if not isinstance(names, list):
        return None
    links: list[str] = []
    for name in names:
        try:
            links.append(interface_name(name if isinstance(name, str) else ""))
        except ValueError:
            continue
    return sorted(set(links))


def _nics(facts: AnsibleFacts, names: list[str]) -> list[dict[str, Any]]:
    """Interfaces backed by a device, as the local collector takes them: the setup module
    gives `pciid` (the name of the interface's `device` link) and `module` (its driver's
    module, found through that link) only for those. Loopback, bridges, bonds, VLANs and the
    software devices a CNI makes (veth, which reports a speed, vxlan, tun, dummy) have no
    device, and are left out."""
    nics: list[dict[str, Any]] = []
    for name in names:
        iface = facts.interface(name)
        if iface is None or iface.get("type") in ("loopback", "bridge", "bonding"):
            continue
        if not isinstance(iface.get("module"), str) and not isinstance(iface.get("pciid"), str):
            continue
        nic: dict[str, Any] = {"name": name}
        if isinstance(iface.get("module"), str):
            nic["driver"] = iface["module"]
        speed = _int(iface.get("speed"))
        if speed is not None and speed > 0:
            nic["speed_mbps"] = speed
        mtu = _int(iface.get("mtu"))
        if mtu is not None:
            nic["mtu"] = mtu
        nics.append(nic)
    return nics


def _advisor_writers(facts: AnsibleFacts) -> Any:
    """The `writers:` section of the advisor's own facts where a host's custom facts hold them
    (/etc/ansible/facts.d/sysctl_advisor.fact, which `setup` gives as
    ansible_local.sysctl_advisor); validated with the rest of the facts."""
    local = facts.get("local")
    advisor = local.get("sysctl_advisor") if isinstance(local, dict) else None
    return advisor.get("writers") if isinstance(advisor, dict) else None


def facts_data(facts: AnsibleFacts, source: str) -> dict[str, Any]:
    """A facts-file mapping (the contract in docs/evidence.md#host-facts) from Ansible facts."""
    memtotal_mb = _int(facts.get("memtotal_mb"))
    if memtotal_mb is None:
        memory = facts.get("memory_mb")
        if isinstance(memory, dict) and isinstance(memory.get("real"), dict):
            memtotal_mb = _int(memory["real"].get("total"))
    if memtotal_mb is None or memtotal_mb <= 0:
        raise InputError("no memory facts (memtotal_mb)", path=source, field="ansible_facts")
    # memtotal_mb is MemTotal (kB) // 1024: a MiB figure, converted by the facts' own Size type
    data: dict[str, Any] = {"memory": {"total": f"{memtotal_mb} MiB"}}
    for field, name in (("hostname", "hostname"), ("kernel", "kernel"), ("arch", "architecture")):
        value = facts.get(name)
        if isinstance(value, str) and value.strip():
            data[field] = value.strip()
    threads = _cpu_threads(facts)
    if threads is not None:
        data["cpu"] = {"threads": threads}
    writers = _advisor_writers(facts)
    if writers is not None:
        data["writers"] = writers
    links = _interface_names(facts)
    if links is not None:
        data["links"] = links
        nics = _nics(facts, links)
        if nics:
            data["nics"] = nics
    return data


def host_facts_from_document(document: Any, source: str) -> HostFacts:
    data = facts_data(AnsibleFacts(facts_dict(document, source)), source)
    return facts_from_data(data, Path(source))


def load_ansible_facts(path: Path) -> HostFacts:
    """One host's file as `ansible -m setup --tree` writes it."""
    # json, not YAML: ten times faster on 15 KB setup files
    document = parse_json(read_text(path), path)
    return host_facts_from_document(document, str(path))


class FactFiles(Sequence[Path]):
    """The hosts' files in name order, kept as names (a 50,000-host tree holds 50,000 short
    strings, not 50,000 Path objects); each Path is made when it is used."""

    def __init__(self, directory: Path, names: list[str]) -> None:
        self.directory = directory
        self.names = names

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> Path: ...

    @overload
    def __getitem__(self, index: slice) -> list[Path]: ...

    def __getitem__(self, index: int | slice) -> Path | list[Path]:
        if isinstance(index, slice):
            return [self.directory / name for name in self.names[index]]
        return self.directory / self.names[index]

    def __iter__(self) -> Iterator[Path]:
        directory = self.directory
        return (directory / name for name in self.names)


def fact_files(source: Path) -> Sequence[Path]:
    """The hosts' files: a --tree directory (hidden files skipped, and anything that is not a
    regular file or a link to one) or one host's file."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        reason = "not a regular file" if source.exists() else "no such file or directory"
        raise InputError(reason, path=source, field="--ansible-facts")
    names: list[str] = []
    try:
        with os.scandir(source) as entries:
            for entry in entries:
                if not entry.name.startswith(".") and entry.is_file():
                    names.append(entry.name)
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror}", path=source) from None
    if not names:
        raise InputError(
            "no facts files here (write them with `ansible all -m setup --tree DIR`)",
            path=source,
            field="--ansible-facts",
        )
    names.sort()
    return FactFiles(source, names)
