"""Validated facts files by content: an unchanged facts file is validated once.

The first validation of a facts file in a process builds HostFacts' pydantic schema (about
12 ms of a one-shot `recommend` on this project's reference machine, measured interleaved: a
facts file seen before against one not seen). A facts file that was validated before is
therefore taken from a small cache (`cached_facts`, used by the single-host commands): the
key is a SHA-256 of its path, its text and the source of the code that validates it
(advisor/model and the facts readers), so any edit to the file or to that code validates it
afresh. At most MAX_ENTRIES files are kept (the oldest go first); a fleet never passes here.

The cache pickles HostFacts, so it is loaded only through cache_files' checks (the user's own
0700 directory, a regular file owned by the user and writable by no one else); a cache that
fails them is ignored. SYSCTL_ADVISOR_CACHE=off disables it.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import pickle
from collections.abc import Callable
from pathlib import Path

from advisor.knowledge.cache_files import (
    UNPICKLING_ERRORS,
    files_fingerprint,
    read_marshalled_dict,
    versioned_cache_file,
    write_cache,
)
from advisor.model.documents import read_text
from advisor.model.host_facts import HostFacts

MAX_ENTRIES = 32
_PACKAGE = Path(__file__).resolve().parent.parent


@functools.cache
def _validating_code() -> str:
    """A fingerprint of the code a facts file goes through: the models and the two readers."""
    model = sorted((_PACKAGE / "model").glob("*.py"))
    readers = [_PACKAGE / "sources" / name for name in ("facts_file.py", "ansible_facts.py")]
    return files_fingerprint([*model, *readers])


def facts_key(path: Path, text: str) -> str:
    """The cache key of a facts file read from `path` with this text."""
    digest = hashlib.sha256()
    for part in (_validating_code(), str(path), text):
        encoded = part.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
    return digest.hexdigest()


class FactsCache:
    def __init__(self) -> None:
        self._path = versioned_cache_file("facts", "marshal")
        self._entries: dict[str, bytes] = {
            key: value
            for key, value in read_marshalled_dict(self._path).items()
            if isinstance(key, str) and isinstance(value, bytes)
        }

    def get(self, path: Path, text: str) -> HostFacts | None:
        """The facts validated before from this path and text, else None."""
        if self._path is None:
            return None
        raw = self._entries.get(facts_key(path, text))
        if raw is None:
            return None
        try:
            facts = pickle.loads(raw)
        except (pickle.UnpicklingError, *UNPICKLING_ERRORS):
            return None
        return facts if isinstance(facts, HostFacts) else None

    def put(self, path: Path, text: str, facts: HostFacts) -> None:
        """Keep the facts validated from this path and text (the oldest entry goes)."""
        if self._path is None:
            return
        key = facts_key(path, text)
        self._entries.pop(key, None)
        self._entries[key] = pickle.dumps(facts, protocol=pickle.HIGHEST_PROTOCOL)
        while len(self._entries) > MAX_ENTRIES:
            del self._entries[next(iter(self._entries))]
        write_cache(self._path, marshal.dumps(self._entries))


def cached_facts(path: Path, validate: Callable[[Path, str], HostFacts]) -> HostFacts:
    """The facts file at `path`: from the cache when this text was validated before, else
    `validate(path, text)`, kept for next time."""
    text = read_text(path)
    cache = FactsCache()
    facts = cache.get(path, text)
    if facts is None:
        facts = validate(path, text)
        cache.put(path, text, facts)
    return facts
