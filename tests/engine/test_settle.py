"""The output is the whole desired state: applying it and running again gives the same keys and
values, in every format.

Every delivery path installs the output whole (a sysctl.d file, a ConfigMap, a node pool's
configuration, host_vars), so a plan that dropped a key once it was in force would undo its own
advice at the next install, and ask for it again at the one after. Applying a plan here means:
the values in force become the ones the format carries, the advisor's own file is the file that
sets them (written after every log line and counter the facts hold), and the evidence is left as
it was. The plan from those facts must carry the same keys with the same values, byte for byte;
only the annotations that speak of the value in force (and the explanations of why a key is
kept) may change.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.kubernetes_placement import placement_for
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.outputs import formats
from sysctl_advisor.outputs.plan_render import Renderer, rendered_settings
from tests.engine.test_principles import _in_force
from tests.test_properties import hosts

OWN = "/etc/sysctl.d/90-sysctl-advisor.conf"
APPLIED_AT = "2026-12-01T00:00:00Z"  # after every line the strategies below log
LOGGED = st.sampled_from(["2026-11-01T10:00:00Z", "2026-11-20T08:30:00Z", "2026-11-30T23:59:59Z"])
# The suite draws 100 hosts; CI's deep run (`-m deep`, pyproject.toml) draws 1,000, and
# HYPOTHESIS_EXAMPLES sets it for a deeper search still. Each class of host a search found is
# kept in FOUND below, which every run checks.
EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "1000"))
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
KUBE_VERSION = "1.32"
PLAIN = ("conf", "json", "markdown", "tuned", "ansible")
EVERY_FORMAT = (*PLAIN, "kubernetes", *formats.NODE)


def kernel_events(kb: KnowledgeBase) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Families counted in the kernel log, each with its lines' times (or none)."""
    families = [f.id for f in kb.message_families]
    event = st.fixed_dictionaries(
        {
            "family": st.sampled_from(families),
            "count": st.integers(1, 10**5),
            "example": st.just("nf_conntrack: table full, dropping packet"),
        },
        optional={"last_seen": LOGGED},
    )
    return st.lists(event, max_size=4, unique_by=lambda e: e["family"])


def app_events(kb: KnowledgeBase) -> st.SearchStrategy[list[dict[str, Any]]]:
    event = st.fixed_dictionaries(
        {
            "family": st.sampled_from([f.id for f in kb.app_families]),
            "count": st.integers(1, 100),
            "example": st.just("WARNING"),
        },
        optional={"last_seen": LOGGED, "wants": st.integers(1, 2**24)},
    )
    return st.lists(event, max_size=3, unique_by=lambda e: e["family"])


NODE_SIGNS = st.sampled_from(
    [
        {},
        {"links": ["eth0", "cali0123456789a", "vxlan.calico"]},
        {
            "listeners": [
                {
                    "address": "0.0.0.0",
                    "port": 10256,
                    "backlog": 4096,
                    "queue": 0,
                    "process": {"pid": 900, "command": "kube-proxy"},
                },
                {
                    "address": "::",
                    "port": 10250,
                    "backlog": 4096,
                    "queue": 0,
                    "process": {"pid": 800, "command": "kubelet"},
                },
            ],
            "processes": ["kube-proxy", "kubelet", "containerd"],
        },
    ]
)
SERVICES = st.fixed_dictionaries(
    {},
    optional={
        "nginx": st.fixed_dictionaries({}, optional={"listen_backlog": st.integers(1, 10**5)}),
        "redis": st.fixed_dictionaries({}, optional={"listen_backlog": st.integers(1, 10**5)}),
        "postgresql": st.fixed_dictionaries(
            {},
            optional={
                "max_connections": st.integers(1, 10000),
                "shared_buffers": st.integers(2**17, 2**34),
            },
        ),
    },
)


def _workloads(kb: KnowledgeBase) -> st.SearchStrategy[list[str]]:
    """One profile or two: every profile and every pair can be drawn."""
    return st.lists(st.sampled_from(sorted(kb.profiles)), min_size=1, max_size=2, unique=True)


@st.composite
def applied_hosts(draw: st.DrawFn, kb: KnowledgeBase) -> dict[str, Any]:
    host = dict(draw(hosts))
    host["sysctl"] = dict(host.get("sysctl", {}))
    observed = dict(host.get("observed", {}))
    observed["kernel_events"] = draw(kernel_events(kb))
    observed["app_events"] = draw(app_events(kb))
    host["observed"] = observed
    host["services"] = {**host.get("services", {}), **draw(SERVICES)}
    host.update(draw(NODE_SIGNS))
    others = sorted(host["sysctl"])
    chosen = draw(st.sets(st.sampled_from(others), max_size=3)) if others else set()
    host["sysctl_files"] = {k: f"/etc/sysctl.d/99-ops.conf:{i + 1}" for i, k in enumerate(chosen)}
    return host


def _values_in(
    kb: KnowledgeBase, facts: Any, profile: list[str], fmt: str
) -> tuple[str, dict[str, str]]:
    """The format's text and the settings it carries (what applying it writes)."""
    renderer = Renderer(kb.catalog)
    if fmt in PLAIN:
        plan = build_plan(kb, facts, profile)
        text = renderer.render(plan, fmt, "test")
        carried = rendered_settings(fmt, text)
        if fmt == "json":  # the settings as the document carries them
            carried = {s["key"]: s["value"] for s in json.loads(text)["settings"]}
        elif carried is None:  # markdown: a table for people, the plan's settings as data
            carried = {s.key: s.value for s in plan.settings}
        return text, carried
    from sysctl_advisor.commands.recommend import node_document
    from sysctl_advisor.outputs.kubernetes_manifests import render_kubernetes

    version = kb.kubernetes.version(KUBE_VERSION)
    placement = placement_for(kb, facts, profile, None, version)
    if fmt == "kubernetes":
        text = render_kubernetes(renderer, placement, "test")
        return text, {s.key: s.value for s in placement.node.settings}
    text = node_document(kb, renderer, placement, "test", fmt, on_refused=lambda _: None)
    carried = kb_read_back(kb, fmt, text)
    return text, carried


def kb_read_back(kb: KnowledgeBase, fmt: str, text: str) -> dict[str, str]:
    from sysctl_advisor.outputs.node_platforms import read_back

    return dict(read_back(text, kb.node_platforms[fmt]))


def applied(host: dict[str, Any], carried: dict[str, str], own: str = OWN) -> dict[str, Any]:
    """The host once the output is installed whole (as `own`) and applied."""
    files = dict(host.get("sysctl_files") or {})
    file_settings = {}
    for line, (key, value) in enumerate(sorted(carried.items()), start=1):
        files[key] = f"{own}:{line}"
        file_settings[key] = {"value": value, "modified": APPLIED_AT}
    return {
        **host,
        "sysctl": {**host.get("sysctl", {}), **carried},
        "sysctl_files": files,
        "sysctl_file_settings": file_settings,
    }


def _settings_lines(fmt: str, text: str) -> list[str]:
    """What a format applies, line by line, comments left out (YAML, ini and sysctl.conf
    comments start with #; JSON and Markdown carry no comment). A format of YAML documents is
    read as YAML: each scalar by its path, a file it embeds (a ConfigMap's sysctl file, a
    Tuned profile) by its lines less their comments."""
    if fmt in ("json", "markdown"):
        return []
    if fmt in ("conf", "tuned", "ansible", "bottlerocket", "eks"):  # lines, # for comments
        return [line for line in text.split("\n") if _applied(line)]
    lines: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")
        elif isinstance(node, str) and "\n" in node:
            lines.extend(f"{path}: {line}" for line in node.split("\n") if _applied(line))
        else:
            lines.append(f"{path}={node!r}")

    for i, document in enumerate(yaml.safe_load_all(text)):
        walk(document, f"[{i}]")
    return lines


def _applied(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def assert_settles(kb: KnowledgeBase, host: dict[str, Any], profile: list[str], fmt: str) -> None:
    first_text, first = _values_in(kb, facts_from_data(host), profile, fmt)
    again_host = applied(host, first)
    again_text, again = _values_in(kb, facts_from_data(again_host), profile, fmt)
    assert again == first, f"{fmt} {profile} {_moves(first, again)}\nhost: {json.dumps(host)}"
    assert _settings_lines(fmt, again_text) == _settings_lines(fmt, first_text), fmt


def _moves(
    first: dict[str, str], again: dict[str, str]
) -> dict[str, tuple[str | None, str | None]]:
    return {
        k: (first.get(k), again.get(k))
        for k in sorted(set(first) | set(again))
        if first.get(k) != again.get(k)
    }


def fixed_point(kb: KnowledgeBase, data: st.DataObject) -> None:
    """Over every profile, every pair of profiles and every format (one drawn per example)."""
    host = data.draw(applied_hosts(kb), label="host")
    if data.draw(st.booleans(), label="arbitrary values in force"):
        host["sysctl"] = {**_in_force(data, kb), **host["sysctl"]}
    profile = data.draw(_workloads(kb), label="profiles")
    fmt = data.draw(st.sampled_from(EVERY_FORMAT), label="format")
    assert_settles(kb, host, profile, fmt)


@SETTINGS
@given(data=st.data())
def test_the_applied_plan_is_a_fixed_point(kb: KnowledgeBase, data: st.DataObject) -> None:
    fixed_point(kb, data)


@pytest.mark.deep
@settings(SETTINGS, max_examples=EXAMPLES)
@given(data=st.data())
def test_the_applied_plan_is_a_fixed_point_deeply(kb: KnowledgeBase, data: st.DataObject) -> None:
    fixed_point(kb, data)


# Hosts hypothesis found, each a class of host the plan once undid or moved on its second run.
FOUND = [
    # a bogus tcp_mem no file set on a 32-bit host: the lowmem cap binds on both runs
    ({"arch": "armv7l", "kernel": "3.2.0-58-virtual", "memory": {"total": 6280857996,
      "lowmem": 268435456}, "sysctl": {"net.ipv4.tcp_mem": "8388608 8388608 8388608"}},
     ["postgresql", "c1m-server"], "conf"),
    ({"arch": "i686", "memory": {"total": 268435456},
      "sysctl": {"net.ipv4.tcp_mem": "1 1 35390"}}, ["base"], "conf"),
    # a conntrack limit no file set and an undated "table full": judged by the kernel's default
    ({"memory": {"total": 268435456}, "sysctl": {"net.netfilter.nf_conntrack_max": "1"},
      "observed": {"kernel_events": [{"family": "netfilter.conntrack-table-full", "count": 1,
                                      "example": "nf_conntrack: table full, dropping packet"}]}},
     ["base"], "conf"),
    # Redis's overcommit on a node: the kubelet's own value, kept
    ({"memory": {"total": 268435456}, "sysctl": {"vm.overcommit_memory": "0"}}, ["redis"],
     "kubernetes"),
    # TCP ran out of memory: the cap's floor is twice the peak, before and after the raise
    # (found on an i686 host with 16 KiB pages, which no kernel builds: ppc's 44x has them)
    ({"memory": {"total": 268435456, "lowmem": 134217728}, "kernel": "4.4.121", "arch": "ppc",
      "page_size": 16384, "sysctl": {"net.ipv4.tcp_mem": "8388608 8388608 8388608"},
      "observed": {"tcp_mem_pages_peak": 382, "kernel_events": [
          {"family": "tcp.out-of-memory", "count": 1, "example": "TCP: out of memory"}]}},
     ["base"], "conf"),
    ({"memory": {"total": 268435456}, "kernel": "2.6.32", "observed": {
        "tcp_mem_pages_peak": 16385, "kernel_events": [
            {"family": "tcp.out-of-memory", "count": 1, "example": "TCP: out of memory",
             "last_seen": "2026-11-01T10:00:00Z"}]}}, ["base"], "conf"),
    # a socket buffer maximum capped once is still capped (tuned's exact form, not "at least")
    ({"memory": {"total": 268435456}, "sysctl": {"net.core.wmem_max": "1073741825"}},
     ["gridftp"], "tuned"),
    # a value no file set far beyond the model gets no model tolerance, before or after
    # (found on x86_64 with 16 KiB pages, which no kernel builds: ia64's default in 2.6.32)
    ({"memory": {"total": 381774888960}, "kernel": "2.6.32", "arch": "ia64",
      "page_size": 16384, "sysctl": {"net.ipv4.tcp_mem": "8388608 8388608 8388608"}},
     ["base"], "conf"),
    # the model's tolerance kept the default once: the plan's own file keeps it the same way
    ({"memory": {"total": 268435456}, "sysctl": {"net.ipv4.tcp_mem": "1 1024 1024"}},
     ["gridftp"], "conf"),
    # an application's warning with the value in force unknown: judged by the kernel default
    ({"memory": {"total": 268435456}, "kernel": "2.6.32", "observed": {"app_events": [
        {"family": "elasticsearch.max-map-count", "count": 1, "example": "WARNING",
         "last_seen": "2026-11-01T10:00:00Z", "wants": 262145}]}}, ["elasticsearch"], "conf"),
]  # fmt: skip


@pytest.mark.parametrize(("host", "profile", "fmt"), FOUND)
def test_hosts_hypothesis_found_settle(
    kb: KnowledgeBase, host: dict[str, Any], profile: list[str], fmt: str
) -> None:
    assert_settles(kb, {"sysctl_files": {}, **host}, profile, fmt)
