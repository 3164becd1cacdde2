"""Memory settings copied from old tuning guides are named for what they do:
vm.swappiness = 0 (the OOM killer before swap, from 3.5) and vm.overcommit_memory = 2 with
overcommit_ratio left at 50 (commitments refused with half the RAM free), each judged for the
target kernel where the era matters, each with its fix; an old ip_conntrack name is reported
once, by the rule that knows it. `check` runs through the CLI on files built at test time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import invoke

SWAPPINESS = "check.swappiness-zero"
OVERCOMMIT = "check.overcommit-strict-default-ratio"


def _check(tmp_path: Path, lines: list[str], *options: str) -> list[dict[str, object]]:
    conf = tmp_path / "memory.conf"
    conf.write_text("".join(line + "\n" for line in lines))
    result = invoke("check", str(conf), "-f", "json", *options)
    assert result.exit_code in (0, 1), result.output
    findings: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return findings


def _facts(tmp_path: Path, kernel: str, sysctl: dict[str, str] | None = None) -> str:
    path = tmp_path / "facts.json"
    data: dict[str, object] = {"memory": {"total": "64 GiB"}, "kernel": kernel}
    if sysctl is not None:
        data["sysctl"] = sysctl
    path.write_text(json.dumps(data))
    return str(path)


def _messages(findings: list[dict[str, object]], rule: str) -> list[str]:
    return [str(f["message"]) for f in findings if f["id"] == rule]


def test_swappiness_zero_is_named_with_its_fix_and_one_is_quiet(tmp_path: Path) -> None:
    (message,) = _messages(_check(tmp_path, ["vm.swappiness = 0"]), SWAPPINESS)
    assert "3.5" in message  # no target kernel: said for the kernels that behave so
    assert "vm.swappiness = 1" in message
    assert f"ignore[{SWAPPINESS}]" in message
    for value in ("1", "10", "60"):
        assert _messages(_check(tmp_path, [f"vm.swappiness = {value}"]), SWAPPINESS) == []


@pytest.mark.parametrize(
    ("kernel", "says", "not_said"),
    [
        ("3.4", "upstream Linux 3.4", "multi-gen"),  # before commit fe35004fbf9e
        ("5.15.0-91-generic", "5.15", "multi-gen"),  # 3.5 and later, before the multi-gen LRU
        ("6.1.0-18-amd64", "multi-gen LRU", "upstream"),
    ],
)
def test_swappiness_zero_is_said_for_the_target_kernel(
    tmp_path: Path, kernel: str, says: str, not_said: str
) -> None:
    findings = _check(tmp_path, ["vm.swappiness = 0"], "--kernel", kernel)
    (message,) = _messages(findings, SWAPPINESS)
    assert says in message
    assert not_said not in message


def test_swappiness_zero_on_an_old_distribution_kernel_may_carry_the_change(
    tmp_path: Path,
) -> None:
    # CentOS 6.4's kernel: 2.6.32 by number, with the 3.5 change backported
    facts = _facts(tmp_path, "2.6.32-358.el6.x86_64")
    (message,) = _messages(_check(tmp_path, ["vm.swappiness = 0"], "--facts", facts), SWAPPINESS)
    assert "distribution kernel" in message
    assert "fe35004fbf9e" in message


def test_a_team_accepts_swappiness_zero_with_the_comment_the_message_gives(
    tmp_path: Path,
) -> None:
    lines = [
        f"# sysctl-advisor: ignore[{SWAPPINESS}] the database host runs without swap by design",
        "vm.swappiness = 0",
    ]
    assert _check(tmp_path, lines) == []


def test_strict_overcommit_at_the_default_ratio_is_named(tmp_path: Path) -> None:
    (message,) = _messages(_check(tmp_path, ["vm.overcommit_memory = 2"]), OVERCOMMIT)
    assert "50%" in message
    assert "ENOMEM" in message
    assert "vm.overcommit_ratio" in message
    assert f"ignore[{OVERCOMMIT}]" in message


@pytest.mark.parametrize(
    "lines",
    [
        ["vm.overcommit_memory = 2", "vm.overcommit_ratio = 90"],
        ["vm.overcommit_ratio = 95", "vm.overcommit_memory = 2"],
        ["vm.overcommit_memory = 2", "vm.overcommit_kbytes = 60000000"],
        ["vm.overcommit_memory = 0"],
        ["vm.overcommit_memory = 1"],  # what redis and elasticsearch ask for: no rule
        ["vm.overcommit_memory = 2", "vm.overcommit_memory = 0"],  # the later line wins
    ],
)
def test_a_deliberate_commit_limit_or_another_mode_is_quiet(
    tmp_path: Path, lines: list[str]
) -> None:
    assert _messages(_check(tmp_path, lines), OVERCOMMIT) == []


def test_strict_overcommit_gives_the_ram_share_from_the_facts(tmp_path: Path) -> None:
    facts = _facts(tmp_path, "6.1.0-18-amd64")
    findings = _check(tmp_path, ["vm.overcommit_memory = 2"], "--facts", facts)
    (message,) = _messages(findings, OVERCOMMIT)
    assert "32 GiB" in message and "64 GiB" in message  # half of it; swap is not in the facts


def test_a_ratio_in_force_on_the_host_counts(tmp_path: Path) -> None:
    raised = _facts(tmp_path, "6.1.0-18-amd64", {"vm.overcommit_ratio": "90"})
    findings = _check(tmp_path, ["vm.overcommit_memory = 2"], "--facts", raised)
    assert _messages(findings, OVERCOMMIT) == []
    default = _facts(tmp_path, "6.1.0-18-amd64", {"vm.overcommit_ratio": "50"})
    findings = _check(tmp_path, ["vm.overcommit_memory = 2"], "--facts", default)
    assert len(_messages(findings, OVERCOMMIT)) == 1


def test_an_old_ip_conntrack_name_is_reported_once(tmp_path: Path) -> None:
    findings = _check(tmp_path, ["net.ipv4.netfilter.ip_conntrack_max = 65536"])
    assert [f["id"] for f in findings] == ["check.ip-conntrack-name"]
    # a key no rule names is still reported as unknown
    other = _check(tmp_path, ["kernel.msgmax = 65536"])
    assert [f["id"] for f in other] == ["check.unknown-key"]
