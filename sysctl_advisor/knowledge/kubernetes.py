"""What Kubernetes lets a pod set (rules/catalog/kubernetes.yaml): the kubelet's safe sysctls and
the Pod Security baseline's allowed ones, each from the release that added it, with the node
kernel the kubelet asks for. Read from the Kubernetes source for every release the file covers;
a version outside that span is refused rather than guessed."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.model_base import Field, SpecModel, model
from sysctl_advisor.model.vocabulary import SysctlKey

_MINOR = r"^1\.[0-9]{1,3}$"


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
    name: SysctlKey
    since: str = Field(pattern=_MINOR, description="the first release whose kubelet allows it")
    kernel: str | None = Field(
        default=None,
        description="the node kernel the kubelet requires for it (older: not safe there)",
    )
    source: str = Field(max_length=300)


@model
class BaselineSysctl(SpecModel):
    name: SysctlKey
    since: str = Field(pattern=_MINOR, description="the first policy version that allows it")
    source: str = Field(max_length=300)


@model
class LinkSign(SpecModel):
    """An interface a CNI plugin, kube-proxy or a node add-on creates: by `prefix`, or by
    `pattern` where the prefix alone is shared with other software."""

    prefix: str | None = Field(default=None, pattern=r"^[a-z0-9_.-]{2,15}$")
    pattern: str | None = Field(
        default=None, max_length=60, description="a regular expression the whole name matches"
    )
    weak: bool = Field(
        default=False,
        description="also made on hosts that are no node: alone, it leaves the answer open",
    )
    what: str = Field(max_length=300)
    references: list[str] = Field(min_length=1, max_length=5)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.prefix is None) == (self.pattern is None):
            raise ValueError("give one of prefix and pattern")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern: {exc}") from None


@model
class FileSign(SpecModel):
    """A kubelet or CNI configuration file `facts` looks for (a `*` only in the last part)."""

    path: str = Field(pattern=r"^(/[A-Za-z0-9_.-]{1,64}){1,10}/[A-Za-z0-9_.*-]{1,64}$")
    weak: bool = False
    kubelet_config: bool = Field(
        default=False, description="a KubeletConfiguration: its `port:` is the kubelet's port"
    )
    what: str = Field(max_length=200)
    references: list[str] = Field(min_length=1, max_length=5)


@model
class NamespaceKey(SpecModel):
    """A per-namespace key that protects the node's own network namespace: set on the node
    (in the outputs that act there), never filed for the pods."""

    key: SysctlKey
    why: str = Field(max_length=400)


@model
class NodeSigns(SpecModel):
    """How a Kubernetes node shows in its facts, and the ports it serves without a socket."""

    links: list[LinkSign] = Field(min_length=1, max_length=100)
    files: list[FileSign] = Field(min_length=1, max_length=50)
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
        self._links = [
            (s, re.compile(s.pattern) if s.pattern is not None else None) for s in spec.node.links
        ]

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
        # the oldest release read lists what was safe long before it
        earlier = " or earlier" if since == self.oldest else ""
        return PodVerdict(True, baseline, f"safe since Kubernetes {since}{earlier}")

    def node_places(self) -> list[tuple[str, bool]]:
        """Where `facts` looks for the kubelet's and the CNI plugins' files: each absolute
        path (a `*` only in its last part) and whether it is a KubeletConfiguration."""
        return [(f.path, f.kubelet_config) for f in self.spec.node.files]

    def _link_sign(self, name: str) -> LinkSign | None:
        for sign, matcher in self._links:
            if sign.prefix is not None and name.startswith(sign.prefix):
                return sign
            if matcher is not None and matcher.fullmatch(name):
                return sign
        return None

    def _file_sign(self, path: str) -> FileSign | None:
        folder, _, name = path.rpartition("/")
        for sign in self.spec.node.files:
            sign_folder, _, pattern = sign.path.rpartition("/")
            if folder == sign_folder and fnmatch.fnmatchcase(name, pattern):
                return sign
        return None

    def node_view(self, facts: dict[str, Any]) -> dict[str, Any]:
        """What rules see as `kubernetes` (plain data; the facts as plain data in):

        node: whether the host is a Kubernetes node (facts.kubernetes.node decides when given);
        known: whether the facts can say: declared, a sign found, or the facts hold every
          interface (`links`), what `facts` found of the kubelet's and CNI files or the
          listening sockets, and no weak sign leaves it open;
        pod: the facts are a pod's network namespace (facts.kubernetes.namespace), which
          serves no NodePort;
        guard_node_ports: the plan's namespace serves NodePorts, or the facts cannot say it
          does not (a range widened over them reserves them);
        signs: what shows it is a node (empty when it is not one), at most three of each kind;
        hints: the weak signs seen (a name or file that hosts which are no node have too);
        node_ports: the NodePort range [first, last]; kubelet_port: the kubelet's port (its
          configuration's `port:` where `facts` read one). NodePorts and the kubelet's port
          are what a node serves that no listening socket shows."""
        node = self.spec.node
        given = facts.get("kubernetes") or {}
        files = facts.get("kubernetes_files")  # None: not looked for
        kubelet_port = (files or {}).get("kubelet_port") or node.kubelet_port
        names = [*(facts.get("links") or []), *(n["name"] for n in facts.get("nics") or [])]
        signs: list[str] = []
        hints: list[str] = []
        for name in dict.fromkeys(names):
            link = self._link_sign(name)
            if link is not None:
                (hints if link.weak else signs).append(f"interface {name}")
        signs, hints = signs[:3], hints[:3]
        found_files: list[str] = []
        for path in dict.fromkeys((files or {}).get("found") or []):  # each once
            file = self._file_sign(path)
            if file is not None:
                (hints if file.weak else found_files).append(f"{file.what} {path}")
        signs += found_files[:3]
        hints = hints[:6]
        ports: dict[str, set[int]] = {}  # a command's listening ports
        for sock in facts.get("listeners") or []:
            command = (sock.get("process") or {}).get("command")
            if command in node.listener_commands:
                ports.setdefault(command, set()).add(sock["port"])
        for command in node.listener_commands:  # one sign a program, at its best-known port
            if command in ports:
                shown = kubelet_port if kubelet_port in ports[command] else min(ports[command])
                signs.append(f"a {command} listener on port {shown}")
        declared = given.get("node")
        if declared is not None:  # declared: the facts, or a Kubernetes output
            signs = (
                (signs or ["declared one by the facts or the Kubernetes output"])
                if declared
                else []
            )
            known = True
        else:
            # every interface, what `facts` found of the kubelet's and CNI files, or the
            # listening sockets (a node's kubelet always listens) would show a node
            complete = (
                facts.get("links") is not None
                or files is not None
                or facts.get("listeners") is not None
            )
            known = bool(signs) or (complete and not hints)
        pod = given.get("namespace") == "pod"
        port_range = given.get("node_port_range") or node.node_port_range
        first, last = (int(n) for n in port_range.split("-"))
        return {
            "node": bool(signs),
            "known": known,
            "signs": signs,
            "hints": hints,
            "pod": pod,
            # the plan's namespace serves NodePorts, or the facts cannot say it does not
            "guard_node_ports": (bool(signs) or not known) and not pod,
            "node_ports": [first, last],
            "kubelet_port": kubelet_port,
        }
