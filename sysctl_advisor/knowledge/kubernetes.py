"""What Kubernetes lets a pod set (rules/catalog/kubernetes.yaml): the kubelet's safe sysctls and
the Pod Security baseline's allowed ones, each from the release that added it, with the node
kernel the kubelet asks for. Read from the Kubernetes source for every release the file covers;
a version outside that span is refused rather than guessed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.rules import SpecModel
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.model_base import Field, model

_MINOR = r"^1\.[0-9]{1,3}$"
_SYSCTL = r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$"


@dataclass(frozen=True, order=True)
class KubernetesVersion:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> KubernetesVersion:
        """`1.29`, `v1.29` or `1.29.3` (the patch release does not change the lists)."""
        match = re.fullmatch(r"v?([0-9]{1,3})\.([0-9]{1,3})(?:\.[0-9]{1,4})?", text.strip())
        if match is None:
            raise ValueError(f"{text[:40]!r} is not a Kubernetes version such as 1.31")
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@model
class SafeSysctl(SpecModel):
    name: str = Field(pattern=_SYSCTL)
    since: str = Field(pattern=_MINOR, description="the first release whose kubelet allows it")
    kernel: str | None = Field(
        default=None,
        description="the node kernel the kubelet requires for it (older: not safe there)",
    )
    source: str = Field(max_length=300)


@model
class BaselineSysctl(SpecModel):
    name: str = Field(pattern=_SYSCTL)
    since: str = Field(pattern=_MINOR, description="the first policy version that allows it")
    source: str = Field(max_length=300)


@model
class LinkPrefix(SpecModel):
    prefix: str = Field(pattern=r"^[a-z0-9_.-]{2,15}$")
    source: str = Field(max_length=200)


@model
class NamespaceKey(SpecModel):
    """A per-namespace key that protects the node's own network namespace: set on the node
    (in the outputs that act there), never filed for the pods."""

    key: str = Field(pattern=_SYSCTL)
    why: str = Field(max_length=400)


@model
class NodeSigns(SpecModel):
    """How a Kubernetes node shows in its facts, and the ports it serves without a socket."""

    link_prefixes: list[LinkPrefix] = Field(min_length=1, max_length=100)
    listener_commands: list[str] = Field(min_length=1, max_length=20)
    node_port_range: str = Field(pattern=r"^[0-9]{1,5}-[0-9]{1,5}$")
    kubelet_port: int = Field(ge=1, le=65535)
    namespace_keys: list[NamespaceKey] = Field(default_factory=list, max_length=20)


@model
class KubernetesSpec(SpecModel):
    oldest: str = Field(pattern=_MINOR, description="the oldest release the lists were read for")
    newest: str = Field(pattern=_MINOR, description="the newest release the lists were read for")
    kubelet_safe: list[SafeSysctl] = Field(min_length=1, max_length=200)
    pod_security_baseline: list[BaselineSysctl] = Field(min_length=1, max_length=200)
    node: NodeSigns
    references: list[str] = Field(min_length=1, max_length=20)

    def __post_init__(self) -> None:
        super().__post_init__()
        if KubernetesVersion.parse(self.oldest) > KubernetesVersion.parse(self.newest):
            raise ValueError("oldest is after newest")
        for item in self.kubelet_safe:
            if item.kernel is not None:
                KernelVersion.parse(item.kernel)


@dataclass(frozen=True)
class PodVerdict:
    """How one per-namespace key fares in a pod on a given release and node kernel."""

    safe: bool  # the kubelet allows it without allowedUnsafeSysctls
    baseline: bool  # the Pod Security baseline policy allows it
    why: str


class Kubernetes:
    def __init__(self, spec: KubernetesSpec) -> None:
        self.spec = spec
        self.oldest = KubernetesVersion.parse(spec.oldest)
        self.newest = KubernetesVersion.parse(spec.newest)

    @classmethod
    def load(cls, path: Path, specs: SpecCache) -> Kubernetes:
        return cls(specs.load(path, KubernetesSpec, "the Kubernetes table"))

    def version(self, text: str | None) -> KubernetesVersion:
        """The release asked for (default: the newest the table covers). An older release than
        the table covers is refused; a newer one is judged by the newest lists, which a later
        release only ever extends (the caller says so)."""
        if text is None:
            return self.newest
        try:
            version = KubernetesVersion.parse(text)
        except ValueError as exc:
            raise InputError(str(exc), field="--kubernetes-version") from None
        if version < self.oldest:
            raise InputError(
                f"Kubernetes {version} is older than the releases whose kubelet and Pod "
                f"Security lists the advisor has read ({self.oldest} to {self.newest})",
                field="--kubernetes-version",
            )
        return version

    def lists_for(self, version: KubernetesVersion) -> KubernetesVersion:
        """The release whose lists judge `version`."""
        return min(version, self.newest)

    def verdict(self, key: str, version: KubernetesVersion, kernel: KernelVersion) -> PodVerdict:
        version = self.lists_for(version)
        safe_entry = next((s for s in self.spec.kubelet_safe if s.name == key), None)
        baseline = any(
            b.name == key and KubernetesVersion.parse(b.since) <= version
            for b in self.spec.pod_security_baseline
        )
        if safe_entry is None:
            return PodVerdict(False, baseline, "not among the kubelet's safe sysctls")
        since = KubernetesVersion.parse(safe_entry.since)
        if version < since:
            return PodVerdict(False, baseline, f"safe from Kubernetes {since}")
        if safe_entry.kernel is not None and kernel < KernelVersion.parse(safe_entry.kernel):
            return PodVerdict(
                False, baseline, f"safe only on nodes with kernel {safe_entry.kernel} or newer"
            )
        return PodVerdict(True, baseline, f"safe since Kubernetes {since}")

    def node_view(self, facts: dict[str, Any]) -> dict[str, Any]:
        """What rules see as `kubernetes` (plain data): whether the host is a node, the signs
        that say so (facts.kubernetes.node decides when given), and the ports a node serves
        that no listening socket shows: the NodePort range and the kubelet's port."""
        node = self.spec.node
        given = facts.get("kubernetes") or {}
        prefixes = tuple(p.prefix for p in node.link_prefixes)
        signs = [
            f"interface {link}" for link in facts.get("links") or [] if link.startswith(prefixes)
        ]
        signs = signs[:3]
        ports: dict[str, set[int]] = {}  # a command's listening ports
        for sock in facts.get("listeners") or []:
            command = (sock.get("process") or {}).get("command")
            if command in node.listener_commands:
                ports.setdefault(command, set()).add(sock["port"])
        for command in node.listener_commands:  # one sign a program, at its best-known port
            if command in ports:
                port = node.kubelet_port if node.kubelet_port in ports[command] else None
                shown = port or min(ports[command])
                signs.append(f"a {command} listener on port {shown}")
        declared = given.get("node") is not None
        if declared:  # the facts, or a Kubernetes output
            signs = (
                (signs or ["declared one by the facts or the Kubernetes output"])
                if given["node"]
                else []
            )
        # the facts can say: declared, a sign, or a list that would show one (every interface;
        # the listening sockets, among which a node's kubelet always is)
        known = (
            declared
            or bool(signs)
            or facts.get("links") is not None
            or facts.get("listeners") is not None
        )
        pod = given.get("namespace") == "pod"
        port_range = given.get("node_port_range") or node.node_port_range
        first, last = (int(n) for n in port_range.split("-"))
        return {
            "node": bool(signs),
            "signs": signs,
            "known": known,
            "pod": pod,
            # the plan's namespace serves NodePorts, or the facts cannot say it does not
            "guard_node_ports": (bool(signs) or not known) and not pod,
            "node_ports": [first, last],
            "kubelet_port": node.kubelet_port,
        }
