"""Issue 33's "done when": varied hosts the examples do not cover (clouds and their NIC drivers,
aarch64 with 4 KiB and 64 KiB pages, 32-bit i686 and armv7l with lowmem, distribution kernels
from RHEL 8 to 6.9 upstream, 512 MiB to 1.5 TiB, a Kubernetes node, operators' own values above
and below the advice, hosts already in trouble) each planned with `recommend` and the file it
writes checked with `check --facts --profile --set --fail-on info`: the advice must pass the
advisor's own lint against the same host, profile and parameters.

The facts files are tests/fixtures/hosts-varied/*.yaml, one host each (the comment at the top
of each says what it stands for)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sysctl_advisor.cli import app
from sysctl_advisor.model.host_facts import HostFacts
from tests.conftest import EXAMPLE_PARAMS, EXAMPLE_PROFILES, EXAMPLES, TESTS, load_facts

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
]

# Cases the advisor cannot pass today, each naming the bug (the facts are right).
KNOWN_BUGS: dict[str, str] = {}  # host stem -> the advisor bug it shows (strict xfail)

runner = CliRunner()


def every_host() -> Iterator[tuple[str, HostFacts, str, dict[str, str]]]:
    """(name, facts, profile, parameters) of the examples with their golden profiles, then of
    every row of TABLE: the hosts the conf's length and the rules' summaries are judged on."""
    for host, profile in EXAMPLE_PROFILES.items():
        facts = load_facts(EXAMPLES / f"{host}.yaml")
        yield f"example {host}", facts, profile, dict(EXAMPLE_PARAMS.get(host, {}))
    for stem, profile, words in TABLE:
        params = dict(word.split("=", 1) for word in words.split())
        yield f"host {stem}", load_facts(HOSTS / f"{stem}.yaml"), profile, params


def _sets(params: str) -> list[str]:
    return [arg for word in params.split() for arg in ("--set", word)]


def _case(stem: str, profile: str, params: str) -> object:
    marks = []
    if stem in KNOWN_BUGS:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[stem]))
    return pytest.param(stem, profile, params, id=f"{stem}-{profile}", marks=marks)


@pytest.mark.parametrize(("stem", "profile", "params"), [_case(*row) for row in TABLE])
def test_recommend_then_check_is_clean(
    stem: str, profile: str, params: str, tmp_path: Path
) -> None:
    facts = str(HOSTS / f"{stem}.yaml")
    sets = _sets(params)
    made = runner.invoke(app, ["recommend", "--facts", facts, "-p", profile, *sets, "-f", "conf"])
    assert made.exit_code == 0, made.stdout + made.stderr
    conf = tmp_path / f"{stem}.conf"
    conf.write_text(made.stdout)
    checked = runner.invoke(
        app, ["check", str(conf), "--facts", facts, "-p", profile, *sets, "--fail-on", "info"]
    )
    assert checked.exit_code == 0, checked.stdout + checked.stderr


def test_table_is_varied() -> None:
    """At least 20 distinct (kernel, arch, profile) combinations, every profile used, every
    fixture in the table once and every row naming a fixture."""
    files = {path.stem for path in HOSTS.glob("*.yaml")}
    stems = [stem for stem, _, _ in TABLE]
    assert sorted(stems) == sorted(files) and len(set(stems)) == len(stems)
    combos = set()
    for stem, profile, _ in TABLE:
        data = yaml.safe_load((HOSTS / f"{stem}.yaml").read_text())
        assert data.get("hostname"), stem
        combos.add((data["kernel"], data["arch"], profile))
    assert len(combos) >= 20, combos
    profiles = {profile for _, profile, _ in TABLE}
    assert profiles == {"base", "frontend-proxy", "gridftp", "c1m-server"}
    hostnames = [yaml.safe_load((HOSTS / f"{s}.yaml").read_text())["hostname"] for s in stems]
    assert len(set(hostnames)) == len(hostnames)
