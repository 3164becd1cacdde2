"""Invariants over arbitrary hosts, profiles and parameters."""

from __future__ import annotations

import configparser
import json
import re
import textwrap
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.catalog import text_value
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.sysctl_conf import parse_conf_lines
from sysctl_advisor.outputs.plan_render import Renderer, wrap_words

KERNELS = [
    "2.6.32",
    "2.6.32-642.el6.i686",
    "2.6.32-358.el6.x86_64",
    "3.2.0-58-virtual",
    "3.10.0-1160.el7.x86_64",
    "3.18.20",
    "4.4.121",
    "4.11.0",
    "4.15.0-213-generic",
    "4.19.0",
    "4.20.0",
    "5.4.0-150-generic",
    "5.15.0-91-generic",
    "6.1.0-18-amd64",
    "6.6.30",
    "6.13.7",
    "6.18.44",
    "7.3.0",
    None,
]
ARCHES = ["x86_64", "aarch64", "i686", "armv7l", None]
DRIVERS = ["e1000", "e1000e", "bnx2", "ixgbe", "mlx5_core", "vif", None]
MESSAGES = [
    "Out of socket memory",
    "TCP: too many orphaned sockets",
    "TCP: out of memory -- consider tuning tcp_mem",
    "possible SYN flooding on port 80",
    "java: page allocation failure. order:0, mode:0x20",
    "eth0: link up",
]

nic = st.fixed_dictionaries(
    {"name": st.sampled_from(["eth0", "eth1", "ens1f0"]), "driver": st.sampled_from(DRIVERS)},
    optional={
        "speed_mbps": st.sampled_from([-1, 100, 1000, 10000, 25000, 100000]),
        "mtu": st.sampled_from([1500, 9000]),
    },
)
hosts = st.fixed_dictionaries(
    {
        "memory": st.fixed_dictionaries(
            {"total": st.integers(min_value=256 * 2**20, max_value=2 * 2**40)},
            optional={"lowmem": st.integers(min_value=128 * 2**20, max_value=2**30)},
        )
    },
    optional={
        "kernel": st.sampled_from(KERNELS),
        "arch": st.sampled_from(ARCHES),
        "page_size": st.sampled_from([4096, 16384, 65536]),
        "nics": st.lists(nic, max_size=3, unique_by=lambda n: n["name"]),
        "sysctl": st.fixed_dictionaries(
            {},
            optional={
                "net.ipv4.tcp_mem": st.sampled_from(["8388608 8388608 8388608", "1 2 3", "bogus"]),
                "net.ipv4.tcp_tw_recycle": st.sampled_from(["0", "1"]),
                "net.core.somaxconn": st.sampled_from(["0", "128", "65536", "100000"]),
                # a broken host, or a facts file that lies: below the floor the plan keeps
                "fs.file-max": st.sampled_from(["1", "8192", "9223372036854775807"]),
                "net.ipv4.tcp_syncookies": st.sampled_from(["0", "1", "2"]),
            },
        ),
        "observed": st.fixed_dictionaries(
            {},
            optional={
                "orphans_peak": st.integers(0, 10**7),
                "time_wait_peak": st.integers(0, 10**7),
                "listen_overflows": st.integers(0, 10**6),
                "rx_overruns": st.integers(0, 10**9),
                "tcp_mem_pages_peak": st.integers(0, 10**9),
                "kernel_messages": st.lists(st.sampled_from(MESSAGES), max_size=3),
            },
        ),
        "services": st.fixed_dictionaries(
            {},
            optional={
                "nginx": st.fixed_dictionaries(
                    {}, optional={"listen_backlog": st.integers(1, 10**6)}
                ),
                "haproxy": st.fixed_dictionaries({}),
            },
        ),
    },
)


def _possible(host: dict[str, Any]) -> bool:
    """A host that can exist: the facts model refuses the others (a page size the
    architecture's kernel lacks, lowmem above MemTotal, a 32-bit x86 host above 64 GiB)."""
    try:
        facts_from_data(host)
    except InputError:
        return False
    return True


hosts = hosts.filter(_possible)
PROFILE_PARAMS: dict[str, Any] = {
    "base": st.just({}),
    "frontend-proxy": st.fixed_dictionaries(
        {},
        optional={
            "listen_backlog": st.integers(1, 10**6),
            "keepalive": st.sampled_from(["true", "false"]),
        },
    ),
    "gridftp": st.fixed_dictionaries(
        {},
        optional={
            "rtt_ms": st.floats(0.1, 1000),
            "streams": st.integers(1, 256),
            "transfers": st.integers(1, 100),
            "bandwidth_mbps": st.integers(1, 400000),
        },
    ),
    "c1m-server": st.fixed_dictionaries(
        {},
        optional={
            "connections": st.integers(1, 10**8),
            "active_fraction": st.floats(0, 1),
            "buffer_bytes": st.integers(4096, 2**20),
        },
    ),
}
profile_and_params = st.sampled_from(sorted(PROFILE_PARAMS)).flatmap(
    lambda p: st.tuples(st.just(p), PROFILE_PARAMS[p])
)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _plan(kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]]) -> Any:
    profile, params = pp
    facts = facts_from_data(host)
    return facts, build_plan(kb, facts, profile, {k: str(v) for k, v in params.items()})


@SETTINGS
@given(host=hosts, pp=profile_and_params)
def test_values_bounded_ordered_and_exist(
    kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]]
) -> None:
    facts, plan = _plan(kb, host, pp)
    version = kb.catalog.kernel_for(facts)[0]
    for s in plan.settings:
        spec = kb.catalog.keys[s.key]
        assert kb.catalog.exists(s.key, version), s.key
        if spec.is_text:  # a name or a port set, as the kernel prints it back
            assert s.values == [] and text_value(s.value, spec) == s.value, (s.key, s.value)
            continue
        assert len(s.values) == spec.length
        assert all(spec.min <= v <= spec.max for v in s.values), (s.key, s.values)
        if spec.ordered:
            assert s.values == sorted(s.values), (s.key, s.values)
        assert s.value == " ".join(str(v) for v in s.values)
        if spec.floor is not None:  # never less than the host needs to work
            assert s.values[0] >= spec.floor.value, (s.key, s.values)
        if s.key == "net.ipv4.tcp_mem":
            assert s.values[2] * facts.page_size <= facts.memory.total
            # evidence beats the lowmem cap: a peak x1.25 may pass 3/16 of lowmem, not lowmem
            peak = facts.observed.tcp_mem_pages_peak or 0
            if facts.bits == 32 and peak * 5 // 4 < facts.lowmem * 3 // 16 // facts.page_size:
                assert s.values[2] * facts.page_size <= facts.lowmem * 3 // 16 + facts.page_size
            if facts.bits == 32:
                assert s.values[2] * facts.page_size <= facts.lowmem + facts.page_size


@SETTINGS
@given(host=hosts, pp=profile_and_params)
def test_deterministic_and_formats_agree(
    kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]]
) -> None:
    _, plan = _plan(kb, host, pp)
    _, again = _plan(kb, host, pp)
    renderer = Renderer(kb.catalog)
    conf = renderer.render(plan, "conf", "cmd")
    assert conf == renderer.render(again, "conf", "cmd")
    data = json.loads(renderer.render(plan, "json", "cmd"))
    assert data["schema"] == "sysctl-advisor/plan/v1"
    assignments, _, bad = parse_conf_lines(conf)
    assert not bad
    assert {a.key: a.value for a in assignments} == {s["key"]: s["value"] for s in data["settings"]}
    assert len(assignments) == len(data["settings"])  # each key once
    wanted = {s["key"]: s["value"] for s in data["settings"]}
    assert tuned_values(renderer.render(plan, "tuned", "cmd")) == wanted
    host_vars = yaml.safe_load(renderer.render(plan, "ansible", "cmd"))
    assert {i["name"]: i["value"] for i in host_vars["sysctl_advisor_settings"]} == wanted


@SETTINGS
@given(host=hosts, pp=profile_and_params, minor=st.integers(min_value=25, max_value=40))
def test_kubernetes_places_each_key_once_where_its_namespace_says(
    kb: KnowledgeBase, host: dict[str, Any], pp: tuple[str, dict[str, Any]], minor: int
) -> None:
    """Any host, profile and release: the manifests read back as the two plans (the node's
    global keys and those of its own namespace, the pod's per-namespace keys), a key in both
    only when the node's namespace needs it too, the kubelet list exactly the pod's unsafe
    keys, and the same bytes twice."""
    from sysctl_advisor.engine.kubernetes_placement import as_node, placement_for
    from sysctl_advisor.knowledge.kubernetes import KubernetesVersion
    from sysctl_advisor.outputs.kubernetes_manifests import manifest_settings, render_kubernetes

    profile, params = pp
    facts = facts_from_data(host)
    overrides = {k: str(v) for k, v in params.items()}
    version = KubernetesVersion(1, minor)
    placement = placement_for(kb, facts, profile, overrides, version)
    text = render_kubernetes(Renderer(kb.catalog), placement, "cmd")
    again = render_kubernetes(
        Renderer(kb.catalog), placement_for(kb, facts, profile, overrides, version), "cmd"
    )
    assert text == again
    pod, node, unsafe = manifest_settings(text)
    kernel = kb.catalog.kernel_for(facts)[0]

    def pods_set(key: str) -> bool:
        spec = kb.catalog.keys[key]
        per_netns = key.startswith("net.") and kb.catalog.is_per_netns(key, kernel)
        return per_netns and spec.netns_restricted is None

    assert all(pods_set(k) for k in pod)
    host_plan = build_plan(kb, as_node(facts), profile, overrides)  # planned as the node
    # the node's own namespace keeps the keys that protect it; all of them when the workload
    # runs there (hostNetwork), and the pods then set none
    protecting = {k.key for k in kb.kubernetes.spec.node.namespace_keys}
    own = {
        s.key
        for s in host_plan.settings
        if pods_set(s.key) and (placement.host_network or s.key in protecting)
    }
    assert set(placement.node_namespace) == own
    assert node == {
        s.key: s.value for s in host_plan.settings if not pods_set(s.key) or s.key in own
    }
    assert set(pod) & set(node) <= own
    assert not (placement.host_network and pod)
    assert unsafe == [k for k in pod if not kb.kubernetes.verdict(k, version, kernel).safe]


def tuned_values(text: str) -> dict[str, str]:
    """The [sysctl] section as tuned reads it: ini syntax, one pair of quotes removed."""
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    assert parser.get("main", "summary")
    if not parser.has_section("sysctl"):
        return {}
    # ">N" is tuned's "at least N": the value it sets is N.
    return {k: re.sub(r'^"(.*)"$', r"\1", v).removeprefix(">") for k, v in parser.items("sysctl")}


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab  -\n"), max_size=300),
    width=st.integers(1, 100),
)
def test_comment_wrap_matches_textwrap(text: str, width: int) -> None:
    expected = textwrap.wrap(
        " ".join(text.split()), width, break_long_words=False, break_on_hyphens=False
    )
    assert wrap_words(text, width) == expected


@settings(max_examples=150, deadline=None)
@given(
    data=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "memory",
                        "total",
                        "lowmem",
                        "kernel",
                        "arch",
                        "nics",
                        "sysctl",
                        "observed",
                        "page_size",
                        "name",
                        "speed_mbps",
                        "x",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_arbitrary_facts_never_crash(kb: KnowledgeBase, data: Any) -> None:
    try:
        facts = facts_from_data(data)
        for profile in kb.profiles:
            build_plan(kb, facts, profile)
    except InputError as exc:
        assert "\n" not in str(exc)


@given(text=st.text(max_size=200))
def test_conf_parser_total(text: str) -> None:
    assignments, _, _bad = parse_conf_lines(text)
    for a in assignments:
        # Keys are trimmed of C whitespace as procps trims them (\x1f is not whitespace to C).
        assert "\n" not in a.value and a.key == a.key.strip(" \t\n\v\f\r")


@given(version=st.tuples(*[st.integers(0, 40)] * 4))
def test_kernel_version_order(version: tuple[int, int, int, int]) -> None:
    text = ".".join(str(v) for v in version)
    parsed = KernelVersion.parse(text)
    assert parsed.numbers == version
    assert parsed == text and not parsed < text
