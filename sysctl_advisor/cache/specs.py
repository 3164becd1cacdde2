"""Validated knowledge files (catalog, rules, profiles), cached by content.

Validating ~40 YAML files needs pydantic to build every spec model's schema, which costs more
than the rest of a run. Each validated spec (a model instance, model_base) is pickled in the
user's cache directory under a key over the model's name, the code that validates it
(files.validating_code) and the file's text, so an unchanged file is validated once and any
edit, of the file or of that code, validates it afresh; a run whose files are all here never
imports pydantic.

The entries are kept as pickled bytes in a marshal mapping, one file per kind of knowledge
(`SpecCache(kind)`: the catalog, the rules, the profiles, the check rules, ...), so a run reads
only the kinds it loads: a lookup unpickles only the entry it returns, and pruning the entries
a run did not use rewrites bytes without re-pickling them. Each file holds only what the
advisor wrote itself, and only the entries the last run that loaded its kind used.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, TypeVar

from sysctl_advisor.cache.files import (
    cache_directory,
    content_key,
    unpickled,
    validating_code,
    versioned_name,
)
from sysctl_advisor.model.documents import (
    DEFAULT_MAX_INPUT,
    KNOWLEDGE_FILE,
    parse_document,
    read_text,
)
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import validate

M = TypeVar("M")
SPECS = versioned_name("specs", "marshal")


def spec_key(kind: str, text: str) -> str:
    """The cache key of a file with this text validated as `kind` (module.ClassName)."""
    return content_key(kind, validating_code(), text)


def model_kind(model: type[Any]) -> str:
    return f"{model.__module__}.{model.__qualname__}"


def file_key(path: Path, model: type[Any]) -> str:
    """The key SpecCache.load looks the file up by, without loading it."""
    return spec_key(model_kind(model), read_text(path, limit=DEFAULT_MAX_INPUT))


def specs_name(kind: str = "") -> str:
    """The cache file of one kind of knowledge: `specs-pyXY-VERSION-KIND.marshal`."""
    return SPECS.replace(".marshal", f"-{kind}.marshal") if kind else SPECS


class SpecCache:
    def __init__(self, kind: str = "") -> None:
        # Loaded only through the private cache directory's checks: never a pickle another
        # user could have written.
        self._name = specs_name(kind)
        self._directory = cache_directory()
        self._entries = self._directory.read_entries(self._name) if self._directory else {}
        self._used: set[str] = set()
        self._dirty = False

    def load(self, path: Path, model: type[M], what: str) -> M:
        """The file validated as `model`; `what` names the file's kind in errors."""
        text = read_text(path, limit=DEFAULT_MAX_INPUT)
        key = spec_key(model_kind(model), text)
        self._used.add(key)
        cached = self._cached(key, model)
        if cached is not None:
            return cached
        data = parse_document(text, path, KNOWLEDGE_FILE)
        if not isinstance(data, dict):
            raise InputError(f"{what} must be a mapping", path=path)
        spec = validate(model, data, path, text)
        self._entries[key] = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        self._dirty = True
        return spec

    def used(self) -> list[str]:
        """The keys of the files this cache has loaded, in order."""
        return sorted(self._used)

    def holds(self, key: str) -> bool:
        """Whether a verdict (`remember`) is kept under `key`; kept another run if so."""
        return self.recall(key) is not None

    def recall(self, key: str) -> bytes | None:
        """What `remember` kept under `key` (marked as used), or None."""
        found = self._entries.get(key)
        if found is not None:
            self._used.add(key)
        return found

    def remember(self, key: str, value: bytes = b"") -> None:
        """Keep a verdict over validated files (a check across them that passed, and what it
        found), so a run over the same files does not repeat it: `key` must cover every file
        it read."""
        self._used.add(key)
        if self._entries.get(key) != value:
            self._entries[key] = value
            self._dirty = True

    def _cached(self, key: str, model: type[M]) -> M | None:
        raw = self._entries.get(key)
        return unpickled(raw, model) if raw is not None else None

    def save(self, prune: bool = True) -> None:
        """Write the file if anything was added; with `prune` (a kind loaded whole), without
        the entries this run did not use."""
        stale = set(self._entries) - self._used
        if prune and stale and self._used:
            for key in stale:
                del self._entries[key]
            self._dirty = True
        if self._dirty and self._directory is not None:
            self._dirty = not self._directory.write_entries(self._name, self._entries)
