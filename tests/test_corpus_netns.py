"""Every line `sysctl -p` rejects on the running kernel is an error of `check --kernel $(uname -r)`.

Each corpus file is split into its lines as procps reads them. A line is *rejected* when its key
does not exist under /proc/sys (stat only: the host is never written), when the key's file is
read-only (mode 0444), or when the running kernel refuses its value in a fresh `unshare -n`. Only
the keys that exist writable under /proc/sys/net of that child namespace (the per-namespace keys)
are applied there, each line alone with `sysctl -p`; every other key (vm, fs, kernel and the
global net keys) cannot be applied without writing the host and is listed as "not applied (not
per-namespace)". Nothing is loaded: a module's keys (nf_conntrack, br_netfilter) missing here are
rejected lines for which a warning naming the module is enough, as is a warning naming the
directory for a key whose whole directory this kernel does not list now.
"""

from __future__ import annotations

import platform
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus import Entry, check, entries
from tests.namespaces import namespace_problem

PROC = Path("/proc/sys")
CONGESTION = "net.ipv4.tcp_congestion_control"
SHARED = ("all", "default", "lo")
# Key prefixes whose tables a module registers, and the module's name.
MODULE_KEYS = {
    "net.netfilter.": "nf_conntrack",
    "net.nf_conntrack_max": "nf_conntrack",
    "net.ipv4.netfilter.": "nf_conntrack",
    "net.ipv4.ip_conntrack_max": "nf_conntrack",
    "net.bridge.": "br_netfilter",
}


def _problem() -> str | None:
    if shutil.which("sysctl") is None:
        return "needs procps sysctl"
    return namespace_problem()


@dataclass(frozen=True)
class Line:
    """One `key = value` line of a corpus file, as procps reads it."""

    number: int
    key: str
    value: str

    @property
    def path(self) -> str:
        return self.key if "/" in self.key else self.key.replace(".", "/")

    @property
    def module(self) -> str | None:
        if self.key == CONGESTION:
            return f"tcp_{self.value.split()[0]}" if self.value.split() else None
        return next((m for p, m in MODULE_KEYS.items() if self.key.startswith(p)), None)

    @property
    def interface(self) -> bool:
        """A key of one named interface: it exists only while the host has that interface."""
        parts = self.key.replace("/", ".").split(".")
        return len(parts) > 4 and parts[2] in ("conf", "neigh") and parts[3] not in SHARED


def sysctl_lines(path: Path) -> list[Line]:
    """The lines procps would write; comments, blanks, templates and `-key` lines left out."""
    lines = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = raw.strip()
        if not text or text[0] in "#;" or "=" not in text or "{{" in text or "{%" in text:
            continue
        key, _, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if key.startswith("-") or "*" in key or not value:
            continue
        lines.append(Line(number, key, value))
    return lines


def writable(path: Path) -> bool:
    return path.is_file() and bool(
        path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    )


def applied_in_namespace(lines: list[Line]) -> tuple[set[int], set[int]]:
    """Apply each line alone in one fresh namespace: the numbers rejected and not applied."""
    script = (
        "ip link set lo up\n"
        'for f in "$1"/*.conf; do\n'
        '  k="$(cut -d= -f1 "$f" | tr -d " ")"; p="/proc/sys/$(printf %s "$k" | tr . /)"\n'
        '  case "$k" in */*) p="/proc/sys/$k" ;; esac\n'
        '  case "$p" in /proc/sys/net/*) ;; *) echo "skip $f"; continue ;; esac\n'
        '  if [ ! -f "$p" ] || [ ! -w "$p" ] || [ -z "$(find "$p" -perm /222)" ]; then\n'
        '    echo "skip $f"; continue; fi\n'
        '  if sysctl -q -p "$f" >/dev/null 2>&1; then echo "ok $f"; else echo "rejected $f"; fi\n'
        "done\n"
    )
    with tempfile.TemporaryDirectory() as scratch:
        for line in lines:
            Path(scratch, f"{line.number:06d}.conf").write_text(f"{line.key} = {line.value}\n")
        done = subprocess.run(
            ["unshare", "-n", "--", "sh", "-uc", script, "sh", scratch],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    rejected, skipped = set(), set()
    for row in done.stdout.splitlines():
        verdict, name = row.split(" ", 1)
        number = int(Path(name).stem)
        if verdict == "rejected":
            rejected.add(number)
        elif verdict == "skip":
            skipped.add(number)
    return rejected, skipped


def rejected_lines(entry: Entry) -> tuple[dict[int, tuple[Line, str]], list[Line]]:
    """The lines of ENTRY `sysctl -p` rejects here (with why), and those not applied.

    A named interface's key (`net.ipv6.conf.eth0.*`) depends on the host's interfaces, not on the
    kernel: it is not applied. A congestion control the kernel does not offer yet is a module the
    write would load: it is a rejected line of that module, never written.
    """
    lines = sysctl_lines(entry.local)
    rejected: dict[int, tuple[Line, str]] = {}
    candidates, interfaces = [], []
    offered = (PROC / "net/ipv4/tcp_available_congestion_control").read_text().split()
    for line in lines:
        host = PROC / line.path
        if line.interface:
            interfaces.append(line)
        elif line.key == CONGESTION and line.value.split()[0] not in offered:
            # writing it would make the kernel load the module: nothing is loaded here
            rejected[line.number] = (line, "module not loaded")
        elif not host.is_file():
            rejected[line.number] = (line, "no such key")
        elif not writable(host):
            rejected[line.number] = (line, "read-only")
        else:
            candidates.append(line)
    refused, skipped = applied_in_namespace(candidates)
    by_number = {line.number: line for line in candidates}
    for number in refused:
        rejected[number] = (by_number[number], "value refused")
    return rejected, interfaces + [by_number[n] for n in sorted(skipped)]


@pytest.mark.skipif(_problem() is not None, reason=str(_problem()))
def test_every_line_sysctl_rejects_is_an_error_of_check() -> None:
    kernel = platform.release()
    missed, report = [], []
    judged = 0
    for entry in entries():
        rejected, not_applied = rejected_lines(entry)
        judged += len(rejected)
        findings = check(entry.local, kernel)
        for number, (line, why) in sorted(rejected.items()):
            on_line = [f for f in findings if f["line"] == number]
            if any(f["severity"] == "error" for f in on_line):
                continue
            if line.module is not None and any(
                f["severity"] == "warning" and line.module in f["message"] for f in on_line
            ):
                continue
            # a key whose whole directory the running kernel does not list now (a module not
            # loaded, a filesystem not mounted, a security module not active: /proc/sys cannot
            # tell which, nor whether it will come) is named as such, never called missing
            directory = line.key.rpartition(".")[0]
            if not (PROC / directory.replace(".", "/")).is_dir() and any(
                f["id"] == "check.module-key" and directory in f["message"] for f in on_line
            ):
                continue
            said = ", ".join(f"{f['severity']} {f['id']}" for f in on_line) or "nothing"
            missed.append(
                f"{entry.file}:{number}: {line.key} = {line.value} ({why}; check: {said})"
            )
        report.extend(
            f"{entry.file}:{x.number}: {x.key} not applied "
            + ("(one interface's key)" if x.interface else "(not per-namespace)")
            for x in not_applied
        )
    print("\n".join(report))
    assert judged > 0, "no line of the corpus was rejected: the proof judged nothing"
    assert not missed, f"{len(missed)} rejected lines are not errors:\n" + "\n".join(missed)


def test_lines_are_read_as_procps_reads_them() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch, "x.conf")
        path.write_text(
            "# c\n; c\nnet.core.somaxconn = 4096 # note\n-net.ipv4.ip_forward = 1\n"
            "net.ipv4.conf.*.rp_filter = 2\nkernel/pid_max=1\nnot a line\n{{ a }} = 1\n",
            encoding="utf-8",
        )
        lines = sysctl_lines(path)
    assert [(x.number, x.key, x.value, x.path) for x in lines] == [
        (3, "net.core.somaxconn", "4096 # note", "net/core/somaxconn"),
        (6, "kernel/pid_max", "1", "kernel/pid_max"),
    ]
    assert Line(1, "net.bridge.bridge-nf-call-iptables", "1").module == "br_netfilter"
    assert Line(1, CONGESTION, "htcp").module == "tcp_htcp"
    assert Line(1, "net.ipv6.conf.eth0.disable_ipv6", "1").interface
    assert not Line(1, "net.ipv6.conf.all.disable_ipv6", "1").interface
    assert not Line(1, "net.ipv4.neigh.default.gc_thresh3", "1").interface
