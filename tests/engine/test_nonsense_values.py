"""Values no sane host runs get a finding in `check`: SYN cookies off, a min_free_kbytes that
holds more than the kernel ever keeps free (or more than the host has), and a value outside
the range the target kernel's handler accepts (its era, its word size, and the hardening
switches the catalog lists without modelling). Payloads are built at test time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.host import host_context
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.sources.sysctl_files import read_file

GiB = 2**30
KiB_PER_GiB = 2**20


def ids(
    kb: KnowledgeBase,
    tmp_path: Path,
    line: str,
    facts: dict[str, Any] | None = None,
    kernel: str | None = None,
) -> set[str]:
    conf = tmp_path / "60-values.conf"
    conf.write_text(line + "\n")
    context = host_context(kb, facts_from_data(facts)) if facts else CheckContext()
    if kernel:
        context.kernel = KernelVersion.parse(kernel)
    return {f.id for f in Checker(kb, kb.check_rules, context).check_config(read_file(conf))}


def host(total_gib: int, arch: str = "x86_64", **more: Any) -> dict[str, Any]:
    return {"memory": {"total": total_gib * GiB, **more}, "arch": arch, "kernel": "6.1.0-18-amd64"}


def test_syn_cookies_off_is_a_warning(kb: KnowledgeBase, tmp_path: Path) -> None:
    assert "check.syncookies-off" in ids(kb, tmp_path, "net.ipv4.tcp_syncookies = 0")
    for value in (1, 2):
        assert "check.syncookies-off" not in ids(kb, tmp_path, f"net.ipv4.tcp_syncookies = {value}")


def test_min_free_kbytes_of_the_review_is_reported_without_facts(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    value = int("9" * 8)  # 99999999 KiB, 95 GiB: 5% of a host of 1.86 TiB
    assert "check.min-free-kbytes-large" in ids(kb, tmp_path, f"vm.min_free_kbytes = {value}")
    # the kernel's own largest boot value, and a generous site value, pass
    for quiet in (262144, 4 * KiB_PER_GiB):
        assert "check.min-free-kbytes-large" not in ids(
            kb, tmp_path, f"vm.min_free_kbytes = {quiet}"
        )


def test_min_free_kbytes_is_judged_against_the_hosts_memory(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    facts = host(16)
    five_percent = 16 * KiB_PER_GiB // 20
    line = "vm.min_free_kbytes = {}".format
    assert not {"check.min-free-kbytes-large", "check.min-free-above-memory"} & ids(
        kb, tmp_path, line(five_percent), facts
    )
    assert ids(kb, tmp_path, line(five_percent + 1), facts) >= {"check.min-free-kbytes-large"}
    above = ids(kb, tmp_path, line(16 * KiB_PER_GiB), facts)
    assert "check.min-free-above-memory" in above and "check.min-free-kbytes-large" not in above
    # on 32-bit the reserve comes out of lowmem, not all of RAM
    lowmem = host(4, arch="i686", lowmem=880 * 2**20)
    assert "check.min-free-above-memory" in ids(kb, tmp_path, line(900 * 1024), lowmem)


def test_the_advisors_own_reserve_passes_its_own_check(kb: KnowledgeBase, tmp_path: Path) -> None:
    """lowmem.min-free keeps at most 5% of lowmem: check must not call that too much."""
    facts = host(2, arch="i686", lowmem=880 * 2**20)
    cap = 880 * 2**20 // 1024 * 5 // 100
    assert "check.min-free-kbytes-large" not in ids(
        kb, tmp_path, f"vm.min_free_kbytes = {cap}", facts
    )


@pytest.mark.parametrize(
    ("line", "kernel", "facts", "fires"),
    [
        ("vm.swappiness = 150", "5.4.0", None, True),  # 0..100 before 5.8
        ("vm.swappiness = 101", "5.7.0", None, True),
        ("vm.swappiness = 100", "5.4.0", None, False),
        ("vm.swappiness = 150", "5.8.0", None, False),
        ("vm.swappiness = 150", None, None, False),  # unknown: the newest kernel's range
        ("vm.swappiness = 201", None, None, True),
        ("kernel.pid_max = 4194304", None, host(2, arch="i686"), True),  # 32768 on 32-bit
        ("kernel.pid_max = 32768", None, host(2, arch="i686"), False),
        ("kernel.pid_max = 4194304", None, host(2), False),
        ("kernel.kptr_restrict = 3", None, None, True),
        ("kernel.kptr_restrict = 2", None, None, False),
        ("kernel.yama.ptrace_scope = 4", None, None, True),
        ("kernel.yama.ptrace_scope = 3", None, None, False),
        ("fs.protected_symlinks = 2", None, None, True),
        ("fs.protected_hardlinks = 2", None, None, True),
        ("fs.protected_fifos = 3", None, None, True),
        ("fs.protected_regular = 3", None, None, True),
        ("fs.protected_regular = 2", None, None, False),
        ("fs.suid_dumpable = 3", None, None, True),
        ("fs.suid_dumpable = -1", None, None, True),
        ("kernel.kptr_restrict = 3", "5.4.0", None, False),  # the range is read from 6.1 on
    ],
)
def test_a_value_outside_the_targets_range_is_an_error(
    kb: KnowledgeBase,
    tmp_path: Path,
    line: str,
    kernel: str | None,
    facts: dict[str, Any] | None,
    fires: bool,
) -> None:
    assert ("check.out-of-bounds" in ids(kb, tmp_path, line, facts, kernel)) == fires


def test_every_bounded_key_takes_its_ends_and_refuses_one_beyond(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """For each key the catalog gives a kernel range (catalog keys with `bounds`, listed keys
    with theirs), on the newest kernel: min and max pass, one beyond either fails."""
    catalog = kb.catalog
    bounded = [n for n, k in catalog.keys.items() if k.bounds and k.length == 1]
    bounded += [n for n, k in catalog.known.items() if k.bounds]
    assert len(bounded) >= 8
    for key in bounded:
        bounds = catalog.bounds(key, None, None)
        assert bounds is not None, key
        for value, fires in ((bounds["min"], False), (bounds["max"], False)):
            assert ("check.out-of-bounds" in ids(kb, tmp_path, f"{key} = {value}")) == fires, key
        for beyond in (bounds["min"] - 1, bounds["max"] + 1):
            assert "check.out-of-bounds" in ids(kb, tmp_path, f"{key} = {beyond}"), (key, beyond)
