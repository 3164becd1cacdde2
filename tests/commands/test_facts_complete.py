"""`facts` records what the services' own configurations set (nginx's listening sockets and
backlogs, Redis's tcp-backlog, PostgreSQL's settings) with when it read them, so a facts file
is complete away from its host: `recommend --facts` elsewhere plans as on the host, and never
reads a path the facts name outside their directory."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from sysctl_advisor.sources import local_host
from tests.conftest import TESTS, Cli, assert_one_line_error

FRONTEND = TESTS / "fixtures" / "hosts" / "busy-frontend"
PLAN_PARTS = ("settings", "findings", "companions")


def _plan(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    return {part: document[part] for part in PLAN_PARTS}


def _facts_of_tree(cli: Cli, tree: Path, away: Path) -> Path:
    """`facts --root tree` written into `away`, a directory holding nothing of the tree."""
    result = cli("facts", "--root", str(tree))
    assert result.exit_code == 0, result.stderr
    away.mkdir()
    written = away / "host.yaml"
    written.write_text(result.stdout)
    return written


def test_facts_away_from_the_tree_plan_as_on_the_host(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FRONTEND, tree, symlinks=True)
    written = _facts_of_tree(cli, tree, tmp_path / "away")
    nginx = yaml.safe_load(written.read_text())["services"]["nginx"]
    assert nginx["config_read_at"] and "config_error" not in nginx
    assert {"address": "*:443", "backlog": 8192} in [
        {k: listen.get(k) for k in ("address", "backlog")} for listen in nginx["listens"]
    ]
    # on the host: the tree read as `recommend` reads the host it runs on, configs and all
    monkeypatch.setattr(local_host, "collect", functools.partial(local_host.collect, root=tree))
    on_host = _plan(cli("recommend", "-p", "frontend-proxy", "--format", "json"))
    monkeypatch.undo()
    # elsewhere: from another directory, the tree gone
    shutil.rmtree(tree)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    away = _plan(
        cli("recommend", "--facts", "../away/host.yaml", "-p", "frontend-proxy", "-f", "json")
    )
    assert away == on_host
    ids = {finding["id"] for finding in away["findings"]}
    assert "listen-backlog.nginx-config-unreadable" not in ids
    below = next(f for f in away["findings"] if f["id"] == "listen-backlog.nginx-below-target")
    assert "backlog 8192 at" in below["message"]


NGINX_CONF = """events {}
http {
    server { listen 80 backlog=%d; }
}
"""


def _recorded(directory: Path, config: str, backlog: int, **more: Any) -> Path:
    """A facts file whose nginx was read by `facts` (its listens recorded), naming `config`."""
    nginx = {
        "config": config,
        "listens": [
            {
                "address": "*:80",
                "backlog": backlog,
                "file": "/etc/nginx/nginx.conf",
                "line": 3,
                "text": f"listen 80 backlog={backlog}",
            }
        ],
        "config_read_at": "2026-11-20T18:00:00Z",
        **more,
    }
    facts = {
        "memory": {"total": "16 GiB"},
        "kernel": "6.8.0-45-generic",
        "arch": "x86_64",
        "sysctl": {"net.core.somaxconn": "4096"},
        "services": {"nginx": nginx},
    }
    path = directory / "host.yaml"
    path.write_text(yaml.safe_dump(facts))
    return path


def _nginx_findings(cli: Cli, facts: Path, *more: str) -> dict[str, str]:
    result = cli("recommend", "--facts", str(facts), "-p", "frontend-proxy", "-f", "json", *more)
    assert result.exit_code == 0, result.stderr
    findings = json.loads(result.stdout)["findings"]
    return {f["id"]: f["message"] for f in findings if "nginx" in f["id"]}


def test_a_recorded_config_outside_the_facts_directory_is_not_read_nor_refused(
    cli: Cli, tmp_path: Path
) -> None:
    findings = _nginx_findings(cli, _recorded(tmp_path, "/etc/nginx/nginx.conf", 100))
    assert "listen-backlog.nginx-config-unreadable" not in findings, findings
    assert "backlog 100" in findings["listen-backlog.nginx-below-target"]


def test_what_was_recorded_wins_over_the_file_beside_it(cli: Cli, tmp_path: Path) -> None:
    """The facts say when the config was read: that reading stands, the same wherever the
    file is; a file at the named path inside the facts' directory is not read again."""
    (tmp_path / "nginx.conf").write_text(NGINX_CONF % 200)
    findings = _nginx_findings(cli, _recorded(tmp_path, "nginx.conf", 100))
    assert "backlog 100" in findings["listen-backlog.nginx-below-target"], findings
    assert "200" not in findings["listen-backlog.nginx-below-target"]


def test_without_a_reading_time_the_config_is_read_and_wins(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "nginx.conf").write_text(NGINX_CONF % 200)
    facts = _recorded(tmp_path, "nginx.conf", 100)
    data = yaml.safe_load(facts.read_text())
    del data["services"]["nginx"]["config_read_at"]
    facts.write_text(yaml.safe_dump(data))
    findings = _nginx_findings(cli, facts)
    assert "backlog 200" in findings["listen-backlog.nginx-below-target"], findings


def test_nginx_conf_option_is_read_over_what_was_recorded(cli: Cli, tmp_path: Path) -> None:
    own = tmp_path / "mine"
    own.mkdir()
    (own / "nginx.conf").write_text(NGINX_CONF % 300)
    facts = _recorded(tmp_path, "/etc/nginx/nginx.conf", 100)
    findings = _nginx_findings(cli, facts, "--nginx-conf", str(own / "nginx.conf"))
    assert "backlog 300" in findings["listen-backlog.nginx-below-target"], findings


def test_a_recorded_redis_backlog_needs_no_config(cli: Cli, tmp_path: Path) -> None:
    facts = {
        "memory": {"total": "16 GiB"},
        "kernel": "6.8.0-45-generic",
        "arch": "x86_64",
        "sysctl": {"net.core.somaxconn": "4096"},
        "services": {
            "redis": {
                "config": "/etc/redis/redis.conf",
                "listen_backlog": 8192,
                "config_read_at": "2026-11-20T18:00:00Z",
            }
        },
    }
    path = tmp_path / "host.yaml"
    path.write_text(yaml.safe_dump(facts))
    result = cli("recommend", "--facts", str(path), "-p", "redis", "-f", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    ids = {f["id"] for f in document["findings"]}
    assert "evidence.service-config-unreadable" not in ids
    somaxconn = next(s for s in document["settings"] if s["key"] == "net.core.somaxconn")
    assert somaxconn["values"] == [8192]


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"config": None}, ("config_read_at", "no config is named")),
        ({"config_read_at": "yesterday"}, ("config_read_at", "timestamp")),
        ({"config_read_at": 1700000000}, ("config_read_at",)),
        ({"config_error": "bad\x1b[2Jline"}, ("config_error",)),
        (
            {
                "listens": [
                    {"address": "*:80", "backlog": 2**31, "file": "f", "line": 1, "text": "t"}
                ]
            },
            ("listens", "backlog"),
        ),
        (
            {"listens": [{"address": "*:80", "file": "f", "line": 0, "text": "t"}]},
            ("listens", "line"),
        ),
        (
            {"listens": [{"address": "*:80", "file": "f", "line": 1, "text": "listen 80\nx"}]},
            ("listens", "text"),
        ),
        ({"listens": [{"address": "*:80", "file": "f", "line": 1}]}, ("listens", "text")),
    ],
)
def test_recorded_values_are_validated_as_facts(
    cli: Cli, tmp_path: Path, change: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    facts = _recorded(tmp_path, "/etc/nginx/nginx.conf", 100)
    data = yaml.safe_load(facts.read_text())
    nginx = data["services"]["nginx"]
    for name, value in change.items():
        if value is None:
            del nginx[name]
        else:
            nginx[name] = value
    facts.write_text(yaml.safe_dump(data))
    result = cli("recommend", "--facts", str(facts), "-p", "frontend-proxy")
    assert_one_line_error(result.exit_code, result.stderr, str(facts), "services", *fragments)


def test_facts_reads_a_copied_trees_config_only_inside_it(cli: Cli, tmp_path: Path) -> None:
    """A copied /etc is hostile: an include whose link leads out of the tree is not read by
    `facts --root`, and the facts record why."""
    tree = tmp_path / "tree"
    shutil.copytree(FRONTEND, tree, symlinks=True)
    outside = tmp_path / "outside.conf"
    outside.write_text("server { listen 9999 backlog=5; }\n")
    (tree / "etc/nginx/conf.d/planted.conf").symlink_to(outside)
    written = _facts_of_tree(cli, tree, tmp_path / "away")
    nginx = yaml.safe_load(written.read_text())["services"]["nginx"]
    assert "9999" not in str(nginx["listens"]), nginx["listens"]
    assert "planted.conf" in nginx["config_error"] and "not read" in nginx["config_error"]
    assert nginx["config_read_at"]
