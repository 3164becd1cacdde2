"""`fleet` with hosts whose Ansible facts carry the advisor's record of sysctl writes (a custom
fact, ansible_local.sysctl_advisor): the summaries show, per key, who wrote it on how many hosts;
without any such host, the summaries are as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from tests.conftest import TESTS, invoke

TREE = TESTS / "fixtures" / "ansible" / "tree"
FRONTEND = TESTS / "fixtures" / "writers-observed" / "frontend.yaml"


def _tree(tmp_path: Path, watched: list[str], writers: object = None) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    record = writers if writers is not None else yaml.safe_load(FRONTEND.read_text())["writers"]
    for name in ("web-01", "web-02", "web-03"):
        document = json.loads((TREE / "web-01").read_text())
        document["ansible_facts"]["ansible_hostname"] = name
        if name in watched:
            document["ansible_facts"]["ansible_local"] = {"sysctl_advisor": {"writers": record}}
        (tree / name).write_text(json.dumps(document))
    return tree


def _summary(tmp_path: Path, tree: Path) -> tuple[int, str, dict[str, object], str]:
    out = tmp_path / "out"
    result = invoke("fleet", "--ansible-facts", tree, "--profile", "base", "--out", out)
    summary = json.loads((out / "summary.json").read_text()) if out.exists() else {}
    markdown = (out / "summary.md").read_text() if out.exists() else ""
    shutil.rmtree(out, ignore_errors=True)
    return result.exit_code, result.stderr, summary, markdown


def test_the_summary_shows_who_writes_each_key_across_hosts(tmp_path: Path) -> None:
    code, _, summary, markdown = _summary(tmp_path, _tree(tmp_path, ["web-01", "web-03"]))
    assert code == 0
    rows = {(w["key"], w["writer"]): w["hosts"] for w in summary["writers"]}  # type: ignore[index, union-attr]
    assert rows[("net.core.somaxconn", "TuneD")] == 2
    assert rows[("net.core.somaxconn", "dockerd")] == 2
    assert rows[("net.core.somaxconn", "a pod")] == 2
    assert rows[("net.ipv4.tcp_fin_timeout", "tune-net (unit cron.service) (parent cron)")] == 2
    assert "## Sysctl writers seen across the fleet" in markdown
    assert "2 of 3 written hosts carry one" in markdown
    assert "| `net.core.somaxconn` | TuneD | 2 |" in markdown


def test_without_a_record_the_summary_has_no_writers(tmp_path: Path) -> None:
    _, _, summary, markdown = _summary(tmp_path, _tree(tmp_path, []))
    assert "writers" not in summary
    assert "Sysctl writers" not in markdown


def test_a_hostile_record_skips_its_host_in_one_line(tmp_path: Path) -> None:
    bad = {
        "provenance": "watch 5s",
        "writes": [
            {
                "key": "net.core.somaxconn",
                "value": "1",
                "time": "2026-12-07T10:00:00Z",
                "comm": "a\u001b[2Jb",
            }
        ],
    }
    code, err, summary, _ = _summary(tmp_path, _tree(tmp_path, ["web-02"], bad))
    assert code == 1
    [line] = [line for line in err.splitlines() if "skipped web-02:" in line]
    assert "writers.writes.0.comm" in line and "\x1b" not in err
    assert summary["hosts_skipped"] == 1
