"""Which files a knowledge load reads: the catalog's file names and the listing of rule,
profile and check-rule directories, one listing for every loader."""

from __future__ import annotations

import os
from pathlib import Path

from sysctl_advisor.model.errors import InputError

KEY_CATALOG = "keys.yaml"
KERNEL_MODEL = "kernel-model.yaml"
SERVER_TABLE = "servers.yaml"
MESSAGE_CATALOG = "kernel-messages.yaml"
APP_MESSAGE_CATALOG = "app-messages.yaml"
KUBERNETES = "kubernetes.yaml"
NODE_PLATFORMS = "node-platforms"  # a folder: one file per Kubernetes platform
WRITERS = "writers.yaml"
HELPERS = "helpers.yaml"  # the programs the kernel runs as root that a sysctl names
KERNEL_KEYS = "kernel-keys.yaml"  # the keys each Linux release has, from its sysctl tables


MAX_RULE_DEPTH = 8  # folders below a rules directory (the shipped ones use one)


def rule_files(directory: Path) -> list[Path]:
    """Every *.yaml under a rules directory but its catalog/ and check/ folders (the key
    catalog and the `check` linter's rules have their own schemas); folders nested deeper than
    MAX_RULE_DEPTH are refused (a thousand of them made the walk itself fail), and so is a
    folder that cannot be listed (skipped, its rules would silently not load)."""
    found: list[Path] = []

    def unreadable(exc: OSError) -> None:  # a folder skipped would hide its rules
        raise InputError(f"cannot list it: {exc.strerror or exc}", path=exc.filename)

    for folder, folders, files in os.walk(directory, onerror=unreadable):
        relative = Path(folder).relative_to(directory).parts
        if len(relative) >= MAX_RULE_DEPTH and folders:
            raise InputError(
                f"folders nested more than {MAX_RULE_DEPTH} deep in a rules directory",
                path=Path(folder) / folders[0],
            )
        if {"catalog", "check"} & set(relative):
            continue
        found += [Path(folder) / name for name in files if name.endswith(".yaml")]
    return sorted(found)


def profile_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


def check_rule_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


# a rule's id: its family (the folder it lives in), a dot, its name
RULE_ID = r"^[a-z0-9]+(?:-[a-z0-9]+)*(?:\.[a-z0-9]+(?:-[a-z0-9]+)*)+$"


def check_family(rule_id: str, path: Path, directory: Path) -> None:
    """A rule in a folder of a rules directory belongs to the family the folder names (its id
    begins with the folder's name: rules/time-wait/fin-timeout.yaml is time-wait.*)."""
    folders = path.relative_to(directory).parts[:-1]
    family = rule_id.split(".")[0]
    if folders and folders[0] != family:
        raise InputError(
            f"rule id {rule_id!r} is not of the family its folder names ({folders[0]}.*)",
            path=path,
            field="id",
        )
