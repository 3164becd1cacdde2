"""Facts as a file: YAML with a short header, or JSON. Loads back with `--facts`."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml

from sysctl_advisor import __version__
from sysctl_advisor.model.documents import dump_json
from sysctl_advisor.model.text_escape import one_line


def render_facts(data: dict[str, Any], fmt: str, root: Path) -> str:
    if fmt == "json":
        return dump_json(data)
    live = root.resolve() == Path("/")
    source = "this host" if live else f"the tree at {one_line(str(root))}"
    taken = "when this host was read" if live else "when the tree's sockstat was copied"
    period = (data.get("observed") or {}).get("period") or {}
    figures = (
        "are peaks over observed.period.window_seconds, from Prometheus"
        if period.get("kind") == "history"
        else f"are a snapshot at observed.period.at, {taken}"
    )
    said = (
        f"Host facts read from {source} by sysctl-advisor {__version__}. observed: sockstat "
        f"figures (connections, orphans, TIME-WAIT, TCP memory) {figures}; netstat and "
        "interface counters are totals since boot."
        + (
            ""
            if period.get("kind") == "history"
            else " Replace the snapshot with peak figures to size for peaks."
        )
    )
    # textwrap, not plan_render.wrap_words: the facts command must not import jinja2
    lines = textwrap.wrap(said, 86, break_long_words=False, break_on_hyphens=False)
    header = "".join(f"# {line}\n" for line in lines)
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return header + body
