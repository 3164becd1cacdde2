"""Text-valued keys: names and port sets, from the kernel's text to the plan and back."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.catalog import merge_ranges, parse_ports, ports_text, text_value
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.values import same_value
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.sources.local_host import collect_data
from sysctl_advisor.sources.module_lists import parse_module_list
from tests.conftest import TESTS

PORTS = "net.ipv4.ip_local_reserved_ports"
CC = "net.ipv4.tcp_congestion_control"


def test_port_sets_read_as_the_kernel_prints_them(kb: KnowledgeBase) -> None:
    spec = kb.catalog.keys[PORTS]
    assert text_value("9000-9010,8080,9005,9011", spec) == "8080,9000-9011"
    assert text_value("", spec) == ""
    # as proc_do_large_bitmap() reads them on 6.18 (measured in a namespace)
    assert text_value("010,0x1f90,8080,", spec) == "8,8080"
    for bad in (
        "70000",
        "9010-9000",
        "80-",
        "-80",
        "8o80",
        "1,,2",
        "80 81",
        "8080, 9000",
        "08080",
        "\uff19\uff10",
        "8080\xa0",
        ",".join(["8080"] * 1000),
    ):
        with pytest.raises(ValueError):
            text_value(bad, spec)
    assert same_value("9000-9010,8080", "8080,9000-9010", spec)
    assert not same_value("8080", "8081", spec)


@given(st.lists(st.tuples(st.integers(0, 65535), st.integers(0, 40)), max_size=12))
def test_merged_ranges_cover_the_same_ports(pairs: list[tuple[int, int]]) -> None:
    ranges = [(a, min(a + n, 65535)) for a, n in pairs]
    merged = merge_ranges(ranges)
    ports = {p for a, b in ranges for p in range(a, b + 1)}
    assert {p for a, b in merged for p in range(a, b + 1)} == ports
    assert all(b + 1 < c for (_, b), (c, _) in itertools.pairwise(merged))
    assert parse_ports(ports_text(merged)) == merged


def test_names_are_single_kernel_tokens(kb: KnowledgeBase) -> None:
    spec = kb.catalog.keys[CC]
    assert text_value(" htcp\n", spec) == "htcp"
    for bad in ("", "b b r", "x" * 16, "bbr;reboot", "bbr\x1b[31m"):
        with pytest.raises(ValueError):
            text_value(bad, spec)


def _plan(kb: KnowledgeBase, profile: str, **facts: Any) -> Any:
    data = {"kernel": "5.15.0-91-generic", "memory": {"total": "16 GiB"}, **facts}
    return build_plan(kb, facts_from_data(data), profile)


def test_a_port_set_in_force_only_grows(kb: KnowledgeBase) -> None:
    plan = _plan(
        kb,
        "frontend-proxy",
        sysctl={PORTS: "50000-50010,12000"},
        listeners=[{"address": "0.0.0.0", "port": 12000, "backlog": 511, "queue": 0}],
    )
    (setting,) = [s for s in plan.settings if s.key == PORTS]
    assert setting.value == "12000,50000-50010" and setting.values == []


def test_unsigned_notsent_lowat_of_old_kernels_is_the_same_default(kb: KnowledgeBase) -> None:
    """4.9 prints UINT_MAX as -1: it is not a lower value to keep, nor drift."""
    plan = _plan(kb, "base", kernel="4.9.0-12-amd64", sysctl={"net.ipv4.tcp_notsent_lowat": "-1"})
    assert not [s for s in plan.settings if s.key == "net.ipv4.tcp_notsent_lowat"]
    fe = _plan(
        kb, "frontend-proxy", kernel="4.9.0-12-amd64", sysctl={"net.ipv4.tcp_notsent_lowat": "-1"}
    )
    (setting,) = [s for s in fe.settings if s.key == "net.ipv4.tcp_notsent_lowat"]
    assert setting.value == "16384"


def test_rules_that_disagree_on_a_name_emit_nothing(tmp_path: Path) -> None:
    rules, profiles = tmp_path / "rules", tmp_path / "profiles"
    rules.mkdir()
    profiles.mkdir()
    (rules / "other.yaml").write_text(
        "id: pacing.other\ntitle: t\ndescription: d\nset:\n"
        f"  {CC}: \"'bbr'\"\nrationale: r\nreferences: [linux-6-18-doc-ip-sysctl]\n"
    )
    (profiles / "dtn-test.yaml").write_text(
        "name: dtn-test\nsummary: s\nextends: gridftp\nrules: [pacing.other]\n"
    )
    other = KnowledgeBase.load([rules], [profiles])
    plan = _plan(other, "dtn-test", kernel_modules={"loadable": ["tcp_htcp"], "builtin": []})
    assert not [s for s in plan.settings if s.key == CC]
    assert any("want different values" in n for n in plan.notes), plan.notes


def test_a_cap_on_a_text_key_does_not_load(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "capped.yaml").write_text(
        "id: pacing.capped\ntitle: t\ndescription: d\ncap:\n"
        f"  {CC}: \"'reno'\"\nrationale: r\nreferences: [linux-6-18-doc-ip-sysctl]\n"
    )
    with pytest.raises(InputError, match="has no cap"):
        KnowledgeBase.load([rules])


def test_module_lists_keep_congestion_control_and_qdiscs() -> None:
    dep = (
        "kernel/net/sched/sch_fq.ko.zst: kernel/net/sched/sch_x.ko\n"
        "kernel/net/ipv4/tcp_bbr.ko.xz:\n"
        "kernel/net/ipv4/tcp_htcp.ko:\n"
        "kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko.xz: kernel/x.ko\n"
        "kernel/net/ipv4/tcp_diag.ko\n"  # a builtin line has no colon
        "kernel/net/sched/sch_fq-codel.ko.gz:\n"
        "garbage without a path\n"
    )
    assert parse_module_list(dep) == ["sch_fq", "sch_fq_codel", "tcp_bbr", "tcp_diag", "tcp_htcp"]


def _tree(tmp_path: Path, release: str) -> Path:
    root = tmp_path / "host"
    shutil.copytree(TESTS / "fixtures" / "hosts" / "e1000-bnx2", root, symlinks=True)
    (root / "proc/sys/kernel").mkdir(parents=True, exist_ok=True)
    (root / "proc/sys/kernel/osrelease").write_text(release + "\n")
    return root


def test_the_collector_reads_the_running_kernels_modules(kb: KnowledgeBase, tmp_path: Path) -> None:
    root = _tree(tmp_path, "5.14.0-427.el9.x86_64")
    modules = root / "lib/modules/5.14.0-427.el9.x86_64"
    modules.mkdir(parents=True)
    (modules / "modules.dep").write_text(
        "kernel/net/ipv4/tcp_bbr.ko.xz:\nkernel/net/sched/sch_fq.ko.xz:\n"
    )
    (modules / "modules.builtin").write_text("kernel/net/ipv4/tcp_cubic.ko\n")
    facts = facts_from_data(collect_data(kb.catalog.read_keys(), root))
    assert facts.kernel_modules is not None
    assert facts.kernel_modules.loadable == ["sch_fq", "tcp_bbr"]
    assert facts.kernel_modules.builtin == ["tcp_cubic"]


def test_a_hostile_release_never_leaves_the_tree(kb: KnowledgeBase, tmp_path: Path) -> None:
    """A copied tree's osrelease names the module directory: `../../..` or a link out of the
    tree must not make the collector read the machine running the advisor."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "modules.dep").write_text("kernel/net/ipv4/tcp_secret.ko:\n")
    # root is tmp_path/<case>/host: four levels up from lib/modules is tmp_path
    for release in ("../../../../outside", "..", "evil"):
        root = _tree(tmp_path / release.replace("/", "_").replace(".", "d"), release)
        if release == "evil":
            (root / "lib/modules").mkdir(parents=True)
            (root / "lib/modules/evil").symlink_to(outside)
        data = collect_data(kb.catalog.read_keys(), root)
        assert "kernel_modules" not in data, release


def test_a_port_set_too_long_for_one_write_is_not_emitted(kb: KnowledgeBase) -> None:
    """procps writes a value with one write() and the kernel takes a page: a longer line would
    apply only its head while sysctl exits 0."""
    held = ",".join(str(p) for p in range(20000, 21600, 2))  # 800 ports, 4,799 characters
    plan = _plan(
        kb,
        "frontend-proxy",
        sysctl={PORTS: held},
        listeners=[{"address": "0.0.0.0", "port": 30000, "backlog": 511, "queue": 0}],
    )
    assert not [s for s in plan.settings if s.key == PORTS]
    assert any("more than `sysctl -p` writes" in n for n in plan.notes), plan.notes


def test_odd_module_entries_are_skipped_not_fatal() -> None:
    dep = "kernel/net/sched/sch_FQ.ko:\nkernel/net/ipv4/tcp_a.b.ko:\nkernel/net/ipv4/tcp_bbr.ko:\n"
    assert parse_module_list(dep) == ["tcp_bbr"]
    many = "".join(f"kernel/net/ipv4/tcp_m{i}.ko:\n" for i in range(3000))
    assert len(parse_module_list(many)) == 1024


def test_a_control_character_in_a_text_parameter_is_refused(kb: KnowledgeBase) -> None:
    facts = facts_from_data({"memory": {"total": "16 GiB"}})
    with pytest.raises(InputError, match="control or separator"):
        build_plan(kb, facts, "frontend-proxy", {"reserved_ports": "1\u2028X"})
