"""The layout of a rendered conf or tuned file at the default detail, read back from its text:
the head before the first setting, each finding's lines in it, each setting's block, and the
lines wider than the limit. Shared by the property test of the default output
(tests/outputs/test_conf_head.py) and its measurement (benchmarks/conf_head.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.plan import Plan
from tests.conftest import EXAMPLE_PARAMS, EXAMPLE_WORKLOADS, EXAMPLES, ROOT, load_facts

WIDTH = 100
# A finding in the head: "#   [warning] id (key): its first sentence", its other lines indented
FINDING = re.compile(r"^#   \[(error|warning|info)\] ")
URL = re.compile(r"^https?://\S+$")


@dataclass
class Layout:
    head: list[str]  # the lines before the first setting's block
    findings: list[list[str]]  # each finding's lines in the head (the infos' one line too)
    blocks: list[list[str]]  # each setting's comment lines and its assignment
    wide: list[str] = field(default_factory=list)  # lines over WIDTH columns, exceptions aside


def example_plans(kb: KnowledgeBase) -> Iterator[tuple[str, Path, list[str], dict[str, str]]]:
    """Every example facts file with every shipped profile, and each several-workload example
    with its workloads and parameters: (name, facts path, profiles, parameters)."""
    profiles = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml"))
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.stem == "gather-facts":
            continue
        for profile in profiles:
            params = EXAMPLE_PARAMS.get(path.stem, {}) if profile == "c1m-server" else {}
            yield f"{path.stem}.{profile}", path, [profile], params
        if path.stem in EXAMPLE_WORKLOADS:
            workloads, params = EXAMPLE_WORKLOADS[path.stem]
            yield f"{path.stem}.{'+'.join(workloads)}", path, workloads, params


def build_example_plans(kb: KnowledgeBase) -> list[tuple[str, Path, Plan, dict[str, str]]]:
    out = []
    for name, path, profiles, params in example_plans(kb):
        profile = profiles[0] if len(profiles) == 1 else profiles
        out.append((name, path, build_plan(kb, load_facts(path), profile, params), params))
    return out


def unbreakable(line: str, settings: set[str]) -> bool:
    """A line wider than WIDTH that cannot be broken: a setting's assignment (procps and tuned
    read a value on one line), the rebuild command (copied whole into a shell), or a comment
    line holding a single word, such as a URL (a word is never cut)."""
    if not line.startswith("#"):
        return line.split("=", 1)[0].strip() in settings
    if line.startswith("# rebuild:  "):
        return True
    return len(line[1:].split()) == 1


def layout(text: str, settings: set[str]) -> Layout:
    lines = text.split("\n")
    first = next(
        (i for i, line in enumerate(lines) if line and line.split("=", 1)[0].strip() in settings),
        len(lines),
    )
    start = first
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    head = lines[:start]
    while head and not head[-1].strip():
        head.pop()
    blocks: list[list[str]] = []
    block: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            block = []
            continue
        block.append(line)
        if not line.startswith("#") and line.split("=", 1)[0].strip() in settings:
            blocks.append(block)
            block = []
    findings: list[list[str]] = []
    inside = False
    for line in head:
        if line == "# Findings:":
            inside = True
        elif inside and FINDING.match(line):
            findings.append([line])
        elif inside and findings and line.startswith("#    "):
            findings[-1].append(line)
        else:
            inside = False
    wide = [line for line in lines if len(line) > WIDTH and not unbreakable(line, settings)]
    return Layout(head, findings, blocks, wide)
