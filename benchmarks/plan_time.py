"""build_plan in process, on three example hosts with their profiles: the best of five rounds
of 40 plans each, in milliseconds per plan. Run it from a tree's root; to compare two trees,
run it in each, alternating (another checkout: `cd OTHER && python benchmarks/plan_time.py`).
With `--distinct N`: N of fleet_throughput.py's distinct hosts instead (its profile map), CPU
time per plan, best of three rounds.

    python benchmarks/plan_time.py
    python benchmarks/plan_time.py --distinct 1500
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fleet_throughput import generate  # noqa: E402

from sysctl_advisor.engine.plan_builder import build_plan  # noqa: E402
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase  # noqa: E402
from sysctl_advisor.sources.ansible_facts import load_ansible_facts  # noqa: E402
from tests.conftest import EXAMPLE_PROFILES, EXAMPLES, load_facts  # noqa: E402

HOSTS = ("ec2-nginx-frontend", "dcache-32bit", "c1m-server")
ROUNDS, PLANS = 5, 40
# fleet_throughput.py's profile map: host-*0 gridftp, host-*1 c1m-server, host-*2 base
BY_LAST_DIGIT = {"0": "gridftp", "1": "c1m-server", "2": "base"}


def examples(kb: KnowledgeBase) -> None:
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


def distinct(kb: KnowledgeBase, count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="plan-time-") as work:
        generate(Path(work), count)
        paths = sorted(Path(work).iterdir())
        hosts = [
            (load_ansible_facts(p), BY_LAST_DIGIT.get(p.name[-1], "frontend-proxy")) for p in paths
        ]
    build_plan(kb, *hosts[0])
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for facts, profile in hosts:
            build_plan(kb, facts, profile)
        best = min(best, (time.process_time() - start) / count * 1000)
    print(f"build_plan, {count:,} distinct hosts: {best:.3f} ms CPU per plan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distinct", type=int, help="plan this many distinct fleet hosts")
    args = parser.parse_args()
    kb = KnowledgeBase.load()
    if args.distinct:
        distinct(kb, args.distinct)
    else:
        examples(kb)


if __name__ == "__main__":
    main()
