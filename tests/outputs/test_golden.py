"""Golden files: every renderer for every example host with its profile.

Regenerated, after an intended change, by `python -m tests.regenerate`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.engine.kubernetes_placement import placement_for
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import formats
from sysctl_advisor.outputs.kubernetes_manifests import render_kubernetes
from sysctl_advisor.outputs.plan_render import Renderer, rebuild_command
from tests.conftest import (
    EXAMPLE_PARAMS,
    EXAMPLE_PROFILES,
    EXAMPLE_WORKLOADS,
    EXAMPLES,
    TESTS,
    Cli,
    load_facts,
)
from tests.golden_files import GOLDEN, assert_golden

EXT = {
    "conf": "conf",
    "json": "json",
    "markdown": "md",
    "tuned": "tuned.conf",
    "ansible": "host_vars.yml",
    "kubernetes": "k8s.yaml",
}
PAIRS = [  # the node platforms' goldens are their own tests' (tests/outputs/test_node_*.py)
    (host, profile, fmt)
    for host, profile in EXAMPLE_PROFILES.items()
    for fmt in formats.RECOMMEND
    if fmt not in formats.NODE
]


@pytest.mark.parametrize(("host", "profile", "fmt"), PAIRS)
def test_golden(kb: KnowledgeBase, host: str, profile: str, fmt: str) -> None:
    facts = load_facts(EXAMPLES / f"{host}.yaml")
    params = EXAMPLE_PARAMS.get(host, {})
    plan = build_plan(kb, facts, profile, params)
    command = (
        f"sysctl-advisor recommend --facts examples/{host}.yaml --profile {profile}"
        + "".join(f" --set {name}={value}" for name, value in params.items())
    )
    if fmt == "kubernetes":  # the newest release the advisor has read
        version = kb.kubernetes.version(None)
        placement = placement_for(kb, facts, profile, params, version)
        command += f" --format kubernetes --kubernetes-version {version}"
        text = render_kubernetes(Renderer(kb.catalog), placement, command)
    else:
        text = Renderer(kb.catalog).render(plan, fmt, command)
    path = GOLDEN / f"{host}.{profile}.{EXT[fmt]}"
    assert_golden(path, text)


@pytest.mark.parametrize(
    ("host", "fmt"), [(h, f) for h in EXAMPLE_WORKLOADS for f in ("conf", "json", "markdown")]
)
def test_golden_several_workloads(kb: KnowledgeBase, host: str, fmt: str) -> None:
    """Hosts that run two or three applications: each setting names the workloads that want
    it, and a mode two of them want differently is a finding, not a pick."""
    profiles, params = EXAMPLE_WORKLOADS[host]
    plan = build_plan(kb, load_facts(EXAMPLES / f"{host}.yaml"), profiles, params)
    command = rebuild_command(profiles, Path(f"examples/{host}.yaml"), params, fmt)
    text = Renderer(kb.catalog).render(plan, fmt, command)
    path = GOLDEN / f"{host}.{'+'.join(profiles)}.{EXT[fmt]}"
    assert_golden(path, text)


# the shorter levels of the conf and tuned files, for the examples' two kinds of host
DETAIL_PAIRS = [
    (host, fmt, detail)
    for host in ("dtn-10g", "ec2-nginx-frontend")
    for fmt in ("conf", "tuned")
    for detail in formats.DETAIL[1:]
]


@pytest.mark.parametrize(("host", "fmt", "detail"), DETAIL_PAIRS)
def test_golden_detail(kb: KnowledgeBase, host: str, fmt: str, detail: str) -> None:
    profile = EXAMPLE_PROFILES[host]
    plan = build_plan(kb, load_facts(EXAMPLES / f"{host}.yaml"), profile, {})
    command = f"sysctl-advisor recommend --facts examples/{host}.yaml --profile {profile}"
    text = Renderer(kb.catalog).render(plan, fmt, f"{command} --detail {detail}", detail)
    path = GOLDEN / f"{host}.{profile}.{detail}.{EXT[fmt]}"
    assert_golden(path, text)


@pytest.mark.parametrize(
    ("host", "profile", "key"),
    [
        ("dcache-32bit", "gridftp", "net.core.rmem_max"),  # lowmem budget, not binding here
        ("ec2-nginx-frontend", "frontend-proxy", "net.core.somaxconn"),  # 16-bit backlog cap
    ],
)
def test_a_key_a_cap_governs_is_never_at_least(
    kb: KnowledgeBase, host: str, profile: str, key: str
) -> None:
    """A cap that applies without binding today still governs the key: written ">N", tuned
    would keep a higher value in force at apply time (a somaxconn above 65535 on a 16-bit
    kernel, a 4 MiB rmem_max on the 32-bit host), above what the cap allows."""
    plan = build_plan(kb, load_facts(EXAMPLES / f"{host}.yaml"), profile)
    setting = next(s for s in plan.settings if s.key == key)
    assert setting.caps and not setting.capped_by
    text = Renderer(kb.catalog).render(plan, "tuned", "cmd")
    (line,) = [x for x in text.splitlines() if x.startswith(f"{key}=")]
    assert line == f"{key}={setting.value}"


def test_the_header_gives_parameters_exactly_so_the_rebuild_line_rebuilds(
    kb: KnowledgeBase,
) -> None:
    """`--set rtt_ms=123.456789` is shown as given (it was rounded to 123.457), and every
    value shown reads back as the very number the plan used."""
    facts = load_facts(EXAMPLES / "dcache-32bit.yaml")
    plan = build_plan(kb, facts, "gridftp", {"rtt_ms": "123.456789"})
    assert "rtt_ms=123.456789 " in Renderer(kb.catalog).render(plan, "conf", "test")
    plan = build_plan(
        kb, load_facts(EXAMPLES / "c1m-server.yaml"), "c1m-server", {"active_fraction": "0.0000123"}
    )
    header = (
        Renderer(kb.catalog)
        .render(plan, "conf", "t")
        .split("# profile:", 1)[1]
        .split("\n")[0]
        .split(" (", 1)[1]
        .rstrip(")")
        .split()
    )
    shown = dict(word.split("=", 1) for word in header if "=" in word)
    assert float(shown["active_fraction"]) == 0.0000123 == plan.profile.params["active_fraction"]


TUNED_HOST = TESTS / "fixtures" / "tuned" / "dtn-network-throughput.yaml"


@pytest.mark.parametrize("command", ["recommend", "diff"])
def test_golden_host_defaults(cli: Cli, command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conf file and the diff table for a host whose tcp_rmem/tcp_wmem
    tuned's network-throughput set, as a reader sees them (host default, set by tuned)."""

    monkeypatch.chdir(TESTS.parent)  # the facts path, as the outputs name it
    facts = str(TUNED_HOST.relative_to(TESTS.parent))
    result = cli(command, "--facts", facts, "-p", "gridftp")
    assert result.exit_code in (0, 1), result.stderr
    assert_golden(GOLDEN / f"tuned-network-throughput.gridftp.{command}.txt", result.stdout)
