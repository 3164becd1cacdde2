"""Kernel boot defaults from the catalog against worked examples: hosts whose
boot defaults were read on the kernel named, and the kernels' own formulas."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.engine.plan_builder import host_defaults, host_variables
from sysctl_advisor.knowledge.catalog import Catalog
from sysctl_advisor.knowledge.expressions import Compiler
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data
from tests.conftest import ROOT

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
    """The 6.18 reference host (MemTotal 24684084 kB)."""
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


def test_a_distribution_backport_is_a_key_of_that_kernel_only(kb: KnowledgeBase) -> None:
    """RHEL 6 has ip_local_reserved_ports (2.6.35 upstream) and behaves as 2.6.32.28; a
    vanilla 2.6.32.28 has the same version numbers and not the key, in either order of asking
    (the per-version memo must not mix them up)."""
    key = "net.ipv4.ip_local_reserved_ports"
    assert key not in defaults(kb, "2.6.32.28", 4 * GiB)
    assert defaults(kb, "2.6.32-754.el6.x86_64", 4 * GiB)[key] == ""
    assert key not in defaults(kb, "2.6.32.28", 4 * GiB)


def _edited_catalog(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A copy of the shipped catalog with one text replaced in one of its files."""
    catalog = tmp_path / "catalog"
    shutil.copytree(ROOT / "rules" / "catalog", catalog)
    path = catalog / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    return catalog


def test_a_backport_of_an_unknown_key_is_refused(tmp_path: Path) -> None:
    catalog = _edited_catalog(
        tmp_path,
        "kernel-model.yaml",
        "backports: [net.ipv4.ip_local_reserved_ports]",
        "backports: [net.ipv4.no_such_key]",
    )
    with pytest.raises(InputError, match=r"backports: not in the key catalog: net.ipv4.no_such"):
        Catalog(catalog, Compiler(), SpecCache())


def test_a_key_acting_only_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    catalog = _edited_catalog(
        tmp_path,
        "keys.yaml",
        "acts_only_with: {key: vm.overcommit_memory,",
        "acts_only_with: {key: vm.no_such,",
    )
    with pytest.raises(InputError, match=r"acts_only_with names 'vm.no_such', not another key"):
        Catalog(catalog, Compiler(), SpecCache())


def test_default_huge_page_size_by_architecture_and_page_size(kb: KnowledgeBase) -> None:
    """Hugepagesize from the facts, else PMD_SHIFT's size for the architecture and page size;
    none where the model does not know it (ppc64's MMU decides, 32-bit x86 PAE or not)."""

    def size(**facts: object) -> object:
        data = {"kernel": "6.12.0", "memory": {"total": 64 * GiB}, **facts}
        return host_variables(kb, facts_from_data(data))[0]["host"]["huge_page_bytes"]

    assert size(arch="x86_64") == 2 * 2**20
    assert size(arch="aarch64") == 2 * 2**20
    assert size(arch="aarch64", page_size=16384) == 32 * 2**20
    assert size(arch="aarch64", page_size=65536) == 512 * 2**20
    assert size(arch="ppc64le", page_size=65536) is None
    assert size(arch="i686", memory={"total": 4 * GiB}) is None
    assert size() is None  # no arch: not known
    one_gib = {"total": 64 * GiB, "huge_page_size": "1 GiB"}
    assert size(arch="aarch64", page_size=65536, memory=one_gib) == 2**30


def test_32bit_lowmem_basis(kb: KnowledgeBase) -> None:
    d = defaults(kb, "2.6.32-642.el6.i686", 8 * GiB, arch="i686")
    assert d["net.ipv4.tcp_mem"] == "86016 114688 172032"  # 37.5/50/75% of 896 MiB


def test_unknown_kernel_is_newest_and_said(kb: KnowledgeBase) -> None:
    facts = facts_from_data({"memory": {"total": 8 * GiB}})
    version, _, known, notes = kb.catalog.kernel_for(facts)
    assert version.numbers[:2] == (6, 18) and not known
    assert any("assuming the newest" in n for n in notes)


# --- eras and distributions a review found mis-modelled -------------------------------------


def test_2618_bind_hash_order_on_64bit(kb: KnowledgeBase) -> None:
    """2.6.18 tcp_init(): 768/1024/1536 << order; 64K bind buckets of 16 bytes -> order 8."""
    d = defaults(kb, "2.6.18", 16 * GiB, arch="x86_64")
    assert d["net.ipv4.tcp_mem"] == "196608 262144 393216"
    assert d["net.ipv4.tcp_max_orphans"] == "65536"  # 4096 << (8 - 4)
    assert d["net.ipv4.tcp_max_tw_buckets"] == "180000"
    assert d["net.ipv4.tcp_max_syn_backlog"] == "1024"
    assert d["net.ipv4.tcp_rmem"] == "4096 87380 4194304"
    assert d["net.ipv4.ip_local_port_range"] == "32768 61000"


def test_rhel5_i686_is_order_7(kb: KnowledgeBase) -> None:
    """RHEL 5 i686 builds have no CONFIG_PREEMPT: 8-byte bind buckets, order 7, not 2.6.32's
    75% of lowmem."""
    d = defaults(kb, "2.6.18-274.el5PAE", 8 * GiB, arch="i686")
    assert d["net.ipv4.tcp_mem"] == "98304 131072 196608"
    assert d["net.ipv4.tcp_max_orphans"] == "32768"


def test_vanilla_2618_on_32bit_is_not_modelled(kb: KnowledgeBase) -> None:
    """The order depends on CONFIG_PREEMPT there: no number rather than a wrong one."""
    d = defaults(kb, "2.6.18", 8 * GiB, arch="i686")
    assert d["net.ipv4.tcp_mem"] is None
    assert d["net.ipv4.tcp_rmem"] is None


@pytest.mark.parametrize("kernel", ["2.6.21", "2.6.25"])
def test_2621_to_2625_tcp_mem_not_modelled(kb: KnowledgeBase, kernel: str) -> None:
    assert defaults(kb, kernel, 16 * GiB)["net.ipv4.tcp_mem"] is None


def test_older_than_oldest_modelled(kb: KnowledgeBase) -> None:
    facts = facts_from_data({"kernel": "2.6.9-89.EL", "memory": {"total": 4 * GiB}})
    assert set(host_defaults(kb, facts).values()) == {None}
    assert any("not modelled" in n for n in kb.catalog.kernel_for(facts)[3])


def test_debian_squeeze_carries_the_stable_fixes(kb: KnowledgeBase) -> None:
    """2.6.32-5-amd64 is a 2.6.32.y stable kernel (2.6.32.23 from package 2.6.32-24), not .0."""
    d = defaults(kb, "2.6.32-5-amd64", 4 * GiB, arch="x86_64")
    assert d["net.ipv4.tcp_max_orphans"] == "262144"


def test_ubuntu_lucid_stable_level_unknown(kb: KnowledgeBase) -> None:
    d = defaults(kb, "2.6.32-31-server", 4 * GiB)
    assert d["net.ipv4.tcp_max_orphans"] is None
    assert d["net.ipv4.tcp_max_tw_buckets"] is None
    assert d["net.ipv4.tcp_mem"] == "393216 524288 786432"


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("4.15.0-20-generic", "4096 87380 6291456"),  # before the backport
        ("4.15.0-73-generic", None),  # the ABI that brought it: not modelled
        ("4.15.0-213-generic", "4096 131072 6291456"),  # Ubuntu's backport of the 4.20 change
        ("4.19.0-25-amd64", None),  # Debian: stable level unknown
        ("4.19.0", "4096 87380 6291456"),
        ("4.19.86", "4096 131072 6291456"),  # backported in 4.19.86
        ("4.20.0", "4096 131072 6291456"),
    ],
)
def test_initial_receive_buffer_backports(
    kb: KnowledgeBase, kernel: str, expected: str | None
) -> None:
    assert defaults(kb, kernel, 16 * GiB)["net.ipv4.tcp_rmem"] == expected


@pytest.mark.parametrize(("kernel", "expected"), [("5.6.4", "65536"), ("5.7.14", "184899")])
def test_min_free_kbytes_upper_clamp_from_57(kb: KnowledgeBase, kernel: str, expected: str) -> None:
    """sqrt(16 x lowmem KiB) is 184899 for 2 TiB: clamped to 65536 before 5.7, kept from 5.7
    (the bound became 262144; present in 5.7.14, absent in 5.6.4)."""
    d = defaults(kb, kernel, 2048 * GiB, transparent_hugepage="never")
    assert d["vm.min_free_kbytes"] == expected


def test_min_free_kbytes_thp_counts_zones_on_every_node(kb: KnowledgeBase) -> None:
    one = defaults(
        kb,
        "6.18.44",
        24684084 * 1024,
        arch="x86_64",
        transparent_hugepage="madvise",
        memory={"total": 24684084 * 1024, "numa_nodes": 1},
    )
    two = defaults(
        kb,
        "6.18.44",
        24684084 * 1024,
        arch="x86_64",
        transparent_hugepage="madvise",
        memory={"total": 24684084 * 1024, "numa_nodes": 2},
    )
    assert one["vm.min_free_kbytes"] == "67584"  # measured on the reference host
    assert two["vm.min_free_kbytes"] == str(512 * 4 * 11 * 4)  # DMA, DMA32, NORMAL + NORMAL


def test_min_free_kbytes_thp_on_64k_pages_is_five_percent(kb: KnowledgeBase) -> None:
    d = defaults(
        kb, "6.1.0", 64 * GiB, arch="aarch64", page_size=65536, transparent_hugepage="always"
    )
    five_percent_kib = int(64 * GiB // 65536 * 0.995) // 20 * 64
    assert d["vm.min_free_kbytes"] == str(five_percent_kib)


def test_min_free_kbytes_not_modelled_without_thp_state_or_nodes(kb: KnowledgeBase) -> None:
    assert defaults(kb, "6.1.0", 64 * GiB, arch="x86_64")["vm.min_free_kbytes"] is None
    assert (
        defaults(kb, "6.1.0", 64 * GiB, arch="x86_64", transparent_hugepage="madvise")[
            "vm.min_free_kbytes"
        ]
        is None
    )
    # kernels before THP existed have only the square root
    assert defaults(kb, "2.6.32", 4 * GiB)["vm.min_free_kbytes"] is not None


@pytest.mark.parametrize(
    ("arch", "total", "lowmem"),
    [("i686", 8 * GiB, 896 * 2**20), ("armv7l", 2 * GiB, 768 * 2**20), ("mips", GiB, 512 * 2**20)],
)
def test_default_lowmem_by_architecture(arch: str, total: int, lowmem: int) -> None:
    facts = facts_from_data({"arch": arch, "memory": {"total": total}})
    assert facts.lowmem == lowmem and facts.has_highmem


def test_lowmem_of_other_32bit_arches_must_be_given() -> None:
    from sysctl_advisor.model.errors import InputError

    with pytest.raises(InputError, match=r"memory\.lowmem"):
        facts_from_data({"arch": "ppc", "memory": {"total": 2 * GiB}})
    given = facts_from_data({"arch": "ppc", "memory": {"total": 2 * GiB, "lowmem": 768 * 2**20}})
    assert given.lowmem == 768 * 2**20


def test_ram_within_lowmem_has_no_highmem() -> None:
    facts = facts_from_data({"arch": "armv7l", "memory": {"total": 512 * 2**20}})
    assert facts.lowmem == 512 * 2**20 and not facts.has_highmem


def test_eras_worked_out_per_kernel_give_what_a_fresh_catalog_gives() -> None:
    """The catalog keeps, per kernel version, which eras' ranges hold (bounded); a
    catalog that has seen many versions computes the same defaults as a fresh one."""
    from sysctl_advisor.knowledge import catalog as catalog_module

    kernels = ["2.6.32-642.el6.x86_64", "3.10.0-1160.el7.x86_64", "4.15.0-20-generic", "6.1.0"]
    seasoned = KnowledgeBase.load()
    for minor in range(catalog_module._KERNELS_REMEMBERED + 20):  # past the bound: cleared
        host_defaults(
            seasoned, facts_from_data({"kernel": f"5.{minor}.0", "memory": {"total": 1 << 33}})
        )
    assert len(seasoned.catalog._by_kernel) <= catalog_module._KERNELS_REMEMBERED
    for kernel in kernels:
        facts = facts_from_data({"kernel": kernel, "memory": {"total": 1 << 34}})
        assert host_defaults(seasoned, facts) == host_defaults(KnowledgeBase.load(), facts)
