"""Reading YAML and JSON documents (model.documents): a kind's bounds are checked before a
YAML document is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sysctl_advisor.model import documents
from sysctl_advisor.model.documents import FACTS_FILE, YamlBounds, node_bound, parse_document
from sysctl_advisor.model.errors import InputError
from tests.conftest import ROOT

_NODES = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)


def _nodes(text: str) -> int:
    return sum(isinstance(event, _NODES) for event in yaml.parse(text, Loader=yaml.SafeLoader))


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(":,-?[]{}#&*! \n'\"ab", max_size=8)
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_SCALARS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_DATA, st.sampled_from([False, True, None]))
def test_node_bound_is_never_below_the_nodes(data: Any, flow: bool | None) -> None:
    """In block style, flow style and PyYAML's mix, whatever the scalars hold."""
    text = yaml.safe_dump(data, default_flow_style=flow)
    assert _nodes(text) <= node_bound(text)


@pytest.mark.parametrize(
    "text",
    ["{a}", "{a, b}", "? a", "[a: b]", "[? a]", "{? a}", "- - - a", "[a, ]", "---\n", "",
     "[[[]]]", "{a: {b: [c, {d}]}}", "- &a x\n- *a", "a: !!str b", "[a: b, c: d]", "a:\n"],
)  # fmt: skip
def test_node_bound_holds_for_every_indicator(text: str) -> None:
    assert _nodes(text) <= node_bound(text)


def test_node_bound_holds_for_the_repository_yaml() -> None:
    paths = [*ROOT.glob("rules/**/*.yaml"), *ROOT.glob("profiles/*.yaml"),
             *ROOT.glob("examples/*.yaml"), *ROOT.glob("tests/**/*.yaml")]  # fmt: skip
    assert len(paths) > 100
    for path in paths:
        text = path.read_text()
        assert _nodes(text) <= node_bound(text), path


def test_too_many_nodes_are_refused_before_the_document_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted on the parser's events, one at a time: the composer never runs."""

    def never(*_: object) -> None:
        raise AssertionError("the document was built")

    monkeypatch.setattr(documents._StrictLoader, "get_single_node", never)
    bounds = YamlBounds("a test document", 1024 * 1024, 1000)
    text = "x:\n" + "".join(f"  - {i}\n" for i in range(1000))  # 1,003 nodes
    with pytest.raises(InputError) as refused:
        parse_document(text, Path("t.yaml"), bounds)
    assert refused.value.line == 999  # the 1,001st node: the mapping, x, the list, 998 items
    assert "more than 1,000 YAML nodes" in str(refused.value)
    assert "a test document" in str(refused.value)
    with pytest.raises(InputError, match="larger than 1,048,576 bytes"):
        parse_document("x: " + "y" * 1024 * 1024, Path("t.yaml"), bounds)


def test_a_document_within_its_bounds_is_read_whatever_its_indicators() -> None:
    """A bound over the nodes counts quoted colons and commas too: the events decide."""
    text = "notes:\n" + "".join(f"  - 'a: b, c: d, e: f, {i}'\n" for i in range(30_000))
    assert node_bound(text) > FACTS_FILE.max_nodes
    assert len(parse_document(text, Path("t.yaml"), FACTS_FILE)["notes"]) == 30_000
