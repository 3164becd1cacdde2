"""Issue 19: a run is judged warm (plain models, no pydantic) only when every file it will
validate is in the caches and nothing after loading validates; everything else is not."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.knowledge import spec_cache
from sysctl_advisor.knowledge.facts_cache import cached_facts
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.knowledge_files import spec_files
from sysctl_advisor.knowledge.spec_cache import SpecCache, model_kind
from sysctl_advisor.knowledge.warm_start import PLAIN_FORMATS, choose_models, only_loads_validated
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.facts_file import facts_from_text
from tests.conftest import ROOT

DCACHE = ROOT / "examples" / "dcache-32bit.yaml"
NGINX_HOST = ROOT / "examples" / "ec2-nginx-frontend.yaml"


@pytest.fixture
def warm(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache filled as a first run fills it: the shipped knowledge and dcache-32bit."""
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(workdir / "cache"))
    KnowledgeBase.load()
    cached_facts(DCACHE, facts_from_text)
    return workdir


def _a_shipped_rule() -> Path:
    return next(
        p
        for p in sorted((ROOT / "rules").rglob("*.yaml"))
        if not {"catalog", "check"} & set(p.relative_to(ROOT / "rules").parts)
    )


def _recommend(facts: Path | None = DCACHE, **options: Any) -> dict[str, Any]:
    return {"fmt": "conf", "profile": "gridftp", "facts": facts, **options}


def test_a_warm_run_is_recognised(warm: Path) -> None:
    assert only_loads_validated("recommend", _recommend())
    for fmt in PLAIN_FORMATS["recommend"]:
        assert only_loads_validated("recommend", _recommend(fmt=fmt))
    assert only_loads_validated("diff", {"fmt": "text", "profile": "base", "facts": DCACHE})
    assert only_loads_validated("check", {"fmt": "sarif", "paths": [DCACHE]})  # no facts needed
    assert only_loads_validated("check", {"fmt": "text", "facts": DCACHE, "paths": [DCACHE]})


@pytest.mark.parametrize(
    "command, options",
    [
        ("recommend", _recommend(fmt="json")),  # JSON documents are pydantic models
        ("recommend", _recommend(fmt="kubernetes")),
        ("diff", {"fmt": "json", "profile": "base", "facts": DCACHE}),
        ("check", {"fmt": "json", "paths": [DCACHE]}),
        ("recommend", _recommend(nginx_conf=Path("nginx.conf"))),  # parsed, then validated
        ("recommend", _recommend(facts=None)),  # this host, read live
        ("diff", {"fmt": "text", "profile": "base", "facts": None}),
        ("recommend", _recommend(facts=Path("/nonexistent/facts.yaml"))),
        ("recommend", _recommend(rules_dir=[Path("/nonexistent")])),
        ("fleet", _recommend()),
    ],
)
def test_runs_that_validate_something_are_not_warm(
    warm: Path, command: str, options: dict[str, Any]
) -> None:
    assert not only_loads_validated(command, options)


def test_a_cold_cache_or_no_cache_is_not_warm(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(workdir / "empty"))
    assert not only_loads_validated("recommend", _recommend())
    assert not only_loads_validated("check", {"fmt": "text", "paths": [DCACHE]})
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", "off")
    KnowledgeBase.load()
    cached_facts(DCACHE, facts_from_text)
    assert not only_loads_validated("recommend", _recommend())


def test_facts_that_name_a_service_config_are_not_warm(warm: Path) -> None:
    """The nginx config a facts file names is parsed and validated after loading."""
    plain = warm / "plain.yaml"
    plain.write_text(NGINX_HOST.read_text())  # services: {nginx: {listen_backlog: 511}}
    cached_facts(plain, facts_from_text)
    assert only_loads_validated("recommend", _recommend(facts=plain))
    named = warm / "named.yaml"
    named.write_text(NGINX_HOST.read_text().replace("{listen_backlog: 511}", "{config: n.conf}"))
    (warm / "n.conf").write_text("events {}\n")
    cached_facts(named, facts_from_text)
    assert not only_loads_validated("recommend", _recommend(facts=named))


def test_any_edit_or_new_file_is_not_warm_until_validated(warm: Path) -> None:
    facts = warm / "host.yaml"
    facts.write_text(DCACHE.read_text())
    assert not only_loads_validated("recommend", _recommend(facts=facts))  # another path
    cached_facts(facts, facts_from_text)
    assert only_loads_validated("recommend", _recommend(facts=facts))
    facts.write_text(facts.read_text() + "# edited\n")
    assert not only_loads_validated("recommend", _recommend(facts=facts))

    rules = warm / "rules"
    rules.mkdir()
    rule = _a_shipped_rule()
    local = rules / rule.name  # the same id: it replaces the shipped rule
    local.write_text(rule.read_text() + "# a local copy\n")
    options = _recommend(rules_dir=[rules])
    assert not only_loads_validated("recommend", options)
    KnowledgeBase.load([rules])
    assert only_loads_validated("recommend", options)
    local.write_text(local.read_text() + "# edited\n")
    assert not only_loads_validated("recommend", options)
    local.write_text(local.read_text().removesuffix("# edited\n"))
    assert only_loads_validated("recommend", options)
    (rules / "new.yaml").write_text(rule.read_text() + "# another copy\n")
    assert not only_loads_validated("recommend", options)  # a file the cache never saw


def test_the_listing_names_each_file_the_loaders_validate_and_its_model(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", "off")
    rules, profiles = workdir / "rules", workdir / "profiles"
    (rules / "nested").mkdir(parents=True)
    (rules / "catalog").mkdir()
    profiles.mkdir()
    (rules / "nested" / "x.yaml").write_text(_a_shipped_rule().read_text())
    (rules / "catalog" / "ignored.yaml").write_text("not: a rule\n")
    shutil.copy(ROOT / "profiles" / "base.yaml", profiles / "base.yaml")
    loaded: list[tuple[Path, str]] = []
    original = SpecCache.load

    def recording(self: SpecCache, path: Path, model: Any, what: str) -> Any:
        loaded.append((path, model_kind(model)))
        return original(self, path, model, what)

    monkeypatch.setattr(SpecCache, "load", recording)
    KnowledgeBase.load([rules], [profiles])
    listed = spec_files([rules], [profiles])
    assert sorted(loaded) == sorted(listed)
    assert (rules / "nested" / "x.yaml", "sysctl_advisor.knowledge.rules.RuleSpec") in listed
    assert all(path.name != "ignored.yaml" for path, _ in listed)


def test_a_file_that_changes_after_the_check_stops_a_plain_run(
    warm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """warm_start read the text a moment before the loader: on plain models nothing can be
    validated, so the run stops with one line instead of using something unchecked."""
    monkeypatch.setattr(spec_cache, "plain_chosen", lambda: True)
    edited = warm / "edited.yaml"
    edited.write_text((ROOT / "rules" / "catalog" / "servers.yaml").read_text() + "# new\n")
    from sysctl_advisor.knowledge.servers import ServerTableSpec

    with pytest.raises(InputError, match="changed while the advisor read it"):
        SpecCache().load(edited, ServerTableSpec, "a server table")


def test_a_process_that_defined_models_keeps_pydantic(warm: Path) -> None:
    """This test process imported pydantic models long ago: the choice is no longer open."""
    assert only_loads_validated("recommend", _recommend())
    assert choose_models("recommend", _recommend()) is False


def test_the_entries_a_run_was_judged_by_survive_another_run_rewriting_the_cache(
    warm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another run of the same user may rewrite a cache file between the judgement and the
    load (a run with another --rules-dir prunes the specs it did not use; 32 other facts files
    push this one out). The run uses the entries it was judged by instead of stopping."""
    import marshal

    from sysctl_advisor.knowledge import facts_cache, warm_start
    from sysctl_advisor.knowledge.cache_files import write_cache
    from sysctl_advisor.model import plain_models

    judged = warm_start._judge("recommend", _recommend())
    assert judged is not None
    monkeypatch.setattr(spec_cache, "_judged", {})
    monkeypatch.setattr(facts_cache, "_judged", {})
    spec_cache.keep_judged_specs(judged[0])
    facts_cache.keep_judged_facts(judged[1])
    for path in (warm / "cache" / "private").glob("*.marshal"):
        assert write_cache(path, marshal.dumps({}))
    monkeypatch.setattr(spec_cache, "plain_chosen", lambda: True)  # a miss would stop the run
    monkeypatch.setattr(plain_models, "plain_chosen", lambda: True)
    kb = KnowledgeBase.load()
    assert "gridftp" in kb.profiles
    assert cached_facts(DCACHE, facts_from_text).hostname
