"""The knowledge base: catalog, rules and profiles, loaded and compiled once per run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.knowledge.catalog import Catalog
from advisor.knowledge.check_rules import CheckRule, load_check_rules
from advisor.knowledge.expressions import Compiler
from advisor.knowledge.profiles import Profile, load_profiles
from advisor.knowledge.resources import data_dir
from advisor.knowledge.rules import Rule, load_rules
from advisor.knowledge.spec_cache import SpecCache
from advisor.model.errors import InputError


@dataclass
class KnowledgeBase:
    compiler: Compiler
    catalog: Catalog
    rules: dict[str, Rule]
    profiles: dict[str, Profile]
    check_rules: dict[str, CheckRule]

    @classmethod
    def load(
        cls, rules_dirs: list[Path] | None = None, profiles_dirs: list[Path] | None = None
    ) -> KnowledgeBase:
        compiler = Compiler()
        specs = SpecCache()
        shipped_rules = data_dir("rules")
        catalog = Catalog(shipped_rules / "catalog", compiler, specs)
        rules = load_rules([shipped_rules, *(rules_dirs or [])], compiler, catalog, specs)
        profiles = load_profiles(
            [data_dir("profiles"), *(profiles_dirs or [])], rules, compiler, specs
        )
        check_rules = load_check_rules(shipped_rules / "check", compiler, specs)
        compiler.save()
        specs.save()
        return cls(compiler, catalog, rules, profiles, check_rules)

    def profile(self, name: str) -> Profile:
        try:
            return self.profiles[name]
        except KeyError:
            known = ", ".join(sorted(self.profiles))
            raise InputError(
                f"unknown profile {name!r} (profiles: {known})", field="--profile"
            ) from None
