"""docs/advice/: one generated page per advice rule and an index, kept in step with the rules
and their cases; the generator writes only its own pages, atomically, never through a link."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.outputs import advice_rules_reference as reference
from tests.conftest import TESTS

ROOT = TESTS.parent
DOCS = ROOT / "docs" / "advice"
CASES = TESTS / "cases"


@pytest.fixture(scope="module")
def pages(kb: KnowledgeBase) -> dict[str, str]:
    return reference.render_pages(kb, CASES)


def test_one_page_per_advice_rule_and_none_for_check_rules(
    kb: KnowledgeBase, pages: dict[str, str]
) -> None:
    assert set(pages) == {"README.md", *(f"{rule_id}.md" for rule_id in kb.rules)}
    index = pages["README.md"]
    for rule_id, rule in kb.rules.items():
        assert f"]({rule_id}.md)" in index
        assert rule.spec.title in index
    assert not any(name.startswith("check.") for name in pages)


def test_a_page_shows_what_the_plan_gives_on_the_firing_case(pages: dict[str, str]) -> None:
    page = pages["listen-backlog.target.md"]
    assert "net.core.somaxconn = 16384\nnet.ipv4.tcp_max_syn_backlog = 16384" in page
    assert "Profile `frontend-proxy`" in page
    assert "| `net.core.somaxconn` | count | yes | yes |" in page
    assert "`kernel.listen_backlog_max`" in page
    assert "* Values in force (`current`): `net.core.somaxconn`\n" in page
    assert "Profile parameter `listen_backlog`" in page
    # valkey extends redis: named by redis's entry, not its own
    assert "`c1m-server`, `frontend-proxy`, `postgresql`, `redis`, and every profile that " in page
    # prose in a template ("the kernel default. ...") is not code it reads
    assert "`default.`" not in page


def test_reads_come_from_code_not_prose_or_strings(kb: KnowledgeBase) -> None:
    rule = kb.rules["listen-backlog.target"]
    found = reference.reads(rule)
    assert "kernel.listen_backlog_max" in found["Kernel model"]
    assert "services.nginx" in found["Facts"]
    # `'nginx' in services`: the string is no variable
    assert not any(item == "nginx" for items in found.values() for item in items)


def _rules_dir(tmp_path: Path, title: str, description: str) -> Path:
    family = tmp_path / "rules" / "zz-test"
    family.mkdir(parents=True)
    (family / "hostile.yaml").write_text(
        textwrap.dedent(
            f"""\
            id: zz-test.hostile
            title: {title!r}
            description: {description!r}
            set:
              net.core.somaxconn: "params.listen_backlog if params.listen_backlog else none"
            rationale: "x"
            references:
              - "linux-6-18-net-socket: a | b <!-- c"
              - "chartbeat-tcp-nginx-ec2: [link](javascript:x)"
            """
        )
    )
    return family.parent


def test_rule_text_is_escaped(tmp_path: Path) -> None:
    """A rules directory is not trusted: its title, description and references cannot become
    Markdown or HTML syntax in the page (built here, at test time)."""
    rules = _rules_dir(
        tmp_path,
        "<!-- hides the rest | and a [link](https://example.com)",
        "*emphasis* ``` a fence <script>x</script> " + "more words " * 5,
    )
    kb = KnowledgeBase.load(rules_dirs=[rules])
    page = reference.render_page(kb, kb.rules["zz-test.hostile"], None)
    assert "<!--" not in page.replace(reference.MARKER, "")
    assert "<script>" not in page and "[link](" not in page
    assert "&lt;!--" in page and "\\*emphasis\\*" in page
    assert "No firing case" in page
    index = reference.render_index(kb)
    assert "| [`zz-test.hostile`](zz-test.hostile.md) | &lt;!--" in index


def test_a_firing_case_that_gives_nothing_is_an_error(kb: KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "time-wait.fin-timeout.yaml").write_text(
        "rule: time-wait.fin-timeout\ncases:\n- {name: quiet, fires: true}\n"
    )
    example = reference.firing_case(tmp_path, "time-wait.fin-timeout")
    assert example is not None
    with pytest.raises(InputError) as caught:
        reference.render_page(kb, kb.rules["time-wait.fin-timeout"], example)
    assert "holds nothing from time-wait.fin-timeout" in str(caught.value)


def test_writing_replaces_pages_and_removes_only_its_own_stale_ones(tmp_path: Path) -> None:
    target = tmp_path / "advice"
    target.mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text("keep\n")
    (target / "gone.rule.md").write_text(reference.MARKER + "\nold page\n")
    (target / "notes.md").write_text("a page someone wrote\n")
    (target / "hand.written.md").write_text("not generated\n")
    (target / "linked.rule.md").symlink_to(outside)
    (target / "a.rule.md").symlink_to(outside)  # a page the generator writes, as a link
    removed = reference.write_pages(target, {"README.md": "index\n", "a.rule.md": "page\n"})
    assert removed == ["gone.rule.md"]
    assert sorted(os.listdir(target)) == [
        "README.md",
        "a.rule.md",
        "hand.written.md",
        "linked.rule.md",
        "notes.md",
    ]
    assert not (target / "a.rule.md").is_symlink()
    assert (target / "a.rule.md").read_text() == "page\n"
    assert outside.read_text() == "keep\n"  # never written through the link


def test_writing_creates_the_directory_and_refuses_a_link_there(tmp_path: Path) -> None:
    reference.write_pages(tmp_path / "new", {"README.md": "index\n"})
    assert (tmp_path / "new" / "README.md").read_text() == "index\n"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    with pytest.raises(InputError) as caught:
        reference.write_pages(tmp_path / "link", {"README.md": "index\n"})
    assert "not a directory" in str(caught.value)
    assert not list(elsewhere.iterdir())


def test_a_new_profile_changes_only_the_pages_of_the_rules_it_names(
    tmp_path: Path, pages: dict[str, str]
) -> None:
    """A page names the profiles whose own file enables its rule, not every profile that runs
    it: adding `extends: base` runs base's rules without touching their pages."""
    (tmp_path / "aaa-extra.yaml").write_text(
        "name: aaa-extra\nsummary: s\ndescription: d\nextends: base\n"
        "rules: [time-wait.tw-recycle, tcp-buffers.no-metrics-save]\n"
    )
    kb = KnowledgeBase.load(profiles_dirs=[tmp_path])
    assert "orphans.headroom" in kb.profiles["aaa-extra"].rule_ids  # from base: runs, unnamed
    after = reference.render_pages(kb, CASES)
    changed = sorted(name for name in pages if after[name] != pages[name])
    assert changed == ["tcp-buffers.no-metrics-save.md"]  # base already names tw-recycle
    assert (
        "`aaa-extra`, `gridftp`, and every profile that extends one of them." in after[changed[0]]
    )
