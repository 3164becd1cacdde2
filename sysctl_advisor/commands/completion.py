"""Shell completion's candidates (typer's `--install-completion`): profile names for `-p`,
sysctl keys for `explain KEY`, check rule ids for `--select`, `--ignore`, `--warn` and
`--error`. Each reads as little as it can: profile names and check rule ids are the shipped
files' names (a test holds them to the ids the loaded files declare), and keys load the key
catalog alone, through its spec cache, never the rules or profiles. A completion never fails
the shell: anything that goes wrong offers nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

CHECK_PREFIX = "check."


def _matching(names: Iterable[str], incomplete: str) -> list[str]:
    return sorted(name for name in set(names) if name.startswith(incomplete))


def _stems(directory: str, below: str = "") -> list[str]:
    """The names of the shipped YAML files in a data directory (or a folder of it)."""
    from sysctl_advisor.knowledge.resources import data_dir

    with contextlib.suppress(OSError):
        return [path.stem for path in (data_dir(directory) / below).glob("*.yaml")]
    return []


def profile_names(incomplete: str) -> list[str]:
    """The shipped profiles whose name starts with `incomplete`."""
    return _matching(_stems("profiles"), incomplete)


def check_rule_ids(incomplete: str) -> list[str]:
    """The shipped check rules' ids for a comma-separated list: the part after the last comma
    completed, what comes before it kept."""
    head, comma, last = incomplete.rpartition(",")
    ids = (CHECK_PREFIX + stem for stem in _stems("rules", "check"))
    return [head + comma + rule for rule in _matching(ids, last)]


def catalog_keys(incomplete: str) -> list[str]:
    """The catalog's keys that start with `incomplete`."""
    try:
        from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase

        keys = list(KnowledgeBase.lazy().catalog.keys)
    except Exception:  # a completion offers nothing rather than fail the shell
        return []
    return _matching(keys, incomplete)
