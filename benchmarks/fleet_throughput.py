"""Fleet throughput and memory: synthetic Ansible facts for N hosts, one `fleet` run each.

    python benchmarks/fleet_throughput.py                 # 1,000 / 5,000 / 10,000 hosts
    python benchmarks/fleet_throughput.py --hosts 10000 --jobs 2
    python benchmarks/fleet_throughput.py --hosts 10000 --shapes 0 20   # distinct, then 20 kinds

Each host file is a realistic `ansible -m setup --tree` document (about 14 KB: the facts the
advisor reads plus the mounts, addresses and environment it ignores) with varied memory, CPUs,
kernels, architectures and NICs, so rules fire differently from host to host. The run is a child
process; its wall time gives hosts/s and its peak RSS (parent and worker processes, from
getrusage) shows whether memory grows with the host count. Targets: >= 1,000 hosts/s on a
2-core machine, and peak memory flat as the host count grows.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = [
    "2.6.32-642.el6.x86_64",
    "3.10.0-1160.el7.x86_64",
    "4.18.0-513.el8.x86_64",
    "5.15.0-91-generic",
    "6.1.0-18-amd64",
    "6.8.0-45-generic",
]
NICS = [("ixgbe", 10000), ("i40e", 25000), ("mlx5_core", 100000), ("e1000e", 1000), ("bnx2", 1000)]
PROFILES = ["frontend-proxy", "gridftp", "c1m-server", "base"]


def host_document(i: int, rng: random.Random) -> dict[str, object]:
    arch = "i386" if i % 97 == 0 else "x86_64"
    kernel = KERNELS[i % len(KERNELS)] if arch == "x86_64" else "2.6.32-642.el6.i686"
    facts: dict[str, object] = {
        "ansible_hostname": f"host-{i:05d}",
        "ansible_fqdn": f"host-{i:05d}.example.net",
        "ansible_kernel": kernel,
        "ansible_architecture": arch,
        # a 32-bit x86 kernel addresses at most 64 GiB (PAE): such a host has less
        "ansible_memtotal_mb": min(
            rng.choice([2048, 4096, 8192, 16384, 65536, 262144]),
            16384 if arch == "i386" else 262144,
        ),
        "ansible_processor_vcpus": rng.choice([2, 4, 8, 16, 64]),
        "ansible_processor_nproc": 2,
        "ansible_interfaces": ["lo", "eth0", "eth1"],
        "ansible_lo": {"device": "lo", "mtu": 65536, "type": "loopback", "active": True},
    }
    for n in (0, 1):
        driver, speed = rng.choice(NICS)
        facts[f"ansible_eth{n}"] = {
            "device": f"eth{n}",
            "module": driver,
            "speed": speed if rng.random() > 0.1 else -1,
            "mtu": rng.choice([1500, 9000]),
            "type": "ether",
            "active": True,
            "ipv4": {"address": f"10.{n}.{i // 256 % 256}.{i % 256}", "netmask": "255.255.0.0"},
            "features": {f"feature_{k}": "on [fixed]" for k in range(60)},
        }
    facts["ansible_mounts"] = [
        {"mount": f"/srv/{k}", "device": f"/dev/sd{k}", "fstype": "xfs", "size_total": 10**12}
        for k in range(12)
    ]
    facts["ansible_env"] = {f"VAR_{k}": "x" * 40 for k in range(40)}
    return {"ansible_facts": facts, "changed": False}


def generate(directory: Path, hosts: int, shapes: int = 0) -> None:
    """Distinct hosts, or (shapes > 0) a realistic fleet: each host one of `shapes` kinds of
    machine (the same hardware, kernel and NICs), and one in ten with a little less memory than
    its kind (firmware reserving a few MiB more), which makes it a shape of its own."""
    rng = random.Random(1234)
    vary = random.Random(99)
    for i in range(hosts):
        document = host_document(i, random.Random(1234 + i % shapes) if shapes else rng)
        if shapes and vary.random() < 0.1:
            facts = document["ansible_facts"]
            assert isinstance(facts, dict)
            facts["ansible_memtotal_mb"] -= vary.randint(1, 64)
        (directory / f"host-{i:05d}").write_text(json.dumps(document))


def profile_map(directory: Path) -> Path:
    path = directory / "profile-map.yaml"
    path.write_text(
        "- {hosts: 'host-*0', profile: gridftp}\n"
        "- {hosts: 'host-*1', profile: c1m-server}\n"
        "- {hosts: 'host-*2', profile: base}\n"
    )
    return path


def run(
    hosts: int, jobs: int, work: Path, shapes: int = 0, outputs: Path | None = None
) -> tuple[float, float]:
    facts = work / f"facts-{hosts}-{shapes}"
    if not facts.exists():
        facts.mkdir()
        generate(facts, hosts, shapes)
    out = (outputs or work) / f"out-{hosts}-{shapes}"
    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable, "-m", "sysctl_advisor", "fleet", "--ansible-facts", str(facts),
        "--profile", "frontend-proxy", "--profile-map", str(profile_map(work)),
        "--out", str(out), "--jobs", str(jobs),
    ]  # fmt: skip
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "rc = subprocess.run(sys.argv[1:]).returncode\n"
        "wall = time.perf_counter() - t\n"
        "me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(rc, wall, kids)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *command], capture_output=True, text=True, check=True
    )
    rc, wall, peak_kib = result.stdout.split()
    if rc != "0":
        raise SystemExit(f"fleet exited {rc}: {result.stderr}")
    written = len(list((out / "host_files").iterdir()))
    if written != hosts:
        raise SystemExit(f"{written} host files for {hosts} hosts")
    return float(wall), int(peak_kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, nargs="*", default=[1000, 5000, 10000])
    parser.add_argument("--jobs", type=int, default=0, help="0: one worker per CPU")
    parser.add_argument("--keep", type=Path, help="generate into (and keep) this directory")
    parser.add_argument(
        "--outputs",
        type=Path,
        help="write the fleet's files under this directory instead (e.g. /dev/shm: the "
        "advisor's own cost without the disk's, which on a shared VM varies tenfold)",
    )
    parser.add_argument(
        "--shapes",
        type=int,
        nargs="*",
        default=[0],
        help="0: every host distinct; N: a fleet of N kinds of machine (several: each)",
    )
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(
            f"{'fleet':>12} {'hosts':>7} {'seconds':>8} {'hosts/s':>8} "
            f"{'peak RSS (largest process)':>28}"
        )
        for shapes in args.shapes:
            kind = f"{shapes} shapes" if shapes else "distinct"
            for hosts in args.hosts:
                wall, peak_mib = run(hosts, args.jobs, work, shapes, args.outputs)
                if args.outputs is not None:  # the directory this run wrote, nothing else
                    shutil.rmtree(args.outputs / f"out-{hosts}-{shapes}", ignore_errors=True)
                print(
                    f"{kind:>12} {hosts:>7} {wall:>8.2f} {hosts / wall:>8.0f} {peak_mib:>24.1f} MiB"
                )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
