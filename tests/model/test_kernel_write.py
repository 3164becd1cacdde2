"""`check` says what the kernel does with each value.

Every case is written with procps `sysctl -p` inside a fresh network namespace (per-namespace
keys only, each first set to a known baseline) and read back. What the kernel did decides
the verdict `check` must give the same line:

* rejected (sysctl -p fails): an error;
* accepted, but the key does not hold what the line says (a comment or extra fields dropped,
  a short vector, an octal number): a warning;
* accepted as written: no finding about the value's syntax.

The model behind check (sysctl_advisor/model/kernel_write.py) must also predict which elements
the kernel stored. The cases run on whatever kernel the suite runs on; measured first on 6.18 with
procps 4.0.2. They hold on every kernel the project supports: each baseline is a value every
supported kernel takes (a vendor 6.18.44 build refuses a tcp_rmem field below 4096, upstream
takes 1 and up), and a key the running kernel keeps only in the host's namespace (one older
than its netns_since in rules/catalog/keys.yaml) is absent from a fresh namespace's /proc/sys:
its cases are left out, never written to the host.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_write import kernel_write
from tests.conftest import Cli, invoke
from tests.namespaces import in_namespace, needs_netns

pytestmark = [
    needs_netns,
    pytest.mark.skipif(shutil.which("sysctl") is None, reason="needs procps sysctl"),
]

# A baseline no case writes, so every element the kernel stored can be seen.
BASELINE = {
    "net.ipv4.tcp_fin_timeout": "41",
    "net.core.somaxconn": "4011",
    "net.ipv4.tcp_rmem": "4097 87011 6011011",  # every field 4096 or more, min <= default <= max
    "net.ipv4.ip_local_port_range": "32011 60011",
}
CASES = [
    ("net.ipv4.tcp_fin_timeout", value)
    for value in [
        "15", "15 # faster", "15 #faster", "16#x", "18 19", "22 x", "0x1f", "010", "-5", "+5",
        "1.5", "1e3", "nan", "4_096", '"4096"', "\u0664\u0660\u0669\u0666", "", "  ",
        "15\v16", "15 \v 16", "23x", "0" * 18 + "10", "0" * 19 + "10",
    ]
] + [
    ("net.core.somaxconn", value) for value in ["1024", "1024 # more", "1024;", "1024 ; x"]
] + [
    ("net.ipv4.tcp_rmem", value)
    for value in [
        "4096 87380 6291456", "4096 87380 6291456 # x", "4096\t87380\t6291456",
        "4096 87380", "4096", "4096 87380 6291456 5", "4096 87380 6291456x",
        "4096 87380 # later", "4096,87380,6291456", "4096 87380 6291456#x",
    ]
] + [
    ("net.ipv4.ip_local_port_range", value)
    for value in ["1025 60001", "1025 60001 # x", "1025 60001#x", "1025", "1025 x"]
]  # fmt: skip
SYNTAX_RULES = {
    "check.not-a-number",
    "check.half-written",
    "check.inline-comment",
    "check.ignored-fields",
    "check.short-vector",
    "check.not-decimal",
    "check.byte-order-mark",
}
# systemd-sysctl applies the same lines at boot; where it is installed each case runs through
# it too, and the kernel must end up the same.
SYSTEMD_SYSCTL = next(
    (
        p
        for p in ("/usr/lib/systemd/systemd-sysctl", "/lib/systemd/systemd-sysctl")
        if Path(p).exists()
    ),
    "",
)
APPLY = """
systemd_sysctl=$1; shift
apply() {  # tool case -> "rc<TAB>value in force"
    key=$(head -n 1 "$2.key")
    sysctl -q -w "$key=$(cat "$2.baseline")" > /dev/null
    if $1 "$2" > /dev/null 2>&1; then rc=0; else rc=1; fi
    printf '%s\\t%s' "$rc" "$(sysctl -n "$key" | tr '\\t' ' ')"
}
for case in "$@"; do
    apply "sysctl -q -p" "$case"
    if [ -n "$systemd_sysctl" ]; then printf '\\t'; apply "$systemd_sysctl" "$case"; fi
    echo
done
"""


PRESENT = """
for key in "$@"; do
    if [ -f "/proc/sys/$(echo "$key" | tr . /)" ]; then echo "$key"; fi
done
"""


def in_a_fresh_namespace(keys: list[str]) -> list[str]:
    """The keys a fresh network namespace of the running kernel has: a key it keeps only in
    the host's namespace (a kernel older than the key's netns_since) is absent there."""
    result = in_namespace(PRESENT, *keys)
    assert result.returncode == 0, result.stderr
    present = set(result.stdout.split())
    return [key for key in keys if key in present]


@pytest.fixture(scope="module")
def baseline_keys() -> list[str]:
    """The baseline keys this kernel keeps per namespace, each checked to take its baseline
    (a refusal is this test's mistake: the baseline must be one every supported kernel takes)."""
    keys = in_a_fresh_namespace(list(BASELINE))
    if not keys:
        pytest.skip("no baseline key is per network namespace on this kernel")
    result = in_namespace(WRITE, *(f"{key}={BASELINE[key]}" for key in keys))
    assert result.returncode == 0, result.stderr
    refused = [key for key, rc in zip(keys, result.stdout.split(), strict=True) if rc != "0"]
    assert not refused, f"this kernel refuses the baseline of {refused}: choose one it takes"
    return keys


@pytest.fixture
def fin_timeout(baseline_keys: list[str]) -> None:
    """The tests below write tcp_fin_timeout: per namespace since 4.6."""
    if "net.ipv4.tcp_fin_timeout" not in baseline_keys:
        pytest.skip("tcp_fin_timeout is not per network namespace on this kernel")


def _measure(
    tmp_path: Path, cases: list[tuple[str, str]]
) -> list[tuple[int, list[int], tuple[int, list[int]] | None]]:
    """(procps exit status, value in force after it, the same through systemd-sysctl)."""
    names = []
    for number, (key, value) in enumerate(cases):
        case = tmp_path / f"case{number}.conf"
        case.write_bytes(f"{key} = {value}\n".encode())
        (tmp_path / f"case{number}.conf.key").write_text(key + "\n")
        (tmp_path / f"case{number}.conf.baseline").write_text(BASELINE[key])
        names.append(str(case))
    result = in_namespace(APPLY, SYSTEMD_SYSCTL, *names)
    assert result.returncode == 0, result.stderr
    outcomes: list[tuple[int, list[int], tuple[int, list[int]] | None]] = []
    for line in result.stdout.splitlines():
        rc, after, *systemd = line.split("\t")
        by_systemd = (int(systemd[0]), [int(x) for x in systemd[1].split()]) if systemd else None
        outcomes.append((int(rc), [int(x) for x in after.split()], by_systemd))
    assert len(outcomes) == len(cases)
    return outcomes


def _check_verdict(path: Path) -> tuple[str, list[str]]:
    result = invoke("check", str(path), "--format", "json")
    assert result.exit_code in (0, 1), result.output
    found = [f for f in json.loads(result.stdout)["findings"] if f["id"] in SYNTAX_RULES]
    ids = sorted(f["id"] for f in found)
    if any(f["severity"] == "error" for f in found):
        return "rejected", ids
    return ("not what it says" if found else "accepted"), ids


def test_check_agrees_with_the_kernel(
    tmp_path: Path, kb: KnowledgeBase, baseline_keys: list[str]
) -> None:
    cases = [(key, value) for key, value in CASES if key in baseline_keys]
    outcomes = _measure(tmp_path, cases)
    disagreements = []
    for number, ((key, value), (rc, after, by_systemd)) in enumerate(
        zip(cases, outcomes, strict=True)
    ):
        if by_systemd is not None and by_systemd != (rc, after):
            disagreements.append(f"{key} = {value!r}: procps {rc} {after}, systemd {by_systemd}")
        baseline = [int(x) for x in BASELINE[key].split()]
        written = value.split()
        if rc != 0:
            kernel = "rejected"
        elif all(re.fullmatch("-?[0-9]+", x) for x in written) and after == list(map(int, written)):
            kernel = "accepted"
        else:
            kernel = "not what it says"
        verdict, ids = _check_verdict(tmp_path / f"case{number}.conf")
        spec = kb.catalog.keys[key]
        model = kernel_write(value, spec.length)
        if model.refused != (rc != 0):
            disagreements.append(f"{key} = {value!r}: model refused={model.refused}, rc={rc}")
        stored = list(model.stored)
        if rc != 0 and spec.atomic_write:
            stored = []  # the handler validates a copy: nothing of a refused write is stored
        expected = stored + baseline[len(stored) :]
        if after != expected:
            disagreements.append(f"{key} = {value!r}: kernel holds {after}, model {expected}")
        if verdict != kernel:
            disagreements.append(f"{key} = {value!r}: kernel {kernel}, check {verdict} {ids}")
        if rc != 0 and after != baseline and "check.half-written" not in ids:
            disagreements.append(f"{key} = {value!r}: half-written by the kernel, not by check")
    assert not disagreements, "\n".join(disagreements)


def test_a_byte_order_mark_before_a_key_fails_and_check_says_so(
    tmp_path: Path, fin_timeout: None
) -> None:
    """procps reads the BOM as part of the key, which then does not exist: the line fails
    at boot. check calls it an error."""
    conf = tmp_path / "bom.conf"
    conf.write_bytes(b"\xef\xbb\xbfnet.ipv4.tcp_fin_timeout = 33\n")
    result = in_namespace(
        'sysctl -q -w net.ipv4.tcp_fin_timeout=41 >/dev/null\nrc=0\nsysctl -p "$1" '
        '>/dev/null 2>&1 || rc=$?\necho "$rc $(sysctl -n net.ipv4.tcp_fin_timeout)"',
        str(conf),
    )
    rc, after = result.stdout.split()
    assert rc != "0" and after == "41", result.stdout + result.stderr
    verdict, ids = _check_verdict(conf)
    assert verdict == "rejected" and "check.byte-order-mark" in ids


def test_globs_are_expanded_as_check_says(tmp_path: Path, fin_timeout: None) -> None:
    """procps 4 and systemd-sysctl expand key globs; an unclosed '[' is
    matched literally and sets nothing. check describes the first and warns about the second."""
    glob = tmp_path / "glob.conf"
    glob.write_text("net.ipv4.tcp_*_timeout = 7\n")
    unclosed = tmp_path / "unclosed.conf"
    unclosed.write_text("net.ipv4.tcp_fin_[timeout = 8\n")
    script = (
        "sysctl -q -w net.ipv4.tcp_fin_timeout=41 >/dev/null\n"
        'sysctl -q -p "$1" >/dev/null 2>&1 || true\n'
        "a=$(sysctl -n net.ipv4.tcp_fin_timeout)\n"
        "sysctl -q -w net.ipv4.tcp_fin_timeout=41 >/dev/null\n"
        'sysctl -q -p "$2" >/dev/null 2>&1 || true\n'
        'echo "$a $(sysctl -n net.ipv4.tcp_fin_timeout)"\n'
    )
    result = in_namespace(script, str(glob), str(unclosed))
    expanded, literal = result.stdout.split()
    if expanded == "41":
        pytest.skip("this procps does not expand key globs (before 4.0)")
    assert (expanded, literal) == ("7", "41"), result.stdout
    ids = {f["id"] for f in _findings(glob)}
    assert "check.glob" in ids and not ids & {"check.glob-everything", "check.glob-unrelated"}
    assert "check.glob-unclosed" in {f["id"] for f in _findings(unclosed)}


def _findings(path: Path) -> list[dict[str, object]]:
    result = invoke("check", str(path), "--format", "json")
    found: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return found


# Values at the edges of each handler's range (the first field of a vector), written with
# `sysctl -w` in a fresh namespace: what the running kernel refuses, check must report (an
# error where the catalog says the target refuses it, a warning where upstream stores it but a
# vendor build was measured refusing it); what it takes, check must not call refused.
EDGES = [
    ("net.ipv4.tcp_rmem", "{} 87380 6291456", ["0", "1", "4095", "4096", "4097"]),
    ("net.ipv4.tcp_wmem", "{} 16384 4194304", ["0", "1", "4096"]),
    ("net.ipv4.tcp_syncookies", "{}", ["0", "1", "2", "3", "255", "256", "-1"]),
]
WRITE = """
for case in "$@"; do
    if sysctl -q -w "$case" > /dev/null 2>&1; then echo 0; else echo 1; fi
done
"""


def test_check_reports_what_the_running_kernel_refuses(cli: Cli, tmp_path: Path) -> None:
    """check, told the running kernel's release, never stays silent on a value that kernel
    refuses, and never calls refused (check.out-of-bounds) a value it takes. Holds on every
    kernel: upstream 3.10 to 6.18 take a tcp_rmem min from 1, this machine's 6.18.44 build
    refuses it below 4096 (check warns there: check.stored-out-of-range)."""
    keys = in_a_fresh_namespace([key for key, _, _ in EDGES])
    if not keys:
        pytest.skip("no key of these edges is per network namespace on this kernel")
    cases = [(key, shape.format(v)) for key, shape, values in EDGES if key in keys for v in values]
    result = in_namespace(WRITE, *(f"{key}={value}" for key, value in cases))
    assert result.returncode == 0, result.stderr
    refused = [line == "1" for line in result.stdout.split()]
    assert len(refused) == len(cases)
    release = Path("/proc/sys/kernel/osrelease").read_text().strip()
    wrong = []
    for number, ((key, value), was_refused) in enumerate(zip(cases, refused, strict=True)):
        conf = tmp_path / f"edge{number}.conf"
        conf.write_text(f"{key} = {value}\n")
        run = cli("check", str(conf), "--kernel", release, "-f", "json")
        assert run.exit_code in (0, 1), run.output
        found = json.loads(run.stdout)["findings"]
        said = {f["id"] for f in found if f["severity"] in ("error", "warning")}
        if was_refused and not said:
            wrong.append(f"{key} = {value}: refused by {release}, check silent")
        if not was_refused and "check.out-of-bounds" in said:
            wrong.append(f"{key} = {value}: taken by {release}, check calls it refused")
    assert not wrong, "\n".join(wrong)


def test_a_key_only_the_hosts_namespace_has_is_left_out() -> None:
    """What the cases above write is what a fresh namespace has: netdev_max_backlog is global
    on every kernel (not in a child namespace's /proc/sys), as tcp_rmem is before 4.15; its
    cases are left out rather than written, or read, as the host's."""
    keys = ["net.core.netdev_max_backlog", "net.core.somaxconn", "net.ipv4.no_such_key"]
    assert in_a_fresh_namespace(keys) == ["net.core.somaxconn"]
