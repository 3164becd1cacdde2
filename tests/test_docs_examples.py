"""The examples docs/writing-a-rule.md shows: its rule loads (replacing the shipped rule of the
same id, as `--rules-dir` does) and its case file's cases pass against that rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from tests.conftest import ROOT
from tests.knowledge.test_rule_cases import load_case_file
from tests.knowledge.test_rule_cases import test_case as run_case

PAGE = ROOT / "docs" / "writing-a-rule.md"


def _yaml_blocks() -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)


@pytest.fixture(scope="module")
def documented(tmp_path_factory: pytest.TempPathFactory) -> tuple[KnowledgeBase, Path, str]:
    """The knowledge with the page's rule in a rules directory of its own, and the case file."""
    rule, cases = _yaml_blocks()
    rule_id = re.search(r"^id: ([\w.-]+)", rule, re.MULTILINE)
    assert rule_id is not None
    family, name = rule_id[1].split(".", 1)
    root = tmp_path_factory.mktemp("documented")
    (root / "rules" / family).mkdir(parents=True)
    (root / "rules" / family / f"{name}.yaml").write_text(rule)
    (root / f"{rule_id[1]}.yaml").write_text(cases)
    return KnowledgeBase.load(rules_dirs=[root / "rules"]), root, rule_id[1]


def test_the_page_shows_a_rule_and_its_case_file() -> None:
    assert len(_yaml_blocks()) == 2


def test_the_pages_rule_loads(documented: tuple[KnowledgeBase, Path, str]) -> None:
    kb, _, rule_id = documented
    title = re.search(r"^title: (.+)$", _yaml_blocks()[0], re.MULTILINE)
    assert title is not None and kb.rules[rule_id].spec.title == title[1]


def test_the_pages_cases_pass(documented: tuple[KnowledgeBase, Path, str], tmp_path: Path) -> None:
    kb, root, rule_id = documented
    cases = load_case_file(root / f"{rule_id}.yaml")
    assert cases.rule == rule_id
    assert {case.fires for case in cases.cases} == {True, False}
    for case in cases.cases:
        run_case(kb, rule_id, case, tmp_path)
