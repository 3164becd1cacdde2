"""Validated facts files by content: an unchanged facts file is validated once.

Validating a facts file imports pydantic and builds HostFacts' schema, which costs more than
the rest of a one-shot `recommend`. A facts file that was validated before is therefore taken
from a small cache (`cached_facts`, used by the single-host commands): the key is a SHA-256 of
its path, its text and the code that validates it (files.validating_code: the models,
the facts readers, pydantic's version), so any edit to the file or to that code validates it
afresh. At most MAX_ENTRIES files are kept (the oldest go first); a fleet never passes here.

The cache pickles HostFacts, so it is loaded only through files.py's checks (the user's own
0700 directory, a regular file owned by the user and writable by no one else); a cache that
fails them is ignored. SYSCTL_ADVISOR_CACHE=off disables it.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sysctl_advisor.cache.files import (
    cache_directory,
    content_key,
    unpickled,
    validating_code,
    versioned_name,
)
from sysctl_advisor.model.documents import read_text

if TYPE_CHECKING:  # imported when a facts file is read
    from sysctl_advisor.model.host_facts import HostFacts

MAX_ENTRIES = 32
FACTS = versioned_name("facts", "marshal")


def facts_key(path: Path, text: str) -> str:
    """The cache key of a facts file read from `path` with this text."""
    return content_key(validating_code(), str(path), text)


class FactsCache:
    def __init__(self) -> None:
        self._directory = cache_directory()
        self._entries = self._directory.read_entries(FACTS) if self._directory else {}

    def get(self, path: Path, text: str) -> HostFacts | None:
        """The facts validated before from this path and text, else None."""
        from sysctl_advisor.model.host_facts import HostFacts

        entry = self._entries.get(facts_key(path, text))
        return unpickled(entry, HostFacts) if entry is not None else None

    def put(self, path: Path, text: str, facts: HostFacts) -> None:
        """Keep the facts validated from this path and text (the oldest entry goes)."""
        if self._directory is None:
            return
        key = facts_key(path, text)
        self._entries.pop(key, None)
        self._entries[key] = pickle.dumps(facts, protocol=pickle.HIGHEST_PROTOCOL)
        while len(self._entries) > MAX_ENTRIES:
            del self._entries[next(iter(self._entries))]
        self._directory.write_entries(FACTS, self._entries)


def cached_facts(
    path: Path,
    validate: Callable[[Path, str], HostFacts],
    allowed: Callable[[Path], bool] | None = None,
) -> HostFacts:
    """The facts file at `path` (with `allowed`, only a file whose real path it accepts, as
    opened): from the cache when this text was validated before, else `validate(path, text)`,
    kept for next time."""
    text = read_text(path, allowed)
    cache = FactsCache()
    facts = cache.get(path, text)
    if facts is None:
        facts = validate(path, text)
        cache.put(path, text, facts)
    return facts
