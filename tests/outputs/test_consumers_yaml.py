"""Generated YAML (host_vars from `recommend --format ansible` and `fleet --out`, the fleet
playbook) passes yamllint's default config and ansible-lint, both run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from yamllint import linter
from yamllint.config import YamlLintConfig

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.outputs.plan_render import Renderer, rendered_settings
from tests.commands.test_fleet import TREE, fleet
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, load_facts

DEFAULT = YamlLintConfig("extends: default")  # yamllint's own default rules, nothing relaxed


def yamllint_problems(text: str) -> list[str]:
    return [f"{p.line}:{p.column} {p.rule}: {p.desc}" for p in linter.run(text, DEFAULT)]


def render_ansible(kb: KnowledgeBase, facts_path: Path, profile: str, command: str) -> str:
    plan = build_plan(kb, load_facts(facts_path), profile)
    return Renderer(kb.catalog).render(plan, "ansible", command)


@pytest.mark.parametrize(("host", "profile"), sorted(EXAMPLE_PROFILES.items()))
def test_host_vars_pass_yamllint_default(kb: KnowledgeBase, host: str, profile: str) -> None:
    text = render_ansible(kb, EXAMPLES / f"{host}.yaml", profile, "sysctl-advisor recommend")
    assert yamllint_problems(text) == []
    assert "ansible.posix collection" in text and "must be installed" in text


def test_long_hostnames_and_commands_still_pass(kb: KnowledgeBase, tmp_path: Path) -> None:
    """The longest hostname the facts accept (253 characters, 63-character labels) and a
    rebuild command with a long unbreakable path: every line within 80 characters, or a single
    word after "# " (yamllint's allow-non-breakable-words)."""
    label = "h" * 63
    hostname = ".".join([label, label, label, "h" * 61])
    assert len(hostname) == 253
    source = (EXAMPLES / "ec2-nginx-frontend.yaml").read_text()
    facts = tmp_path / "facts.yaml"
    facts.write_text(source.replace("hostname: ping-frontend-03", f"hostname: {hostname}"))
    command = f"sysctl-advisor recommend --facts /{'d' * 150}/facts.yaml --profile frontend-proxy"
    text = render_ansible(kb, facts, "frontend-proxy", command)
    assert hostname in text and "d" * 150 in text
    assert yamllint_problems(text) == []
    assert all(len(line) <= 80 or " " not in line[2:] for line in text.splitlines())


def test_read_back_is_the_document_after_the_comments(kb: KnowledgeBase) -> None:
    plan = build_plan(kb, load_facts(EXAMPLES / "dtn-10g.yaml"), "gridftp")
    text = Renderer(kb.catalog).render(plan, "ansible", "cmd")
    data = yaml.safe_load(text)  # what Ansible's YAML loader sees
    assert data["sysctl_advisor_settings"] == [
        {"name": s.key, "value": s.value} for s in plan.settings
    ]
    assert rendered_settings("ansible", text) == {s.key: s.value for s in plan.settings}


def _ansible_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        NO_COLOR="1",
    )
    return env


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name  # the venv's console script
    return str(beside) if beside.exists() else shutil.which(name)


@pytest.fixture(scope="module")
def fleet_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet") / "out"
    code, err = fleet("--ansible-facts", TREE, "--profile", "base", "--out", out)
    assert code == 1, err  # three of the fixture hosts are broken on purpose
    return out


def test_fleet_yaml_passes_yamllint_default(fleet_out: Path) -> None:
    files = [fleet_out / "playbook.yml", *sorted((fleet_out / "host_vars").glob("*.yml"))]
    assert len(files) == 4
    for path in files:
        assert yamllint_problems(path.read_text()) == [], path.name


def test_playbook_needs_only_ansible_core(fleet_out: Path) -> None:
    (play,) = yaml.safe_load((fleet_out / "playbook.yml").read_text())
    modules = {
        key
        for task in play["tasks"] + play["handlers"]
        for key in task
        if "." in key  # module keys are fully qualified; options such as `when` are not
    }
    assert modules and all(m.startswith("ansible.builtin.") for m in modules), modules


def test_ansible_lint_accepts_fleet_and_recommend_output(
    kb: KnowledgeBase, fleet_out: Path, tmp_path: Path
) -> None:
    lint = _tool("ansible-lint")
    if lint is None:
        pytest.skip("ansible-lint not installed (pip install '.[test]')")
    project = tmp_path / "project"
    shutil.copytree(fleet_out, project, ignore=shutil.ignore_patterns(".*"))
    for host, profile in sorted(EXAMPLE_PROFILES.items()):
        text = render_ansible(kb, EXAMPLES / f"{host}.yaml", profile, "sysctl-advisor recommend")
        (project / "host_vars" / f"example-{host}.yml").write_text(text)
    probe = subprocess.run([lint, "--version"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"ansible-lint cannot run here: {probe.stderr.strip()[:200]}")
    result = subprocess.run(
        [lint, "--offline", "--nocolor", "-p", "."],
        cwd=project,
        env=_ansible_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    syntax = _tool("ansible-playbook")
    if syntax is not None:
        checked = subprocess.run(
            [syntax, "--syntax-check", "-i", "localhost,", "playbook.yml"],
            cwd=project,
            env=_ansible_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
