""" "Run facts as root" is a hint for facts read without root; facts say whether they were
(`read_as_root`), and a plan from facts root read tells root nothing of the kind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.sources import local_host
from tests.conftest import TESTS, Cli, assert_one_line_error

HINT = "run facts as root"


def _plan_messages(cli: Cli, tmp_path: Path, **more: object) -> str:
    facts = {
        "memory": {"total": "16 GiB"},
        "kernel": "6.8.0-45-generic",
        "arch": "x86_64",
        "sysctl": {"net.core.somaxconn": "4096"},
        # one socket whose owner facts could not find, its queue full, and one calm
        "listeners": [
            {"address": "0.0.0.0", "port": 8443, "backlog": 128, "queue": 128},
            {"address": "0.0.0.0", "port": 9000, "backlog": 128, "queue": 0},
        ],
        **more,
    }
    path = tmp_path / "host.yaml"
    path.write_text(yaml.safe_dump(facts))
    result = cli("recommend", "--facts", str(path), "-p", "frontend-proxy", "-f", "json")
    assert result.exit_code == 0, result.stderr
    return " ".join(f["message"] for f in json.loads(result.stdout)["findings"])


def test_owner_hint_for_facts_read_without_root(cli: Cli, tmp_path: Path) -> None:
    for facts in ({}, {"read_as_root": False}):  # not known, or known not root
        messages = _plan_messages(cli, tmp_path, **facts)
        assert messages.count(f"owner not readable: {HINT}") == 2, messages


def test_no_root_hint_to_root(cli: Cli, tmp_path: Path) -> None:
    messages = _plan_messages(cli, tmp_path, read_as_root=True)
    assert HINT not in messages and "as root" not in messages, messages
    assert messages.count("owner not found") == 2, messages


def test_no_root_hint_to_root_without_listeners(cli: Cli, tmp_path: Path) -> None:
    """Read as root where the kernel could not be asked for its sockets (no sock_diag)."""
    messages = _plan_messages(cli, tmp_path, listeners=None, read_as_root=True)
    assert "Advised without: the listening sockets" in messages
    assert "as root" not in messages, messages
    unknown = _plan_messages(cli, tmp_path, listeners=None)
    assert "as root to see which program owns each" in unknown


def test_read_as_root_is_a_boolean(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "host.yaml"
    path.write_text(yaml.safe_dump({"memory": {"total": "1 GiB"}, "read_as_root": "maybe"}))
    result = cli("recommend", "--facts", str(path), "-p", "base")
    assert_one_line_error(result.exit_code, result.stderr, str(path), "read_as_root")


@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="needs a Linux /proc")
def test_facts_of_this_machine_say_whether_root_read_them(cli: Cli) -> None:
    result = cli("facts")
    assert result.exit_code == 0, result.stderr
    status = Path("/proc/self/status").read_text()
    traces = local_host._may_trace(status)
    assert yaml.safe_load(result.stdout)["read_as_root"] is (os.geteuid() == 0 and traces)


@pytest.mark.parametrize(
    ("cap_eff", "traces"),
    [
        ("000001ffffffffff", True),  # root's full set
        ("00000000a80425fb", False),  # Docker's default set: no CAP_SYS_PTRACE (bit 19)
        ("0000000000080000", True),  # CAP_SYS_PTRACE alone
        ("zz", False),
    ],
)
def test_root_without_cap_sys_ptrace_is_not_said_to_see_every_owner(
    cap_eff: str, traces: bool
) -> None:
    status = f"Name:\tsysctl-advisor\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\n"
    assert local_host._may_trace(status) is traces
    assert local_host._may_trace(None) is False


def test_a_copied_tree_says_nothing_of_root(cli: Cli) -> None:
    result = cli("facts", "--root", str(TESTS / "fixtures" / "hosts" / "busy-frontend"))
    assert result.exit_code == 0, result.stderr
    assert "read_as_root" not in yaml.safe_load(result.stdout)
