"""Which files a knowledge load validates, and as which spec model.

One listing serves the loaders (catalog, rules, profiles, check rules) and warm_start, which
must know every file a run will validate before any model class is defined; the models are
therefore named here as strings (module.ClassName), and a test holds them to the classes the
loaders pass to the spec cache.
"""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.knowledge.resources import data_dir

KEY_CATALOG = "keys.yaml"
KERNEL_MODEL = "kernel-model.yaml"
SERVER_TABLE = "servers.yaml"
MESSAGE_CATALOG = "kernel-messages.yaml"

# The spec model each kind of file is validated as.
CATALOG_FILE = "sysctl_advisor.knowledge.catalog.CatalogFile"
KERNEL_MODEL_FILE = "sysctl_advisor.knowledge.catalog.KernelModelFile"
RULE_SPEC = "sysctl_advisor.knowledge.rules.RuleSpec"
PROFILE_SPEC = "sysctl_advisor.knowledge.profiles.ProfileSpec"
CHECK_RULE_SPEC = "sysctl_advisor.knowledge.check_rules.CheckRuleSpec"
SERVER_TABLE_SPEC = "sysctl_advisor.knowledge.servers.ServerTableSpec"
MESSAGE_CATALOG_SPEC = "sysctl_advisor.knowledge.kernel_messages.MessageCatalog"


def rule_files(directory: Path) -> list[Path]:
    """Every *.yaml under a rules directory but its catalog/ and check/ folders (the key
    catalog and the `check` linter's rules have their own schemas)."""
    return [
        path
        for path in sorted(directory.rglob("*.yaml"))
        if not {"catalog", "check"} & set(path.relative_to(directory).parts[:-1])
    ]


def profile_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


def check_rule_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


def spec_files(rules_dirs: list[Path], profiles_dirs: list[Path]) -> list[tuple[Path, str]]:
    """(path, spec model) for every file KnowledgeBase.load validates with these extra
    directories (--rules-dir, --profiles-dir)."""
    shipped = data_dir("rules")
    catalog = shipped / "catalog"
    files = [
        (catalog / KEY_CATALOG, CATALOG_FILE),
        (catalog / KERNEL_MODEL, KERNEL_MODEL_FILE),
        (catalog / SERVER_TABLE, SERVER_TABLE_SPEC),
        (catalog / MESSAGE_CATALOG, MESSAGE_CATALOG_SPEC),
    ]
    for directory in [shipped, *rules_dirs]:
        files += [(path, RULE_SPEC) for path in rule_files(directory)]
    for directory in [data_dir("profiles"), *profiles_dirs]:
        files += [(path, PROFILE_SPEC) for path in profile_files(directory)]
    files += [(path, CHECK_RULE_SPEC) for path in check_rule_files(shipped / "check")]
    return files
