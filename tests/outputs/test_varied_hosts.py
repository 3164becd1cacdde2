"""Varied hosts the examples do not cover (clouds and their NIC drivers,
aarch64 with 4 KiB and 64 KiB pages, 32-bit i686 and armv7l with lowmem, distribution kernels
from RHEL 8 to 6.9 upstream, 512 MiB to 1.5 TiB, a Kubernetes node, operators' own values above
and below the advice, hosts already in trouble) each planned with `recommend` and the file it
writes checked with `check --facts --profile --set --fail-on info`: the advice must pass the
advisor's own lint against the same host, profile and parameters.

The facts files are tests/fixtures/hosts-varied/*.yaml, one host each (the comment at the top
of each says what it stands for)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.kernel_version import KernelVersion
from tests.conftest import EXAMPLE_PARAMS, EXAMPLE_PROFILES, EXAMPLES, TESTS, Cli, load_facts

HOSTS = TESTS / "fixtures" / "hosts-varied"

# (facts file stem, profile, parameters as NAME=VALUE words)
TABLE: list[tuple[str, str, str]] = [
    ("ec2-c6in-dtn-rhel9", "gridftp", "rtt_ms=150 bandwidth_mbps=100000 streams=8"),
    ("ec2-m6i-nginx-jammy", "frontend-proxy", "listen_backlog=8192"),
    ("gcp-n2-haproxy-bookworm", "frontend-proxy", "listen_backlog=32768 upstream_keepalive=true"),
    (
        "azure-d32-accelnet-noble",
        "c1m-server",
        "connections=2000000 active_fraction=0.05 idle_timeout=240",
    ),
    ("oci-bm-e4-dtn-rhel8", "gridftp", "rtt_ms=80 bandwidth_mbps=50000 streams=16 transfers=2"),
    ("graviton3-redis-jammy", "base", ""),
    ("ampere-altra-64k-rhel9", "gridftp", "rtt_ms=60 streams=4 congestion_control=bbr"),
    (
        "oci-a1-c1m-uek-64k",
        "c1m-server",
        "connections=3000000 active_fraction=0.02 app_bytes_per_connection=4096",
    ),
    ("sles15-hana-1t5", "base", ""),
    ("vps-512m-focal", "frontend-proxy", "listen_backlog=1024 upstreams=false http2=true"),
    ("k8s-worker-calico-jammy", "frontend-proxy", "listen_backlog=4096 reserved_ports=9099"),
    (
        "gke-cos-cilium-node",
        "c1m-server",
        "connections=500000 buffer_bytes=8192 listen_backlog=16384",
    ),
    ("i686-bullseye-lowmem-haproxy", "frontend-proxy", "listen_backlog=4096"),
    (
        "rpi4-armv7l-mirror",
        "gridftp",
        "rtt_ms=30 bandwidth_mbps=1000 streams=4 app_sets_buffers=false congestion_control=cubic",
    ),
    ("mx-relay-bookworm-oom", "base", ""),
    ("edge-6.6-bnxt-haproxy", "frontend-proxy", "listen_backlog=65535 clients_behind_nat=false"),
    (
        "loadgen-6.7-ice",
        "c1m-server",
        "connections=1500000 originated=1500000 destinations=8 idle_timeout=0",
    ),
    (
        "dtn-6.9-bbr-cx7",
        "gridftp",
        "rtt_ms=40 bandwidth_mbps=200000 streams=16 transfers=2 congestion_control=bbr",
    ),
    ("rhel8-conntrack-gw", "frontend-proxy", "listen_backlog=16384 ephemeral_first=15000"),
    ("focal-nginx-twheavy", "frontend-proxy", "keepalive=false reserved_ports=11211"),
    ("rhel9-postgres-thp", "base", ""),
    ("noble-softnet-ixgbe", "base", ""),
    (
        "sles15-gridftp-cubic",
        "gridftp",
        "rtt_ms=200 bandwidth_mbps=10000 streams=4 app_sets_buffers=false congestion_control=keep",
    ),
    (
        "azure-b2s-netvsc-rhel8",
        "c1m-server",
        "connections=20000 listen_backlog=4096 baseline_bytes=1073741824",
    ),
    # 32-bit UDP collectors, a saturated HAProxy, hosts of three workloads (profiles joined by
    # `+`), values in force kept by design, 2.6.32 to 6.17
    ("rhel6-i686-syslog-udp", "base", ""),
    ("armv7l-netflow-buster", "base", ""),
    ("ec2-c6i-haproxy-saturated", "frontend-proxy", "listen_backlog=20000"),
    (
        "gcp-c3-pg-redis-nginx",
        "postgresql+redis+frontend-proxy",
        "max_connections=300 shared_buffers=23622320128",
    ),
    ("azure-e16-es-kafka-mongo", "elasticsearch+kafka+mongodb", "partitions=2000"),
    ("rhel7-mongodb-swappiness0", "mongodb", ""),
    (
        "graviton3-64k-postgres",
        "postgresql",
        "max_connections=200 shared_buffers=17179869184 huge_pages=true",
    ),
    ("xenial-4.4-kafka-m4", "kafka", "partitions=4000"),
    ("azure-hbv4-dtn-6.17", "gridftp", "rtt_ms=25 bandwidth_mbps=200000 streams=8"),
    ("squeeze-2.6.32-nginx", "frontend-proxy", "listen_backlog=4096"),
    ("gcp-t2a-quic-6.12", "frontend-proxy", "quic_buffer_request=7340032"),
    ("focal-c1m-tcpmem-peak", "c1m-server", "connections=1000000 active_fraction=0.01"),
]

# Cases the advisor cannot pass today, each naming the bug (the facts are right).
KNOWN_BUGS: dict[str, str] = {}  # host stem -> the advisor bug it shows (strict xfail)


def profiles_of(profile: str) -> str | list[str]:
    """A TABLE row's profile column: one profile, or several joined by `+`."""
    return profile.split("+") if "+" in profile else profile


def every_host() -> Iterator[tuple[str, HostFacts, str | list[str], dict[str, str]]]:
    """(name, facts, profile or profiles, parameters) of the examples with their golden
    profiles, then of every row of TABLE: the hosts the conf's length and the rules'
    summaries are judged on."""
    for host, profile in EXAMPLE_PROFILES.items():
        facts = load_facts(EXAMPLES / f"{host}.yaml")
        yield f"example {host}", facts, profile, dict(EXAMPLE_PARAMS.get(host, {}))
    for stem, profile, words in TABLE:
        params = dict(word.split("=", 1) for word in words.split())
        yield f"host {stem}", load_facts(HOSTS / f"{stem}.yaml"), profiles_of(profile), params


def _sets(params: str) -> list[str]:
    return [arg for word in params.split() for arg in ("--set", word)]


def _profile_args(profile: str) -> list[str]:
    return [arg for name in profile.split("+") for arg in ("-p", name)]


def _case(stem: str, profile: str, params: str) -> object:
    marks = []
    if stem in KNOWN_BUGS:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[stem]))
    return pytest.param(stem, profile, params, id=f"{stem}-{profile}", marks=marks)


@pytest.mark.parametrize(("stem", "profile", "params"), [_case(*row) for row in TABLE])
def test_recommend_then_check_is_clean(
    cli: Cli, stem: str, profile: str, params: str, tmp_path: Path
) -> None:
    facts = str(HOSTS / f"{stem}.yaml")
    sets = _sets(params)
    chosen = _profile_args(profile)
    made = cli("recommend", "--facts", facts, *chosen, *sets, "-f", "conf")
    assert made.exit_code == 0, made.stdout + made.stderr
    conf = tmp_path / f"{stem}.conf"
    conf.write_text(made.stdout)
    checked = cli("check", str(conf), "--facts", facts, *chosen, *sets, "--fail-on", "info")
    assert checked.exit_code == 0, checked.stdout + checked.stderr


def test_table_is_varied() -> None:
    """At least 30 hosts and 20 distinct (kernel, arch, profile) combinations, every profile
    used, every fixture in the table once and every row naming a fixture; among them 64 KiB
    page arm64, 32-bit hosts collecting UDP, a saturated HAProxy, hosts of three workloads,
    kernels from 2.6.32 to 6.17 and the three big clouds' NIC drivers."""
    files = {path.stem for path in HOSTS.glob("*.yaml")}
    stems = [stem for stem, _, _ in TABLE]
    assert sorted(stems) == sorted(files) and len(set(stems)) == len(stems)
    combos = set()
    for stem, profile, _ in TABLE:
        data = yaml.safe_load((HOSTS / f"{stem}.yaml").read_text())
        assert data.get("hostname"), stem
        combos.add((data["kernel"], data["arch"], profile))
    assert len(combos) >= 20, combos
    assert len(TABLE) >= 30
    profiles = {name for _, profile, _ in TABLE for name in profile.split("+")}
    assert {"base", "frontend-proxy", "gridftp", "c1m-server"} <= profiles
    facts = {stem: load_facts(HOSTS / f"{stem}.yaml") for stem, _, _ in TABLE}
    assert any(f.arch == "aarch64" and f.page_size == 65536 for f in facts.values())
    assert any(f.bits == 32 and f.observed.udp is not None for f in facts.values())
    assert any(len(profile.split("+")) >= 3 for _, profile, _ in TABLE)
    # a server's own connections against its own limit: the host's peak also counts a proxy's
    # upstream connections, and the rules judge saturation on the server's figure
    assert any(
        s.maxconn is not None and (s.connections or 0) >= 0.9 * s.maxconn
        for f in facts.values()
        for s in f.services.values()
    )
    kernels = sorted(KernelVersion.parse(f.kernel or "0.0") for f in facts.values())
    assert kernels[0] <= "2.6.32.999" and kernels[-1] >= "6.17"
    drivers = {n.driver for f in facts.values() for n in f.nics}
    assert {"ena", "gve", "hv_netvsc"} <= drivers  # AWS, GCP, Azure
    hostnames = [yaml.safe_load((HOSTS / f"{s}.yaml").read_text())["hostname"] for s in stems]
    assert len(set(hostnames)) == len(hostnames)


# What a host was seen using, and the element of the key that must hold it: (observed figure,
# key, element). The plan may go below it (with headroom) only with a finding on that key that
# says why.
USE: list[tuple[Callable[[HostFacts], int | None], str, int]] = [
    (lambda f: f.observed.tcp_mem_pages_peak, "net.ipv4.tcp_mem", 2),
    # UDP has no pressure mode: it works at min (udp.mem-cap)
    (lambda f: f.observed.udp.mem_pages_peak if f.observed.udp else None, "net.ipv4.udp_mem", 0),
    (lambda f: f.observed.orphans_peak, "net.ipv4.tcp_max_orphans", 0),
    (lambda f: f.observed.time_wait_peak, "net.ipv4.tcp_max_tw_buckets", 0),
    (lambda f: f.observed.connections_peak, "fs.file-max", 0),
    # the accept queue a listener was seen holding, which somaxconn caps
    (lambda f: max((x.queue or 0 for x in f.listeners or []), default=0), "net.core.somaxconn", 0),
]


def _use_case(
    name: str, facts: HostFacts, profile: str | list[str], params: dict[str, str]
) -> object:
    return pytest.param(facts, profile, params, id=name.replace(" ", "-"))


def _below_observed_use(
    kb: KnowledgeBase, facts: HostFacts, profile: str | list[str], params: dict[str, str]
) -> tuple[int, list[str]]:
    """(how many planned values were held against an observed use, those below it with the
    evidence headroom and no finding on their key)."""
    headroom = kb.catalog.model.quantities["evidence_headroom"].eras[0].value
    assert isinstance(headroom, int | float)
    plan = build_plan(kb, facts, profile, params)
    explained = {f.key for f in plan.findings}
    total_pages = facts.memory.total // facts.page_size
    compared, below = 0, []
    for used, key, element in USE:
        seen = used(facts)
        setting = next((s for s in plan.settings if s.key == key), None)
        if not seen or setting is None or key in explained:
            continue
        compared += 1
        pages = kb.catalog.keys[key].unit == "pages"
        needed = (
            min(math.ceil(seen * headroom), total_pages) if pages else math.ceil(seen * headroom)
        )
        if setting.values[element] < needed:
            below.append(f"{key}[{element}] = {setting.values[element]} < {seen} x {headroom}")
    return compared, below


@pytest.mark.parametrize(("facts", "profile", "params"), [_use_case(*h) for h in every_host()])
def test_no_cap_below_observed_use(
    kb: KnowledgeBase, facts: HostFacts, profile: str | list[str], params: dict[str, str]
) -> None:
    """No planned value is below what the host was seen using, with the evidence headroom
    (the catalog's kernel model), unless a finding on that key says why."""
    assert not _below_observed_use(kb, facts, profile, params)[1]


def test_observed_use_is_held_against_the_plan_on_many_hosts(kb: KnowledgeBase) -> None:
    """The property above compares something: on the table's hosts, planned values set with
    no finding on their key meet an observed use many times (a table whose peaks all went
    unread, or whose keys all carried findings, would pass it with nothing held)."""
    compared = sum(_below_observed_use(kb, *h[1:])[0] for h in every_host())
    assert compared >= 10, compared


def test_saturated_haproxy_is_told_to_raise_maxconn_first(cli: Cli) -> None:
    """The saturated HAProxy row: its full accept queue is its maxconn's evidence, and the plan
    says to raise maxconn before the deeper backlog it plans."""
    facts = str(HOSTS / "ec2-c6i-haproxy-saturated.yaml")
    made = cli(
        "recommend",
        "--facts",
        facts,
        "-p",
        "frontend-proxy",
        *_sets("listen_backlog=20000"),
        "-f",
        "markdown",
    )
    assert made.exit_code == 0, made.stdout + made.stderr
    assert "listen-backlog.server-saturated" in made.stdout
