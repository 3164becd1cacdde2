"""Which files a knowledge load reads: the catalog's file names and the listing of rule,
profile and check-rule directories, one listing for every loader."""

from __future__ import annotations

from pathlib import Path

KEY_CATALOG = "keys.yaml"
KERNEL_MODEL = "kernel-model.yaml"
SERVER_TABLE = "servers.yaml"
MESSAGE_CATALOG = "kernel-messages.yaml"
KUBERNETES = "kubernetes.yaml"


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
