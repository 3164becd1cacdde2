"""build_plan's own guarantees that no single rule case shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data

MODULE_RULE = """\
id: site.conntrack
title: A site rule that sets a module's key unconditionally
description: Sets nf_conntrack_max whether or not the module is loaded on the host.
set:
  net.netfilter.nf_conntrack_max: 1000000
rationale: Site policy.
references: ["linux-6-18-doc-ip-sysctl: site policy"]
"""
PROFILE = """\
name: site
summary: Site policy
description: The site's rules.
rules: [site.conntrack]
"""


def test_a_module_key_is_not_emitted_where_the_facts_do_not_show_the_module(
    tmp_path: Path,
) -> None:
    """A line for a key whose module is not loaded fails at boot: the plan leaves it out, with
    a note, whatever rule asks for it."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "site.yaml").write_text(MODULE_RULE)
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "site.yaml").write_text(PROFILE)
    kb = KnowledgeBase.load([tmp_path / "rules"], [tmp_path / "profiles"])
    host = {"kernel": "6.1.0", "memory": {"total": "8 GiB"}}
    plan = build_plan(kb, facts_from_data(host), "site")
    assert [s.key for s in plan.settings] == []
    assert any("nf_conntrack module" in n for n in plan.notes), plan.notes
    loaded = {**host, "sysctl": {"net.netfilter.nf_conntrack_max": "65536"}}
    plan = build_plan(kb, facts_from_data(loaded), "site")
    assert [(s.key, s.value) for s in plan.settings] == [
        ("net.netfilter.nf_conntrack_max", "1000000")
    ]


def test_a_cap_binds_a_value_a_sysctl_file_sets_within_the_model_tolerance() -> None:
    """tcp_mem within 8% above half of RAM: the kernel's own figure is model error and kept,
    but a sysctl file's value is the operator's, and the cap brings it down."""
    kb = KnowledgeBase.load()
    host = {
        "kernel": "2.6.32-754.el6.x86_64",
        "memory": {"total": "16 GiB"},
        "sysctl": {"net.ipv4.tcp_mem": "1000000 1400000 2250000"},
    }
    unknown = build_plan(kb, facts_from_data(host), "base")
    assert "net.ipv4.tcp_mem" not in {s.key for s in unknown.settings}
    from_file = {**host, "sysctl_files": {"net.ipv4.tcp_mem": "/etc/sysctl.conf:3"}}
    plan = build_plan(kb, facts_from_data(from_file), "base")
    tcp_mem = next(s for s in plan.settings if s.key == "net.ipv4.tcp_mem")
    assert tcp_mem.values[2] == 2097152 and "tcp-mem.ram-cap" in tcp_mem.capped_by


@pytest.mark.parametrize(
    ("key", "text", "valid", "profile"),
    [
        # no numbers; a sysctl file's tcp_mem above half of RAM is capped when it is a value
        ("net.ipv4.tcp_mem", "a b c", "4000000 6000000 9000000", "base"),
        ("net.ipv4.tcp_rmem", "1 2", None, "gridftp"),  # two of three ([1, 2] in a facts file)
        ("net.core.somaxconn", "-5", None, "frontend-proxy"),  # below what the kernel holds
    ],
)
def test_a_value_in_force_the_key_cannot_hold_is_said_and_not_kept(
    kb: KnowledgeBase, key: str, text: str, valid: str | None, profile: str
) -> None:
    """A value the key cannot hold was kept as in force, or dropped without a word; rules
    take it as not known (`current.<alias>` is none), a note names it, and the plan says
    nothing of the key: the model or the facts are wrong, and no advice moves the value in
    force on the model's word. With a value the key holds (or none), the profile sets it."""
    host = {
        "kernel": "5.15.0",
        "arch": "x86_64",
        "memory": {"total": "8 GiB"},
        "sysctl_files": {key: "/etc/sysctl.d/90-site.conf:1"},
    }
    plan = build_plan(kb, facts_from_data({**host, "sysctl": {key: text}}), profile)
    assert any(
        f"facts: {key} = {text} is not a value this key holds" in n and "not emitted" in n
        for n in plan.notes
    )
    assert key not in {s.key for s in plan.settings}
    control = {**host, "sysctl": {key: valid} if valid is not None else {}}
    assert key in {s.key for s in build_plan(kb, facts_from_data(control), profile).settings}


def _rule(tmp_path: Path, lets: str, rationale: str) -> object:
    rules = tmp_path / "rules" / "site"
    rules.mkdir(parents=True)
    (rules / "probe.yaml").write_text(
        "id: site.probe\ntitle: t\ndescription: d\n"
        f"let:\n{lets}\nset: {{net.core.somaxconn: 'want'}}\n"
        f"rationale: {rationale}\nreferences: [linux-6-18-doc-ip-sysctl]\n"
    )
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "site.yaml").write_text(
        "name: site\nsummary: s\ndescription: d\nextends: base\nrules: [site.probe]\n"
    )
    return KnowledgeBase.load([tmp_path / "rules"], [profiles]).rules["site.probe"]


def test_planned_read_through_a_method_resolves_every_key(tmp_path: Path) -> None:
    """`planned.get(...)` names no alias: the rule is rerun on any move, not on an alias
    `get` that never moves (its first-pass value would stay in the plan)."""
    rule = _rule(tmp_path, "  want: \"planned.get('somaxconn', 4096) if planned else 4096\"", "'r'")
    assert rule.reads_planned and rule.planned_aliases is None  # type: ignore[attr-defined]


def test_the_word_planned_in_prose_or_a_string_is_not_a_read(tmp_path: Path) -> None:
    rule = _rule(
        tmp_path,
        '  note: "\'the value planned\'"\n  want: "4096"',
        "'{{ want }} connections, as planned for this host'",
    )
    assert not rule.reads_planned  # type: ignore[attr-defined]


CHAIN_RULES = {
    "gate.yaml": """\
id: site.gate
title: t
description: d
set: {net.core.somaxconn: 8192}
rationale: r
references: [linux-6-18-doc-ip-sysctl]
""",
    # a reader whose own want depends on `planned`: it moves tcp_max_syn_backlog only once it
    # runs again with somaxconn moved
    "follow.yaml": """\
id: site.follow
title: t
description: d
set: {net.ipv4.tcp_max_syn_backlog: "planned.somaxconn"}
rationale: r
references: [linux-6-18-doc-ip-sysctl]
""",
    # readers of the key the first reader moves: one that sets a key, one that sets nothing
    "quote.yaml": """\
id: site.quote
title: t
description: d
set: {net.ipv4.tcp_max_orphans: 65536}
findings:
  - {id: site.quote, severity: info, message: "set: {{ planned.tcp_max_syn_backlog }}"}
rationale: r
references: [linux-6-18-doc-ip-sysctl]
""",
    "say.yaml": """\
id: site.say
title: t
description: d
findings:
  - {id: site.say, severity: info, message: "says: {{ planned.tcp_max_syn_backlog }}"}
rationale: r
references: [linux-6-18-doc-ip-sysctl]
""",
}


def test_readers_see_what_a_reader_that_ran_again_moved(tmp_path: Path) -> None:
    """`planned` is worked out again after the readers run again: a key a reader moves only on
    its second run (its want follows another key's planned value) is what the readers of that
    key quote, whether they set keys or not."""
    rules = tmp_path / "rules" / "site"
    rules.mkdir(parents=True)
    for name, text in CHAIN_RULES.items():
        (rules / name).write_text(text)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "site.yaml").write_text(
        "name: site\nsummary: s\ndescription: d\n"
        "rules: [site.gate, site.follow, site.quote, site.say]\n"
    )
    kb = KnowledgeBase.load([tmp_path / "rules"], [profiles])
    host = {
        "kernel": "5.15.0",
        "memory": {"total": "8 GiB"},
        "sysctl": {"net.core.somaxconn": "1024", "net.ipv4.tcp_max_syn_backlog": "1024"},
    }
    plan = build_plan(kb, facts_from_data(host), "site")
    values = {s.key: s.value for s in plan.settings}
    assert values["net.ipv4.tcp_max_syn_backlog"] == "8192"
    messages = {f.id: f.message for f in plan.findings}
    assert messages["site.quote"] == "set: 8192"
    assert messages["site.say"] == "says: 8192"


def test_a_plan_never_writes_a_capacity_below_its_floor(kb: KnowledgeBase) -> None:
    """A want below the floor over a value in force below it (a broken host) would have the
    plan write a listen backlog of 1: the plan writes the floor, and says why."""
    host = {
        "kernel": "6.1.0",
        "memory": {"total": "8 GiB"},
        "sysctl": {"net.core.somaxconn": "0"},
    }
    plan = build_plan(kb, facts_from_data(host), "frontend-proxy", {"listen_backlog": "1"})
    somaxconn = next(s for s in plan.settings if s.key == "net.core.somaxconn")
    floor = kb.catalog.keys["net.core.somaxconn"].floor
    assert floor is not None and somaxconn.values == [floor.value]
    assert f"Raised to {floor.value}, the floor of this capacity" in somaxconn.rationale
