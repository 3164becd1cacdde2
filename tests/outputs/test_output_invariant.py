"""No text that reaches a rendered file can become a setting or break its
syntax. Every renderer is fed a plan whose every text field holds arbitrary text (control
characters, line and paragraph separators, markdown and ini syntax), and what the consumer
reads back must be exactly the plan's keys and values."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.plan_render import (
    RenderCheckError,
    Renderer,
    check_rendered,
    rendered_settings,
)
from tests.conftest import EXAMPLES, Cli, load_facts

_PIECES = [
    "\n", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\x00", "\x1b", "\u202e",
    "[sysctl]", "kernel.core_pattern = |/tmp/evil %p", "= ", "#", ";", "|", "<!--", "`",
    "---", "sysctl_advisor_settings:", "- name: x", "\\", '"', "'", "{{", "%",
]  # fmt: skip
HOSTILE = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=5)), max_size=12).map(
    "".join
)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _hostile_plan(plan: Plan, text: Any) -> Plan:
    t = lambda: text.draw(HOSTILE)  # noqa: E731
    host = dataclasses.replace(plan.host, hostname=t(), kernel=t(), arch=t())
    profile = dataclasses.replace(plan.profile, params={**plan.profile.params, "x": t()})
    return dataclasses.replace(
        plan,
        host=host,
        profile=profile,
        settings=[
            dataclasses.replace(s, rationale=t(), references=[t()], human=t(), rules=[t()])
            for s in plan.settings
        ],
        findings=[dataclasses.replace(f, message=t(), id=t()) for f in plan.findings],
        companions=[
            dataclasses.replace(c, target=t(), setting=t(), rationale=t()) for c in plan.companions
        ],
        unchanged=[dataclasses.replace(u, wanted=t()) for u in plan.unchanged],
        notes=[t() for _ in plan.notes] + [t()],
    )


@pytest.fixture(scope="module")
def plans() -> list[Plan]:
    kb = KnowledgeBase.load()
    pairs = [("ec2-nginx-frontend", "frontend-proxy"), ("dcache-32bit", "gridftp")]
    return [build_plan(kb, load_facts(EXAMPLES / f"{h}.yaml"), p) for h, p in pairs]


@SETTINGS
@given(data=st.data())
def test_hostile_text_never_becomes_a_setting(
    kb: KnowledgeBase, plans: list[Plan], data: st.DataObject
) -> None:
    renderer = Renderer(kb.catalog)
    for plan in plans:
        hostile = _hostile_plan(plan, data)
        command = data.draw(HOSTILE)
        for fmt in ("conf", "tuned", "ansible"):
            text = renderer.render(hostile, fmt, command)  # checks the invariant itself
            assert rendered_settings(fmt, text) == {s.key: s.value for s in plan.settings}
            if fmt in ("conf", "tuned"):
                for line in text.split("\n"):
                    assert line == "" or line[0] in "#[" or "=" in line, line
        markdown = renderer.render(hostile, "markdown", command)
        # `<!--` may stand only inside a code span, where it is literal text
        assert "<!--" not in re.sub(r"(?<!\\)`[^`]*`", "", markdown)
        table = [line for line in markdown.split("\n") if line.startswith("| `")]
        assert len(table) == len(plan.settings)
        assert all(len(re.split(r"(?<!\\)\|", row)) == 6 for row in table), table


def test_the_check_catches_an_injected_line(kb: KnowledgeBase, plans: list[Plan]) -> None:
    """The invariant is not a formality: a file with one line more does not pass."""
    plan = plans[0]
    text = Renderer(kb.catalog).render(plan, "conf", "cmd")
    with pytest.raises(RenderCheckError):
        check_rendered(plan, "conf", text + "kernel.core_pattern = |/tmp/evil %p\n")
    host_vars = Renderer(kb.catalog).render(plan, "ansible", "cmd")
    with pytest.raises(RenderCheckError):
        check_rendered(plan, "ansible", host_vars + "ansible_connection: local\n")


@SETTINGS
@given(
    field=st.sampled_from(["hostname", "kernel", "arch"]),
    value=HOSTILE,
)
def test_hostile_facts_text_is_refused_or_harmless(
    kb: KnowledgeBase, field: str, value: str
) -> None:
    try:
        facts = facts_from_data({"memory": {"total": "8 GiB"}, field: value})
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert value.isprintable()
    plan = build_plan(kb, facts, "base")
    for fmt in ("conf", "tuned", "ansible", "markdown", "json"):
        Renderer(kb.catalog).render(plan, fmt, "cmd")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hostname", "web1\nkernel.core_pattern = |/tmp/evil %p"),
        ("hostname", "web1\rnet.ipv4.ip_forward = 1"),
        ("hostname", "web1\u2028x"),
        ("hostname", "x\nansible_connection: local"),
        ("hostname", "a" * 300),
        ("arch", "x86_64\n[sysctl]"),
        ("kernel", "5.15.0\nkernel.core_pattern=|/x"),
    ],
)
def test_injection_through_facts_is_exit_2(
    cli: Cli, field: str, value: str, tmp_path: Path
) -> None:

    facts = tmp_path / "facts.yaml"
    facts.write_text(yaml.safe_dump({"memory": {"total": "8 GiB"}, field: value}))
    result = cli("recommend", "--facts", str(facts), "-p", "base")
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and field in result.stderr
    assert result.stdout == ""


def test_nic_name_injection_is_refused() -> None:
    for name in ["eth0\nkernel.x = 1", "a/b", "eth:0", "x" * 16, ".", "..", "eth 0"]:
        with pytest.raises(InputError, match="interface name"):
            facts_from_data({"memory": {"total": "8 GiB"}, "nics": [{"name": name}]})


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fleet_summaries_hold_one_row_per_host(data: st.DataObject, tmp_path: Path) -> None:
    """summary.md keeps its tables whatever the hosts' texts hold; summary.json stays JSON."""
    import json

    from sysctl_advisor.outputs.fleet_summary import HostOutcome, SummaryWriter

    outcomes = [
        HostOutcome(
            host=data.draw(HOSTILE),
            source=data.draw(HOSTILE),
            profile=data.draw(HOSTILE),
            kernel=data.draw(HOSTILE),
            changes=(data.draw(HOSTILE),),
            findings=((data.draw(HOSTILE), "error"),),
        ),
        HostOutcome(host=data.draw(HOSTILE), source="x", error=data.draw(HOSTILE)),
    ]
    import tempfile

    staging = Path(tempfile.mkdtemp(dir=tmp_path))
    from sysctl_advisor.model.directories import Directory

    directory = Directory.at(staging)
    try:
        written = SummaryWriter(Path(data.draw(HOSTILE) or "facts"), None, "base")(
            directory, iter(outcomes)
        )
    finally:
        directory.close()
    assert written == 1
    json.loads((staging / "summary.json").read_text())
    markdown = (staging / "summary.md").read_text()
    assert "<!--" not in re.sub(r"(?<!\\)`[^`]*`", "", markdown)
    rows = [line for line in markdown.split("\n") if line.startswith(("| `", "| <code>"))]
    assert len(rows) == 4  # skipped host, finding, key changed, written host
    widths = {len(re.split(r"(?<!\\)\|", row)) for row in rows}
    assert widths <= {4, 5, 9}, rows
