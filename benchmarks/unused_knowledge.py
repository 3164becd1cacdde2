"""What knowledge a run does not use costs it: `recommend` and `check` with 200 more advice
rules and 5 more profiles in a --rules-dir and a --profiles-dir (target: under 3% each).

    python benchmarks/unused_knowledge.py [--runs 21] [--rules 200] [--profiles 5]

The extra rules are the shipped advice rules copied under new families (`unusedN.*`, ids and
finding ids renamed) that no profile runs, and the extra profiles copies of shipped profiles
under new names (`unusedN`), generated at benchmark time into a temporary directory. Each
side runs with its own warm cache; whole processes, alternating pairs (a slow moment of the
machine falls on both sides), medians of wall and CPU time, on the package byte-compiled.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADVISOR = [sys.executable, "-m", "sysctl_advisor"]
_ID = re.compile(r"^(\s*(?:- )?id:\s*)([a-z0-9-]+)\.([a-z0-9.-]+)\s*$", re.MULTILINE)


def unused_knowledge(directory: Path, rules: int, profiles: int) -> tuple[Path, Path]:
    """A rules directory of `rules` advice rules and a profiles directory of `profiles`
    profiles, none of which a run of the shipped profiles uses."""
    shipped = sorted(
        p
        for p in (ROOT / "rules").rglob("*.yaml")
        if not {"catalog", "check"} & set(p.relative_to(ROOT / "rules").parts)
    )
    rules_dir, profiles_dir = directory / "rules", directory / "profiles"
    profiles_dir.mkdir(parents=True)
    for n in range(rules):
        family = f"unused{n % profiles}"
        source = shipped[n % len(shipped)]
        prefix = f"{family}.n{n}"
        text = _ID.sub(
            lambda m, p=prefix: f"{m.group(1)}{p}-{m.group(2)}-{m.group(3).replace('.', '-')}",
            source.read_text(),
        )
        (rules_dir / family).mkdir(parents=True, exist_ok=True)
        (rules_dir / family / f"n{n}-{source.stem}.yaml").write_text(text)
    shipped_profiles = sorted((ROOT / "profiles").glob("*.yaml"))
    for p in range(profiles):
        text = shipped_profiles[(p + 1) % len(shipped_profiles)].read_text()
        renamed = re.sub(r"^name: .*$", f"name: unused{p}", text, count=1, flags=re.MULTILINE)
        (profiles_dir / f"unused{p}.yaml").write_text(renamed)
    return rules_dir, profiles_dir


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one child process: on a machine that
    other work keeps busy, the CPU time is the steadier figure."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


Samples = list[tuple[float, float]]


def median(samples: Samples, index: int) -> float:
    return statistics.median(s[index] for s in samples)


def paired(
    plain: list[str], extra: list[str], runs: int, caches: tuple[Path, Path]
) -> tuple[Samples, Samples]:
    """`plain` and `extra` over alternating runs, each with its own warm cache."""
    envs = [
        {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
         "SYSCTL_ADVISOR_CACHE": str(cache)}
        for cache in caches
    ]  # fmt: skip
    for command, env in ((plain, envs[0]), (extra, envs[1])):
        first = subprocess.run(command, capture_output=True, text=True, env=env)
        if first.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)}: {first.stderr.strip()}")
        timed(command, env)
    a: Samples = []
    b: Samples = []
    for i in range(runs):
        order = [(plain, envs[0], a), (extra, envs[1], b)]
        for command, env, samples in order if i % 2 == 0 else reversed(order):
            samples.append(timed(command, env))
    return a, b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--profiles", type=int, default=5)
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "sysctl_advisor", quiet=1)
    with tempfile.TemporaryDirectory(prefix="sysctl-advisor-unused-") as tmp:
        work = Path(tmp)
        rules_dir, profiles_dir = unused_knowledge(work, args.rules, args.profiles)
        extra = ["--rules-dir", str(rules_dir), "--profiles-dir", str(profiles_dir)]
        dump = work / "sysctl-a.conf"
        with dump.open("w") as out:
            subprocess.run(["sysctl", "-a"], stdout=out, stderr=subprocess.DEVNULL)
        facts = str(ROOT / "examples" / "dcache-32bit.yaml")
        recommend = [*ADVISOR, "recommend", "--facts", facts, "--profile", "gridftp"]
        check = [*ADVISOR, "check", str(dump)]
        print(f"{args.rules} advice rules and {args.profiles} profiles no run uses, "
              f"medians of {args.runs} alternating pairs (target: under 3% each):")  # fmt: skip
        for label, command in (("recommend (dcache-32bit, gridftp)", recommend),
                               ("check of this machine's sysctl -a", check)):  # fmt: skip
            caches = (work / f"{label[:5]}-plain", work / f"{label[:5]}-extra")
            plain, more = paired(command, [*command, *extra], args.runs, caches)
            for index, what in ((0, "wall"), (1, "CPU")):
                before, after = median(plain, index), median(more, index)
                cost = after / before - 1
                verdict = "ok" if cost < 0.03 else "over"
                print(f"  {label:36s} {what:4s} {before * 1000:7.1f} ms -> "
                      f"{after * 1000:7.1f} ms  {cost:+6.1%} {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
