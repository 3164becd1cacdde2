"""The congestion control and queueing discipline modules a kernel could load or has built in,
read from its /lib/modules (modules.dep, modules.builtin): for `facts` of a host or a copied
tree, and for `check` when its target is the running kernel."""

from __future__ import annotations

import re
from pathlib import Path

from sysctl_advisor.sources.tree_paths import LIVE_ROOT, read_regular

# The modules the rules ask about: congestion control algorithms and queueing disciplines.
_NET_MODULE_DIRS = ("kernel/net/ipv4/tcp_", "kernel/net/sched/sch_")
_MODULE_NAME = re.compile(r"[a-z0-9_]{1,56}")
MAX_MODULES = 1024


def parse_module_list(text: str) -> list[str]:
    """modules.dep or modules.builtin: the congestion control and qdisc modules it names.

    `kernel/net/sched/sch_fq.ko.zst: kernel/...` -> ["sch_fq"] (sorted, no duplicates).
    """
    names: set[str] = set()
    for line in text.splitlines():
        path = line.split(":", 1)[0].strip()
        if not path.startswith(_NET_MODULE_DIRS):
            continue
        base = path.rsplit("/", 1)[1]
        name, dot, _ = base.partition(".ko")
        name = name.replace("-", "_")
        if dot and _MODULE_NAME.fullmatch(name):  # an odd entry is skipped, not fatal
            names.add(name)
    return sorted(names)[:MAX_MODULES]


def _read(path: Path, root: Path, limit: int) -> str | None:
    data = read_regular(path, None if root == LIVE_ROOT else root, limit)
    return data.decode("utf-8", errors="replace") if data is not None else None


MAX_MODULE_LIST = 16 << 20  # modules.dep of a distribution kernel is about 1 MiB


def kernel_modules(root: Path, release: str | None) -> dict[str, list[str]] | None:
    """The congestion control and qdisc modules the running kernel could load or has built
    in; None when its module directory is not there (a kernel without modules, a container)."""
    if not release or "/" in release or release in (".", ".."):
        return None
    directory = root / "lib/modules" / release
    dep = _read(directory / "modules.dep", root, MAX_MODULE_LIST + 1)
    builtin = _read(directory / "modules.builtin", root, MAX_MODULE_LIST + 1) or ""
    if dep is None or len(dep) > MAX_MODULE_LIST or len(builtin) > MAX_MODULE_LIST:
        return None  # not there, or cut short: "not read", never a partial list
    return {"loadable": parse_module_list(dep), "builtin": parse_module_list(builtin)}
