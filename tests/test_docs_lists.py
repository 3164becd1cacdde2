"""Lists of the shipped profiles and Kubernetes node platforms in the docs hold exactly what the
knowledge holds. Lists that are nothing but names are generated (`python -m tests.regenerate`,
from the profiles and the formats registry); the tables, a row of prose per name, are checked
here."""

from __future__ import annotations

import re

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs import formats
from tests.conftest import ROOT

DOCS = ROOT / "docs"
NAME = re.compile(r"`([a-z0-9][a-z0-9-]*)`")


def _first_cells(text: str, header: str) -> list[str]:
    """The first cell of every row of the table whose header row starts with `header`."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split(" | ")[0])
    return rows


def test_the_node_platforms_the_command_offers_are_the_knowledges(kb: KnowledgeBase) -> None:
    assert sorted(formats.NODE) == sorted(kb.node_platforms)


def test_the_profiles_page_has_a_row_for_every_profile(kb: KnowledgeBase) -> None:
    text = (DOCS / "profiles.md").read_text()
    cells = _first_cells(text, "| profile | parameters") + _first_cells(text, "| profile | what")
    named = {name for cell in cells for name in NAME.findall(cell)}
    assert set(kb.profiles) <= named, sorted(set(kb.profiles) - named)
    assert named - set(kb.profiles) == set(), "rows for profiles that are not shipped"


def test_the_kubernetes_page_has_a_row_for_every_node_platform(kb: KnowledgeBase) -> None:
    text = (DOCS / "kubernetes.md").read_text()
    cells = _first_cells(text, "| `--format` | where the keys go")
    assert sorted(name for cell in cells for name in NAME.findall(cell)) == sorted(
        kb.node_platforms
    )


def test_the_architecture_names_every_node_platforms_module(kb: KnowledgeBase) -> None:
    text = " ".join((DOCS / "architecture.md").read_text().split())
    listed = re.search(r"in `node_ID\.py`: ([a-z, -]+)\)", text)
    assert listed is not None, "architecture.md no longer lists the node_ID.py modules"
    assert sorted(listed[1].split(", ")) == sorted(kb.node_platforms)
    for platform in kb.node_platforms:
        assert (ROOT / "sysctl_advisor" / "outputs" / f"node_{platform}.py").is_file()
