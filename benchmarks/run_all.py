"""Every performance figure, each as a ratio with its peer or its target.

    python benchmarks/run_all.py [--runs 15] [--quick]

Whole processes, medians over alternating runs (a pair at a time, so a slow moment of the
machine falls on both sides), on the package byte-compiled as `pip install` leaves it:

1. `recommend` (dcache-32bit, gridftp) against `python -c "import pydantic, jinja2, yaml, typer"`
   (target <= 1.3), with two floors on the same scale: what a warm run imports of its libraries
   (`import jinja2.sandbox, yaml`: it takes its validated models from the caches, without
   pydantic) and what a run that validates a file starts from (the same, pydantic and one
   validation through a TypeAdapter);
   and a run on a facts file not validated before (which imports pydantic to validate it);
2. `check` of this machine's `sysctl -a` dump against its own floor, `import jinja2.sandbox,
   yaml` (target <= 2); `check` and `diff` of it against kernel-hardening-checker on the
   same dump, wall time and peak RSS (target <= 2 each). The peer is installed from
   a checkout of github.com/a13xp0p0v/kernel-hardening-checker (`--peer DIR`) into a throwaway
   venv; without it the line says so;
3. `check` of 1,000 sysctl.d files (target <= 0.5 s), of one 100,000-line file (<= 1.5 s) and
   of 100,000 lines of one key, one value and each value different (<= 1.5 s);
4. `fleet` with 2 workers: benchmarks/fleet_throughput.py on 10,000 distinct hosts (target
   >= 1,000 hosts/s) and on 10,000 hosts of 20 kinds of machine (>= 2,000 hosts/s); 1,000 hosts
   of each too, to show that peak memory does not grow with the host count. Run twice: the
   fleet's files on disk, as a user writes them, and on tmpfs (/dev/shm), which leaves out the
   disk (20,000 files cost 1-8 s on this VM's shared disk, from one minute to the next);
5. what unused knowledge costs: `recommend` and `check` with 200 more advice rules and 5 more
   profiles that the run does not use (benchmarks/unused_knowledge.py, target under 3% each);
6. `facts` on a network namespace holding 18,000 sockets against an idle one
   (benchmarks/facts_many_sockets.py: root, `unshare -n`; target the same time).
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADVISOR = [sys.executable, "-m", "sysctl_advisor"]
IMPORTS = [sys.executable, "-c", "import pydantic, jinja2, yaml, typer"]
# What a warm run imports of its libraries: the Jinja2 sandbox (rule expressions) and PyYAML.
NO_PYDANTIC = [sys.executable, "-c", "import jinja2.sandbox, yaml"]
# What a run that validates a file adds: pydantic, and one dataclass validated through a
# TypeAdapter, as the advisor's models are.
PYDANTIC_FLOOR = [
    sys.executable,
    "-c",
    "import dataclasses, jinja2.sandbox, yaml\n"
    "from pydantic import TypeAdapter\n"
    "@dataclasses.dataclass(frozen=True)\n"
    "class Facts:\n"
    "    total: int = 0\n"
    "TypeAdapter(Facts).validate_python({'total': 1})\n",
]


def measure_rss(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process (wait4's rusage is the child's
    own, so each figure is that process's alone)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = 0
    return wall, usage.ru_maxrss / 1024


Samples = list[tuple[float, float]]


def pairs(a: list[str], b: list[str], runs: int, env: dict[str, str]) -> tuple[Samples, Samples]:
    first: Samples = []
    second: Samples = []
    measure_rss(a, env), measure_rss(b, env)  # warm caches and the page cache
    for _ in range(runs):
        first.append(measure_rss(a, env))
        second.append(measure_rss(b, env))
    return first, second


def median(samples: list[tuple[float, float]], index: int) -> float:
    return statistics.median(s[index] for s in samples)


def line(label: str, value: float, peer: float, target: float, unit: str = "ms") -> str:
    ratio = value / peer if peer else float("inf")
    scale = 1000 if unit == "ms" else 1
    verdict = "ok" if ratio <= target else "over"
    return (
        f"{label:44s} {value * scale:8.1f} {unit} vs {peer * scale:8.1f} {unit}"
        f"  ratio {ratio:5.2f} (target <= {target}) {verdict}"
    )


def peer_command(peer: Path | None, work: Path, dump: Path) -> list[str] | None:
    """kernel-hardening-checker, installed from a checkout of it into a throwaway venv."""
    if peer is None or not peer.is_dir():
        return None
    venv = work / "khc-venv"
    if not venv.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        installed = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", str(peer)], capture_output=True
        )
        if installed.returncode != 0:
            return None
    return [str(venv / "bin" / "kernel-hardening-checker"), "-s", str(dump)]


def synthetic_files(directory: Path, files: int) -> None:
    rng = random.Random(7)
    lines = [
        "net.core.somaxconn = {n}",
        "net.ipv4.tcp_rmem = 4096 87380 {big}",
        "net.ipv4.tcp_fin_timeout = 30",
        "vm.swappiness = 10",
        "kernel.pid_max = 4194304",
        "# a comment",
        "net.ipv4.tcp_tw_recycle = 1",
    ]
    directory.mkdir(parents=True)
    for i in range(files):
        body = "\n".join(
            rng.choice(lines).format(n=rng.choice([1024, 4096]), big=2 ** rng.randint(20, 26))
            for _ in range(12)
        )
        (directory / f"{i:04d}-generated.conf").write_text(body + "\n")


def big_file(path: Path, lines: int) -> None:
    rng = random.Random(3)
    keys = ["net.core.somaxconn", "net.ipv4.tcp_fin_timeout", "vm.swappiness", "kernel.pid_max"]
    with path.open("w") as out:
        for _ in range(lines):
            out.write(f"{rng.choice(keys)} = {rng.choice([10, 30, 60, 4096, 65535])}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 runs, no fleet")
    parser.add_argument("--peer", type=Path, help="a checkout of kernel-hardening-checker")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    compileall.compile_dir(ROOT / "sysctl_advisor", quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="sysctl-advisor-bench-") as tmp:
        work = Path(tmp)
        facts = ROOT / "examples" / "dcache-32bit.yaml"
        recommend = [*ADVISOR, "recommend", "--facts", str(facts), "--profile", "gridftp"]
        ours, imports = pairs(recommend, IMPORTS, runs, env)
        print(
            line("recommend vs the four library imports", median(ours, 0), median(imports, 0), 1.3)
        )
        for label, command in (
            ("  the warm floor (sandbox, PyYAML) vs the imports", NO_PYDANTIC),
            ("  the pydantic floor vs the imports", PYDANTIC_FLOOR),
        ):
            floor, imports = pairs(command, IMPORTS, runs, env)
            print(line(label, median(floor, 0), median(imports, 0), 1.3))
        unseen: Samples = []
        known: Samples = []
        for i in range(max(3, runs // 3)):  # a facts file the advisor has not validated before,
            copy = work / f"host-{i}.yaml"  # alternating with the known one
            copy.write_text(facts.read_text())
            unseen.append(measure_rss([*recommend[:5], str(copy), *recommend[6:]], env))
            known.append(measure_rss(recommend, env))
        print(
            f"{'  recommend, a facts file not seen before':44s} {median(unseen, 0) * 1000:8.1f} ms"
            f" vs {median(known, 0) * 1000:8.1f} ms for one seen before"
        )

        dump = work / "sysctl-a.txt"
        with dump.open("w") as out:
            subprocess.run(["sysctl", "-a"], stdout=out, stderr=subprocess.DEVNULL)
        peer = peer_command(args.peer, work, dump)
        check = [*ADVISOR, "check", str(dump)]
        diff = [*ADVISOR, "diff", "--profile", "base", "--current", str(dump)]
        ours, floor = pairs(check, NO_PYDANTIC, runs, env)  # within 2x its floor
        print(line("check of sysctl -a vs the warm floor", median(ours, 0), median(floor, 0), 2.0))
        if peer is None:
            print("check/diff vs kernel-hardening-checker: no checkout given (--peer)")
        else:
            for label, command in (("check", check), ("diff", diff)):
                ours, theirs = pairs(command, peer, runs, env)
                print(line(f"{label} of sysctl -a vs the peer: wall", median(ours, 0),
                           median(theirs, 0), 2.0))  # fmt: skip
                print(line(f"{label} of sysctl -a vs the peer: peak RSS", median(ours, 1),
                           median(theirs, 1), 2.0, unit="MiB"))  # fmt: skip

        many = work / "many" / "sysctl.d"
        synthetic_files(many, 1000)
        big = work / "big.conf"
        big_file(big, 100_000)
        one_key, distinct = work / "one-key.conf", work / "distinct.conf"
        one_key.write_text("net.core.somaxconn = 4096\n" * 100_000)
        distinct.write_text("".join(f"net.core.somaxconn = {4096 + i}\n" for i in range(100_000)))
        for label, command, target in (
            ("check of 1,000 sysctl.d files", [*ADVISOR, "check", str(many)], 0.5),
            ("check of one 100,000-line file", [*ADVISOR, "check", str(big)], 1.5),
            ("check of 100,000 lines of one key", [*ADVISOR, "check", str(one_key)], 1.5),
            ("  the same, each value different", [*ADVISOR, "check", str(distinct)], 1.5),
        ):
            samples = [measure_rss(command, env) for _ in range(max(3, runs // 3))]
            wall = median(samples, 0)
            verdict = "ok" if wall <= target else "over"
            print(f"{label:44s} {wall:8.2f} s  (target <= {target} s) {verdict}")
    for script in ("unused_knowledge.py", "facts_many_sockets.py"):
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / script), "--runs", str(runs)],
            env=env,
            check=False,
        )

    if not args.quick:
        print("fleet, 2 workers (targets: >= 1,000 hosts/s distinct, >= 2,000 for 20 shapes):")
        fleet = [sys.executable, str(ROOT / "benchmarks" / "fleet_throughput.py"), "--hosts",
                 "1000", "10000", "--jobs", "2", "--shapes", "0", "20"]  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="fleet-facts-") as facts_dir:
            subprocess.run([*fleet, "--keep", facts_dir], env=env, check=False)
            shm = Path("/dev/shm")
            if shm.is_dir() and os.access(shm, os.W_OK):
                print("the same, the fleet's files written to tmpfs (the disk's cost left out):")
                with tempfile.TemporaryDirectory(prefix="fleet-out-", dir=shm) as out:
                    subprocess.run(
                        [*fleet, "--keep", facts_dir, "--outputs", out], env=env, check=False
                    )


if __name__ == "__main__":
    main()
