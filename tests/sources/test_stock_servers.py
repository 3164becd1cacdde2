"""Real nginx, HAProxy and Redis (Debian's packages, stock configurations) in a private network
namespace: `facts` finds each listener with its owner and the backlog `ss -ltn` shows, the
frontend-proxy plan names each server's own setting, and once the advice is followed `ss` shows
the promised backlog on every one of their sockets.

The servers run only inside the namespace (tests/sources/stock_servers.py); `.ci/run` installs
the packages under a policy-rc.d that keeps them from starting on the host.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.namespaces import host_sysctls, needs_netns, processes_with

SERVERS = {"nginx": "nginx", "haproxy": "haproxy", "redis-server": "redis-server"}
pytestmark = [
    needs_netns,
    pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2 ss"),
    *[
        pytest.mark.skipif(shutil.which(b) is None and not Path("/usr/sbin", b).exists(),
                           reason=f"{b} is not installed (Debian package {b})")
        for b in SERVERS
    ],
]  # fmt: skip


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    work = Path(__import__("tempfile").mkdtemp(prefix="advisor-servers-"))
    before = host_sysctls()
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "tests.sources.stock_servers", str(work)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    log = (work / "servers.log").read_text() if (work / "servers.log").exists() else ""
    assert result.returncode == 0, result.stderr + log
    assert host_sysctls() == before  # somaxconn was set inside the namespace only
    assert processes_with(str(work)) == []  # every server stopped with the namespace
    data: dict[str, Any] = json.loads(result.stdout)
    shutil.rmtree(work)
    return data


def _address(listener: dict[str, Any]) -> str:
    host = listener["address"]
    return f"[{host}]:{listener['port']}" if ":" in host else f"{host}:{listener['port']}"


def test_facts_see_each_listener_its_owner_and_the_backlog_ss_shows(run: dict[str, Any]) -> None:
    listeners = {_address(item): item for item in run["facts"]["listeners"]}
    assert set(listeners) == set(run["before"])
    for address, item in listeners.items():
        assert item["backlog"] == run["before"][address], address
    owners = {a: item["process"]["command"] for a, item in listeners.items()}
    assert owners == {
        "0.0.0.0:80": "nginx",
        "[::]:80": "nginx",
        "0.0.0.0:8090": "haproxy",
        "0.0.0.0:6379": "redis-server",
        "[::]:6379": "redis-server",
    }
    # stock backlogs: nginx and Redis ask for 511; HAProxy for its global maxconn, which the
    # kernel cuts to somaxconn (4096 in a new namespace since 5.4)
    somaxconn = int(run["facts"]["sysctl"]["net.core.somaxconn"])
    assert listeners["0.0.0.0:80"]["backlog"] == listeners["0.0.0.0:6379"]["backlog"] == 511
    assert listeners["0.0.0.0:8090"]["backlog"] == somaxconn


def test_each_server_gets_its_own_setting(run: dict[str, Any]) -> None:
    promised = run["somaxconn"]
    by_target: dict[str, list[str]] = {}
    for companion in run["companions"]:
        by_target.setdefault(companion["target"], []).append(companion["setting"])
    assert by_target == {
        "haproxy": [f"backlog {promised}"],
        "nginx": [
            f"listen 80 default_server backlog={promised};",
            f"listen [::]:80 default_server backlog={promised};",
        ],
        "redis": [f"tcp-backlog {promised}"],
    }


def test_following_the_advice_gives_every_socket_the_promised_backlog(
    run: dict[str, Any],
) -> None:
    assert set(run["after"]) == set(run["before"])
    assert set(run["after"].values()) == {run["somaxconn"]}
