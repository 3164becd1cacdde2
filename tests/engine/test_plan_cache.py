"""Plans by host shape (fleet): the same plan as building it, for every host of a shape."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.engine.plan_cache import PlanCache
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, load_facts


@pytest.mark.parametrize(("host", "profile"), list(EXAMPLE_PROFILES.items()))
def test_a_cached_plan_is_the_plan(kb: KnowledgeBase, host: str, profile: str) -> None:
    cache = PlanCache(kb)
    assert cache.enabled
    first = load_facts(EXAMPLES / f"{host}.yaml")
    twin = replace(first, hostname="twin-01")
    assert cache.plan(kb, first, profile) == build_plan(kb, first, profile)
    assert cache.plan(kb, twin, profile) == build_plan(kb, twin, profile)
    assert (cache.hits, cache.misses) == (1, 1)
    memory = replace(first.memory, total=first.memory.total + 2**20)
    other = replace(first, memory=memory)
    assert cache.plan(kb, other, profile) == build_plan(kb, other, profile)
    assert cache.misses == 2  # another shape


def test_parameters_and_profile_are_part_of_the_shape(kb: KnowledgeBase) -> None:
    cache = PlanCache(kb)
    facts = load_facts(EXAMPLES / "dtn-10g.yaml")
    a = cache.plan(kb, facts, "gridftp", {"rtt_ms": "50"})
    b = cache.plan(kb, facts, "gridftp", {"rtt_ms": "150"})
    c = cache.plan(kb, facts, "base")
    assert cache.misses == 3 and a != b and a != c


def test_it_turns_itself_off_for_a_fleet_of_distinct_hosts(kb: KnowledgeBase) -> None:
    cache = PlanCache(kb, trial=10, max_entries=4)
    facts = load_facts(EXAMPLES / "dtn-10g.yaml")
    for i in range(12):
        memory = replace(facts.memory, total=2**33 + i * 2**20)
        cache.plan(kb, replace(facts, memory=memory), "base")
        assert len(cache.entries) <= 4
    assert not cache.enabled and not cache.entries


def test_a_rule_that_reads_the_hostname_keeps_every_host_apart(
    kb: KnowledgeBase, tmp_path: object
) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    (tmp_path / "by-name.yaml").write_text(
        "id: custom.by-name\n"
        "title: Per-host somaxconn\n"
        "description: somaxconn by host name\n"
        "when: \"facts.hostname is not none and facts.hostname.startswith('big')\"\n"
        'set:\n  net.core.somaxconn: "8192"\n'
        "rationale: by name\n"
        "references: [linux-6-18-doc-ip-sysctl]\n"
    )
    custom = KnowledgeBase.load(rules_dirs=[tmp_path])
    assert not PlanCache(custom).enabled
    assert PlanCache(kb).enabled


@pytest.mark.parametrize(("host", "profile"), list(EXAMPLE_PROFILES.items()))
@pytest.mark.parametrize("fmt", ["conf", "ansible"])
def test_a_shape_is_rendered_once_and_reads_as_each_hosts_own_file(
    kb: KnowledgeBase, host: str, profile: str, fmt: str
) -> None:
    """What a fleet writes for the second host of a shape (the body rendered for the first) is
    byte for byte what rendering its own plan gives, its name and rebuild command included."""
    from sysctl_advisor.outputs.plan_render import Renderer

    renderer = Renderer(kb.catalog)
    cache = PlanCache(kb)
    first = load_facts(EXAMPLES / f"{host}.yaml")
    # a twin whose name and facts path are long enough to wrap the YAML header differently
    twin = replace(first, hostname="twin-" + "x" * 70)
    for facts, command in ((first, "sysctl-advisor recommend a"), (twin, "b " + "y" * 120)):
        shape = cache.lookup(kb, facts, profile)
        shared = renderer.render_for_shape(shape.plan, fmt, command, shape.rendered)
        assert shared == renderer.render(build_plan(kb, facts, profile), fmt, command)
    assert cache.hits == 1 and f"body:{fmt}" in shape.rendered


def test_the_head_is_all_that_names_the_host(kb: KnowledgeBase) -> None:
    """The body block of each fleet template is the same whatever the host is called and
    however it is rebuilt: the head holds every mention of either."""
    from sysctl_advisor.outputs.plan_render import TEMPLATES, Renderer

    renderer = Renderer(kb.catalog)
    facts = load_facts(EXAMPLES / "ec2-nginx-frontend.yaml")
    plan = build_plan(kb, facts, "frontend-proxy")
    for fmt in ("conf", "ansible"):
        template = renderer.env.get_template(TEMPLATES[fmt])
        assert set(template.blocks) == {"head", "body"}
        bodies = set()
        for name, command in (("alpha", "cmd-one"), ("beta.example.net", "cmd two")):
            renamed = dataclasses.replace(plan, host=dataclasses.replace(plan.host, hostname=name))
            memo: dict[str, object] = {}
            text = renderer.render_for_shape(renamed, fmt, command, memo)
            body = memo[f"body:{fmt}"]
            assert isinstance(body, str) and text.endswith(body)
            assert name not in body and command not in body
            bodies.add(body)
        assert len(bodies) == 1


@pytest.mark.parametrize("fmt", ["conf", "ansible"])
def test_a_head_that_would_set_something_is_never_written(
    kb: KnowledgeBase, tmp_path: object, fmt: str
) -> None:
    """The head is read back on its own for every host: a template whose head holds anything
    but comments (here an assignment a consumer would apply) fails the render."""
    import shutil
    from pathlib import Path

    from sysctl_advisor.knowledge.resources import data_dir
    from sysctl_advisor.outputs.plan_render import TEMPLATES, RenderCheckError, Renderer

    assert isinstance(tmp_path, Path)
    templates = tmp_path / "templates"
    shutil.copytree(data_dir("templates"), templates)
    name = templates / TEMPLATES[fmt]
    text = name.read_text()
    name.write_text(text.replace("{% endblock %}", "net.core.somaxconn = 1\n{% endblock %}", 1))
    renderer = Renderer(kb.catalog, templates)
    plan = build_plan(kb, load_facts(EXAMPLES / "ec2-nginx-frontend.yaml"), "frontend-proxy")
    with pytest.raises(RenderCheckError, match="head holds more than comment lines"):
        renderer.render_for_shape(plan, fmt, "cmd", {})


@pytest.mark.parametrize("fmt", ["conf", "ansible"])
def test_a_shapes_body_is_read_back_once_and_a_body_that_would_set_more_is_refused(
    kb: KnowledgeBase, tmp_path: object, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The body (the same text and settings for every host of a shape) is read back for the
    first host of the shape; a template whose body sets more than the plan fails there."""
    import shutil
    from pathlib import Path

    from sysctl_advisor.knowledge.resources import data_dir
    from sysctl_advisor.outputs import plan_render
    from sysctl_advisor.outputs.plan_render import TEMPLATES, RenderCheckError, Renderer

    checked: list[str] = []
    real_check = plan_render.check_rendered

    def counted(plan: object, fmt: str, text: str) -> None:
        checked.append(fmt)
        real_check(plan, fmt, text)  # type: ignore[arg-type]

    monkeypatch.setattr(plan_render, "check_rendered", counted)
    cache = PlanCache(kb)
    renderer = Renderer(kb.catalog)
    facts = load_facts(EXAMPLES / "ec2-nginx-frontend.yaml")
    for name in ("web-1", "web-2", "web-3"):
        shape = cache.lookup(kb, replace(facts, hostname=name), "frontend-proxy")
        renderer.render_for_shape(shape.plan, fmt, f"cmd {name}", shape.rendered)
    assert checked == [fmt]

    assert isinstance(tmp_path, Path)
    templates = tmp_path / "templates"
    shutil.copytree(data_dir("templates"), templates)
    template = templates / TEMPLATES[fmt]
    text = template.read_text()
    extra = "net.core.somaxconn = 1\n" if fmt == "conf" else "x: 1\n"
    template.write_text(text.replace("{% block body %}", "{% block body %}" + extra, 1))
    tampered = Renderer(kb.catalog, templates)
    plan = build_plan(kb, facts, "frontend-proxy")
    with pytest.raises(RenderCheckError):
        tampered.render_for_shape(plan, fmt, "cmd", {})


@pytest.mark.parametrize(("host", "profile"), list(EXAMPLE_PROFILES.items()))
def test_kernel_defaults_shared_by_hardware_give_each_hosts_own_plan(
    kb: KnowledgeBase, host: str, profile: str
) -> None:
    """Hosts of one kernel and hardware share the kernel model's results; a host
    whose values in force differ (which replace modelled defaults in its own plan) neither
    gets another host's nor changes what the next host gets."""
    from sysctl_advisor.engine.plan_cache import KernelDefaultsMemo

    memo = KernelDefaultsMemo()
    first = load_facts(EXAMPLES / f"{host}.yaml")
    in_force = dict(first.sysctl)
    in_force["net.core.somaxconn"] = "4097"
    in_force["net.ipv4.tcp_rmem"] = "4096 131071 6291455"
    drifted = replace(first, sysctl=in_force, hostname="drifted")
    for facts in (first, drifted, first, drifted):
        assert build_plan(kb, facts, profile, memo=memo) == build_plan(kb, facts, profile)
    assert (memo.misses, memo.hits) == (1, 3)


def test_the_kernel_model_reads_only_kernel_and_hardware_facts(kb: KnowledgeBase) -> None:
    fields = kb.catalog.host_fields
    assert fields is not None
    assert fields <= {
        "kernel", "arch", "bits", "lowmem", "memory", "cpu", "page_size", "calibration",
        "transparent_hugepage", "fastest_nic_mbps", "kernel_build",
    }  # fmt: skip
    assert "observed" not in fields and "sysctl" not in fields and "services" not in fields


@pytest.mark.parametrize(
    ("source", "names", "fields"),
    [
        ("facts.memory.total // page_size", {"facts", "page_size"}, {"memory"}),
        ("facts['bits'] == 32 and host.x", {"facts", "host"}, {"bits"}),
        ("observed.orphans_peak", {"observed"}, set()),
        ("facts | length", {"facts"}, None),  # the whole mapping: any field
        ("facts[name]", {"facts", "name"}, None),  # a field chosen at run time
        ("[facts][0].sysctl", {"facts"}, None),
    ],
)
def test_what_an_expression_reads(
    kb: KnowledgeBase, source: str, names: set[str], fields: set[str] | None
) -> None:
    read_names, read_fields = kb.compiler.reads(source, "facts")
    assert read_names == names
    assert read_fields == (None if fields is None else frozenset(fields))


def test_the_kernel_defaults_memo_is_bounded_and_turns_itself_off(kb: KnowledgeBase) -> None:
    from sysctl_advisor.engine.plan_cache import KernelDefaultsMemo

    memo = KernelDefaultsMemo(max_entries=4, trial=10)
    facts = load_facts(EXAMPLES / "dtn-10g.yaml")
    for i in range(12):
        memory = replace(facts.memory, total=2**33 + i * 2**20)
        varied = replace(facts, memory=memory)
        assert build_plan(kb, varied, "base", memo=memo) == build_plan(kb, varied, "base")
        assert len(memo) <= 4
    assert not memo.enabled and len(memo) == 0
