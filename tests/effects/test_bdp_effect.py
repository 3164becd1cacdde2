"""Bandwidth-delay product, proved by its effect on one stream.

A 1000 Mbit/s path with a 100 ms RTT (BDP 11.9 MiB) is emulated by tests/effects/delay_line.py,
and one cubic stream crosses it twice, with the receiver's tcp_rmem at (a) the default of the
advised host's kernel and (b) the advisor's value. The advice is computed in-process for
examples/dtn-10g.yaml (a 6.1 data-transfer node) with the gridftp profile and rtt_ms=100,
bandwidth_mbps=1000, streams=1: tcp_rmem max 24 MiB (BDP ÷ 0.5, rounded up to a whole MiB)
where 6.1 boots with 6 MiB. The sender gets the advised tcp_wmem in both cases, so only the
receive window differs. (a) must carry window ÷ RTT within 20% and stay below 80% of the link:
one stream cannot fill the path. (b) must carry at least 80% of the link, within 20% of
min(window ÷ RTT, link).

The window is tcp_rmem max times the share of the buffer that the kernel *running the test*
offers as window, read back from the socket (TCP_WINDOW_CLAMP ÷ SO_RCVBUF); it is not the
advised host's share. Up to 6.5 the share is fixed by tcp_adv_win_scale (1/2 since 3.4, the
era of the 6.1 host). From 6.6 on it is per flow, scaling_ratio = skb->len ÷ skb->truesize of a
full segment: over this TUN at MTU 65535 it measured 239/256 (0.934) on 6.18, so there the 6 MiB
default carries about 460 Mbit/s where a real 6.1 host would get about 250. The advisor plans
with 0.5 for every kernel since 3.4, which is conservative for such large frames (the advised
window is about 1.9 × BDP here).

Each case prints one line (`pytest -s`). The host's own /proc/sys is compared before and after.
"""

from __future__ import annotations

import os
import shutil

import pytest

from sysctl_advisor.engine.plan_builder import build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.plan import Setting
from tests.conftest import EXAMPLES, load_facts
from tests.effects.delay_line import Link, Transfer, relay_ceiling_mbit, run_transfer
from tests.namespaces import host_sysctls, needs_netns

pytestmark = [
    needs_netns,
    pytest.mark.skipif(
        not os.path.exists("/dev/net/tun"), reason="needs /dev/net/tun (CONFIG_TUN) for the path"
    ),
    pytest.mark.skipif(shutil.which("ip") is None, reason="needs iproute2 ip to set up the path"),
    pytest.mark.skipif(shutil.which("tc") is None, reason="needs iproute2 tc for tbf"),
]
LINK = Link(rate_mbit=1000, rtt_ms=100.0)
PARAMS = {"rtt_ms": "100", "bandwidth_mbps": "1000", "streams": "1"}


@pytest.fixture(scope="module")
def advice(kb: KnowledgeBase) -> dict[str, Setting]:
    plan = build_plan(kb, load_facts(EXAMPLES / "dtn-10g.yaml"), "gridftp", PARAMS)
    return {setting.key: setting for setting in plan.settings}


def stream(case: str, tcp_rmem: str, tcp_wmem: str) -> tuple[Transfer, int, float]:
    """One transfer with the receiver at `tcp_rmem`: the result, tcp_rmem max, window ÷ RTT."""
    before = host_sysctls()
    rx = {"net.ipv4.tcp_rmem": tcp_rmem}
    tx = {"net.ipv4.tcp_wmem": tcp_wmem, "net.ipv4.tcp_no_metrics_save": "1"}
    transfer = run_transfer(LINK, rx, tx)
    after = host_sysctls()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"the host's own /proc/sys changed: {changed}"
    rmem_max = int(tcp_rmem.split()[2])
    window_mbit = transfer.window_mbit(rmem_max, LINK.rtt_ms)
    print(
        f"\nbdp: tcp_rmem max {rmem_max} ({case}): {transfer.goodput_mbit:.0f} Mbit/s of a "
        f"{LINK.rate_mbit} Mbit/s, {LINK.rtt_ms:g} ms link (window/RTT predicts {window_mbit:.0f})"
    )
    return transfer, rmem_max, window_mbit


def details(transfer: Transfer, rmem_max: int) -> str:
    return (
        f"window {rmem_max} × {transfer.window_clamp}/{transfer.sk_rcvbuf} "
        f"(window fraction {transfer.window_fraction:.3f}), srtt {transfer.srtt_ms:.1f} ms, "
        f"{transfer.retrans} retransmissions, receive-window limited "
        f"{transfer.rwnd_limited:.0%} of the time, relay {transfer.relay_late_ms:.2f} ms late "
        f"on average, {transfer.cc}"
    )


def skip_if_the_machine_is_too_slow(transfer: Transfer) -> None:
    """A shortfall is the environment's, not the advice's, when the relay cannot keep up."""
    ceiling = relay_ceiling_mbit()
    if ceiling < 1.25 * LINK.rate_mbit:
        pytest.skip(
            f"the relay carries only {ceiling:.0f} Mbit/s on this machine now, under 1.25 × the "
            f"{LINK.rate_mbit} Mbit/s link ({transfer.relay_late_ms:.2f} ms late on average): "
            "too busy to emulate the path"
        )


def test_one_stream_with_the_era_default_is_held_to_window_over_rtt(
    advice: dict[str, Setting],
) -> None:
    era_rmem = advice["net.ipv4.tcp_rmem"].kernel_default
    assert era_rmem is not None, "the plan models no tcp_rmem default for the host's kernel"
    transfer, rmem_max, window_mbit = stream(
        "era default", era_rmem, advice["net.ipv4.tcp_wmem"].value
    )
    goodput = transfer.goodput_mbit
    if goodput < 0.8 * window_mbit:
        skip_if_the_machine_is_too_slow(transfer)
    assert 0.8 <= goodput / window_mbit <= 1.2, (
        f"era default tcp_rmem max {rmem_max}: {goodput:.0f} Mbit/s, not within 20% of "
        f"window/RTT {window_mbit:.0f} Mbit/s; {details(transfer, rmem_max)}"
    )
    assert goodput < 0.8 * LINK.goodput_mbit, (
        f"era default tcp_rmem max {rmem_max}: {goodput:.0f} Mbit/s is 80% or more of the "
        f"{LINK.goodput_mbit:.0f} Mbit/s the link carries, so one stream is not window-limited "
        f"here and the test proves nothing; {details(transfer, rmem_max)}"
    )


def test_one_stream_with_the_advice_fills_the_path(advice: dict[str, Setting]) -> None:
    transfer, rmem_max, window_mbit = stream(
        "advised", advice["net.ipv4.tcp_rmem"].value, advice["net.ipv4.tcp_wmem"].value
    )
    goodput, link = transfer.goodput_mbit, LINK.goodput_mbit
    predicted = min(window_mbit, link)
    if goodput < 0.8 * link:
        skip_if_the_machine_is_too_slow(transfer)
    assert goodput >= 0.8 * link, (
        f"advised tcp_rmem max {rmem_max}: {goodput:.0f} Mbit/s, under 80% of the "
        f"{link:.0f} Mbit/s the link carries; {details(transfer, rmem_max)}"
    )
    assert 0.8 <= goodput / predicted <= 1.2, (
        f"advised tcp_rmem max {rmem_max}: {goodput:.0f} Mbit/s, not within 20% of "
        f"min(window/RTT {window_mbit:.0f}, link {link:.0f}) Mbit/s; {details(transfer, rmem_max)}"
    )
