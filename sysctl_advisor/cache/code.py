"""Generated code kept between runs: the rule expressions' code objects and the output
templates' Jinja bytecode, each in one marshal file of the private cache directory.

Code generation is the expensive part of Jinja (about 0.7 ms per expression), so generated
code is kept keyed by a hash of its source, the way Python keeps .pyc files. A file is named
after the Python, the Jinja and the advisor version and the code that generates its entries,
so another version never loads it. It is read and written only through the private cache
directory's descriptor and checks (files.py: a planted or foreign file is ignored, never
loaded): no library is handed a cache path. The
expression entries a run did not use are dropped when it saves, so that file does not grow.
"""

from __future__ import annotations

import marshal
import sys
from types import CodeType

import jinja2

from sysctl_advisor import __version__
from sysctl_advisor.cache.files import cache_directory, source_fingerprint


def code_cache_name(kind: str, *generators: str) -> str:
    """`KIND-pyXY-jinjaJ-VERSION-FINGERPRINT.marshal`: FINGERPRINT covers the source of the
    modules that generate the code (`generators`)."""
    tag = (
        f"py{sys.version_info[0]}{sys.version_info[1]}-jinja{jinja2.__version__}-"
        f"{__version__}-{source_fingerprint(*generators)}"
    )
    return f"{kind}-{tag}.marshal"


class CodeCache:
    """Marshalled code by key, in one cache file (`code_cache_name`). With `keep_unused`,
    saving keeps the entries this run did not use (a run renders one of several templates)."""

    def __init__(self, name: str, keep_unused: bool = False) -> None:
        self._name = name
        self._directory = cache_directory()
        self._keep_unused = keep_unused
        self._codes = self._directory.read_entries(name) if self._directory else {}
        self._used: set[str] = set()
        self._dirty = False

    def get(self, key: str) -> bytes | None:
        """The marshalled entry for `key` (unmarshalled by whoever runs it), marked as used."""
        raw = self._codes.get(key)
        if raw is not None:
            self._used.add(key)
        return raw

    def put(self, key: str, raw: bytes) -> None:
        self._codes[key] = raw
        self._used.add(key)
        self._dirty = True

    def save(self, keep_unused: bool = False) -> None:
        """Write the file if anything was added; the entries this run did not use are dropped
        unless the cache keeps them (`keep_unused` here or when it was made)."""
        if self._directory is None:
            return
        if not (self._keep_unused or keep_unused) and set(self._codes) - self._used:
            self._codes = {k: v for k, v in self._codes.items() if k in self._used}
            self._dirty = True
        if self._dirty:
            self._dirty = not self._directory.write_entries(self._name, self._codes)


def put_code(cache: CodeCache, key: str, code: CodeType) -> None:
    cache.put(key, marshal.dumps(code))


def load_code(raw: bytes | None) -> CodeType | None:
    """A cached entry as a code object; None when it is damaged or is not code."""
    try:
        code = marshal.loads(raw or b"")
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


class TemplateCodeCache(jinja2.BytecodeCache):
    """Jinja's bytecode cache for the output templates, in a CodeCache: Jinja asks by bucket
    key and never sees a path. Saved by `save`, after rendering."""

    def __init__(self, name: str) -> None:
        self.codes = CodeCache(name, keep_unused=True)

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        raw = self.codes.get(bucket.key)
        if raw is not None:
            bucket.bytecode_from_string(raw)  # Jinja checks its own magic and checksum

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.codes.put(bucket.key, bucket.bytecode_to_string())
        self.codes.save()
