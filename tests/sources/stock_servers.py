"""Run inside a private network namespace (`unshare -n python -m tests.sources.stock_servers DIR`):
start Debian's nginx, HAProxy and redis-server with their stock configurations (file paths moved
into DIR so nothing on the host is written; HAProxy gets a frontend, which its stock file lacks),
read the host with `sysctl-advisor facts`, take the frontend-proxy plan's companions for the
three servers, apply them with the advised somaxconn, reload or restart each server as the
companion says, and print what `ss -ltn` showed before and after, as JSON on stdout.

Every process started here lives in the namespace and is stopped before the script ends.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.sources.service_configs import with_service_configs
from tests.conftest import load_facts

PORTS = {"nginx": 80, "haproxy": 8090, "redis": 6379}


def ss_listeners() -> dict[str, int]:
    """Local address -> Send-Q (the backlog) of every TCP listener, as ss prints them."""
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        fields = line.split()
        found[fields[3].replace("*:", "[::]:", 1)] = int(fields[2])
    return found


def wait_for(condition: Any, what: str, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}: {ss_listeners()}")
        time.sleep(0.1)


def listening(port: int, backlog: int | None = None) -> bool:
    got = [b for a, b in ss_listeners().items() if a.endswith(f":{port}")]
    return bool(got) and (backlog is None or all(b == backlog for b in got))


def nginx_config(work: Path) -> Path:
    """Debian's nginx.conf and default site, with the pid file and logs under `work`."""
    site = work / "default-site.conf"
    site.write_text(Path("/etc/nginx/sites-enabled/default").read_text())
    text = Path("/etc/nginx/nginx.conf").read_text()
    text = re.sub(r"(?m)^pid .*;$", f"pid {work}/nginx.pid;", text)
    text = re.sub(r"(?m)^(\s*)(error_log|access_log) \S+;", rf"\1\2 {work}/\2.log;", text)
    text = text.replace("include /etc/nginx/sites-enabled/*;", f"include {site};")
    config = work / "nginx.conf"
    config.write_text(text)
    return config


def haproxy_config(work: Path, extra: str = "") -> Path:
    """Debian's haproxy.cfg without chroot, admin socket and daemon mode, plus a frontend."""
    kept = [
        line
        for line in Path("/etc/haproxy/haproxy.cfg").read_text().splitlines()
        if not re.match(r"\s*(chroot|stats socket|daemon)\b", line)
    ]
    frontend = [
        "frontend web",
        f"    bind 0.0.0.0:{PORTS['haproxy']}",  # a server the network reaches (not loopback)
        *([f"    {extra}"] if extra else []),
        "    http-request return status 200",
    ]
    config = work / "haproxy.cfg"
    config.write_text("\n".join(kept + frontend) + "\n")
    return config


def redis_config(work: Path, extra: str = "") -> Path:
    """Debian's redis.conf; later lines win, so the moved paths (and a companion) go last. It
    binds to every address of the private namespace, not loopback only: the advice for a
    loopback server is an info, and these tests follow the advice for servers a network
    reaches."""
    text = Path("/etc/redis/redis.conf").read_text()
    moved = (
        f"\ndaemonize no\npidfile {work}/redis.pid\nlogfile {work}/redis.log\ndir {work}\n"
        "bind 0.0.0.0 ::\nprotected-mode no\n"
    )
    config = work / "redis.conf"
    config.write_text(text + moved + (extra + "\n" if extra else ""))
    return config


def start(work: Path) -> dict[str, subprocess.Popen[bytes]]:
    log = open(work / "servers.log", "ab")  # noqa: SIM115  (closed with the namespace)
    nginx = nginx_config(work)
    servers = {
        "nginx": subprocess.Popen(
            ["nginx", "-c", str(nginx), "-g", "daemon off;"], stdout=log, stderr=log
        ),
        "haproxy": subprocess.Popen(
            ["haproxy", "-db", "-f", str(haproxy_config(work))], stdout=log, stderr=log
        ),
        "redis": subprocess.Popen(
            ["redis-server", str(redis_config(work))], stdout=log, stderr=log
        ),
    }
    for name, port in PORTS.items():
        wait_for(lambda port=port: listening(port), f"{name} on port {port}")
    # nginx listens before it installs its signal handlers and writes its pid file (main() in
    # src/core/nginx.c): a reload or stop before the pid file exists could kill or miss it
    wait_for(lambda: (work / "nginx.pid").exists(), "nginx's pid file")
    return servers


def main(work: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    servers = start(work)
    try:
        before = ss_listeners()
        facts_path = work / "facts.json"
        subprocess.run(
            [sys.executable, "-m", "sysctl_advisor", "facts", "--format", "json",
             "--output", str(facts_path)],
            check=True,
        )  # fmt: skip
        kb = KnowledgeBase.load()
        facts = with_service_configs(load_facts(facts_path), None, work / "nginx.conf")
        plan = build_plan(kb, facts, "frontend-proxy")
        somaxconn = next(s.values[0] for s in plan.settings if s.key == "net.core.somaxconn")
        companions = [
            {"target": c.target, "setting": c.setting, "rationale": c.rationale, "rule": c.rule}
            for c in plan.companions
            if c.target in PORTS and c.rule.startswith("listen-backlog.")
        ]
        apply(work, servers, somaxconn, companions)
        after = ss_listeners()
    finally:
        for process in servers.values():
            process.terminate()
        for process in servers.values():
            process.wait(timeout=10)
    print(
        json.dumps(
            {
                "before": before,
                "after": after,
                "facts": json.loads(facts_path.read_text()),
                "somaxconn": somaxconn,
                "companions": companions,
            }
        )
    )


def apply(
    work: Path,
    servers: dict[str, subprocess.Popen[bytes]],
    somaxconn: int,
    companions: list[dict[str, str]],
) -> None:
    """The advice as an operator would follow it: somaxconn, then each server's companion."""
    subprocess.run(["sysctl", "-q", "-w", f"net.core.somaxconn={somaxconn}"], check=True)
    log = open(work / "servers.log", "ab")  # noqa: SIM115
    nginx_backlogs = set()
    for companion in companions:
        target, setting = companion["target"], companion["setting"]
        backlog = int(re.findall(r"\d+", setting.split("backlog", 1)[1])[0])
        if target == "nginx":
            # `listen 80 default_server backlog=N;` replaces the directive it names
            where = re.search(r"At (\S+):(\d+)", companion["rationale"])
            assert where, companion
            path, line = Path(where.group(1)), int(where.group(2))
            lines = path.read_text().splitlines()
            indent = lines[line - 1][: len(lines[line - 1]) - len(lines[line - 1].lstrip())]
            lines[line - 1] = indent + setting
            path.write_text("\n".join(lines) + "\n")
            nginx_backlogs.add(backlog)
            continue
        # HAProxy 2.6 and Redis keep an open socket's backlog: restart them
        servers[target].terminate()
        servers[target].wait(timeout=10)
        wait_for(lambda t=target: not listening(PORTS[t]), f"{target} to stop")
        if target == "haproxy":
            command = ["haproxy", "-db", "-f", str(haproxy_config(work, setting))]
        else:
            command = ["redis-server", str(redis_config(work, setting))]
        servers[target] = subprocess.Popen(command, stdout=log, stderr=log)
        wait_for(lambda t=target: listening(PORTS[t]), f"{target} restart")
    if nginx_backlogs:  # one reload after every directive is edited
        (backlog,) = nginx_backlogs
        subprocess.run(["nginx", "-c", str(work / "nginx.conf"), "-s", "reload"], check=True)
        wait_for(lambda: listening(PORTS["nginx"], backlog), "nginx reload")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
