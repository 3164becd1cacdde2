"""Whether a one-shot run only loads what pydantic validated before: then its models are plain.

A warm `recommend`, `diff` or `check` takes every knowledge file and its facts file from the
caches; pydantic's model machinery would cost it more than everything else it does (see
plain_models). The entry point asks here, before any model class is defined, and chooses
plain models when every one of these holds:

* the caches are on and hold, under the keys the loaders will compute, every file
  KnowledgeBase.load validates (knowledge_files.spec_files, with --rules-dir and
  --profiles-dir) and the facts file (--facts; `check` may go without);
* nothing in the run validates after loading: no service in the facts names a config file
  and there is no --nginx-conf (those are parsed and validated), and the output is not one
  of the formats built from pydantic models (JSON documents, Kubernetes manifests).

Anything this module cannot read or is unsure of answers "no": the run then uses pydantic
and reports whatever is wrong as usual. Nothing is unpickled here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.knowledge.facts_cache import facts_cache_file, facts_key, read_entries
from advisor.knowledge.knowledge_files import spec_files
from advisor.knowledge.spec_cache import cached_spec_keys, spec_key
from advisor.model.documents import read_text
from advisor.model.plain_models import choose_plain

# The output formats rendered without pydantic, by command.
PLAIN_FORMATS = {
    "recommend": ("conf", "markdown", "tuned", "ansible"),
    "diff": ("text", "markdown"),
    "check": ("text", "github", "sarif", "markdown"),
}


def choose_models(command: str, options: dict[str, Any]) -> bool:
    """Choose plain models for this process when the run only loads validated objects;
    True when chosen."""
    return only_loads_validated(command, options) and choose_plain()


def only_loads_validated(command: str, options: dict[str, Any]) -> bool:
    if options.get("fmt") not in PLAIN_FORMATS.get(command, ()):
        return False
    if options.get("nginx_conf") is not None:
        return False
    facts = options.get("facts")
    if facts is None and command != "check":
        return False  # this host, read live: its facts are validated as they are read
    try:
        if facts is not None and not _facts_cached(Path(facts)):
            return False
        return _knowledge_cached(options.get("rules_dir") or [], options.get("profiles_dir") or [])
    except Exception:  # unreadable, missing, refused: the pydantic run says what is wrong
        return False


def _facts_cached(path: Path) -> bool:
    entry = read_entries(facts_cache_file()).get(facts_key(path, read_text(path)))
    return entry is not None and not entry[1]  # cached, and names no config file to parse


def _knowledge_cached(rules_dirs: list[Path], profiles_dirs: list[Path]) -> bool:
    if not all(d.is_dir() for d in [*rules_dirs, *profiles_dirs]):
        return False
    cached = cached_spec_keys()
    return bool(cached) and all(
        spec_key(kind, read_text(path)) in cached
        for path, kind in spec_files(rules_dirs, profiles_dirs)
    )
