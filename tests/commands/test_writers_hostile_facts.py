"""A hand-written facts file's `writers:` section is input like any other: many writers of one
key are shown a few at a time with the others counted (text, markdown, explain, a fight, a
fleet's count), and a namespace that contradicts itself is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import TESTS, Cli, assert_one_line_error, invoke

FRONTEND = TESTS / "fixtures" / "writers-observed" / "frontend.yaml"
TREE = TESTS / "fixtures" / "ansible" / "tree"
WRITERS = 40  # each a process of its own, taking turns on somaxconn
SHOWN_OWNERS = 8  # writers of a key diff and explain show in force, and as many apart
HOST_WRITERS = 16  # writers of a key one host adds to a fleet's count
POD = {"uid": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "namespace": "shop", "name": "cart"}


def _many(apart: bool) -> list[dict[str, Any]]:
    """Writes in the host's namespace, or each in a namespace of its own (`apart`)."""
    return [
        {
            "key": "net.core.somaxconn",
            "value": str(1000 + i),
            "time": f"2026-12-07T10:00:{i:02d}Z",
            "comm": f"{'p' if apart else 'w'}{i}",
            "netns": {"kind": "other", "inode": 4026532800 + i} if apart else {"kind": "host"},
        }
        for i in range(WRITERS)
    ]


def _facts(tmp_path: Path, writes: list[dict[str, Any]]) -> Path:
    data = yaml.safe_load(FRONTEND.read_text())
    data["writers"] = {"provenance": "watch 60s", "writes": writes}
    path = tmp_path / "facts.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_many_writers_of_a_key_are_shown_a_few_with_the_others_counted(
    cli: Cli, tmp_path: Path
) -> None:
    facts = _facts(tmp_path, [*_many(apart=False), *_many(apart=True)])
    others = f"{WRITERS - SHOWN_OWNERS:,} other writers, not shown"
    text = cli("diff", "-p", "frontend-proxy", "--facts", facts).stdout
    flat = " ".join(text.split())
    assert flat.count("net.core.somaxconn: written by w") == SHOWN_OWNERS
    assert flat.count("net.core.somaxconn: written by p") == SHOWN_OWNERS
    assert flat.count(f"net.core.somaxconn: {others}") == 2  # in force, and apart
    assert f"{WRITERS - 4:,} other writers took turns too" in flat  # the fight names four
    markdown = cli("diff", "-p", "frontend-proxy", "--facts", facts, "-f", "markdown").stdout
    assert markdown.count("written by w") == SHOWN_OWNERS and others in markdown
    document = json.loads(
        cli("diff", "-p", "frontend-proxy", "--facts", facts, "-f", "json").stdout
    )
    [entry] = [e for e in document["entries"] if e["key"] == "net.core.somaxconn"]
    assert len(entry["observed"]) == 2 * WRITERS  # the JSON lists each
    explain = cli("explain", "net.core.somaxconn", "-p", "frontend-proxy", "--facts", facts)
    flat = " ".join(explain.stdout.split())
    assert flat.count("Written by w") == SHOWN_OWNERS and flat.count(others) == 2


def test_a_namespace_of_the_host_that_names_a_pod_is_refused(cli: Cli, tmp_path: Path) -> None:
    [write] = _many(apart=True)[:1]
    write["netns"] = {"kind": "host", "pod": POD}
    result = cli("diff", "-p", "frontend-proxy", "--facts", _facts(tmp_path, [write]))
    assert_one_line_error(result.exit_code, result.stderr, "facts.yaml", "writers.writes.0.netns")


def test_a_fleet_counts_a_few_writers_of_a_key_per_host(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    document = json.loads((TREE / "web-01").read_text())
    record = {"provenance": "watch 60s", "writes": _many(apart=False)}
    document["ansible_facts"]["ansible_local"] = {"sysctl_advisor": {"writers": record}}
    (tree / "web-01").write_text(json.dumps(document))
    out = tmp_path / "out"
    result = invoke("fleet", "--ansible-facts", tree, "--profile", "base", "--out", out)
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    shutil.rmtree(out)
    rows = [w for w in summary["writers"] if w["key"] == "net.core.somaxconn"]
    assert len(rows) == HOST_WRITERS + 1
    [others] = [w for w in rows if w["writer"].startswith("(other writers")]
    assert others["hosts"] == 1


def test_an_unavailable_record_with_writes_is_refused(cli: Cli, tmp_path: Path) -> None:
    """`unavailable` says nothing was recorded: writes beside it would be silently ignored."""
    facts = tmp_path / "host.yaml"
    facts.write_text(
        yaml.safe_dump(
            {
                "memory": {"total": "8 GiB"},
                "writers": {
                    "provenance": "unavailable (not root)",
                    "writes": [
                        {"key": "net.core.somaxconn", "value": "1", "time": "2026-12-07T10:00:00Z"}
                    ],
                },
            }
        )
    )
    result = cli("diff", "--facts", facts, "-p", "frontend-proxy")
    assert_one_line_error(result.exit_code, result.stderr, "writers", "unavailable")
