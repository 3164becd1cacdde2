"""Facts files: one host's facts as YAML or JSON, or one host's `ansible -m setup --tree` file."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.model.documents import FACTS_FILE, parse_document
from sysctl_advisor.model.host_facts import HostFacts, facts_from_data
from sysctl_advisor.sources.ansible_facts import host_facts_from_document


def facts_from_text(path: Path, text: str) -> HostFacts:
    """The facts in `text`, read from `path` (named in errors)."""
    data = parse_document(text, path, FACTS_FILE)
    if isinstance(data, dict) and "ansible_facts" in data:
        return host_facts_from_document(data, str(path))
    return facts_from_data(data, path, text)
