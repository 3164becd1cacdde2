"""Validated knowledge files (catalog, rules, profiles), cached by content hash.

Validating ~40 YAML files needs pydantic to build every spec model's schema, which costs more
than the rest of a run. The validated objects are pickled in the user's cache directory keyed
by the file's content hash and the model's source (so a changed model invalidates its entries),
and an unchanged file is validated once. Any edit changes the hash and is validated again. The
cache holds only what the advisor wrote itself, and only the entries the last run used.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from advisor.knowledge.cache_files import (
    UNPICKLING_ERRORS,
    read_cache,
    source_fingerprint,
    versioned_cache_file,
    write_cache,
)
from advisor.model.documents import parse_document, read_text, validation_error
from advisor.model.errors import InputError

M = TypeVar("M", bound=BaseModel)


class SpecCache:
    def __init__(self) -> None:
        self._path = versioned_cache_file("specs", "pickle")
        # Loaded only from the user's private cache directory, from a file that passes
        # cache_files' checks: never a pickle another user could have written.
        self._entries: dict[str, Any] = {}
        self._used: set[str] = set()
        self._fingerprints: dict[str, str] = {}
        self._dirty = False
        if self._path is not None:
            raw = read_cache(self._path)
            try:
                loaded = pickle.loads(raw) if raw is not None else None
                if isinstance(loaded, dict):
                    self._entries = loaded
            except (pickle.UnpicklingError, *UNPICKLING_ERRORS):
                self._entries = {}

    def load(self, path: Path, model: type[M], what: str) -> M:
        """The file validated as `model`; `what` names the file's kind in errors."""
        text = read_text(path)
        model_id = f"{model.__module__}.{model.__qualname__}:{self._fingerprint(model)}"
        key = hashlib.sha1(f"{model_id}\0{text}".encode()).hexdigest()
        self._used.add(key)
        cached = self._entries.get(key)
        if isinstance(cached, model):
            return cached
        data = parse_document(text, path)
        if not isinstance(data, dict):
            raise InputError(f"{what} must be a mapping", path=path)
        try:
            spec = model.model_validate(data)
        except ValidationError as exc:
            raise validation_error(exc, path, text) from None
        self._entries[key] = spec
        self._dirty = True
        return spec

    def _fingerprint(self, model: type[BaseModel]) -> str:
        """Hash of the source files defining the model and the project's models it is built on
        (a shared base such as rules.SpecModel): editing any of them retires its entries."""
        modules = sorted(
            {klass.__module__ for klass in model.__mro__ if klass.__module__.startswith("advisor.")}
        )
        key = ",".join(modules)
        if key not in self._fingerprints:
            self._fingerprints[key] = source_fingerprint(*modules)
        return self._fingerprints[key]

    def save(self) -> None:
        stale = set(self._entries) - self._used
        if stale and self._used:
            for key in stale:
                del self._entries[key]
            self._dirty = True
        if self._dirty and self._path is not None:
            data = pickle.dumps(self._entries, protocol=pickle.HIGHEST_PROTOCOL)
            self._dirty = not write_cache(self._path, data)
