"""The facts collector on fixture trees (and on this machine), and the /proc parsers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.sources.local_host import collect, collect_data
from sysctl_advisor.sources.proc_readers import (
    count_cpu_list,
    parse_meminfo,
    parse_net_dev,
    parse_netstat,
    parse_sockstat,
    selected_mode,
)
from tests.conftest import TESTS, Cli

HOSTS = TESTS / "fixtures" / "hosts"


def facts_of(kb: KnowledgeBase, name: str) -> dict[str, object]:
    return collect_data(list(kb.catalog.keys), HOSTS / name)


def test_32bit_host_with_highmem(kb: KnowledgeBase) -> None:
    data = facts_of(kb, "i686-highmem")
    facts = facts_from_data(data)
    assert facts.kernel == "2.6.32-642.el6.i686"
    assert facts.arch == "i686"  # from the release suffix: no proc/sys/kernel/arch on 2.6
    assert facts.bits == 32
    assert facts.memory.total == 8270556 * 1024
    assert facts.memory.lowmem == 890068 * 1024  # LowTotal, not the 896 MiB guess
    assert facts.cpu.threads == 8  # sys/devices/system/cpu/online "0-7"
    assert facts.sysctl["net.ipv4.tcp_mem"] == "86016 114688 172032"  # tabs normalised
    assert facts.sysctl["net.ipv4.tcp_tw_recycle"] == "1"
    assert facts.observed.tcp_mem_pages_peak == 52000
    assert [n.name for n in facts.nics] == ["eth0"]  # lo skipped


def test_nics_drivers_speeds_and_overruns(kb: KnowledgeBase) -> None:
    facts = facts_from_data(facts_of(kb, "e1000-bnx2"))
    nics = {n.name: n for n in facts.nics}
    assert sorted(nics) == ["eth0", "eth1", "eth2"]  # br0 (no device) and lo skipped
    assert (nics["eth0"].driver, nics["eth0"].speed_mbps) == ("e1000", 1000)
    assert (nics["eth1"].driver, nics["eth1"].speed_mbps, nics["eth1"].mtu) == ("bnx2", 10000, 9000)
    assert nics["eth2"].speed_mbps is None  # -1: link down
    assert nics["eth1"].rx_overruns == 1491402
    assert facts.observed.rx_overruns == 1491402  # br0's fifo count is not a NIC's
    assert facts.cpu.threads == 16  # from /proc/cpuinfo
    assert facts.arch == "x86_64"
    assert facts.fastest_nic_mbps == 10000


def test_busy_frontend_observed_and_nginx(kb: KnowledgeBase) -> None:
    facts = facts_from_data(facts_of(kb, "busy-frontend"))
    observed = facts.observed
    assert (observed.connections_peak, observed.orphans_peak, observed.time_wait_peak) == (
        35938,
        21564,
        98302,
    )
    assert (observed.listen_overflows, observed.listen_drops) == (1200, 1388)
    assert facts.transparent_hugepage == "madvise"
    nginx = facts.services["nginx"]
    assert nginx.config is not None and nginx.config.endswith("etc/nginx/nginx.conf")
    assert nginx.config_root == str((HOSTS / "busy-frontend").resolve())


def test_evidence_rules_fire_from_collected_facts(kb: KnowledgeBase) -> None:
    from sysctl_advisor.engine.plan_builder import build_plan
    from sysctl_advisor.sources.service_configs import with_service_configs

    facts = with_service_configs(collect(list(kb.catalog.keys), HOSTS / "busy-frontend"))
    plan = build_plan(kb, facts, "frontend-proxy")
    ids = {f.id for f in plan.findings}
    assert "evidence.listen-queue-overflow" in ids
    assert "time-wait.buckets-overflow" in ids
    # backlog=8192 against somaxconn 4096, and short of the profile's 16384: one finding says both
    below = next(f for f in plan.findings if f.id == "listen-backlog.nginx-below-target")
    assert "backlog 8192 at" in below.message and "cut to somaxconn 4096 now" in below.message
    assert "listen-backlog.nginx-truncated" not in ids
    orphans = {s.key: s for s in plan.settings}["net.ipv4.tcp_max_orphans"]
    assert orphans.values == [87000]  # 4 x 21,564 peak orphans, rounded up


def test_dtn_overruns_give_ring_companion(kb: KnowledgeBase) -> None:
    from sysctl_advisor.engine.plan_builder import build_plan

    facts = collect(list(kb.catalog.keys), HOSTS / "e1000-bnx2")
    plan = build_plan(kb, facts, "gridftp")
    rings = [c.setting for c in plan.companions if c.target == "ethtool"]
    assert any("ethtool -G eth1 rx 4096" in s for s in rings), rings
    assert not any("eth0" in s for s in rings), "only the NIC that overran"


@pytest.mark.parametrize("name", sorted(p.name for p in HOSTS.iterdir()))
def test_facts_command_output_loads_back(cli: Cli, name: str, tmp_path: Path) -> None:
    result = cli("facts", "--root", str(HOSTS / name))
    assert result.exit_code == 0, result.stderr
    host = tmp_path / "host.yaml"
    host.write_text(result.stdout)
    assert yaml.safe_load(result.stdout)["memory"]["total"] > 0
    again = cli("recommend", "--facts", str(host), "--profile", "base")
    assert again.exit_code == 0, again.stderr
    as_json = cli("facts", "--root", str(HOSTS / name), "--format", "json")
    assert as_json.exit_code == 0 and as_json.stdout.startswith("{")


def test_facts_command_bad_root(cli: Cli, tmp_path: Path) -> None:
    result = cli("facts", "--root", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "meminfo" in result.stderr
    missing = cli("facts", "--root", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "not a directory" in missing.stderr


@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="needs a Linux /proc")
def test_facts_of_this_machine(cli: Cli, tmp_path: Path) -> None:
    result = cli("facts")
    assert result.exit_code == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["kernel"] and data["memory"]["total"] > 0
    assert "net.core.somaxconn" in data["sysctl"]


def test_parsers_read_real_formats() -> None:
    assert parse_meminfo("MemTotal:  1024 kB\nHugePages_Total:       0\n") == {
        "MemTotal": 1048576,
        "HugePages_Total": 0,
    }
    sockstat = parse_sockstat("TCP: inuse 5 orphan 1 tw 2 alloc 8 mem 3\nFRAG: inuse 0 memory 0\n")
    assert sockstat["TCP"] == {"inuse": 5, "orphan": 1, "tw": 2, "alloc": 8, "mem": 3}
    netstat = parse_netstat("TcpExt: A ListenOverflows\nTcpExt: 1 7\nIpExt: X\nIpExt: 2\n")
    assert netstat["TcpExt"]["ListenOverflows"] == 7 and netstat["IpExt"] == {"X": 2}
    assert count_cpu_list("0-3,8-11\n") == 8 and count_cpu_list("0") == 1
    assert count_cpu_list("junk") is None
    assert selected_mode("always [madvise] never") == "madvise"
    dev = parse_net_dev(
        "Inter-| Receive | Transmit\n face |bytes packets|bytes\n"
        "  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
    )
    assert dev["eth0"]["fifo"] == 5 and dev["eth0"]["errs"] == 3


@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    parse_meminfo(text)
    parse_sockstat(text)
    parse_netstat(text)
    parse_net_dev(text)
    count_cpu_list(text)
    selected_mode(text)


def test_softnet_per_cpu_lines_and_their_totals() -> None:
    """6.x prints the CPU id in column 13 (offline CPUs are skipped, so line 2 is CPU 3);
    2.6.32 prints 10 columns (received_rps last), 2.6.18 only 9: numbered by line. The totals
    are the same lines summed; lines that are not hex counters are skipped by both."""
    from sysctl_advisor.sources.proc_readers import parse_softnet_cpus, softnet_totals

    modern = (
        "000f2b5d 00000010 00000002 00000000 00000000 00000000 00000000 00000000 00000000 "
        "00000007 00000000 00000000 00000000 00000000 00000000\n"
        "000c475a 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
        "00000000 00000000 00000000 00000003 00000000 00000000\n"
        "not a counter line\n"
    )
    cpus = parse_softnet_cpus(modern)
    assert cpus == [
        {"cpu": 0, "processed": 0xF2B5D, "dropped": 16, "time_squeeze": 2, "received_rps": 7},
        {"cpu": 3, "processed": 0xC475A, "dropped": 1, "time_squeeze": 0, "received_rps": 0},
    ]
    assert softnet_totals(cpus) == {"dropped": 17, "time_squeeze": 2}
    old = "00000010 00000001 00000002 0 0 0 0 0 0\n00000020 00000000 00000005 0 0 0 0 0 0\n"
    assert [(c["cpu"], "received_rps" in c) for c in parse_softnet_cpus(old)] == [
        (0, False),
        (1, False),
    ]
    assert softnet_totals(parse_softnet_cpus(old)) == {"dropped": 1, "time_squeeze": 7}
    assert softnet_totals([]) == {}


def test_links_name_every_interface_and_stay_in_the_tree(tmp_path: Path) -> None:
    """`links` lists every interface, virtual ones too (a CNI's links show a Kubernetes node),
    drops names no kernel gives, and is not listed through a link out of a copied tree."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "busy-frontend", root, symlinks=True)
    net = root / "sys/class/net"
    for name in ("cali0123456789a", "vxlan.calico", "has space", "x" * 20):
        (net / name).mkdir()
    data = collect_data([], root)
    assert {"ens5", "cali0123456789a", "vxlan.calico"} <= set(data["links"])
    assert "has space" not in data["links"] and "x" * 20 not in data["links"]
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "secret-if").mkdir(parents=True)
    shutil.rmtree(net)
    net.symlink_to(elsewhere, target_is_directory=True)
    assert "links" not in collect_data([], root)


# /proc/net/snmp's Udp rows as 6.18 prints them (MemErrors last, from 5.15) and as 2.6.32 does.
SNMP_6_18 = (
    "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors "
    "IgnoredMulti MemErrors\n"
    "Udp: 1000000 12 530 999000 500 3 0 0 30\n"
    "UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors "
    "InCsumErrors IgnoredMulti MemErrors\n"
    "UdpLite: 0 0 0 0 0 0 0 0 0\n"
)
SNMP_2_6_32 = (
    "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n"
    "Udp: 4000 1 0 4100 0 0\n"
)


def _frontend_with(tmp_path: Path, snmp: str, sockstat_udp: str = "") -> Path:
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "busy-frontend", root, symlinks=True)
    (root / "proc/net/snmp").write_text(snmp)
    if sockstat_udp:  # in place of the fixture's "UDP: inuse 6 mem 3"
        sockstat = root / "proc/net/sockstat"
        lines = [line for line in sockstat.read_text().splitlines(True) if line[:4] != "UDP:"]
        sockstat.write_text("".join(lines) + sockstat_udp)
    return root


def test_udp_counters_from_snmp_and_sockstat(kb: KnowledgeBase, tmp_path: Path) -> None:
    """The Udp: rows (not UdpLite:'s) and sockstat's UDP mem reach observed.udp; the
    rcvbuf-errors rule reads their share from them."""
    from sysctl_advisor.engine.plan_builder import build_plan

    root = _frontend_with(tmp_path, SNMP_6_18, "UDP: inuse 4 mem 1800\n")
    facts = collect(list(kb.catalog.keys), root)
    udp = facts.observed.udp
    assert udp is not None
    assert (udp.in_datagrams, udp.rcvbuf_errors, udp.in_errors, udp.mem_errors) == (
        1000000,
        500,
        530,
        30,
    )
    assert (udp.no_ports, udp.out_datagrams, udp.sndbuf_errors, udp.mem_pages_peak) == (
        12,
        999000,
        3,
        1800,
    )
    plan = build_plan(kb, facts, "base")
    assert "udp.receive-buffer-drops" in {f.id for f in plan.findings}


def test_udp_counters_of_2_6_32_have_no_mem_errors(kb: KnowledgeBase, tmp_path: Path) -> None:
    facts = collect(list(kb.catalog.keys), _frontend_with(tmp_path, SNMP_2_6_32))
    udp = facts.observed.udp
    assert udp is not None and (udp.in_datagrams, udp.rcvbuf_errors) == (4000, 0)
    assert udp.mem_errors is None  # MemErrors is printed from 5.15 on


@pytest.mark.parametrize(
    ("snmp", "expected"),
    [
        # a figure beyond any counter (a garbled or planted file) is left out, the rest kept
        ("Udp: InDatagrams RcvbufErrors NoPorts\nUdp: 10 2 " + "9" * 30 + "\n", {"no_ports"}),
        ("Udp: InDatagrams RcvbufErrors InErrors\nUdp: 10 2 -5\n", {"in_errors"}),
        # without both figures of the share there is no udp record at all
        ("Udp: InDatagrams NoPorts\nUdp: 10 0\n", None),
        ("Udp: InDatagrams RcvbufErrors\nUdp: " + "9" * 30 + " 2\n", None),
    ],
)
def test_udp_counters_refuse_figures_no_host_reports(
    kb: KnowledgeBase, tmp_path: Path, snmp: str, expected: set[str] | None
) -> None:
    data = collect_data(list(kb.catalog.keys), _frontend_with(tmp_path, snmp))
    udp = data["observed"].get("udp")
    if expected is None:
        assert udp is None
        return
    assert udp is not None and not expected & set(udp)
    assert facts_from_data(data).observed.udp is not None


@pytest.mark.parametrize("bad", [-1, 10**16, 1.5, "many"])
def test_a_facts_file_with_an_impossible_udp_counter_is_one_error(bad: object) -> None:
    from sysctl_advisor.model.errors import InputError

    data = {
        "memory": {"total": "8 GiB"},
        "observed": {"udp": {"in_datagrams": 10, "rcvbuf_errors": bad}},
    }
    with pytest.raises(InputError, match="rcvbuf_errors"):
        facts_from_data(data)


def test_huge_page_size_from_meminfo(tmp_path: Path) -> None:
    """Hugepagesize (a 64 KiB-page arm64 kernel's 512 MiB) is the facts' memory.huge_page_size;
    a tree whose meminfo has none (a kernel without HugeTLB) leaves it unknown."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "busy-frontend", root, symlinks=True)
    meminfo = root / "proc/meminfo"
    plain = meminfo.read_text()
    meminfo.write_text(plain + "HugePages_Total:       0\nHugepagesize:     524288 kB\n")
    facts = facts_from_data(collect_data([], root))
    assert facts.memory.huge_page_size == 512 * 2**20
    # no kernel prints these (a power of two too: 4 KiB, 32 GiB): not known, the facts still read
    for odd in ("3000 kB", "4 kB", "33554432 kB", "2048", "0 kB"):
        meminfo.write_text(plain + f"Hugepagesize:     {odd}\n")
        assert facts_from_data(collect_data([], root)).memory.huge_page_size is None, odd
    meminfo.write_text(plain)
    assert facts_from_data(collect_data([], root)).memory.huge_page_size is None


def test_rhel6_transparent_hugepage_directory(tmp_path: Path) -> None:
    """RHEL 6 names THP's directory redhat_transparent_hugepage: its mode is read there when
    the upstream directory is absent, and the upstream one wins where both are."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "i686-highmem", root, symlinks=True)
    rhel = root / "sys/kernel/mm/redhat_transparent_hugepage"
    rhel.mkdir(parents=True)
    (rhel / "enabled").write_text("[always] madvise never\n")
    assert collect_data([], root)["transparent_hugepage"] == "always"
    upstream = root / "sys/kernel/mm/transparent_hugepage"
    upstream.mkdir()
    (upstream / "enabled").write_text("always madvise [never]\n")
    assert collect_data([], root)["transparent_hugepage"] == "never"
