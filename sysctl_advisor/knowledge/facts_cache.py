"""Validated facts files by content: an unchanged facts file is validated once.

The first validation of a facts file in a process builds HostFacts' pydantic schema (about
12 ms of a one-shot `recommend` on this project's reference machine, measured interleaved: a
facts file seen before against one not seen). A facts file that was validated before is
therefore taken from a small cache (`cached_facts`, used by the single-host commands): the
key is a SHA-256 of its path, its text and the code that validates it (cache_files.
validating_code: the models, the facts readers, pydantic's version), so any edit to the file
or to that code validates it afresh. At most MAX_ENTRIES files are kept (the oldest go
first); a fleet never passes here. Each entry also says whether the facts name a service's
config file (parsed and validated after loading), which warm_start needs to know.

The cache pickles HostFacts, so it is loaded only through cache_files' checks (the user's own
0700 directory, a regular file owned by the user and writable by no one else); a cache that
fails them is ignored. SYSCTL_ADVISOR_CACHE=off disables it.
"""

from __future__ import annotations

import marshal
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sysctl_advisor.knowledge.cache_files import (
    content_key,
    read_marshalled_dict,
    unpickled,
    validating_code,
    versioned_cache_file,
    write_cache,
)
from sysctl_advisor.model.documents import read_text

if TYPE_CHECKING:  # imported when a facts file is read: warm_start uses this module before
    from sysctl_advisor.model.host_facts import HostFacts  # any model is defined

MAX_ENTRIES = 32


def facts_key(path: Path, text: str) -> str:
    """The cache key of a facts file read from `path` with this text."""
    return content_key(validating_code(), str(path), text)


def facts_cache_file() -> Path | None:
    return versioned_cache_file("facts", "marshal")


def read_entries(cache_file: Path | None) -> dict[str, tuple[bytes, bool]]:
    """key -> (the pickled HostFacts, whether a service in them names a config file to
    parse), nothing unpickled."""
    return {
        key: (value[0], value[1])
        for key, value in read_marshalled_dict(cache_file).items()
        if isinstance(key, str)
        and isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], bytes)
        and isinstance(value[1], bool)
    }


# The entry warm_start judged a run on plain models by: another run of the same user may rewrite
# the cache file meanwhile (dropping the oldest entry), and the run still has what it was judged on.
_judged: dict[str, tuple[bytes, bool]] = {}


def keep_judged_facts(entries: dict[str, tuple[bytes, bool]]) -> None:
    _judged.update(entries)


class FactsCache:
    def __init__(self) -> None:
        self._path = facts_cache_file()
        self._entries = read_entries(self._path)

    def get(self, path: Path, text: str) -> HostFacts | None:
        """The facts validated before from this path and text, else None."""
        from sysctl_advisor.model.host_facts import HostFacts

        if self._path is None:
            return None
        key = facts_key(path, text)
        entry = self._entries.get(key, _judged.get(key))
        return unpickled(entry[0], HostFacts) if entry is not None else None

    def put(self, path: Path, text: str, facts: HostFacts) -> None:
        """Keep the facts validated from this path and text (the oldest entry goes)."""
        if self._path is None:
            return
        key = facts_key(path, text)
        self._entries.pop(key, None)
        names_configs = any(s.config is not None for s in facts.services.values())
        pickled = pickle.dumps(facts, protocol=pickle.HIGHEST_PROTOCOL)
        self._entries[key] = (pickled, names_configs)
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
        from sysctl_advisor.model.plain_models import plain_chosen

        if plain_chosen():  # warm_start judged the run by this file a moment ago: edited since
            from sysctl_advisor.model.errors import InputError

            raise InputError(
                "the facts file changed while the advisor read it: run it again", path=path
            )
        facts = validate(path, text)
        cache.put(path, text, facts)
    return facts
