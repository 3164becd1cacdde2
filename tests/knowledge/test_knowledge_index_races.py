"""The index that lets `recommend -p X` load only the rules X runs describes the files a whole
load checked, never files that changed while it ran: a rule file edited during the whole load
(a `git pull` in a --rules-dir beside a cron run) is checked whole again on the next run, and
one edited while a run reads it on the index's word is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.knowledge import profiles as profiles_module
from sysctl_advisor.knowledge import rules as rules_module
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase, OnDemand
from sysctl_advisor.model.errors import InputError
from tests.conftest import ROOT


def _site(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A --rules-dir with one rule of a family of its own, an empty --profiles-dir, and the
    rule file."""
    rules, profiles = tmp_path / "rules", tmp_path / "profiles"
    shipped = sorted((ROOT / "rules").rglob("*.yaml"))
    source = next(
        p
        for p in shipped
        if "params." in p.read_text()
        and not {"catalog", "check"} & set(p.relative_to(ROOT / "rules").parts)
    )
    family = rules / f"site-{source.parent.name}"
    family.mkdir(parents=True)
    rule = family / source.name
    rule.write_text(source.read_text().replace("id: ", "id: site-"))
    profiles.mkdir()
    return rules, profiles, rule


def test_a_rule_file_edited_during_the_whole_load_is_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / "cache"))
    rules, profiles, rule = _site(tmp_path)
    real = profiles_module.check_parameters
    edited = rule.read_text().replace("params.", "params.undeclared_", 1)

    def edit_while_checking(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        rule.write_text(edited)  # after the rule was read, before the load ends

    monkeypatch.setattr(profiles_module, "check_parameters", edit_while_checking)
    KnowledgeBase.lazy([rules], [profiles]).workload("base")
    monkeypatch.setattr(profiles_module, "check_parameters", real)
    # the next run checks the files whole, as a run with an empty cache does
    for cache in ("cache", "cold"):
        monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / cache))
        with pytest.raises(InputError, match="undeclared_"):
            KnowledgeBase.lazy([rules], [profiles]).workload("base")


def test_a_rule_file_edited_while_a_run_reads_it_on_the_index_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that takes the index's word reads each rule file after it took the files'
    stat: one edited in between was never checked against the others, and is not used."""
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / "cache"))
    rules, profiles, rule = _site(tmp_path)
    kb = KnowledgeBase.lazy([rules], [profiles])
    rule_id = next(i for i in kb.rules if i.startswith("site-"))  # checked whole, index kept
    real = rules_module.load_rule
    edited = rule.read_text().replace("params.", "params.undeclared_", 1)

    def edit_then_load(path: Path, *args: object) -> rules_module.Rule:
        if path == rule:
            rule.write_text(edited)  # after the run took the files' stat
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(rules_module, "load_rule", edit_then_load)
    kb = KnowledgeBase.lazy([rules], [profiles])
    assert isinstance(kb.rules, OnDemand)  # on the index's word
    with pytest.raises(InputError, match="changed while this run read it"):
        kb.rules[rule_id]
