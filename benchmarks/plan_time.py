"""build_plan in process, on three example hosts with their profiles: the best of five rounds
of 40 plans each, in milliseconds per plan. Run it from a tree's root; to compare two trees,
run it in each, alternating (another checkout: `cd OTHER && python benchmarks/plan_time.py`).

    python benchmarks/plan_time.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sysctl_advisor.engine.plan_builder import build_plan  # noqa: E402
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase  # noqa: E402
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, load_facts  # noqa: E402

HOSTS = ("ec2-nginx-frontend", "dcache-32bit", "c1m-server")
ROUNDS, PLANS = 5, 40


def main() -> None:
    kb = KnowledgeBase.load()
    figures = []
    for host in HOSTS:
        facts, profile = load_facts(EXAMPLES / f"{host}.yaml"), EXAMPLE_PROFILES[host]
        build_plan(kb, facts, profile)
        best = float("inf")
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for _ in range(PLANS):
                build_plan(kb, facts, profile)
            best = min(best, (time.perf_counter() - start) / PLANS * 1000)
        figures.append(f"{host} {best:.2f} ms")
    print(f"build_plan ({len(kb.rules)} rules): " + ", ".join(figures))


if __name__ == "__main__":
    main()
