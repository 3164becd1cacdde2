"""Facts as a file: YAML with a short header, or JSON. Loads back with `--facts`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sysctl_advisor import __version__
from sysctl_advisor.model.documents import dump_json


def render_facts(data: dict[str, Any], fmt: str, root: Path) -> str:
    if fmt == "json":
        return dump_json(data)
    source = "this host" if root.resolve() == Path("/") else f"the tree at {root}"
    header = (
        f"# Host facts read from {source} by sysctl-advisor {__version__}.\n"
        "# observed: sockstat figures (connections, orphans, TIME-WAIT, TCP memory) are a\n"
        "# snapshot taken now; netstat and interface counters are totals since boot. Replace\n"
        "# the snapshot with peak figures to size for peaks.\n"
    )
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return header + body
