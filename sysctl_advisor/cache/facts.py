"""Validated input files by content: an unchanged facts file, or check configuration, is
validated once.

Validating a facts file imports pydantic and builds HostFacts' schema, which costs more than
the rest of a one-shot `recommend` (a `.sysctl-advisor.toml`, as much as the rest of a
`check`). A file that was validated before is therefore taken from a small cache
(`cached_facts`, used by the single-host commands; `cached` for the check configuration): the
key is a SHA-256 of the model's name, the path, the text and the code that validates it
(files.validating_code: the models, the readers, pydantic's version), so any edit to the file
or to that code validates it afresh. At most MAX_ENTRIES files are kept (the oldest go
first); a fleet never passes here.

The cache pickles HostFacts, so it is loaded only through files.py's checks (the user's own
0700 directory, a regular file owned by the user and writable by no one else); a cache that
fails them is ignored. SYSCTL_ADVISOR_CACHE=off disables it.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

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
T = TypeVar("T")


def facts_key(path: Path, text: str, kind: str = "HostFacts") -> str:
    """The cache key of a file read from `path` with this text and validated as `kind`."""
    return content_key(validating_code(), kind, str(path), text)


class ValidatedCache(Generic[T]):
    """Files validated as one model (`kind`), by path and text. Every kind shares one cache
    file; a key names its kind, and an entry that does not unpickle to it is refused."""

    kind: type[T]

    def __init__(self, kind: type[T]) -> None:
        self.kind = kind
        self._directory = cache_directory()
        self._entries = self._directory.read_entries(FACTS) if self._directory else {}

    def _key(self, path: Path, text: str) -> str:
        return facts_key(path, text, self.kind.__name__)

    def get(self, path: Path, text: str) -> T | None:
        """What was validated before from this path and text, else None."""
        entry = self._entries.get(self._key(path, text))
        return unpickled(entry, self.kind) if entry is not None else None

    def put(self, path: Path, text: str, value: T) -> None:
        """Keep what was validated from this path and text (the oldest entry goes)."""
        if self._directory is None:
            return
        key = self._key(path, text)
        self._entries.pop(key, None)
        self._entries[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        while len(self._entries) > MAX_ENTRIES:
            del self._entries[next(iter(self._entries))]
        self._directory.write_entries(FACTS, self._entries)


class FactsCache(ValidatedCache["HostFacts"]):
    def __init__(self) -> None:
        from sysctl_advisor.model.host_facts import HostFacts

        super().__init__(HostFacts)


def cached(path: Path, text: str, cache: ValidatedCache[T], validate: Callable[[], T]) -> T:
    """`validate()`'s result for the file at `path` holding `text`: from the cache when this
    text was validated before, else validated now and kept for next time."""
    value = cache.get(path, text)
    if value is None:
        value = validate()
        cache.put(path, text, value)
    return value


def cached_facts(
    path: Path,
    validate: Callable[[Path, str], HostFacts],
    allowed: Callable[[Path], bool] | None = None,
) -> HostFacts:
    """The facts file at `path` (with `allowed`, only a file whose real path it accepts, as
    opened): from the cache when this text was validated before, else `validate(path, text)`,
    kept for next time."""
    text = read_text(path, allowed)
    return cached(path, text, FactsCache(), lambda: validate(path, text))
