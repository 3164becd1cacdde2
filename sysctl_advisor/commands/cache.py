"""`cache`: where the caches are, what they hold and how big; `--clear` removes them."""

from __future__ import annotations

import time

from sysctl_advisor.cache.files import NoCache, open_cache_directory
from sysctl_advisor.cache.pruning import Entry, entries, remove_entries
from sysctl_advisor.commands.common import emit
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.model.units import human_bytes

_WHERE = (
    "SYSCTL_ADVISOR_CACHE=DIR moves the caches, SYSCTL_ADVISOR_CACHE=off turns them off; "
    "output never depends on them."
)


def cache(clear: bool = False) -> int:
    try:
        directory = open_cache_directory()
    except NoCache as exc:
        emit(f"no cache: {one_line(exc)} (runs go without one).\n{_WHERE}\n", None)
        return 0
    if clear:
        removed = remove_entries(directory.fd, unused_for=-1)
        size = human_bytes(sum(e.size for e in removed))
        emit(f"removed {_count(removed)} ({size}) from {one_line(directory.path)}\n", None)
        return 0
    found = entries(directory.fd)
    lines = [one_line(directory.path)]
    width = max((len(e.name) for e in found), default=0)
    for entry in found:
        used = time.strftime("%Y-%m-%d", time.localtime(entry.used))
        lines.append(
            f"  {one_line(entry.name):<{width}}  {human_bytes(entry.size):>10}  used {used}  "
            f"{entry.kind}"
        )
    total = human_bytes(sum(e.size for e in found))
    lines.append(f"{_count(found)}, {total}. `sysctl-advisor cache --clear` removes them.")
    lines.append(_WHERE)
    emit("\n".join(lines) + "\n", None)
    return 0


def _count(found: list[Entry]) -> str:
    return f"{len(found)} {'entry' if len(found) == 1 else 'entries'}"
