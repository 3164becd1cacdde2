"""Validated knowledge files (catalog, rules, profiles), cached by content.

Validating ~40 YAML files needs pydantic to build every spec model's schema, which costs more
than the rest of a run. Each validated spec (a model instance, model_base) is pickled in the
user's cache directory under a key over the model's name, the code that validates it
(files.validating_code) and the file's text, so an unchanged file is validated once and any
edit, of the file or of that code, validates it afresh; a run whose files are all here never
imports pydantic.

The entries are kept as pickled bytes in a marshal mapping: a lookup unpickles only the entry
it returns, and pruning the entries a run did not use rewrites bytes without re-pickling them.
The cache holds only what the advisor wrote itself, and only the entries the last run used.
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


class SpecCache:
    def __init__(self) -> None:
        # Loaded only through the private cache directory's checks: never a pickle another
        # user could have written.
        self._directory = cache_directory()
        self._entries = self._directory.read_entries(SPECS) if self._directory else {}
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

    def _cached(self, key: str, model: type[M]) -> M | None:
        raw = self._entries.get(key)
        return unpickled(raw, model) if raw is not None else None

    def save(self) -> None:
        stale = set(self._entries) - self._used
        if stale and self._used:
            for key in stale:
                del self._entries[key]
            self._dirty = True
        if self._dirty and self._directory is not None:
            self._dirty = not self._directory.write_entries(SPECS, self._entries)
