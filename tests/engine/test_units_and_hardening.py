"""Wrong units and weakened hardening in `check`: what check.wrong-unit and
check.weakens-hardening say, run through `commands.check.check` on files written here; the
comment above a line as the rules read it; and the advisor's own tcp_mem for big hosts, which
the wrong-unit rule never calls bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sysctl_advisor.commands.check import check
from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.outputs.advice_rules_reference import case_facts, case_params

UNIT = "check.wrong-unit"
HARDENING = "check.weakens-hardening"


def _findings(
    tmp_path: Path, files: dict[str, str], facts: str | None = None
) -> list[dict[str, object]]:
    directory = tmp_path / "sysctl.d"
    directory.mkdir(exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    facts_path = None
    if facts is not None:
        facts_path = tmp_path / "facts.yaml"
        facts_path.write_text(facts)
    report = tmp_path / "report.json"
    code = check([directory], facts=facts_path, fmt="json", output=report, isolated=True)
    assert code in (0, 1)
    findings: list[dict[str, object]] = json.loads(report.read_text())["findings"]
    return findings


def _of(findings: list[dict[str, object]], rule: str) -> list[dict[str, object]]:
    return [f for f in findings if f["id"] == rule]


# --- the comment above a line ------------------------------------------------------------------


def test_the_same_line_is_judged_apart_where_its_comment_differs(tmp_path: Path) -> None:
    files = {
        "10-said.conf": "# 256MB\nkernel.shmall = 268435456\n",
        "20-plain.conf": "kernel.shmall = 268435456\n",
    }
    found = _of(_findings(tmp_path, files), UNIT)
    assert [Path(str(f["file"])).name for f in found] == ["10-said.conf"]
    message = str(found[0]["message"])
    assert "1 TiB" in message and "256 MiB" in message and "65,536" in message


# --- wrong units -------------------------------------------------------------------------------


def test_shmall_equal_to_shmmax_names_both_units_and_the_page_count(tmp_path: Path) -> None:
    files = {"90-shm.conf": "kernel.shmmax = 4294967296\nkernel.shmall = 4294967296\n"}
    (finding,) = _of(_findings(tmp_path, files), UNIT)
    assert finding["line"] == 2
    message = str(finding["message"])
    assert "16 TiB" in message and "1,048,576" in message  # 4 GiB / 4096


def test_a_memtotal_share_names_the_divisor_and_what_the_kernel_reads(tmp_path: Path) -> None:
    facts = "memory: {total: 16107520 KiB}\narch: x86_64\nkernel: 5.15.0-91-generic\n"
    files = {"90-net.conf": "net.ipv4.tcp_rmem = 4096 87380 251680\n"}
    (finding,) = _of(_findings(tmp_path, files, facts), UNIT)
    message = str(finding["message"])
    assert "16,107,520" in message and "divided by 64" in message and "1/1024" in message


@pytest.mark.parametrize("memory", ["64 GiB", "256 GiB", "1 TiB", "4 TiB", "12 TiB"])
@pytest.mark.parametrize("peak", [None, 3_000_000, 30_000_000, 300_000_000, 900_000_000])
@pytest.mark.parametrize("logged", [True, False])
def test_the_advisors_own_tcp_mem_is_never_called_bytes(
    kb: KnowledgeBase, tmp_path: Path, memory: str, peak: int | None, logged: bool
) -> None:
    """Whatever tcp_mem the advisor plans for a big host (from RAM, a peak, the kernel's out of
    memory line), round or not, `check` without facts does not call it a byte count; nor the
    kernel's own default shape."""
    observed: dict[str, object] = {}
    if peak is not None:
        observed["tcp_mem_pages_peak"] = peak
    if logged:
        observed["kernel_messages"] = ["TCP: out of memory -- consider tuning tcp_mem"]
    facts = facts_from_data(case_facts({"memory": {"total": memory}, "observed": observed}))
    plan = build_plan(kb, facts, "base", case_params({}))
    planned = [s.value for s in plan.settings if s.key == "net.ipv4.tcp_mem"]
    pages = facts.memory.total // facts.page_size
    limit = pages // 16  # tcp_init_mem(): what the kernel boots with
    default = f"{limit // 4 * 3} {limit} {limit // 4 * 3 * 2}"
    lines = "".join(f"net.ipv4.tcp_mem = {value}\n" for value in [*planned, default])
    assert not _of(_findings(tmp_path, {"99-plan.conf": lines}), UNIT), lines


# --- weakened hardening ------------------------------------------------------------------------


def test_sysrq_one_names_what_the_distributions_ship(tmp_path: Path) -> None:
    (finding,) = _of(_findings(tmp_path, {"90-x.conf": "kernel.sysrq = 1\n"}), HARDENING)
    message = str(finding["message"])
    for figure in ("16", "438", "176", "/proc/sysrq-trigger"):
        assert figure in message


@pytest.mark.parametrize(
    ("line", "baseline"),
    [
        ("kernel.yama.ptrace_scope = 0", "3"),
        ("kernel.kptr_restrict = 0", "2"),
        ("kernel.unprivileged_bpf_disabled = 0", "1"),
        ("fs.suid_dumpable = 2", "0"),
        ("fs.protected_symlinks = 0", "1"),
        ("fs.protected_hardlinks = 0", "1"),
        ("fs.protected_fifos = 0", "2"),
        ("fs.protected_regular = 0", "2"),
        ("kernel.randomize_va_space = 1", "2"),
        ("kernel.sysrq = 1", "0"),
        ("vm.mmap_min_addr = 4096", "65536"),
        ("kernel.dmesg_restrict = 0", "1"),
        ("kernel.perf_event_paranoid = 1", "3"),
    ],
)
def test_each_weakened_key_says_what_wins_and_the_baseline(
    tmp_path: Path, line: str, baseline: str
) -> None:
    (finding,) = _of(_findings(tmp_path, {"90-x.conf": line + "\n"}), HARDENING)
    message = str(finding["message"])
    assert " win" in message and f"baseline is {baseline}." in message


def test_the_distributions_own_files_stay_quiet(tmp_path: Path) -> None:
    files = {
        # systemd's 50-default.conf and Debian's procps 99-protect-links.conf
        "50-default.conf": "kernel.sysrq = 16\nfs.protected_hardlinks = 1\n"
        "fs.protected_symlinks = 1\nfs.protected_regular = 1\nfs.protected_fifos = 1\n",
        "99-protect-links.conf": "fs.protected_fifos = 1\nfs.protected_hardlinks = 1\n"
        "fs.protected_regular = 2\nfs.protected_symlinks = 1\n",
        # Ubuntu's sysctl.d values
        "10-ubuntu.conf": "kernel.sysrq = 176\nkernel.kptr_restrict = 1\n"
        "kernel.yama.ptrace_scope = 1\nvm.mmap_min_addr = 65536\n",
    }
    assert not _of(_findings(tmp_path, files), HARDENING)
