"""nic.fast-path's txqueuelen companion states how long pfifo_fast's queue lasts at the NIC's
speed and MTU (1,000 packets are 123 µs at 100 Gbit/s and 1,500 bytes, not
'a few microseconds'), and only where the facts show a qdisc that reads txqueuelen."""

from __future__ import annotations

from typing import Any

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import facts_from_data


def _txqueuelen(kb: KnowledgeBase, mtu: int, qdisc: str | None) -> list[str]:
    data: dict[str, Any] = {
        "kernel": "5.14.0-362.el9.x86_64",
        "arch": "x86_64",
        "memory": {"total": "256 GiB"},
        "nics": [{"name": "ens1", "driver": "ice", "speed_mbps": 100000, "mtu": mtu}],
        "kernel_modules": {"loadable": [], "builtin": []},
    }
    if qdisc is not None:
        data["sysctl"] = {"net.core.default_qdisc": qdisc}
    plan = build_plan(kb, facts_from_data(data), "gridftp")
    return [c.rationale for c in plan.companions if "txqueuelen" in c.setting]


@pytest.mark.parametrize(
    ("mtu", "drain"),
    [
        (1500, "drain in 123 µs at 100 Gbit/s with 1,500-byte packets (1,538 bytes on the wire"),
        (9000, "drain in 723 µs at 100 Gbit/s with 9,000-byte packets (9,038 bytes on the wire"),
    ],
)
def test_pfifo_fast_queue_time_at_line_rate(kb: KnowledgeBase, mtu: int, drain: str) -> None:
    (rationale,) = _txqueuelen(kb, mtu, "pfifo_fast")
    assert drain in rationale
    assert "each transmit queue" in rationale
    assert "microseconds of line rate" not in rationale


@pytest.mark.parametrize("qdisc", ["fq_codel", None])
def test_no_txqueuelen_unless_the_facts_show_pfifo(kb: KnowledgeBase, qdisc: str | None) -> None:
    assert _txqueuelen(kb, 9000, qdisc) == []


@pytest.mark.parametrize(
    ("profile", "driver"),
    [
        ("frontend-proxy", "bnxt_en"),
        ("c1m-server", "ice"),
        ("base", "ena"),
        ("gridftp", "ena"),
        ("gridftp", "mlx5_core"),
    ],
)
def test_irq_companion_fits_the_profile_and_the_driver(
    kb: KnowledgeBase, profile: str, driver: str
) -> None:
    """The IRQ/NUMA companion spoke of transfers on every profile, told
    a frontend to stop irqbalance (which nic.softnet-per-cpu and evidence.rx-overruns spread
    interrupts with) and offered Mellanox's script for any NIC."""
    data: dict[str, Any] = {
        "kernel": "6.6.30",
        "arch": "x86_64",
        "memory": {"total": "256 GiB", "numa_nodes": 2},
        "nics": [{"name": "nic0", "driver": driver, "speed_mbps": 100000, "mtu": 1500}],
    }
    plan = build_plan(kb, facts_from_data(data), profile)
    (irq,) = [c for c in plan.companions if c.target == "irq affinity"]
    text = irq.setting + " " + irq.rationale
    assert ("set_irq_affinity_bynode.sh" in text) == driver.startswith("mlx")
    assert ("transfer" in text) == (profile == "gridftp")
    assert "Stop irqbalance" not in text
    assert "rather than stop it" in text
