"""Kernel boot defaults from the catalog against the worked examples in kernel-facts.md."""

from __future__ import annotations

import pytest

from advisor.engine import host_defaults
from advisor.facts import facts_from_data
from advisor.knowledge import KnowledgeBase

GiB = 2**30


def defaults(kb: KnowledgeBase, kernel: str, total: int, **extra: object) -> dict[str, str | None]:
    return host_defaults(
        kb, facts_from_data({"kernel": kernel, "memory": {"total": total}, **extra})
    )


def close(text: str | None, expected: str, tolerance: float) -> bool:
    assert text is not None
    got = [int(x) for x in text.split()]
    want = [int(x) for x in expected.split()]
    return all(abs(g - w) <= tolerance * w for g, w in zip(got, want, strict=True))


def test_tcp_mem_2632_4gib_exact(kb: KnowledgeBase) -> None:
    assert defaults(kb, "2.6.32", 4 * GiB)["net.ipv4.tcp_mem"] == "393216 524288 786432"


@pytest.mark.parametrize(
    ("kernel", "total", "expected"),
    [
        ("4.19.0", 16 * GiB, "195624 260833 391248"),
        ("3.10.0-1160.el7.x86_64", 4 * GiB, "97812 130416 195624"),
        ("4.2.8", 1 * GiB, "12225 16302 24450"),
    ],
)
def test_tcp_mem_eras(kb: KnowledgeBase, kernel: str, total: int, expected: str) -> None:
    assert close(defaults(kb, kernel, total)["net.ipv4.tcp_mem"], expected, 0.01)


def test_reference_host_618(kb: KnowledgeBase) -> None:
    """kernel-facts §12: the 6.18 reference host (MemTotal 24684084 kB)."""
    d = defaults(kb, "6.18.44", 24684084 * 1024)
    assert close(d["net.ipv4.tcp_mem"], "287898 383867 575796", 0.005)
    assert d["net.ipv4.tcp_rmem"] == "4096 131072 33554432"
    assert d["net.ipv4.tcp_wmem"] == "4096 16384 4194304"
    assert d["net.core.rmem_max"] == "4194304"
    assert d["net.core.rmem_default"] == "212992"
    assert d["net.core.somaxconn"] == "4096"
    assert d["net.ipv4.tcp_max_orphans"] == "131072"
    assert d["net.ipv4.tcp_max_syn_backlog"] == "2048"
    assert d["net.ipv4.tcp_max_tw_buckets"] == "131072"
    assert d["net.ipv4.ip_local_port_range"] == "32768 60999"
    assert d["net.ipv4.tcp_tw_reuse"] == "2"
    assert close(d["fs.file-max"], "2466170", 0.005)
    assert d["fs.nr_open"] == "1048576"
    assert "net.ipv4.tcp_tw_recycle" not in d  # removed in 4.12


@pytest.mark.parametrize(("kernel", "expected"), [("4.20.0", "128"), ("5.4.59", "4096")])
def test_somaxconn(kb: KnowledgeBase, kernel: str, expected: str) -> None:
    assert defaults(kb, kernel, 4 * GiB)["net.core.somaxconn"] == expected


def test_rhel6_orphans_and_syn_backlog(kb: KnowledgeBase) -> None:
    d = defaults(kb, "2.6.32-642.el6.x86_64", 4 * GiB)
    assert d["net.ipv4.tcp_max_orphans"] == "262144"
    assert d["net.ipv4.tcp_max_syn_backlog"] == "2048"
    assert d["net.ipv4.tcp_syncookies"] == "0"


def test_32bit_lowmem_basis(kb: KnowledgeBase) -> None:
    d = defaults(kb, "2.6.32-642.el6.i686", 8 * GiB, arch="i686")
    assert d["net.ipv4.tcp_mem"] == "86016 114688 172032"  # 37.5/50/75% of 896 MiB


def test_unknown_kernel_is_newest_and_said(kb: KnowledgeBase) -> None:
    facts = facts_from_data({"memory": {"total": 8 * GiB}})
    version, _, known, notes = kb.catalog.kernel_for(facts)
    assert version.numbers[:2] == (6, 18) and not known
    assert any("assuming the newest" in n for n in notes)
