"""Validated knowledge files (catalog, rules, profiles), cached by content hash.

Validating ~40 YAML files needs pydantic to build every spec model's schema, which costs more
than the rest of a run. The validated objects are pickled in the user's cache directory keyed
by the file's content hash and the model, so an unchanged file is validated once. Any edit
changes the hash and is validated again. The cache holds only what the advisor wrote itself.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from advisor import __version__
from advisor.errors import InputError
from advisor.expressions import cache_directory, save_cache_file
from advisor.yamlio import parse_document, read_text, validation_error

M = TypeVar("M", bound=BaseModel)


class SpecCache:
    def __init__(self) -> None:
        base = cache_directory()
        tag = f"py{sys.version_info[0]}{sys.version_info[1]}-{__version__}"
        self._path = base / f"specs-{tag}.pickle" if base is not None else None
        self._entries: dict[str, Any] = {}
        self._dirty = False
        if self._path is not None:
            try:
                loaded = pickle.loads(self._path.read_bytes())
                if isinstance(loaded, dict):
                    self._entries = loaded
            except (
                OSError,
                pickle.UnpicklingError,
                EOFError,
                AttributeError,
                ImportError,
                TypeError,
                ValueError,
            ):
                self._entries = {}

    def load(self, path: Path, model: type[M], what: str) -> M:
        """The file validated as `model`; `what` names the file's kind in errors."""
        text = read_text(path)
        key = hashlib.sha1(f"{model.__module__}.{model.__qualname__}\0{text}".encode()).hexdigest()
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

    def save(self) -> None:
        if self._dirty and self._path is not None:
            data = pickle.dumps(self._entries, protocol=pickle.HIGHEST_PROTOCOL)
            self._dirty = not save_cache_file(self._path, data)
