"""How long the conf files are: lines per setting at each level of detail, over the examples
(with their golden profiles) and the varied hosts of tests/outputs/test_varied_hosts.py, and
where the default level's lines go. Not a timing: run it from the repository root after a
change to the templates or the rules' summaries (docs/outputs.md quotes its figures).

    python benchmarks/conf_length.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sysctl_advisor.engine.plan_builder import build_plan  # noqa: E402
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase  # noqa: E402
from sysctl_advisor.outputs import formats  # noqa: E402
from sysctl_advisor.outputs.plan_render import Renderer  # noqa: E402
from tests.outputs.test_varied_hosts import every_host  # noqa: E402

SECTIONS = {"# Findings:": "findings", "# Outside sysctl": "outside sysctl",
            "# Already covered": "covered by the default", "# Notes:": "notes",
            "# References:": "references"}  # fmt: skip


def main() -> None:
    kb = KnowledgeBase.load()
    renderer = Renderer(kb.catalog)
    plans = [build_plan(kb, facts, p, params) for _, facts, p, params in every_host()]
    settings = sum(len(plan.settings) for plan in plans)
    print(f"{len(plans)} plans, {settings} settings")
    for detail in formats.DETAIL:
        lines = sum(len(renderer.render(p, "conf", "c", detail).splitlines()) for p in plans)
        print(f"  {detail:<7} {lines:6} lines, {lines / settings:5.2f} per setting")
    where: Counter[str] = Counter()
    for plan in plans:
        part = "head"
        for line in renderer.render(plan, "conf", "c").splitlines():
            part = next((v for k, v in SECTIONS.items() if line.startswith(k)), part)
            if part not in ("references",) and not line:
                part = "values"
            where[part] += 1
    print("the default level, by part (lines per setting):")
    for part, count in where.most_common():
        print(f"  {part:<24} {count / settings:5.2f}")


if __name__ == "__main__":
    main()
