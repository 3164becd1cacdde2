"""The default output is short and narrow, over every example facts file with every shipped
profile (and the several-workload examples with theirs), in the conf and tuned formats: each
finding takes at most two lines of the head, a finding repeated (same id and key) prints once,
no line is wider than 100 columns, and the file still reads back as exactly the plan.

The lines allowed past 100 columns are those no break can shorten (`conf_layout.unbreakable`):
a setting's assignment (procps, systemd-sysctl and tuned read a value on its one line, and a
port list or a name has no place to break), the rebuild command (it is copied whole into a
shell, and a comment broken over lines is not a command), and a comment line holding a single
word, such as a source's address (a URL is never cut: a browser opens it whole)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.plan_render import Renderer, rebuild_command, rendered_settings
from tests.conftest import ROOT, load_facts
from tests.outputs.conf_layout import FINDING, WIDTH, build_example_plans, layout

POINTER = "`-f markdown`"
HEAD_LINES = 2  # a finding's lines in the head, at most
ELLIPSIS = "\u2026"


@pytest.fixture(scope="module")
def plans(kb: KnowledgeBase) -> list[tuple[str, Path, Plan, dict[str, str]]]:
    return build_example_plans(kb)


def _render(renderer: Renderer, path: Path, plan: Plan, params: dict[str, str], fmt: str) -> str:
    command = rebuild_command(plan.profile.name.split("+"), path.relative_to(ROOT), params)
    return renderer.render(plan, fmt, command)


@pytest.mark.parametrize("fmt", ["conf", "tuned"])
def test_the_default_head_is_short_and_every_line_narrow(
    kb: KnowledgeBase, plans: list[tuple[str, Path, Plan, dict[str, str]]], fmt: str
) -> None:
    renderer = Renderer(kb.catalog)
    assert len(plans) > 90 and sum(len(p.findings) for _, _, p, _ in plans) > 200
    cut = 0
    for name, path, plan, params in plans:
        text = _render(renderer, path, plan, params, fmt)
        keys = {s.key for s in plan.settings}
        assert rendered_settings(fmt, text) == {s.key: s.value for s in plan.settings}, name
        found = layout(text, keys)
        assert not found.wide, f"{name}: {found.wide[0]}"
        shown = [f for f in found.findings if not f[0].startswith("#   [info] ")]
        for lines in shown:
            assert len(lines) <= HEAD_LINES, f"{name}: {lines}"
        # one entry per finding that is not an info, each (id, key) once, in the plan's order
        wanted = list(dict.fromkeys((f.id, f.key) for f in plan.findings if f.severity != "info"))
        assert len(shown) == len(wanted), name
        for lines, (rule_id, _) in zip(shown, wanted, strict=True):
            assert FINDING.sub("", lines[0]).startswith(rule_id), f"{name}: {lines[0]}"
        # the full texts are pointed at once per file, not once per finding
        assert text.count(POINTER) == 1, name
        cut += sum(ELLIPSIS in line for lines in shown for line in lines)
    assert cut, "no finding of the examples was shortened: the property tests nothing"


def test_a_finding_repeated_prints_once(
    kb: KnowledgeBase, plans: list[tuple[str, Path, Plan, dict[str, str]]]
) -> None:
    _, path, plan, params = next(p for p in plans if p[0] == "dcache-32bit.gridftp")
    first = next(f for f in plan.findings if f.severity != "info")
    again = dataclasses.replace(first, message=first.message + " Seen again.")
    doubled = dataclasses.replace(plan, findings=[*plan.findings, again])
    renderer = Renderer(kb.catalog)
    for fmt in ("conf", "tuned"):
        text = _render(renderer, path, doubled, params, fmt)
        heads = [f[0] for f in layout(text, {s.key for s in plan.settings}).findings]
        assert sum(f"] {first.id}" in line for line in heads) == 1, (fmt, heads)
    ansible = _render(renderer, path, doubled, params, "ansible")
    assert ansible.count(f"] {first.id}") == 1


def test_a_long_first_sentence_is_cut_at_a_word_with_an_ellipsis() -> None:
    from sysctl_advisor.outputs.plan_render import clipped

    words = " ".join(f"word{n}" for n in range(60))
    text = clipped(f"[warning] some.rule: {words}. A second sentence.", "#   ", "#       ")
    lines = text.split("\n")
    assert len(lines) == HEAD_LINES and all(len(line) <= WIDTH for line in lines)
    assert lines[-1].endswith(ELLIPSIS)
    last = lines[-1].removeprefix("#       ").removesuffix(ELLIPSIS).split()[-1]
    assert last in words.split()  # a whole word before the ellipsis, never a piece of one
    short = clipped("[warning] some.rule: a point made in one line.", "#   ", "#       ")
    assert short == "#   [warning] some.rule: a point made in one line."


def test_a_quoted_log_line_is_cut_to_its_opening_words() -> None:
    from sysctl_advisor.outputs.plan_render import head_sentence

    log = "WARNING Memory overcommit must be enabled! Without it, a background save may fail."
    sentence = head_sentence(f'redis logged "{log}" (3 times), and it is still 0. More.')
    assert sentence == (
        f'redis logged "WARNING Memory overcommit must be enabled!{ELLIPSIS}" (3 times), '
        "and it is still 0."
    )


def test_explain_gives_a_keys_findings_in_full(
    kb: KnowledgeBase, plans: list[tuple[str, Path, Plan, dict[str, str]]]
) -> None:
    from sysctl_advisor.outputs.explain_text import explain_key

    name, path, plan, params = next(
        p for p in plans if p[0].startswith("app-node.") and "+" in p[0]
    )
    key = "vm.overcommit_memory"
    about = [f for f in plan.findings if f.key == key]
    assert len(about) >= 2, name
    workloads = plan.profile.name.split("+")
    text = " ".join(explain_key(kb, key, load_facts(path), workloads, params).split())
    for f in about:
        assert f"finding {f.id} ({f.severity}): {' '.join(f.message.split())}" in text


def test_the_host_lines_escape_what_they_list() -> None:
    """The head's host line lists parts from the facts: a line break or a control character in
    one is escaped as in every other comment, never a line of its own."""
    from sysctl_advisor.outputs.plan_render import listed

    text = listed(
        ["kernel 6.8\nnet.core.somaxconn = 1", "x86_64\x1b[2J", "page size 4 KiB"], "# host: "
    )
    assert all(line.startswith("#") for line in text.split("\n")), text
    assert "\x1b" not in text and "\\x0a" in text
