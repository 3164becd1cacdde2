"""A facts file validated once is taken from the validated-facts cache afterwards,
and plain_data (what rule expressions get) is dataclasses.asdict without its deep copies."""

from __future__ import annotations

import dataclasses
import glob
import os
import pickle
from pathlib import Path

import pytest
import yaml

from sysctl_advisor.cache.facts import MAX_ENTRIES, FactsCache, cached_facts, facts_key
from sysctl_advisor.model.host_facts import HostFacts, facts_from_data
from sysctl_advisor.model.model_base import plain_data
from sysctl_advisor.sources.facts_file import facts_from_text
from tests.conftest import ROOT, load_facts


def _case_facts() -> list[dict[str, object]]:
    found = []
    for name in sorted(glob.glob(str(ROOT / "tests" / "cases" / "*.yaml"))):
        for case in yaml.safe_load(Path(name).read_text()).get("cases", []):
            if isinstance(case.get("facts"), dict):
                found.append(case["facts"])
    return found


EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml") if "memory" in p.read_text())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_plain_data_is_asdict_for_every_example(path: Path) -> None:
    facts = load_facts(path)
    assert plain_data(facts) == dataclasses.asdict(facts)
    assert list(plain_data(facts)) == list(dataclasses.asdict(facts))


def test_plain_data_is_asdict_for_every_rule_case() -> None:
    checked = 0
    for data in _case_facts():
        try:
            facts = facts_from_data(data)
        except Exception:  # a case about refused facts
            continue
        dumped = dataclasses.asdict(facts)
        walked = plain_data(facts)
        assert walked == dumped
        assert [type(v) for v in walked.values()] == [type(v) for v in dumped.values()]
        checked += 1
    assert checked > 50


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _refused(path: Path, text: str) -> HostFacts:
    raise AssertionError(f"validated again: {path}")


def test_an_unchanged_facts_file_is_validated_once(cache_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "host.yaml"
    path.write_text((ROOT / "examples" / "dcache-32bit.yaml").read_text())
    first = cached_facts(path, facts_from_text)
    assert list((cache_dir / "private").glob("facts-*.marshal"))
    again = cached_facts(path, _refused)
    assert again == first and again is not first
    # any edit, or the same text under another name, is validated afresh
    path.write_text(path.read_text() + "\n# edited\n")
    with pytest.raises(AssertionError, match="validated again"):
        cached_facts(path, _refused)
    twin = tmp_path / "twin.yaml"
    twin.write_text((ROOT / "examples" / "dcache-32bit.yaml").read_text())
    with pytest.raises(AssertionError, match="validated again"):
        cached_facts(twin, _refused)


def test_a_refused_facts_file_is_not_cached(cache_dir: Path, tmp_path: Path) -> None:
    from sysctl_advisor.model.errors import InputError

    path = tmp_path / "bad.yaml"
    path.write_text("memory: {total: lots}\n")
    for _ in range(2):
        with pytest.raises(InputError):
            cached_facts(path, facts_from_text)
    assert not list((cache_dir / "private").glob("facts-*.marshal"))


def test_the_cache_keeps_at_most_max_entries(cache_dir: Path, tmp_path: Path) -> None:
    text = (ROOT / "examples" / "dcache-32bit.yaml").read_text()
    paths = [tmp_path / f"host{i}.yaml" for i in range(MAX_ENTRIES + 3)]
    for path in paths:
        path.write_text(text)
        cached_facts(path, facts_from_text)
    cache = FactsCache()
    assert len(cache._entries) == MAX_ENTRIES
    assert cache.get(paths[0], text) is None  # the oldest went first
    assert cache.get(paths[-1], text) is not None


def test_cache_off_reads_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", "off")
    path = ROOT / "examples" / "dcache-32bit.yaml"
    assert cached_facts(path, facts_from_text) == load_facts(path)
    assert FactsCache().get(path, path.read_text()) is None


class _Plant:
    """Unpickling this creates the marker file: proof that a planted pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_a_planted_entry_in_a_cache_others_can_write_is_never_unpickled(
    cache_dir: Path, tmp_path: Path
) -> None:
    """The entry sits under the very key the next read looks up; only the file's mode is
    wrong (group- and world-writable), so cache/files.py refuses the whole file."""
    import marshal

    path = ROOT / "examples" / "dcache-32bit.yaml"
    cached_facts(path, facts_from_text)  # creates the private directory and the file
    cache_file = next((cache_dir / "private").glob("facts-*.marshal"))
    marker = tmp_path / "MARKER"
    planted = {facts_key(path, path.read_text()): pickle.dumps(_Plant(marker))}
    cache_file.write_bytes(marshal.dumps(planted))
    os.chmod(cache_file, 0o666)
    facts = cached_facts(path, facts_from_text)
    assert isinstance(facts, HostFacts) and not marker.exists()
    # the same file, private again, is loaded: the check above is what stopped it
    os.chmod(cache_file, 0o600)
    cache_file.write_bytes(marshal.dumps(planted))
    os.chmod(cache_file, 0o600)
    assert FactsCache().get(path, path.read_text()) is None  # not a HostFacts: refused
    assert marker.exists()


def test_plain_data_is_asdict_for_every_catalog_key_and_server() -> None:
    """What `check` rules see of a key's spec, and what backlog rules see of a server, is the
    same data dataclasses.asdict gives."""
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
    from sysctl_advisor.knowledge.servers import _SHOWN

    kb = KnowledgeBase.load()
    for key in kb.catalog.keys.values():
        assert plain_data(key) == dataclasses.asdict(key)
        assert list(plain_data(key)) == list(dataclasses.asdict(key))
    for server in kb.servers.servers:
        shown = {name: getattr(server, name) for name in _SHOWN}
        dumped = dataclasses.asdict(server)
        assert list(shown.items()) == [(name, dumped[name]) for name in dumped if name in _SHOWN]
