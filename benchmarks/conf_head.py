"""The default output's head and widths: over every example facts file with every shipped
profile (and each several-workload example with its workloads), the lines before the first
setting, the lines of each finding in that head, each setting's block, and the lines over 100
columns, in the conf and tuned formats at the default detail. Not a timing: run it from the
repository root after a change to the templates or to the findings' messages (docs/outputs.md
quotes its figures).

    python benchmarks/conf_head.py
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase  # noqa: E402
from sysctl_advisor.outputs.plan_render import Renderer, rebuild_command  # noqa: E402
from tests.conftest import EXAMPLE_PROFILES  # noqa: E402
from tests.outputs.conf_layout import WIDTH, build_example_plans, layout  # noqa: E402


def main() -> None:
    kb = KnowledgeBase.load()
    renderer = Renderer(kb.catalog)
    every = build_example_plans(kb)
    own = [p for p in every if "+" in p[0] or EXAMPLE_PROFILES.get(p[1].stem) == p[2].profile.name]
    for title, plans in (
        ("every example x every profile, and the several-workload ones", every),
        ("each example with its own profiles (the golden files)", own),
    ):
        print(f"{len(plans)} plans: {title}")
        measure(renderer, plans)


def measure(renderer: Renderer, plans: list) -> None:  # type: ignore[type-arg]
    for fmt in ("conf", "tuned"):
        heads, findings, per_finding, blocks, widths, wide, repeated = [], [], [], [], [], 0, 0
        for _, path, plan, params in plans:
            command = rebuild_command(plan.profile.name.split("+"), path.relative_to(ROOT), params)
            text = renderer.render(plan, fmt, command)
            found = layout(text, {s.key for s in plan.settings})
            heads.append(len(found.head))
            per_finding += [len(f) for f in found.findings if not f[0].startswith("#   [info] ")]
            findings.append(sum(len(f) for f in found.findings))
            blocks += [len(b) for b in found.blocks]
            widths.append(max(len(line) for line in text.split("\n")))
            wide += len(found.wide)
            ids = Counter((f.id, f.key) for f in plan.findings if f.severity != "info")
            repeated += sum(n - 1 for n in ids.values())
        print(f"{fmt}:")
        for label, figures in (
            ("head before the first setting", heads),
            ("the findings' lines in the head", findings),
            (f"lines per finding in the head ({len(per_finding)}; infos aside)", per_finding),
            ("lines per setting block", blocks),
            ("widest line", widths),
        ):
            print(f"  {label + ':':<40} median {statistics.median(figures)}, max {max(figures)}")
        print(f"  lines over {WIDTH} columns (not an assignment, URL or rebuild line): {wide}")
        print(f"  findings repeated (same id and key) in the plans: {repeated}")


if __name__ == "__main__":
    main()
