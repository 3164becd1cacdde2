"""The conf and tuned files at each level of detail, over the examples and the varied hosts
(every profile): the default is short, every reference is printed once and every [n] a value
cites is in the list; `brief` is one comment line per key and `none` the settings alone."""

from __future__ import annotations

import re
import statistics

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.plan_render import Renderer, rendered_settings
from tests.outputs.conf_layout import layout
from tests.outputs.test_varied_hosts import every_host

# The default conf's block per setting (its comment lines and the assignment), median over all
# these plans: 5 lines. (An earlier target of 8 lines per setting for the whole file gave way
# to a short head and a line width: tests/outputs/test_conf_head.py; the figures are in
# docs/outputs.md.) A guard against growing back.
BLOCK_LINES = 5
NOTHING = "# No setting needs to change for this host and profile."


def _plans(kb: KnowledgeBase) -> list[tuple[str, Plan]]:
    return [(name, build_plan(kb, f, profile, params)) for name, f, profile, params in every_host()]


@pytest.fixture(scope="module")
def plans(kb: KnowledgeBase) -> list[tuple[str, Plan]]:
    return _plans(kb)


def test_the_default_conf_is_short(kb: KnowledgeBase, plans: list[tuple[str, Plan]]) -> None:
    renderer = Renderer(kb.catalog)
    blocks = []
    for _, plan in plans:
        text = renderer.render(plan, "conf", "c")
        blocks += [len(b) for b in layout(text, {s.key for s in plan.settings}).blocks]
    assert {"base", "c1m-server", "frontend-proxy", "gridftp"} <= {p.profile.name for _, p in plans}
    assert len(blocks) == sum(len(plan.settings) for _, plan in plans) > 150
    assert statistics.median(blocks) <= BLOCK_LINES, sorted(blocks)


_CITED = re.compile(r" \[(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)\]$")


def _expand(numbers: str) -> set[int]:
    """ "1-3,7" -> {1, 2, 3, 7}"""
    found: set[int] = set()
    for part in numbers.split(","):
        first, _, last = part.partition("-")
        found |= set(range(int(first), int(last or first) + 1))
    return found


@pytest.mark.parametrize("fmt", ["conf", "tuned"])
def test_every_reference_is_printed_once_and_every_number_resolves(
    kb: KnowledgeBase, plans: list[tuple[str, Plan]], fmt: str
) -> None:
    renderer = Renderer(kb.catalog)
    printed_any = False
    for name, plan in plans:
        text = renderer.render(plan, fmt, "c")
        head, _, footer = text.partition("\n# References:\n")
        listed: list[str] = []  # each reference, its wrapped lines joined
        for line in footer.splitlines():
            if line.startswith("#   ["):
                listed.append(line)
            elif line.startswith("#       ") and listed:
                listed[-1] += " " + line[1:].strip()
            else:
                break
        numbers = [int(line[5 : line.index("]")]) for line in listed]
        assert numbers == list(range(1, len(numbers) + 1)), name
        bodies = [line.split("] ", 1)[1] for line in listed]
        assert len(set(bodies)) == len(bodies), f"{name}: a reference printed twice"
        cited = {
            n for line in head.splitlines() if (m := _CITED.search(line)) for n in _expand(m[1])
        }
        assert cited == set(numbers), name
        printed_any |= bool(numbers)
        # each source the plan lists, and only those, with its address
        shown = {r.citation: r for r in plan.references}
        for body in bodies:
            citation, _, url = body.rpartition(" ")
            if not url.startswith(("https://", "http://")):
                citation, url = body, ""
            assert citation in shown, f"{name}: {body}"
            assert (shown[citation].url or "") == url, name
    assert printed_any


@pytest.mark.parametrize("fmt", ["conf", "tuned"])
def test_brief_is_one_comment_line_per_key_and_none_the_settings_alone(
    kb: KnowledgeBase, plans: list[tuple[str, Plan]], fmt: str
) -> None:
    renderer = Renderer(kb.catalog)
    for name, plan in plans:
        brief = renderer.render(plan, fmt, "c", "brief").splitlines()
        by_key = {s.key: s for s in plan.settings}
        shown = 0
        for i, line in enumerate(brief):
            setting = by_key.get(line.split("=", 1)[0].strip())
            if setting is None:
                continue
            shown += 1
            above = brief[i - 1]  # one comment line: value, unit, rule ids, the reason
            assert above.startswith("# ") and setting.rules[0] in above, f"{name}: {above}"
            assert f"({setting.unit})" in above and setting.human in above, f"{name}: {above}"
            assert not brief[i - 2].startswith("#   "), name
        assert shown == len(plan.settings), name
        none = renderer.render(plan, fmt, "c", "none")
        body = none.split("# rebuild:", 1)[1].split("\n", 1)[1]
        if fmt == "conf":
            # the suppression comments of values in force kept, which check reads, stay
            notes = [
                line
                for line in body.splitlines()
                if line.startswith("#") and not line.startswith("# sysctl-advisor: ignore[")
            ]
            assert notes == ([] if plan.settings else [NOTHING]), name
        assert rendered_settings(fmt, none) == {s.key: s.value for s in plan.settings}
