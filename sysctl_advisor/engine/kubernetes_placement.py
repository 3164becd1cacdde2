"""Where each setting of a plan belongs on Kubernetes: in the pod, or on the node.

A key the catalog marks per network namespace on the node's kernel is the pod's (unless the
kernel restricts what other namespaces may set; then it is the node's, and pods copy it when
their namespace is created): every pod has
its own namespace, which starts from the kernel's defaults (a few keys copy the node's value
when the namespace is created), so a value set on the node never reaches it. Such keys are
planned for a fresh namespace (`pod_facts`), not against the node's values. Every other key is
global: one value for the node and all its pods, which a pod cannot set (hidden or read-only in
its namespace); those stay in the node's plan, as computed for the host.

The node has a namespace of its own too, where the kubelet, kube-proxy's NodePorts and
hostNetwork pods live. The per-namespace keys that protect it (the catalog's
`kubernetes.node.namespace_keys`: the NodePort and kubelet reservation, and the port range that
goes with it) stay in the node's plan as well. When the workload itself listens there (one of
its profiles' servers is among the node's listeners, or `--workload-network host`), its pods
are hostNetwork ones, which may not set net.* sysctls: every per-namespace key is the node's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sysctl_advisor.engine.plan_builder import build_plan, host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.kubernetes import Kubernetes, KubernetesVersion, PodVerdict
from sysctl_advisor.knowledge.values import parse_current
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.host_facts import Kubernetes as KubernetesFacts
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.model_base import plain_data
from sysctl_advisor.model.plan import Plan, Setting


@dataclass(frozen=True)
class PodSysctl:
    setting: Setting
    verdict: PodVerdict
    copied_from_node: bool  # a new namespace copies the node's value (tcp_rmem from 4.15)


@dataclass
class Placement:
    version: KubernetesVersion
    lists_from: KubernetesVersion  # the release whose kubelet and Pod Security lists judged it
    kernel: KernelVersion
    kernel_known: bool
    pod: list[PodSysctl]
    # the host's plan, its settings cut to what acts on the node: the global keys, those pods
    # inherit, and the per-namespace keys of the node's own namespace
    node: Plan
    inherited: list[str]  # per-namespace keys set on the node, copied into new pods
    node_namespace: dict[str, str]  # per-namespace keys set for the node's own namespace: why
    host_network: list[str]  # why the workload is taken to run hostNetwork (empty: in pods)

    @property
    def unsafe(self) -> list[str]:
        return [p.setting.key for p in self.pod if not p.verdict.safe]

    @property
    def outside_baseline(self) -> list[str]:
        return [p.setting.key for p in self.pod if not p.verdict.baseline]


def in_pod(kb: KnowledgeBase, key: str, kernel: KernelVersion) -> bool:
    """A per-namespace key a pod can set to any value. A key the kernel restricts outside the
    initial namespace (tcp_congestion_control: only algorithms the node allows) is the node's:
    a new namespace copies it from there."""
    spec = kb.catalog.keys[key]
    return (
        key.startswith("net.")
        and kb.catalog.is_per_netns(key, kernel)
        and spec.netns_restricted is None
    )


def inherited_from_node(kb: KnowledgeBase, key: str, kernel: KernelVersion) -> bool:
    """A per-namespace key set on the node that pods take when their namespace is created."""
    return (
        kb.catalog.is_per_netns(key, kernel)
        and not in_pod(kb, key, kernel)
        and copies_node_value(kb, key, kernel)
    )


def copies_node_value(kb: KnowledgeBase, key: str, kernel: KernelVersion) -> bool:
    since = kb.catalog.keys[key].netns_copies_init_since
    return since is not None and kernel >= since


def pod_facts(kb: KnowledgeBase, facts: HostFacts) -> HostFacts:
    """The facts as a pod's fresh network namespace sees them: its per-namespace keys hold the
    kernel's defaults (the values in force on the node are dropped, so each is planned from its
    default), except the keys a new namespace copies from the node; it serves no NodePort.
    Everything else (memory, observed peaks, the workload's services) is the same host."""
    kernel = kb.catalog.kernel_for(facts)[0]
    sysctl = {
        key: value
        for key, value in facts.sysctl.items()
        if key not in kb.catalog.keys
        or not in_pod(kb, key, kernel)
        or copies_node_value(kb, key, kernel)
    }
    given = facts.kubernetes or KubernetesFacts()
    return replace(facts, sysctl=sysctl, kubernetes=replace(given, namespace="pod"))


def netns_defaults(kb: KnowledgeBase, facts: HostFacts) -> dict[str, tuple[Any, str | None]]:
    """The keys a fresh network namespace created from the node's starts from otherwise than
    their kernel default (from 6.1, tcp_max_syn_backlog and tcp_max_tw_buckets follow the
    node's tcp_child_ehash_entries), by key, with the reason."""
    variables, _, _ = host_variables(kb, facts)
    node = {
        spec.alias: parse_current(facts.sysctl[name], spec) if name in facts.sysctl else None
        for name, spec in kb.catalog.keys.items()
    }
    return kb.catalog.netns_new_defaults(variables, node)


def host_network(
    kb: KnowledgeBase, facts: HostFacts, servers: Sequence[str], mode: str = "auto"
) -> list[str]:
    """Why the workload is taken to run in the node's own network namespace (hostNetwork):
    `mode` host says so; auto, the node's listeners that are one of the workload's `servers`
    (listeners in the node's facts are in the node's namespace). Empty: it runs in pods."""
    if mode == "host":
        return ["--workload-network host"]
    if mode == "pod":
        return []
    ports: dict[str, set[int]] = {}  # a server's name: its ports
    for listener in facts.listeners or []:
        process = plain_data(listener.process) if listener.process is not None else None
        server = kb.servers.recognise(process)
        if server is not None and server.id in servers:
            ports.setdefault(server.name, set()).add(listener.port)
    return [
        f"{name} listens on port{'s' if len(found) > 1 else ''} "
        + ", ".join(str(p) for p in sorted(found)[:5])
        + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        for name, found in ports.items()
    ]


def place(
    kb: KnowledgeBase,
    kubernetes: Kubernetes,
    version: KubernetesVersion,
    facts: HostFacts,
    host_plan: Plan,
    pod_plan: Plan,
    hostnet: Sequence[str] = (),
) -> Placement:
    """The pod's settings from `pod_plan` (built on `pod_facts`), the node's from `host_plan`:
    its global keys, and the per-namespace keys of the node's own namespace (all of them when
    the workload runs there, `hostnet`; none is then the pod's)."""
    kernel, _, known, _ = kb.catalog.kernel_for(facts)
    pod = [
        PodSysctl(
            setting=s,
            verdict=kubernetes.verdict(s.key, version, kernel),
            copied_from_node=copies_node_value(kb, s.key, kernel),
        )
        for s in pod_plan.settings
        if in_pod(kb, s.key, kernel) and not hostnet
    ]
    protecting = {k.key: " ".join(k.why.split()) for k in kubernetes.spec.node.namespace_keys}
    node_namespace: dict[str, str] = {}
    for s in host_plan.settings:
        if not in_pod(kb, s.key, kernel):
            continue
        if hostnet:
            node_namespace[s.key] = (
                "the workload runs in the node's network namespace (hostNetwork: "
                f"{'; '.join(hostnet)}), where a pod may not set net.* sysctls"
            )
        elif s.key in protecting:
            node_namespace[s.key] = protecting[s.key]
    node_settings = [
        s for s in host_plan.settings if not in_pod(kb, s.key, kernel) or s.key in node_namespace
    ]
    node = replace(host_plan, settings=node_settings)
    inherited = [s.key for s in node_settings if inherited_from_node(kb, s.key, kernel)]
    known = known and facts.kernel is not None
    lists = kubernetes.lists_for(version)
    return Placement(
        version, lists, kernel, known, pod, node, inherited, node_namespace, list(hostnet)
    )


def as_node(facts: HostFacts) -> HostFacts:
    """The facts of a host planned as a Kubernetes node: declared one, unless they say it is
    not (its NodePort range, when they give one, kept)."""
    given = facts.kubernetes
    if given is not None and given.node is not None:
        return facts
    port_range = given.node_port_range if given is not None else None
    return replace(facts, kubernetes=KubernetesFacts(node=True, node_port_range=port_range))


def placement_for(
    kb: KnowledgeBase,
    facts: HostFacts,
    profile: str | Sequence[str],
    overrides: dict[str, str] | None,
    version: KubernetesVersion,
    workload_network: str = "auto",
) -> Placement:
    """Both plans (the node's, and the pod's for a fresh namespace), placed. The host is
    planned as the Kubernetes node the output is for, whatever its facts show (facts copied
    from another host would miss the NodePorts to reserve), unless they say it is not one.
    `workload_network`: where the workload's pods run (auto: hostNetwork when one of its
    servers listens in the node's facts; pod; host)."""
    facts = as_node(facts)
    host_plan = build_plan(kb, facts, profile, overrides)
    pod_plan = build_plan(
        kb, pod_facts(kb, facts), profile, overrides, netns_defaults=netns_defaults(kb, facts)
    )
    servers = kb.workload(profile).servers
    hostnet = host_network(kb, facts, servers, workload_network)
    return place(kb, kb.kubernetes, version, facts, host_plan, pod_plan, hostnet)
