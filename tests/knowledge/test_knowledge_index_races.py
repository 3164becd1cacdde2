"""The index that lets `recommend -p X` load only the rules X runs describes the files a whole
load checked, never files that changed while it ran: a rule file edited during the whole load
(a `git pull` in a --rules-dir beside a cron run) is checked whole again on the next run."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.knowledge import profiles as profiles_module
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.errors import InputError
from tests.conftest import ROOT


def _site(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A --rules-dir with one rule of a family of its own, an empty --profiles-dir, and the
    rule file."""
    rules, profiles = tmp_path / "rules", tmp_path / "profiles"
    shipped = sorted((ROOT / "rules").rglob("*.yaml"))
    source = next(
        p for p in shipped if "params." in p.read_text() and not {"catalog", "check"} & set(p.parts)
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
