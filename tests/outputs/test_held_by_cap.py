"""A key a cap holds at the kernel default (somaxconn held by the memory a full accept queue
takes) is not one the default "already covers": the plan lists it under its own heading, with
the cap, in every output that lists such keys."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import invoke

# 256 MiB: a sixteenth holds 4,934 queued connections at about 3.4 KB each, so somaxconn is
# held to 4,096, 5.4's own default
SMALL = """\
hostname: small
kernel: 5.15.0-91-generic
arch: x86_64
memory: {total: 256 MiB}
cpu: {threads: 2}
"""


def _plan(tmp_path: Path, fmt: str) -> str:
    facts = tmp_path / "facts.yaml"
    facts.write_text(SMALL, encoding="utf-8")
    result = invoke("recommend", "--facts", str(facts), "--profile", "frontend-proxy", "-f", fmt)
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


def test_somaxconn_held_at_the_default_is_listed_as_held(tmp_path: Path) -> None:
    conf = _plan(tmp_path, "conf")
    held = conf.index("# Held at the kernel default by a cap (not set):")
    assert "net.core.somaxconn = 4096 (wanted 16384; held by listen-backlog.target)" in conf[held:]
    covered = conf.find("# Already covered by the kernel default")
    if covered >= 0:  # what the default covers is listed apart, somaxconn not among it
        section = conf[covered:held] if covered < held else conf[covered:]
        assert "net.core.somaxconn" not in section.split("\n\n")[0]
    # tcp_max_syn_backlog is held with it: the SYN queue never outgrows the accept backlog
    assert "net.ipv4.tcp_max_syn_backlog = 4096" in conf


def test_the_markdown_and_json_name_the_cap(tmp_path: Path) -> None:
    markdown = _plan(tmp_path, "markdown")
    assert "#### Held at the kernel default by a cap" in markdown
    document = json.loads(_plan(tmp_path, "json"))
    somaxconn = next(u for u in document["unchanged"] if u["key"] == "net.core.somaxconn")
    assert somaxconn["capped_by"] == ["listen-backlog.target"]
