"""The kernel accepts every per-namespace value the advisor writes, exactly as written.

For each profile, the file rendered for this host is cut down to the `net.*` keys the catalog
marks per-namespace on this kernel, applied with procps `sysctl -p` inside a fresh network
namespace, and read back from /proc/sys there. The host's own settings (fs, vm and net, as the
host namespace sees them) are compared before and after: nothing may change.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.sysctl_conf import parse_conf_lines
from sysctl_advisor.outputs.plan_render import Renderer
from sysctl_advisor.sources.local_host import collect
from tests.namespaces import host_sysctls, in_namespace, needs_netns

pytestmark = [
    needs_netns,
    pytest.mark.skipif(shutil.which("sysctl") is None, reason="needs procps sysctl"),
]
PROFILES = ["base", "frontend-proxy", "gridftp", "c1m-server"]
READ_BACK = 'sysctl -q -p "$1"\nshift\nfor key; do printf "%s=" "$key"; sysctl -n "$key"; done\n'


@pytest.fixture(scope="module")
def host_facts(kb: KnowledgeBase) -> object:
    return collect(list(kb.catalog.keys))


@pytest.mark.parametrize("profile", PROFILES)
def test_per_namespace_values_are_held_exactly(
    kb: KnowledgeBase, host_facts: object, tmp_path: Path, profile: str
) -> None:
    from sysctl_advisor.model.host_facts import HostFacts

    assert isinstance(host_facts, HostFacts)
    # frontend-proxy and c1m-server settings would be the same as the host's own on a host
    # already tuned; the example parameters make every profile write something here.
    overrides = {"frontend-proxy": {"listen_backlog": "32768"}, "gridftp": {"rtt_ms": "150"}}
    plan = build_plan(kb, host_facts, profile, overrides.get(profile, {}))
    conf = Renderer(kb.catalog).render(plan, "conf", "test")
    assignments, _, bad = parse_conf_lines(conf)
    assert not bad
    version = kb.catalog.kernel_for(host_facts)[0]
    kept = [
        a
        for a in assignments
        if a.key.startswith("net.") and kb.catalog.is_per_netns(a.key, version)
    ]
    if profile != "base":
        assert kept, f"{profile} writes no per-namespace key on this host: nothing to prove"
    path = tmp_path / "90-sysctl-advisor.conf"
    path.write_text("".join(f"{a.key} = {a.value}\n" for a in kept))

    before = host_sysctls()
    result = in_namespace(READ_BACK, str(path), *(a.key for a in kept))
    after = host_sysctls()

    assert result.returncode == 0, result.stderr
    held = dict(line.split("=", 1) for line in result.stdout.splitlines())
    for a in kept:
        assert held[a.key].split() == a.value.split(), (a.key, a.value, held[a.key])
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"the host changed: {changed}"


def test_global_keys_cannot_be_set_from_a_namespace(kb: KnowledgeBase, host_facts: object) -> None:
    """The catalog's other half: a `net.*` key it marks global on this kernel is hidden in a
    namespace, or shown read-only (6.x shows net.core.rmem_max and friends that way). /proc/sys
    judges even root by the owner bits, so `test -w` answers without writing anything."""
    from sysctl_advisor.model.host_facts import HostFacts

    assert isinstance(host_facts, HostFacts)
    version = kb.catalog.kernel_for(host_facts)[0]
    global_keys = [
        k
        for k in kb.catalog.keys
        if k.startswith("net.")
        and kb.catalog.exists(k, version)
        and not kb.catalog.is_per_netns(k, version)
    ]
    assert global_keys
    script = (
        'for key; do path=/proc/sys/$(echo "$key" | tr . /)\n'
        '  if [ ! -e "$path" ]; then echo "$key hidden"\n'
        '  elif [ -w "$path" ]; then echo "$key WRITABLE"\n'  # judged by mode, never written
        '  else echo "$key read-only"; fi\n'
        "done\n"
    )
    before = host_sysctls()
    result = in_namespace(script, *global_keys)
    assert host_sysctls() == before
    assert result.returncode == 0, result.stderr
    assert "WRITABLE" not in result.stdout, result.stdout
    assert len(result.stdout.splitlines()) == len(global_keys)


def _other_value(spec: object, default: str) -> str | None:
    """A valid value other than the default, within the catalog's bounds."""
    from sysctl_advisor.knowledge.catalog import CatalogKey

    assert isinstance(spec, CatalogKey)
    if spec.unit == "name":  # reno is built into every kernel (the fallback algorithm)
        return "reno" if default != "reno" else "cubic"
    if spec.unit == "ports":
        return "8080,9000-9010" if default != "8080,9000-9010" else "9100"
    values = [int(v) for v in default.split()]
    if spec.choices:
        others = [c for c in spec.choices if c != values[0]]
        return str(others[0]) if others else None
    if spec.length > 1:  # vectors: halve the last element, keeping the order
        last = max(values[-1] // 2, values[-2] if len(values) > 1 else spec.min, spec.min)
        return " ".join(str(v) for v in [*values[:-1], last])
    candidate = values[0] // 2 if values[0] // 2 >= max(spec.min, 1) else values[0] + 1
    return str(min(candidate, spec.max))


def test_every_per_namespace_key_takes_a_value_in_a_namespace(
    kb: KnowledgeBase, host_facts: object
) -> None:
    """Each key the catalog marks per-namespace on this kernel (the new keepalive, MTU-probing
    keys with the rest) is written with a value other than its default inside a fresh network
    namespace and read back exactly; the host's settings do not move."""
    from sysctl_advisor.model.host_facts import HostFacts

    assert isinstance(host_facts, HostFacts)
    version = kb.catalog.kernel_for(host_facts)[0]
    writes = {}
    for key, spec in kb.catalog.keys.items():
        default = host_facts.sysctl.get(key)
        if default is None or not kb.catalog.is_per_netns(key, version):
            continue
        value = _other_value(spec, default)
        if value is not None and value.split() != default.split():
            writes[key] = value
    assert {
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_mtu_probing",
        "net.ipv4.tcp_congestion_control",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_notsent_lowat",
    } <= set(writes)
    script = (
        'while [ "$#" -gt 1 ]; do sysctl -q -w "$1=$2"; printf "%s=" "$1"; sysctl -n "$1"; '
        "shift 2; done\n"
    )
    before = host_sysctls()
    result = in_namespace(script, *[x for kv in writes.items() for x in kv])
    assert host_sysctls() == before
    assert result.returncode == 0, result.stderr
    held = dict(line.split("=", 1) for line in result.stdout.splitlines())
    for key, value in writes.items():
        assert held[key].split() == value.split(), (key, value, held[key])


# The parameters that make each profile write per-namespace keys in a pod on this host (the
# reserved ports and keepalive rules among them), for the Kubernetes test below.
POD_PARAMS = {
    "base": {},
    "frontend-proxy": {"listen_backlog": "32768", "reserved_ports": "9100,9200-9210"},
    "gridftp": {"rtt_ms": "150"},
    "c1m-server": {},
}


def test_the_pod_sysctls_take_effect_in_a_new_namespace(
    kb: KnowledgeBase, host_facts: object
) -> None:
    """`recommend --format kubernetes` for this host: every sysctl the pod patch lists (the
    safe ones on the newest release first among them) is written with `sysctl -w` inside a
    fresh network namespace, as the container runtime writes a pod's sysctls, and read back
    exactly; the host's settings do not move."""
    from sysctl_advisor.engine.kubernetes_placement import placement_for
    from sysctl_advisor.model.host_facts import HostFacts
    from sysctl_advisor.outputs.kubernetes_manifests import manifest_settings, render_kubernetes

    assert isinstance(host_facts, HostFacts)
    version = kb.kubernetes.version(None)
    pod: dict[str, str] = {}
    safe: set[str] = set()
    for profile, params in POD_PARAMS.items():
        placement = placement_for(kb, host_facts, profile, params, version)
        text = render_kubernetes(Renderer(kb.catalog), placement, "test")
        listed, _, unsafe = manifest_settings(text)
        safe |= set(listed) - set(unsafe)
        pod.update(listed)
    assert safe, "no profile lists a safe pod sysctl on this host: nothing to prove"
    script = (
        'for pair; do key=${pair%%=*}; sysctl -q -w "$pair"; '
        'printf "%s=" "$key"; sysctl -n "$key"; done\n'
    )
    before = host_sysctls()
    result = in_namespace(script, *(f"{k}={v}" for k, v in sorted(pod.items())))
    after = host_sysctls()
    assert result.returncode == 0, result.stderr
    held = dict(line.split("=", 1) for line in result.stdout.splitlines())
    for key, value in pod.items():
        assert held[key].split() == value.split() or (
            key == "net.ipv4.ip_local_reserved_ports"
            and set(held[key].split(",")) == set(value.split(","))
        ), (key, value, held[key])
    assert before == after


def test_a_namespace_may_choose_only_an_allowed_congestion_control() -> None:
    """Why tcp_congestion_control is the node's on Kubernetes: outside the initial namespace
    the kernel refuses an algorithm missing from tcp_allowed_congestion_control (EPERM, 5.13+
    and stable backports), and that list is read-only there. reno is always allowed."""
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    refused = [name for name in available if name not in allowed]
    if not refused:
        pytest.skip("every loaded algorithm is allowed here: nothing the kernel would refuse")
    script = (
        'if sysctl -q -w net.ipv4.tcp_congestion_control="$1" 2>/dev/null; then echo set;'
        " else echo refused; fi\n"
        "sysctl -q -w net.ipv4.tcp_congestion_control=reno && echo reno\n"
        "test -w /proc/sys/net/ipv4/tcp_allowed_congestion_control && echo writable || true\n"
    )
    before = host_sysctls()
    result = in_namespace(script, refused[0])
    assert host_sysctls() == before
    assert result.stdout.split() == ["refused", "reno"], result.stdout + result.stderr
