"""A plan reads the same few hundred citations, and a fleet reads them again for every host:
each well-formed citation is parsed once per process; a malformed one is refused every time."""

from __future__ import annotations

import re
import uuid

import pytest

from sysctl_advisor.knowledge.sources import citation_parts


def test_a_citation_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    match = re.match

    def recording(pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
        parsed.append(text)
        return match(pattern, text, flags)

    monkeypatch.setattr(re, "match", recording)
    citation = f"source-{uuid.uuid4().hex[:12]}: section 2"
    for _ in range(3):
        assert citation_parts(citation) == (citation.split(":")[0], "section 2")
    assert parsed == [citation]


def test_a_malformed_citation_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(ValueError, match="a reference is a source id"):
            citation_parts("Not An Id: here")
