"""Hardening against performance: where a hardening baseline's value and a
performance need collide, `check` names the setting that wins for the host and why. Each rule
is run through `commands.check.check` on files and facts written here, once where it fires and
once where it stays quiet."""

from __future__ import annotations

import json
from pathlib import Path

from sysctl_advisor.commands.check import check

TW_REUSE = "check.hardening-tw-reuse-without-timestamps"
FORWARDING = "check.hardening-forwarding-off-on-node"
RP_FILTER = "check.hardening-rp-filter-strict-multihomed"
REDIRECTS = "check.hardening-accept-redirects"

HOST = "memory: {total: 16 GiB}\nkernel: 6.1.0-18-amd64\n"
# a Kubernetes node by its CNI links; a host with two NICs; one whose two NICs form a bond
NODE = HOST + "links: [eth0, cali1a2b3c4d5e6, vxlan.calico]\n"
NOT_A_NODE = HOST + "links: [eth0, cali1a2b3c4d5e6]\nkubernetes: {node: false}\n"
TWO_NICS = HOST + "nics: [{name: eth0}, {name: eth1}]\nlinks: [eth0, eth1]\n"
BONDED = HOST + "nics: [{name: eth0}, {name: eth1}]\nlinks: [bond0, eth0, eth1]\n"


def _findings(
    tmp_path: Path,
    lines: list[str],
    facts: str | None = None,
    **options: str,
) -> list[dict[str, object]]:
    conf = tmp_path / "99-hardening.conf"
    conf.write_text("".join(line + "\n" for line in lines))
    facts_path = None
    if facts is not None:
        facts_path = tmp_path / "facts.yaml"
        facts_path.write_text(facts)
    report = tmp_path / "report.json"
    code = check([conf], facts=facts_path, fmt="json", output=report, isolated=True, **options)
    assert code in (0, 1)
    findings: list[dict[str, object]] = json.loads(report.read_text())["findings"]
    return findings


def _of(findings: list[dict[str, object]], rule: str) -> list[dict[str, object]]:
    return [f for f in findings if f["id"] == rule]


def test_tw_reuse_with_timestamps_off_says_timestamps_win_as_written(tmp_path: Path) -> None:
    lines = ["net.ipv4.tcp_tw_reuse = 1", "net.ipv4.tcp_timestamps = 0"]
    found = _of(_findings(tmp_path, lines), TW_REUSE)
    assert [f["line"] for f in found] == [1]  # the reuse line; timestamps' own rule has line 2
    message = str(found[0]["message"])
    assert "never takes effect" in message and "delete tcp_timestamps = 0" in message
    assert "otherwise delete this line" in message
    # with timestamps on, the pair does not collide
    quiet = ["net.ipv4.tcp_tw_reuse = 1", "net.ipv4.tcp_timestamps = 1"]
    assert not _of(_findings(tmp_path, quiet), TW_REUSE)


def test_tw_reuse_timestamps_collision_reads_the_profile_and_the_kernel(tmp_path: Path) -> None:
    lines = ["net.ipv4.tcp_tw_reuse = 1", "net.ipv4.tcp_timestamps = 0"]
    # frontend-proxy plans tcp_tw_reuse = 1 for a proxy: reuse wins, the uptime leak is gone
    found = _of(_findings(tmp_path, lines, HOST, profile="frontend-proxy"), TW_REUSE)
    message = str(found[0]["message"])
    assert "time-wait.tw-reuse" in message and "reuse should win" in message
    assert "do not reveal uptime" in message and "delete this line" not in message
    # before 4.10 the timestamp is the bare clock: the trade is real
    old = _of(_findings(tmp_path, lines, kernel="3.10.0-1160.el7.x86_64"), TW_REUSE)
    assert "reveals uptime" in str(old[0]["message"])


def test_tw_reuse_reads_timestamps_in_force_on_the_host(tmp_path: Path) -> None:
    facts = HOST + "sysctl: {net.ipv4.tcp_timestamps: '0'}\n"
    assert _of(_findings(tmp_path, ["net.ipv4.tcp_tw_reuse = 1"], facts), TW_REUSE)
    assert not _of(_findings(tmp_path, ["net.ipv4.tcp_tw_reuse = 0"], facts), TW_REUSE)


def test_forwarding_off_on_a_kubernetes_node_says_forwarding_wins(tmp_path: Path) -> None:
    found = _of(_findings(tmp_path, ["net.ipv4.ip_forward = 0"], NODE), FORWARDING)
    assert len(found) == 1 and found[0]["severity"] == "error"
    message = str(found[0]["message"])
    assert "Kubernetes node" in message and "Forwarding wins" in message
    assert "set net.ipv4.ip_forward = 1" in message
    assert _of(_findings(tmp_path, ["net.ipv4.conf.all.forwarding = 0"], NODE), FORWARDING)


def test_forwarding_off_elsewhere_leaves_the_baseline_standing(tmp_path: Path) -> None:
    # no facts, facts that say it is no node, a host without node signs: nothing to report
    assert not _of(_findings(tmp_path, ["net.ipv4.ip_forward = 0"]), FORWARDING)
    assert not _of(_findings(tmp_path, ["net.ipv4.ip_forward = 0"], NOT_A_NODE), FORWARDING)
    assert not _of(_findings(tmp_path, ["net.ipv4.ip_forward = 0"], HOST), FORWARDING)
    # on a node, forwarding on is quiet, and so is a 0 that a later line of the file undoes
    assert not _of(_findings(tmp_path, ["net.ipv4.ip_forward = 1"], NODE), FORWARDING)
    undone = ["net.ipv4.ip_forward = 0", "net.ipv4.ip_forward = 1"]
    assert not _of(_findings(tmp_path, undone, NODE), FORWARDING)


def test_strict_rp_filter_on_several_nics_says_what_decides(tmp_path: Path) -> None:
    found = _of(_findings(tmp_path, ["net.ipv4.conf.all.rp_filter = 1"], TWO_NICS), RP_FILTER)
    assert len(found) == 1 and found[0]["severity"] == "info"
    message = str(found[0]["message"])
    assert "loose wins: set net.ipv4.conf.all.rp_filter = 2" in message
    assert "strict wins: keep it" in message and "larger of the two" in message
    one_nic = _of(_findings(tmp_path, ["net.ipv4.conf.eth1.rp_filter = 1"], TWO_NICS), RP_FILTER)
    assert "eth1 drops" in str(one_nic[0]["message"])


def test_strict_rp_filter_is_quiet_without_evidence_of_several_paths(tmp_path: Path) -> None:
    strict = ["net.ipv4.conf.all.rp_filter = 1"]
    assert not _of(_findings(tmp_path, strict), RP_FILTER)  # no facts
    assert not _of(_findings(tmp_path, strict, HOST), RP_FILTER)  # no NICs listed
    assert not _of(_findings(tmp_path, strict, BONDED), RP_FILTER)  # one bond
    loose = ["net.ipv4.conf.all.rp_filter = 2"]
    assert not _of(_findings(tmp_path, loose, TWO_NICS), RP_FILTER)
    # conf.all = 2 leaves every interface loose: the larger value counts
    mixed = ["net.ipv4.conf.all.rp_filter = 2", "net.ipv4.conf.eth0.rp_filter = 1"]
    assert not _of(_findings(tmp_path, mixed, TWO_NICS), RP_FILTER)


def test_accept_redirects_on_says_hardening_wins(tmp_path: Path) -> None:
    found = _of(_findings(tmp_path, ["net.ipv4.conf.all.accept_redirects = 1"]), REDIRECTS)
    assert len(found) == 1
    message = str(found[0]["message"])
    assert "Hardening wins on every profile" in message
    assert "Set net.ipv4.conf.all.accept_redirects = 0" in message
    assert "forwards" not in message.split("Set ")[-1]  # no router note on a host
    v6 = _of(_findings(tmp_path, ["net.ipv6.conf.eth0.accept_redirects = 1"]), REDIRECTS)
    assert "on eth0" in str(v6[0]["message"])


def test_accept_redirects_on_a_router_names_how_forwarding_changes_it(tmp_path: Path) -> None:
    lines = ["net.ipv4.ip_forward = 1", "net.ipv4.conf.all.accept_redirects = 1"]
    message = str(_of(_findings(tmp_path, lines), REDIRECTS)[0]["message"])
    assert "both 1" in message and "resets conf.all.accept_redirects to 0" in message
    lines6 = ["net.ipv6.conf.all.forwarding = 1", "net.ipv6.conf.default.accept_redirects = 1"]
    message6 = str(_of(_findings(tmp_path, lines6), REDIRECTS)[0]["message"])
    assert "IPv6 ignores redirects on an interface that forwards" in message6


def test_accept_redirects_off_or_without_effect_is_quiet(tmp_path: Path) -> None:
    off = ["net.ipv4.conf.all.accept_redirects = 0", "net.ipv6.conf.default.accept_redirects = 0"]
    assert not _of(_findings(tmp_path, off), REDIRECTS)
    # IPv6 never reads conf.all.accept_redirects: setting it weakens nothing
    assert not _of(_findings(tmp_path, ["net.ipv6.conf.all.accept_redirects = 1"]), REDIRECTS)
