"""Keys copied from old tuning guides are named for what they do: `check`
run through the CLI on a file of them, built at test time, reports each on its line with the
rule that knows it, and is quiet on the fixed file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import invoke

# (line, the rule that must fire on it, the line that fixes it)
CARGO_CULT = [
    ("net.ipv4.tcp_timestamps = 0", "check.tcp-timestamps-off", "net.ipv4.tcp_timestamps = 1"),
    ("net.ipv4.tcp_low_latency = 1", "check.legacy-no-effect", None),
    ("net.ipv4.tcp_fack = 1", "check.legacy-no-effect", None),
    ("net.ipv4.tcp_sack = 0", "check.tcp-extension-off", "net.ipv4.tcp_sack = 1"),
    (
        "net.ipv4.tcp_window_scaling = 0",
        "check.tcp-extension-off",
        "net.ipv4.tcp_window_scaling = 1",
    ),
    ("net.ipv4.tcp_frto = 0", "check.tcp-frto-off", "net.ipv4.tcp_frto = 2"),
    (
        "net.ipv4.ip_conntrack_max = 262144",
        "check.ip-conntrack-name",
        "net.netfilter.nf_conntrack_max = 262144",
    ),
    (
        "net.ipv4.netfilter.ip_conntrack_tcp_timeout_established = 3600",
        "check.ip-conntrack-name",
        "net.netfilter.nf_conntrack_tcp_timeout_established = 3600",
    ),
    (
        "net.core.rmem_default = 16777216",
        "check.sockbuf-default-above-max",
        "net.core.rmem_default = 8388608",
    ),
    ("net.core.rmem_max = 8388608", None, "net.core.rmem_max = 8388608"),
    (
        "net.core.wmem_default = 33554432",
        "check.sockbuf-default-above-max",
        "net.core.wmem_default = 4194304",
    ),
    ("net.core.wmem_max = 8388608", None, "net.core.wmem_max = 8388608"),
    (
        "net.ipv4.neigh.default.gc_thresh3 = 4096",
        "check.neigh-gc-thresh-order",
        "net.ipv4.neigh.default.gc_thresh3 = 8192",
    ),
    # out of order with gc_thresh3 above: reported once, on gc_thresh3's line
    ("net.ipv4.neigh.default.gc_thresh2 = 8192", None, "net.ipv4.neigh.default.gc_thresh2 = 4096"),
    ("net.ipv4.neigh.default.gc_thresh1 = 1024", None, "net.ipv4.neigh.default.gc_thresh1 = 1024"),
    ("net.ipv4.udp_mem = 65536 131072 262144", None, "net.ipv4.udp_mem = 65536 131072 262144"),
    ("vm.max_map_count = 262144", None, "vm.max_map_count = 262144"),
]
NEW_RULES = {rule for _, rule, _ in CARGO_CULT if rule is not None}


def _check(tmp_path: Path, name: str, lines: list[str], *options: str) -> list[dict[str, object]]:
    conf = tmp_path / name
    conf.write_text("".join(line + "\n" for line in lines))
    result = invoke("check", str(conf), "-f", "json", *options)
    assert result.exit_code in (0, 1), result.output
    findings: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return findings


def test_each_cargo_cult_line_is_named_by_its_rule_on_its_line(tmp_path: Path) -> None:
    findings = _check(tmp_path, "tuning.conf", [line for line, _, _ in CARGO_CULT])
    by_line: dict[object, set[object]] = {}
    for finding in findings:
        by_line.setdefault(finding["line"], set()).add(finding["id"])
    for number, (line, rule, _) in enumerate(CARGO_CULT, start=1):
        ids = by_line.get(number, set())
        if rule is not None:
            assert rule in ids, (line, ids)
        else:
            assert not ids & NEW_RULES, (line, ids)
        # what old guides set is known now, not "unknown key": the ip_conntrack names are
        # not keys of today's kernels, and their own rule alone names them
        assert "check.unknown-key" not in ids, line
        assert "check.misspelt-key" not in ids, line


def test_the_fixed_file_is_quiet(tmp_path: Path) -> None:
    fixed = [fix for _, _, fix in CARGO_CULT if fix is not None]
    findings = _check(tmp_path, "fixed.conf", fixed, "--kernel", "6.1")
    assert [f for f in findings if f["id"] in NEW_RULES] == []
    assert [f for f in findings if f["id"] == "check.unknown-key"] == []


@pytest.mark.parametrize(
    ("line", "kernel", "fires"),
    [
        ("net.ipv4.tcp_low_latency = 1", "3.10.0-1160.el7.x86_64", False),  # prequeue still there
        ("net.ipv4.tcp_low_latency = 1", "4.14", True),  # removed in 4.14
        ("net.ipv4.tcp_fack = 1", "4.15", False),  # the release that removed FACK: not modelled
        ("net.ipv4.tcp_fack = 1", "5.15.0-91-generic", True),
    ],
)
def test_a_legacy_switch_is_judged_at_the_target_kernel(
    tmp_path: Path, line: str, kernel: str, fires: bool
) -> None:
    findings = _check(tmp_path, "legacy.conf", [line], "--kernel", kernel)
    assert any(f["id"] == "check.legacy-no-effect" for f in findings) is fires


def test_an_ip_conntrack_name_says_the_target_kernel_lacks_it(tmp_path: Path) -> None:
    findings = _check(
        tmp_path, "ct.conf", ["net.ipv4.netfilter.ip_conntrack_max = 262144"], "--kernel", "5.15"
    )
    (finding,) = [f for f in findings if f["id"] == "check.ip-conntrack-name"]
    assert "net.netfilter.nf_conntrack_max" in str(finding["message"])
    assert "5.15" in str(finding["message"])


def test_gc_thresholds_in_order_across_both_families_are_quiet(tmp_path: Path) -> None:
    lines = [
        f"net.{family}.neigh.default.gc_thresh{n} = {value}"
        for family in ("ipv4", "ipv6")
        for n, value in ((1, 1024), (2, 4096), (3, 8192))
    ]
    findings = _check(tmp_path, "neigh.conf", lines)
    assert findings == []
    # one threshold raised alone past a higher one left at its default is reported
    alone = _check(tmp_path, "alone.conf", ["net.ipv6.neigh.default.gc_thresh1 = 2048"])
    assert [f["id"] for f in alone] == ["check.neigh-gc-thresh-order"]
