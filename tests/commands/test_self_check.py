"""The advisor's own output passes its own review: for every example and a set of varied hosts
(kernels 2.6.9 .. 6.18, 32/64-bit, 4 KiB and 64 KiB pages, 256 MiB .. 2 TiB), the rendered
sysctl.conf of every profile gets no finding from `check --facts --profile --fail-on info`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.engine.check.host import host_context
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.outputs.plan_render import Renderer
from tests.check_paths import check_paths
from tests.conftest import EXAMPLES, load_facts

GiB = 2**30
MiB = 2**20
NGINX = {"nginx": {"listen_backlog": 511}}
HOSTS: dict[str, dict[str, Any]] = {
    "rhel5-x86_64-16g": {
        "kernel": "2.6.18-274.el5",
        "arch": "x86_64",
        "memory": {"total": 16 * GiB},
    },
    "rhel5-i686-8g": {"kernel": "2.6.18-274.el5PAE", "arch": "i686", "memory": {"total": 8 * GiB}},
    "vanilla-2618-i686": {
        "kernel": "2.6.18",
        "arch": "i686",
        "memory": {"total": 4 * GiB},
        "sysctl": {"net.ipv4.tcp_mem": "196608 262144 393216"},
    },
    "older-than-modelled": {
        "kernel": "2.6.9-89.ELsmp",
        "arch": "x86_64",
        "memory": {"total": 2 * GiB},
    },
    "debian-squeeze": {
        "kernel": "2.6.32-5-amd64",
        "arch": "x86_64",
        "memory": {"total": 4 * GiB},
        "observed": {"orphans_peak": 21564, "kernel_messages": ["Out of socket memory"]},
    },
    "ubuntu-lucid-48g": {
        "kernel": "2.6.32-31-server",
        "arch": "x86_64",
        "memory": {"total": 48 * GiB},
        "nics": [{"name": "eth0", "driver": "bnx2", "speed_mbps": 1000, "mtu": 9000}],
    },
    "rhel6-i686-dcache": {
        "kernel": "2.6.32-642.el6.i686",
        "arch": "i686",
        "memory": {"total": 8 * GiB},
        "observed": {"rx_overruns": 100, "kernel_messages": ["page allocation failure. order:0"]},
    },
    "rhel6-x86_64-32g": {
        "kernel": "2.6.32-642.el6.x86_64",
        "arch": "x86_64",
        "memory": {"total": 32 * GiB},
        "sysctl": {"net.ipv4.tcp_mem": "196608 262144 393216"},
    },
    "rhel6-x86_64-2t": {
        "kernel": "2.6.32-754.el6.x86_64",
        "arch": "x86_64",
        "memory": {"total": 2048 * GiB},
    },
    "ubuntu-precise-ec2": {
        "kernel": "3.2.0-58-virtual",
        "arch": "x86_64",
        "memory": {"total": 7.5 * GiB},
        "services": NGINX,
        "observed": {"time_wait_peak": 350000, "listen_overflows": 9},
    },
    "rhel7-256m": {
        "kernel": "3.10.0-1160.el7.x86_64",
        "arch": "x86_64",
        "memory": {"total": 256 * MiB},
    },
    "rhel7-2t": {
        "kernel": "3.10.0-1160.el7.x86_64",
        "arch": "x86_64",
        "memory": {"total": 2048 * GiB},
        "nics": [{"name": "ens1", "driver": "mlx5_core", "speed_mbps": 100000, "mtu": 9000}],
    },
    "linux-405-wrapping": {
        "kernel": "4.0.5",
        "arch": "x86_64",
        "memory": {"total": 8 * GiB},
        "sysctl": {"net.core.somaxconn": "65536"},
    },
    "linux-44-1g": {
        "kernel": "4.4.121",
        "arch": "x86_64",
        "memory": {"total": 1 * GiB},
        "services": {"haproxy": {"maxconn": 2000}},
    },
    "ubuntu-bionic": {
        "kernel": "4.15.0-213-generic",
        "arch": "x86_64",
        "memory": {"total": 16 * GiB},
        "sysctl": {"net.ipv4.tcp_rmem": "4096 131072 6291456"},
    },
    "debian-buster-64g": {
        "kernel": "4.19.0-25-amd64",
        "arch": "x86_64",
        "memory": {"total": 64 * GiB},
    },
    "debian-buster-armhf": {
        "kernel": "4.19.0-16-armmp",
        "arch": "armv7l",
        "memory": {"total": 1 * GiB},
    },
    "mips-512m": {"kernel": "4.9.0", "arch": "mips", "memory": {"total": 512 * MiB}},
    "arm64-64k-128g": {
        "kernel": "5.4.0-150-generic",
        "arch": "aarch64",
        "page_size": 65536,
        "memory": {"total": 128 * GiB},
        "transparent_hugepage": "always",
    },
    "ubuntu-jammy-512m": {
        "kernel": "5.15.0-91-generic",
        "arch": "x86_64",
        "memory": {"total": 512 * MiB},
        "observed": {"softnet_dropped": 40, "softnet_time_squeeze": 3},
    },
    "debian-bookworm-numa": {
        "kernel": "6.1.0-18-amd64",
        "arch": "x86_64",
        "memory": {"total": 64 * GiB, "numa_nodes": 2},
        "transparent_hugepage": "madvise",
    },
    "arm64-64k-16g": {
        "kernel": "6.6.30",
        "arch": "aarch64",
        "page_size": 65536,
        "memory": {"total": 16 * GiB},
    },
    "linux-613-1t": {
        "kernel": "6.13.7",
        "arch": "x86_64",
        "memory": {"total": 1024 * GiB},
        "observed": {
            "tcp_mem_pages_peak": 10**9,
            "kernel_messages": ["TCP: out of memory -- consider tuning tcp_mem"],
        },
    },
    "reference-618": {
        "kernel": "6.18.44",
        "arch": "x86_64",
        "memory": {"total": 24684084 * 1024, "numa_nodes": 1},
        "transparent_hugepage": "madvise",
        "sysctl": {
            "net.ipv4.tcp_mem": "287901 383869 575802",
            "net.ipv4.tcp_rmem": "4096 131072 33554432",
            "fs.file-max": "2466183",
            "vm.min_free_kbytes": "67584",
        },
        "sysctl_files": {},
    },
    "kernel-unknown": {"memory": {"total": 8 * GiB}},
    # an operator's vm.swappiness = 0, which the rules that want 1 keep (merge min): the plan
    # writes it with the suppression comment check.swappiness-zero reads
    "swappiness-zero-kept": {
        "kernel": "5.15.0-91-generic",
        "arch": "x86_64",
        "memory": {"total": 64 * GiB},
        "sysctl": {"vm.swappiness": "0"},
    },
}


def _self_check(kb: KnowledgeBase, facts_path: Path, profile: str, out: Path) -> list[str]:
    facts = load_facts(facts_path)
    plan = build_plan(kb, facts, profile)
    out.write_text(Renderer(kb.catalog).render(plan, "conf", "test"))
    # as `check FILE --facts FACTS --profile PROFILE` builds its context
    context = host_context(kb, facts, profile)
    report = check_paths(Checker(kb, kb.check_rules, context), [out])
    return [f"{f.id} line {f.line}: {f.message}" for f in report.findings]


def test_at_least_twenty_varied_hosts() -> None:
    kernels = {h.get("kernel") for h in HOSTS.values()}
    assert len(HOSTS) >= 20 and len(kernels) >= 15
    assert {h.get("page_size", 4096) for h in HOSTS.values()} == {4096, 65536}
    sizes = [facts_from_data(h).memory.total for h in HOSTS.values()]
    assert min(sizes) <= 256 * MiB and max(sizes) >= 2048 * GiB
    assert {facts_from_data(h).bits for h in HOSTS.values()} == {32, 64}


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_own_output_is_clean_for_every_profile(
    kb: KnowledgeBase, host: str, tmp_path: Path
) -> None:
    facts_path = tmp_path / f"{host}.yaml"
    facts_path.write_text(yaml.safe_dump({"hostname": host, **HOSTS[host]}))
    for profile in kb.profiles:
        assert _self_check(kb, facts_path, profile, tmp_path / f"{profile}.conf") == [], profile


@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_examples_pass_their_own_review(kb: KnowledgeBase, example: str, tmp_path: Path) -> None:
    for profile in kb.profiles:
        found = _self_check(kb, EXAMPLES / f"{example}.yaml", profile, tmp_path / "out.conf")
        assert found == [], profile
