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

from sysctl_advisor.knowledge.facts_cache import (
    facts_cache_file,
    facts_key,
    keep_judged_facts,
    read_entries,
)
from sysctl_advisor.knowledge.knowledge_files import spec_files
from sysctl_advisor.knowledge.spec_cache import cached_spec_entries, keep_judged_specs, spec_key
from sysctl_advisor.model.documents import read_text
from sysctl_advisor.model.plain_models import choose_plain

# The output formats rendered without pydantic, by command.
PLAIN_FORMATS = {
    "recommend": ("conf", "markdown", "tuned", "ansible"),
    "diff": ("text", "markdown"),
    "check": ("text", "github", "sarif", "markdown"),
}


def choose_models(command: str, options: dict[str, Any]) -> bool:
    """Choose plain models for this process when the run only loads validated objects;
    True when chosen. The cache entries judged are kept for the run (judged_entries), so a
    run of the same user that rewrites a cache meanwhile cannot take them away."""
    judged = _judge(command, options)
    if judged is None or not choose_plain():
        return False
    specs, facts = judged
    keep_judged_specs(specs)
    keep_judged_facts(facts)
    return True


def only_loads_validated(command: str, options: dict[str, Any]) -> bool:
    return _judge(command, options) is not None


_Judged = tuple[dict[str, bytes], dict[str, tuple[bytes, bool]]]


def _judge(command: str, options: dict[str, Any]) -> _Judged | None:
    """The spec and facts cache entries the run needs, when it needs nothing else; else None."""
    if options.get("fmt") not in PLAIN_FORMATS.get(command, ()):
        return None
    if options.get("nginx_conf") is not None:
        return None
    facts = options.get("facts")
    if facts is None and command != "check":
        return None  # this host, read live: its facts are validated as they are read
    try:
        facts_entries = _facts_entries(Path(facts)) if facts is not None else {}
        specs = _spec_entries(options.get("rules_dir") or [], options.get("profiles_dir") or [])
    except Exception:  # unreadable, missing, refused: the pydantic run says what is wrong
        return None
    if facts_entries is None or specs is None:
        return None
    return specs, facts_entries


def _facts_entries(path: Path) -> dict[str, tuple[bytes, bool]] | None:
    key = facts_key(path, read_text(path))
    entry = read_entries(facts_cache_file()).get(key)
    if entry is None or entry[1]:  # not cached, or it names a config file to parse
        return None
    return {key: entry}


def _spec_entries(rules_dirs: list[Path], profiles_dirs: list[Path]) -> dict[str, bytes] | None:
    if not all(d.is_dir() for d in [*rules_dirs, *profiles_dirs]):
        return None
    cached = cached_spec_entries()
    needed = {
        spec_key(kind, read_text(path)) for path, kind in spec_files(rules_dirs, profiles_dirs)
    }
    if not needed <= cached.keys():
        return None
    return {key: cached[key] for key in needed}
