"""`calibrate`: per-socket costs measured in a private network namespace, written to facts."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import Calibration
from sysctl_advisor.outputs.calibration_report import write_calibration
from sysctl_advisor.sources import calibration as calibration_module
from sysctl_advisor.sources.calibration import summarise
from sysctl_advisor.sources.system_tools import system_env
from tests.conftest import EXAMPLES, Cli, load_facts
from tests.namespaces import host_sysctls, needs_netns, processes_with

FIGURES = Calibration(
    kernel="6.18.44",
    sockets=20000,
    slab_bytes_per_socket=4969,
    tcp_mem_pages_per_idle_socket=0.0,
    tcp_mem_pages_per_queued_socket=0.985,
    queued_bytes=16,
)


def raw(pairs: int = 1000) -> dict[str, Any]:
    sockets = 2 * pairs
    return {
        "pairs": pairs,
        "requested_pairs": pairs,
        "fd_limited": False,
        "timed_out": False,
        "queued_bytes": 16,
        "base": {"tcp_mem_pages": 261, "slab_bytes": 10**8, "caches": {"TCP": 10**6}},
        "idle": {
            "tcp_mem_pages": 261,
            "slab_bytes": 10**8 + 4100 * sockets,
            "caches": {"TCP": 10**6 + 2368 * sockets, "dentry": 195 * sockets},
        },
        "queued": {
            "tcp_mem_pages": 261 + sockets,
            "slab_bytes": 10**8 + 4650 * sockets,
            "caches": {},
        },
    }


def test_summary_is_per_socket() -> None:
    m = summarise(raw(), "6.18.44")
    c = m.calibration
    assert (c.sockets, c.slab_bytes_per_socket) == (2000, 4100)
    assert (c.tcp_mem_pages_per_idle_socket, c.tcp_mem_pages_per_queued_socket) == (0.0, 1.0)
    assert m.queued_slab_bytes_per_socket == 550
    assert m.slab_caches == [("TCP", 2368.0), ("dentry", 195.0)]
    with pytest.raises(InputError, match="too few"):
        summarise(raw(pairs=10), "6.18.44")


def test_write_keeps_the_facts_file_and_replaces_an_old_calibration(tmp_path: Path) -> None:
    path = tmp_path / "facts.yaml"
    shutil.copy(EXAMPLES / "c1m-server.yaml", path)
    original = path.read_text()
    write_calibration(path, FIGURES)
    once = path.read_text()
    assert once.startswith(original.rstrip("\n"))  # comments and order kept
    assert load_facts(path).calibration == FIGURES
    write_calibration(path, replace(FIGURES, slab_bytes_per_socket=5000))
    twice = path.read_text()
    assert twice.count("calibration:") == 1 and "slab_bytes_per_socket: 5000" in twice
    assert twice.replace("5000", "4969") == once


def test_write_into_json_facts(tmp_path: Path) -> None:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"memory": {"total": "8 GiB"}}))
    write_calibration(path, FIGURES)
    assert json.loads(path.read_text())["memory"] == {"total": "8 GiB"}
    assert load_facts(path).calibration == FIGURES


@pytest.mark.parametrize(
    ("patch", "words"),
    [
        ({"geteuid": 1000}, "needs root"),
        ({"which": None}, "needs util-linux `unshare`"),
    ],
)
def test_refuses_with_one_line(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, patch: dict[str, Any], words: str
) -> None:
    if "geteuid" in patch:
        monkeypatch.setattr(calibration_module.os, "geteuid", lambda: patch["geteuid"])
    if "which" in patch:
        monkeypatch.setattr(calibration_module, "system_program", lambda name: None)
    monkeypatch.setattr(calibration_module.sys, "platform", "linux")
    result = cli("calibrate")
    assert result.exit_code == 2
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_options_exit_2(cli: Cli, tmp_path: Path) -> None:
    result = cli("calibrate", "--write", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2 and "no such facts file" in result.stderr
    if calibration_module.refusal() is None:
        result = cli("calibrate", "--pairs", "5")
        assert result.exit_code == 2 and "--pairs" in result.stderr


@needs_netns
def test_calibrate_measures_this_kernel_and_feeds_the_c1m_rules(cli: Cli, tmp_path: Path) -> None:
    import platform

    facts = tmp_path / "facts.yaml"
    facts.write_text(
        (EXAMPLES / "c1m-server.yaml")
        .read_text()
        .replace("kernel: 2.6.32-358.el6.x86_64", f"kernel: {platform.release()}")
    )
    before = host_sysctls()
    # sockstat's TCP `mem` and meminfo's Slab are counters for the whole kernel, not the probe's
    # namespace: sockets and memory another process opens or frees meanwhile (a parallel test
    # worker) move them too. A run whose figure such noise pushed out of range is taken again.
    for _ in range(3):
        result = cli("calibrate", "--pairs", "3000", "--timeout", "60", "--write", str(facts))
        assert result.exit_code == 0, result.stderr
        c = load_facts(facts).calibration
        if (
            c is not None
            and 0.5 <= c.tcp_mem_pages_per_queued_socket <= 4
            and 2048 <= c.slab_bytes_per_socket <= 65536
        ):
            break
    assert host_sysctls() == before
    assert processes_with("sysctl_advisor.sources.calibration_probe") == []
    assert "in a private network namespace" in result.stdout
    c = load_facts(facts).calibration
    assert c is not None and c.kernel == platform.release()
    assert c.sockets >= 200
    # a 6.18 host measured about 4.1 KB of slab, 0 idle pages, ~1 queued page
    assert 2048 <= c.slab_bytes_per_socket <= 65536
    assert c.tcp_mem_pages_per_idle_socket < 0.2
    assert 0.5 <= c.tcp_mem_pages_per_queued_socket <= 4

    plan = cli("recommend", "--facts", str(facts), "--profile", "c1m-server", "--format", "json")
    messages = [f["message"] for f in json.loads(plan.stdout)["findings"]]
    assert any("measured on this host by `sysctl-advisor calibrate`" in m for m in messages)


def test_write_refuses_invalid_yaml_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "facts.yaml"
    broken = "memory: {total: 8 GiB\nhostname: [x\n"
    path.write_text(broken)
    with pytest.raises(InputError, match="invalid YAML"):
        write_calibration(path, FIGURES)
    assert path.read_text() == broken


def test_write_refuses_a_file_that_is_not_facts(tmp_path: Path) -> None:
    path = tmp_path / "facts.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(InputError, match="mapping"):
        write_calibration(path, FIGURES)
    assert path.read_text() == "- just\n- a list\n"


def test_probe_runs_isolated_with_system_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Root runs the probe: no $PATH lookup, no current directory or PYTHONPATH on sys.path."""
    seen: dict[str, Any] = {}

    def fake_run(command: list[str], **kwargs: Any) -> Any:
        seen["command"], seen["kwargs"] = command, kwargs
        raise calibration_module.subprocess.TimeoutExpired(command, 1)

    monkeypatch.setenv("PATH", "/tmp/evil:/usr/bin")
    monkeypatch.setattr(calibration_module.subprocess, "run", fake_run)
    with pytest.raises(InputError):
        calibration_module.run_probe(2000, 1)
    command, kwargs = seen["command"], seen["kwargs"]
    assert command[0].startswith(("/usr/", "/bin/", "/sbin/")) and "unshare" in command[0]
    assert command[command.index(calibration_module.sys.executable) + 1] == "-I"
    assert kwargs["env"] == system_env()
    assert "PYTHONPATH" not in kwargs["env"] and kwargs["cwd"] == "/"
