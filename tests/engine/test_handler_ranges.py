"""`check` says what the kernel does with a value, as its handler and code do at the target's
release and word size: a value the handler refuses is an error (check.out-of-bounds), one it
stores outside the range the key is meant for is a warning that says what the kernel does with
it (check.stored-out-of-range), and a capacity from 0 up to its floor is check.below-floor's.
The ranges and what lies beyond them are the catalog's (`bounds:` in rules/catalog/keys.yaml,
read in the kernel source). Payloads are built at test time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.host import host_context
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.knowledge.catalog import CatalogFile
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.model_base import validate
from sysctl_advisor.sources.sysctl_files import read_file

REFUSED, STORED, FLOOR = "check.out-of-bounds", "check.stored-out-of-range", "check.below-floor"
INT_MIN = -(2**31)


def findings(
    kb: KnowledgeBase, tmp_path: Path, line: str, kernel: str | None = None, bits: int = 64
) -> dict[str, str]:
    """The findings of one line, by rule id, with their messages."""
    conf = tmp_path / "60-ranges.conf"
    conf.write_text(line + "\n")
    arch = "x86_64" if bits == 64 else "i686"
    context = (
        host_context(kb, facts_from_data({"memory": {"total": 2**33}, "arch": arch}))
        if bits == 32
        else CheckContext()
    )
    if kernel:
        context.kernel = KernelVersion.parse(kernel)
    found = Checker(kb, kb.check_rules, context).check_config(read_file(conf))
    return {f.id: f.message for f in found}


def test_syncookies_3_is_stored_and_treated_as_1(kb: KnowledgeBase, tmp_path: Path) -> None:
    """The handler takes any u8 (6.x) or any int (before 5.13); the kernel tests for 2 and
    otherwise for 0 only. Not an error: the write succeeds."""
    for kernel in (None, "6.18.0", "5.15.0", "5.4.0", "3.10.0"):
        found = findings(kb, tmp_path, "net.ipv4.tcp_syncookies = 3", kernel)
        assert REFUSED not in found and STORED in found, (kernel, found)
        assert "treats it as 1" in found[STORED]
    # a negative number: an int handler stores it, the u8 one refuses the '-'
    assert STORED in findings(kb, tmp_path, "net.ipv4.tcp_syncookies = -1", "5.4.0")
    assert REFUSED in findings(kb, tmp_path, "net.ipv4.tcp_syncookies = -1", "6.18.0")
    # past a u8 on the u8 kernels (5.13 on, and 5.10 from 5.10.178), not before
    assert REFUSED in findings(kb, tmp_path, "net.ipv4.tcp_syncookies = 256", "6.1.0")
    assert REFUSED in findings(kb, tmp_path, "net.ipv4.tcp_syncookies = 256", "5.10.200")
    assert STORED in findings(kb, tmp_path, "net.ipv4.tcp_syncookies = 256", "5.10.100")
    for value in (0, 1, 2):
        found = findings(kb, tmp_path, f"net.ipv4.tcp_syncookies = {value}")
        assert not {REFUSED, STORED} & set(found), value


@pytest.mark.parametrize("key", ["net.ipv4.tcp_max_syn_backlog", "net.core.netdev_max_backlog"])
def test_a_backlog_of_0_is_below_its_floor_not_refused(
    kb: KnowledgeBase, tmp_path: Path, key: str
) -> None:
    """proc_dointvec stores 0 (and any int): what breaks is the floor's to say."""
    for kernel in (None, "2.6.32", "4.4.0", "6.18.0"):
        found = findings(kb, tmp_path, f"{key} = 0", kernel)
        assert FLOOR in found and REFUSED not in found and STORED not in found, (kernel, found)
    # a negative number is stored too, and means something else than a small capacity
    found = findings(kb, tmp_path, f"{key} = -1")
    assert STORED in found and FLOOR not in found and REFUSED not in found, found
    assert REFUSED in findings(kb, tmp_path, f"{key} = {INT_MIN - 1}")


def test_a_negative_netdev_backlog_is_said_to_lift_the_limit(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    found = findings(kb, tmp_path, "net.core.netdev_max_backlog = -1")
    assert "unsigned" in found[STORED] and "no limit" in found[STORED]


@pytest.mark.parametrize(
    ("line", "kernel"),
    [
        ("vm.overcommit_memory = 3", None),
        ("vm.overcommit_memory = 3", "3.10.0"),
        ("vm.overcommit_memory = -1", "6.18.0"),
        ("vm.dirty_bytes = 0", None),  # at least two pages: the read-back 0 is no write
        ("vm.dirty_background_bytes = 0", "6.12.0"),
        ("net.ipv4.tcp_notsent_lowat = -1", "6.18.0"),  # proc_douintvec refuses the '-'
        ("net.core.somaxconn = 70000", "3.10.0"),  # 0..65535 while the backlog is 16 bits
        ("net.core.rmem_max = 2000", None),  # below SOCK_MIN_RCVBUF
        ("net.ipv4.tcp_keepalive_probes = 256", "6.18.0"),  # a u8
        ("net.ipv4.tcp_tw_reuse = 3", "6.18.0"),
        ("net.ipv4.ip_local_port_range = 1024 70000", None),
        ("fs.nr_open = 2147483584", "6.18.0"),  # at most 1073741792 on a 32-bit kernel
    ],
)
def test_what_the_handler_refuses_stays_an_error(
    kb: KnowledgeBase, tmp_path: Path, line: str, kernel: str | None
) -> None:
    bits = 32 if line.startswith("fs.nr_open") else 64
    found = findings(kb, tmp_path, line, kernel, bits)
    assert REFUSED in found and STORED not in found, found


def test_the_refusal_says_what_happens_to_the_write(kb: KnowledgeBase, tmp_path: Path) -> None:
    message = findings(kb, tmp_path, "vm.overcommit_memory = 3")[REFUSED]
    assert "EINVAL" in message and "sysctl -p" in message and "stays" in message
    # a vector is left half-written by a handler that stores field by field
    message = findings(kb, tmp_path, "net.ipv4.tcp_rmem = 4096 87380 0")[REFUSED]
    assert "half-written" in message
    # an unsigned long key's handler skips a negative field on older kernels
    message = findings(kb, tmp_path, "net.ipv4.tcp_mem = -1 2 3", "5.15.0")[REFUSED]
    assert "skip" in message


def test_a_reversed_port_range_is_still_an_error(kb: KnowledgeBase, tmp_path: Path) -> None:
    """ipv4_local_port_range() refuses a first port above the last (EINVAL)."""
    found = findings(kb, tmp_path, "net.ipv4.ip_local_port_range = 60999 32768")
    assert "check.vector-order" in found


@pytest.mark.parametrize(
    ("line", "kernel", "says"),
    [
        ("net.ipv4.tcp_keepalive_time = 0", None, "does not turn keepalive off"),
        ("net.ipv4.tcp_keepalive_probes = 0", None, "without a single probe"),
        ("net.ipv4.tcp_keepalive_probes = 300", "5.4.0", "forever"),
        ("net.ipv4.tcp_fin_timeout = 0", None, "3.5 retransmission timeouts"),
        ("net.ipv4.tcp_fin_timeout = 3000000", None, "HZ"),
        ("net.ipv4.tcp_mtu_probing = 5", None, "treats it as 2"),
        ("net.ipv4.tcp_slow_start_after_idle = 7", None, "treats it as 1"),
        ("net.ipv4.tcp_no_metrics_save = 9", None, "treats it as 1"),
        ("net.ipv4.tcp_tw_reuse = 3", "4.14.0", "treats it as 1"),
        ("net.ipv4.tcp_max_orphans = -1", None, "too many orphaned sockets"),
        ("net.ipv4.tcp_max_tw_buckets = -1", "6.12.0", "no limit"),
        ("net.ipv4.tcp_max_tw_buckets = -1", "5.15.0", "skips TIME_WAIT"),
        ("net.netfilter.nf_conntrack_max = -1", "6.12.0", "no limit"),
        ("vm.overcommit_ratio = -1", None, "wraps"),
        ("vm.overcommit_memory = 3", "2.6.32", "treats it as 2"),
        ("vm.max_map_count = -1", "2.6.32", "ENOMEM"),
        ("vm.min_free_kbytes = -1", "3.10.0", "can no longer allocate"),
        ("net.ipv4.tcp_mem = 0 0 0", None, "always over"),
        ("net.core.somaxconn = -1", "2.6.32", "caps no listen() backlog"),
        ("net.ipv4.udp_rmem_min = 0", "2.6.32", "guarantees no UDP socket"),
        ("net.ipv4.neigh.default.gc_thresh3 = -1", "3.10.0", "address resolution fails"),
        ("net.ipv6.neigh.default.gc_thresh1 = -1", "3.10.0", "every time"),
        ("fs.file-max = -1", "2.6.32", "ENFILE"),
        ("vm.nr_hugepages = 18446744073709551615", None, "as many as memory allows"),
    ],
)
def test_a_value_the_kernel_stores_beyond_the_keys_range_says_what_it_does(
    kb: KnowledgeBase, tmp_path: Path, line: str, kernel: str | None, says: str
) -> None:
    found = findings(kb, tmp_path, line, kernel)
    assert STORED in found and REFUSED not in found, found
    assert says in found[STORED], found[STORED]


def test_a_socket_buffer_the_kernel_takes_is_no_error(kb: KnowledgeBase, tmp_path: Path) -> None:
    """SOCK_MIN_RCVBUF is 2304 on x86_64 from 3.14 (2048 + 256): 3000 is a working cap on
    SO_RCVBUF requests, which the catalog's old least, 4608 (the send side's), refused."""
    for key in ("net.core.rmem_max", "net.core.rmem_default"):
        assert not {REFUSED, STORED} & set(findings(kb, tmp_path, f"{key} = 3000"))
        assert REFUSED in findings(kb, tmp_path, f"{key} = 2303")
    assert REFUSED in findings(kb, tmp_path, "net.core.wmem_max = 4607")


SAMPLE_KERNELS = [
    "2.6.32", "3.0.8", "3.10.0", "3.14.0", "4.4.0", "4.9.0", "4.14.0", "4.19.0", "5.4.0",
    "5.10.100", "5.10.200", "5.11.0", "5.15.0", "6.1.0", "6.12.0", "6.15.0", "6.18.0",
]  # fmt: skip


@pytest.mark.parametrize("kernel", SAMPLE_KERNELS)
def test_every_value_is_judged_by_one_rule_at_each_edge(kb: KnowledgeBase, kernel: str) -> None:
    """For every number key of the catalog, on each release and word size: the handler's ends
    pass check.out-of-bounds and one beyond fails it; a value the handler takes beyond the
    key's own range gets check.stored-out-of-range or check.below-floor, never silence and
    never both; inside the key's own range neither says a word."""
    catalog = kb.catalog
    version = KernelVersion.parse(kernel)
    rules = {rid: kb.check_rules[rid] for rid in (REFUSED, STORED, FLOOR)}

    def fired(checker: Checker, key: str, value: int, length: int) -> set[str]:
        scope = checker._scope(key, " ".join([str(value)] * length), False)
        ctx = kb.compiler.context(scope)
        for rule in rules.values():
            for name, expr in rule.let:
                ctx.vars[name] = expr.run(ctx)
        return {rid for rid, r in rules.items() if r.when is not None and r.when.run(ctx)}

    for bits in (64, 32):
        arch = "x86_64" if bits == 64 else "i686"
        facts = facts_from_data({"memory": {"total": 2**33}, "arch": arch})
        checker = Checker(kb, kb.check_rules, CheckContext(facts=facts, kernel=version))
        for key, spec in catalog.keys.items():
            if spec.is_text:
                continue
            bounds = catalog.bounds(key, version, bits)
            assert bounds is not None
            low, high = bounds["min"], bounds["max"]
            for value in (low - 1, high + 1):
                where = (key, kernel, bits, value)
                assert REFUSED in fired(checker, key, value, spec.length), where
            for value in {low, high, spec.min - 1, spec.max + 1, spec.min, spec.max}:
                if not low <= value <= high:
                    continue
                got = fired(checker, key, value, spec.length)
                assert REFUSED not in got, (key, kernel, bits, value, got)
                if spec.min <= value <= spec.max:
                    assert not got & {STORED}, (key, kernel, bits, value, got)
                else:
                    assert len(got & {STORED, FLOOR}) == 1, (key, kernel, bits, value, got)


def _key(**more: Any) -> dict[str, Any]:
    return {
        "sections": [{"id": "s", "title": "S"}],
        "keys": {
            "net.core.x": {
                "alias": "x",
                "section": "s",
                "unit": "count",
                "min": 1,
                "max": 10,
                "merge": "max",
                "summary": "x",
                "references": ["linux-6-18-doc-sysctl-net"],
                "default": [{"value": 1}],
                **more,
            }
        },
    }


@pytest.mark.parametrize(
    "bounds",
    [
        [{"min": 0, "references": ["r"]}],  # wider below, and no word on what the kernel does
        [{"max": 20, "references": ["r"]}],  # wider above
        [{"min": 2, "below": "treats it as 1", "references": ["r"]}],  # a word with no reach
        [{"max": 5, "above": "treats it as 1", "references": ["r"]}],
    ],
)
def test_a_range_wider_than_the_keys_says_what_the_kernel_does_and_only_there(
    bounds: list[dict[str, Any]],
) -> None:
    with pytest.raises((InputError, ValueError)):
        validate(CatalogFile, _key(bounds=bounds))
    narrower = [{"min": 2, "max": 5, "references": ["r"]}]
    validate(CatalogFile, _key(bounds=narrower))
    wider = [{"min": -5, "max": 20, "below": "a", "above": "b", "references": ["r"]}]
    validate(CatalogFile, _key(bounds=wider))


def test_a_port_range_below_the_unprivileged_ports_is_refused(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """From 4.11 ipv4_local_port_range() refuses a first port below
    net.ipv4.ip_unprivileged_port_start (1024 unless lowered), though each port may be
    1..65535."""
    rule = "check.port-range-privileged"
    line = "net.ipv4.ip_local_port_range = 1000 65000"
    assert rule in findings(kb, tmp_path, line)
    assert rule in findings(kb, tmp_path, line, "4.14.0")
    assert rule not in findings(kb, tmp_path, line, "4.9.0")
    assert rule not in findings(kb, tmp_path, "net.ipv4.ip_local_port_range = 1024 65000")
    lowered = f"net.ipv4.ip_unprivileged_port_start = 1000\n{line}"
    assert rule not in findings(kb, tmp_path, lowered)
    # the key is one the kernel has: held to its handler's range, not called unknown
    found = findings(kb, tmp_path, "net.ipv4.ip_unprivileged_port_start = 65536")
    assert REFUSED in found and "check.unknown-key" not in found
