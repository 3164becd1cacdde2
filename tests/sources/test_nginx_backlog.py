"""Real nginx, in a private network namespace, gets the backlog the advisor promises.

The advisor reads an nginx.conf, recommends somaxconn for the frontend-proxy profile and names
the `listen … backlog=N;` directive to write. Here that directive is pasted into the config,
somaxconn is set inside the namespace, and the listening sockets' queue limits are read with
`ss -ltn` (Send-Q of a listener is its accept-queue limit): the promised backlog; 511 where
`backlog=` is absent (nginx's default); somaxconn where the backlog asks for more (the kernel
truncates without a word). A reload applies a new backlog to the socket nginx already holds,
as the companion's rationale says.

`.ci/run` installs nginx from Debian's packages (without starting it).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.sources.local_host import collect
from sysctl_advisor.sources.service_configs import with_service_configs
from tests.namespaces import NGINX_SCRATCH_PATHS, in_namespace, needs_netns, processes_with

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
pytestmark = [
    needs_netns,
    pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed"),
    pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2 ss"),
]

CONFIG = (
    """\
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
"""
    + NGINX_SCRATCH_PATHS
    + """\
    server {{ listen 127.0.0.1:8080; return 204; }}
    server {{ listen 127.0.0.1:8081; return 204; }}
    server {{ listen 127.0.0.1:8082 backlog={above}; return 204; }}
}}
"""
)

# Start nginx, wait for its three listeners, print them; optionally edit the config and reload.
SCRIPT = """
sysctl -q -w net.core.somaxconn="$1"
nginx -p "$2" -c "$2/nginx.conf" -g 'daemon off;' &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
listeners() { ss -Hltn | grep -c '127.0.0.1:808' || true; }
# nginx opens its listeners before it installs its signal handlers and writes its pid file
# (src/core/nginx.c main: ngx_init_cycle, ngx_init_signals, ngx_create_pidfile): a signal sent
# in between kills it, so wait for the pid file as well.
i=0; while { [ "$(listeners)" -lt 3 ] || [ ! -s "$2/nginx.pid" ]; } && [ $i -lt 100 ]; do
    sleep 0.1; i=$((i+1)); done
echo "== started"; ss -Hltn
if [ -n "${3:-}" ]; then
    cp "$3" "$2/nginx.conf"
    nginx -p "$2" -c "$2/nginx.conf" -s reload
    i=0; while ! ss -Hltn | grep -q " $4 .*127.0.0.1:8080" && [ $i -lt 100 ]; do
        sleep 0.1; i=$((i+1)); done
    echo "== reloaded"; ss -Hltn
fi
"""


def assert_stopped(prefix: str) -> None:
    """Everything the test started is gone (the namespace went with its last process)."""
    assert processes_with(prefix) == []


def queue_limits(output: str, section: str) -> dict[str, int]:
    """Local address -> Send-Q of the listeners printed after `== section`."""
    block = output.split(f"== {section}\n", 1)[1].split("== ", 1)[0]
    limits = {}
    for line in block.splitlines():
        fields = line.split()  # State Recv-Q Send-Q Local Peer
        if fields and fields[0] == "LISTEN":
            limits[fields[3]] = int(fields[2])
    return limits


@pytest.fixture
def advised(kb: KnowledgeBase, tmp_path: Path) -> tuple[int, str, str]:
    """somaxconn and the nginx directive the advisor recommends for a config on port 8080."""
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    config = prefix / "nginx.conf"
    config.write_text(CONFIG.format(prefix=prefix, above=1))
    facts = with_service_configs(collect(list(kb.catalog.keys)), None, config)
    plan = build_plan(kb, facts, "frontend-proxy")
    somaxconn = next(s.values[0] for s in plan.settings if s.key == "net.core.somaxconn")
    directive = next(
        c.setting
        for c in plan.companions
        if c.target == "nginx" and c.setting.startswith("listen 127.0.0.1:8080 ")
    )
    return somaxconn, directive, str(prefix)


def test_nginx_gets_the_promised_backlog(advised: tuple[int, str, str]) -> None:
    somaxconn, directive, prefix = advised
    promised = int(re.search(r"backlog=(\d+)", directive).group(1))  # type: ignore[union-attr]
    assert promised <= somaxconn
    config = CONFIG.format(prefix=prefix, above=somaxconn * 2).replace(
        "listen 127.0.0.1:8080;", directive
    )
    Path(prefix, "nginx.conf").write_text(config)

    result = in_namespace(SCRIPT, str(somaxconn), prefix, timeout=60)
    assert result.returncode == 0, result.stderr + Path(prefix, "error.log").read_text()
    assert_stopped(prefix)
    assert queue_limits(result.stdout, "started") == {
        "127.0.0.1:8080": promised,  # the advisor's directive
        "127.0.0.1:8081": 511,  # no backlog=: nginx's default
        "127.0.0.1:8082": somaxconn,  # asked for twice somaxconn: silently truncated
    }


def test_a_reload_applies_the_new_backlog_to_the_open_socket(
    advised: tuple[int, str, str],
) -> None:
    somaxconn, directive, prefix = advised
    promised = int(re.search(r"backlog=(\d+)", directive).group(1))  # type: ignore[union-attr]
    before = CONFIG.format(prefix=prefix, above=somaxconn)
    Path(prefix, "nginx.conf").write_text(before)
    edited = Path(prefix, "edited.conf")
    edited.write_text(before.replace("listen 127.0.0.1:8080;", directive))

    result = in_namespace(SCRIPT, str(somaxconn), prefix, str(edited), str(promised), timeout=60)
    assert result.returncode == 0, result.stderr + Path(prefix, "error.log").read_text()
    assert_stopped(prefix)
    assert queue_limits(result.stdout, "started")["127.0.0.1:8080"] == 511
    assert queue_limits(result.stdout, "reloaded")["127.0.0.1:8080"] == promised
