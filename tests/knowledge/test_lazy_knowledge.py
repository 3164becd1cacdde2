"""A run loads and defines only the knowledge it reads: `check` none of the advice rules,
profiles, Kubernetes table or message families; `recommend -p X`, once the rule and profile
files were checked whole, only the rules X runs. A change to any of those files is checked
whole again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge import rules as rules_module
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase, OnDemand
from sysctl_advisor.model.errors import InputError
from tests.conftest import HANG_SECONDS, ROOT, load_facts

DUMP = ROOT / "tests" / "fixtures" / "dumps" / "sysctl-a-6.18.txt"
DCACHE = ROOT / "examples" / "dcache-32bit.yaml"

# Runs one command line through the console entry point; prints the modules it imported.
DRIVER = """
import json, sys
from sysctl_advisor.entry import main

sys.argv = ["sysctl-advisor", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _modules(cache: Path, *argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(argv)],
        cwd=ROOT,
        env={"SYSCTL_ADVISOR_CACHE": str(cache), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_check_neither_defines_nor_caches_the_advice_knowledge(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for _ in range(2):  # cold, then warm
        modules = _modules(cache, "check", "-o", str(tmp_path / "out"), str(DUMP))
        unused = {
            "sysctl_advisor.knowledge.kubernetes",
            "sysctl_advisor.knowledge.app_messages",
            "sysctl_advisor.knowledge.node_platforms",
            "sysctl_advisor.knowledge.rules",
            "sysctl_advisor.knowledge.profiles",
            "sysctl_advisor.knowledge.workloads",
            "sysctl_advisor.knowledge.servers",
            "sysctl_advisor.knowledge.writers",
            "sysctl_advisor.knowledge.kernel_messages",
            "sysctl_advisor.engine.plan_builder",
        }
        assert modules & unused == set()
    kinds = {p.name.split("-")[-1].split(".")[0] for p in (cache / "private").glob("specs-*")}
    assert {"catalog", "check_rules"} <= kinds
    assert kinds & {"rules", "profiles", "kubernetes", "message_families", "writers"} == set()


def test_check_of_a_dump_imports_no_validation_library(tmp_path: Path) -> None:
    """A warm check takes its validated models from the caches: neither pydantic nor the
    constraint types pydantic reads are imported (the models' constraints are the advisor's
    own metadata)."""
    cache = tmp_path / "cache"
    for _ in range(2):
        modules = _modules(cache, "check", "-o", str(tmp_path / "out"), str(DUMP))
    assert modules & {"pydantic", "annotated_types", "typing_extensions"} == set()


def test_recommend_without_a_kept_value_defines_no_check_rules(tmp_path: Path) -> None:
    """A plan that keeps no value in force a check rule could flag (dcache-32bit) never
    imports check's judge, its findings or its rules."""
    cache = tmp_path / "cache"
    argv = ("recommend", "--facts", str(DCACHE), "-p", "gridftp", "-o", str(tmp_path / "out"))
    for _ in range(2):
        modules = _modules(cache, *argv)
    unused = {
        "sysctl_advisor.engine.check.judge",
        "sysctl_advisor.engine.check.findings",
        "sysctl_advisor.knowledge.check_rules",
    }
    assert modules & unused == set()


def _site(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the shipped rules and profiles as a --rules-dir and a --profiles-dir."""
    rules, profiles = tmp_path / "rules", tmp_path / "profiles"
    shutil.copytree(ROOT / "rules", rules, ignore=shutil.ignore_patterns("catalog", "check"))
    for folder in list(rules.iterdir()):  # families of their own: no id clashes with the shipped
        for path in folder.rglob("*.yaml"):
            path.write_text(path.read_text().replace("id: ", "id: site-"))
        folder.rename(rules / f"site-{folder.name}")
    profiles.mkdir()
    return rules, profiles


def test_recommend_loads_only_the_rules_its_profile_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / "cache"))
    facts = load_facts(DCACHE)
    whole = KnowledgeBase.lazy()
    expected = build_plan(whole, facts, "gridftp")  # checks the files whole
    loaded: list[Path] = []
    real = rules_module.load_rule

    def counted(path: Path, *args: object) -> rules_module.Rule:
        loaded.append(path)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(rules_module, "load_rule", counted)
    kb = KnowledgeBase.lazy()
    workload = kb.workload("gridftp")
    assert build_plan(kb, facts, "gridftp") == expected
    assert sorted(loaded) == sorted(whole.rules[rule_id].path for rule_id in workload.rule_ids)
    assert len(loaded) < len(kb.rules)


def _reads_a_parameter(rules: Path) -> Path:
    return next(p for p in sorted(rules.rglob("*.yaml")) if "params." in p.read_text())


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        # a finding id another rule uses: only a check across the rule files finds it
        (
            lambda rules: rules / "site-time-wait" / "fin-timeout.yaml",
            "id: site-time-wait.fin-timeout-not-timewait",
            "id: site-time-wait.node-ports-unreservable",
        ),
        # a parameter no profile that runs the rule declares
        (_reads_a_parameter, "params.", "params.undeclared_"),
    ],
)
def test_a_changed_rule_file_is_checked_against_the_others_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    file: Callable[[Path], Path],
    old: str,
    new: str,
) -> None:
    monkeypatch.setenv("SYSCTL_ADVISOR_CACHE", str(tmp_path / "cache"))
    rules, profiles = _site(tmp_path)
    KnowledgeBase.lazy([rules], [profiles]).workload("gridftp")  # checked whole, index kept
    assert isinstance(KnowledgeBase.lazy([rules], [profiles]).rules, OnDemand)  # from it
    target = file(rules)
    text = target.read_text()
    assert old in text
    target.write_text(text.replace(old, new, 1))
    with pytest.raises(InputError):
        KnowledgeBase.lazy([rules], [profiles]).workload("gridftp")


@pytest.mark.parametrize(
    "argv", [("recommend", "--facts", str(DCACHE), "-p", "gridftp"), ("check", str(DUMP))]
)
def test_a_warm_run_writes_no_cache_file(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """Once a run has validated the knowledge and the references it cites, the next run takes
    both from the caches and rewrites none of them (the verdict on the references is kept with
    the entries it covers, not pruned by the load before it is read)."""
    cache = tmp_path / "cache"
    for _ in range(2):
        _modules(cache, *argv, "-o", str(tmp_path / "out"))
    before = {p.name: p.stat().st_mtime_ns for p in (cache / "private").iterdir()}
    _modules(cache, *argv, "-o", str(tmp_path / "out"))
    assert {p.name: p.stat().st_mtime_ns for p in (cache / "private").iterdir()} == before
