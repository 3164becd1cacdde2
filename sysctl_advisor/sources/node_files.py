"""The kubelet's and the CNI plugins' configuration files of a host or a copied tree (the
facts' `kubernetes_files`): which of the places the Kubernetes catalog names
(rules/catalog/kubernetes.yaml `node.files`, handed in by the command) hold a regular file, and
the kubelet's port from its configuration. Under a copied tree only what resolves inside it
counts (judged by the descriptor opened), and nothing but a regular file: a link out of the
tree is the host running the advisor, not the host copied."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from sysctl_advisor.model.documents import YamlBounds, parse_document, read_descriptor
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.tree_paths import inside, listed_names, open_regular

# Where to look: each absolute path (a `*` only in its last part) and whether the file is a
# KubeletConfiguration, whose `port:` is the kubelet's port.
NodePlaces = Sequence[tuple[str, bool]]

MAX_LISTED = 1024  # entries of a configuration directory looked at (a CNI directory holds a few)
MAX_FOUND = 64  # as the facts contract holds
# A KubeletConfiguration is a few KB; one that is not read within this is read for no port.
KUBELET_CONFIG = YamlBounds("a kubelet configuration", 256 * 1024, 20_000)
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")  # as the facts' paths allow


def read_node_files(root: Path, places: NodePlaces, live: bool) -> dict[str, Any]:
    """`{found: [paths], kubelet_port: N}` (no port where no configuration found gives one):
    the facts' `kubernetes_files`, every place looked at."""
    tree = None if live else root
    inside_tree = None if tree is None else partial(inside, tree)
    found: list[str] = []
    port: int | None = None
    listings: dict[str, list[str]] = {}
    for place, kubelet_config in places:
        folder, _, pattern = place.rpartition("/")
        if "*" in pattern:
            if folder not in listings:
                names = listed_names(root / folder.lstrip("/"), inside_tree, MAX_LISTED) or []
                listings[folder] = sorted(n for n in names if _NAME.fullmatch(n))
            paths = [f"{folder}/{n}" for n in listings[folder] if fnmatch.fnmatchcase(n, pattern)]
        else:
            paths = [place]
        for path in paths:
            if path in found or len(found) >= MAX_FOUND:
                continue
            fd = open_regular(root / path.lstrip("/"), tree)
            if fd is None:
                continue
            try:
                if kubelet_config and port is None:
                    port = _kubelet_port(fd, path)
            finally:
                os.close(fd)
            found.append(path)
    files: dict[str, Any] = {"found": found}
    if port is not None:
        files["kubelet_port"] = port
    return files


def _kubelet_port(fd: int, path: str) -> int | None:
    """A KubeletConfiguration's `port:` (1-65535), read from the open descriptor within the
    kind's bounds; None where the file gives none, or is no document the bounds allow (the
    file's presence is the sign; its port only refines it)."""
    try:
        data = read_descriptor(fd, KUBELET_CONFIG.max_bytes)
    except OSError:
        return None
    if data is None:
        return None
    try:
        document = parse_document(data.decode("utf-8"), Path(path), KUBELET_CONFIG)
    except (UnicodeDecodeError, InputError):
        return None
    port = document.get("port") if isinstance(document, dict) else None
    if isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535:
        return port
    return None
