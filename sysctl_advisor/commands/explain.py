"""`explain`, `profiles` and `rules`: what the advisor knows, as text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sysctl_advisor.commands.common import emit, load_knowledge, parse_overrides, read_facts
from sysctl_advisor.model.errors import InputError


def explain(
    key: str,
    facts: Path | None = None,
    profile: str | Sequence[str] | None = None,
    settings: list[str] | None = None,
    nginx_conf: Path | None = None,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
) -> int:
    from sysctl_advisor.outputs.explain_text import explain_key

    if settings and profile is None:
        raise InputError("needs --profile (parameters belong to a profile)", field="--set")
    kb = load_knowledge(rules_dir, profiles_dir)
    host = read_facts(facts, kb, nginx_conf) if (facts or profile) else None
    emit(explain_key(kb, key, host, profile, parse_overrides(settings)), None)
    return 0


def profiles(rules_dir: list[Path] | None = None, profiles_dir: list[Path] | None = None) -> int:
    from sysctl_advisor.outputs.explain_text import describe_profiles

    emit(describe_profiles(load_knowledge(rules_dir, profiles_dir)), None)
    return 0


def rules(
    rule_id: str | None = None,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
) -> int:
    from sysctl_advisor.outputs.explain_text import describe_rules

    emit(describe_rules(load_knowledge(rules_dir, profiles_dir), rule_id), None)
    return 0
