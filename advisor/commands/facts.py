"""`facts`: read this host (or a copied tree) into a facts file for --facts."""

from __future__ import annotations

from pathlib import Path

from advisor.commands.common import emit, load_knowledge
from advisor.model.errors import InputError


def facts(root: Path = Path("/"), fmt: str = "yaml", output: Path | None = None) -> int:
    from advisor.model.host_facts import facts_to_data
    from advisor.outputs.facts_file import render_facts
    from advisor.sources.local_host import collect

    if not root.is_dir():
        raise InputError("not a directory", path=root, field="--root")
    kb = load_knowledge()
    data = facts_to_data(collect(list(kb.catalog.keys), root))
    emit(render_facts(data, fmt, root), output)
    return 0
