"""The range a handler in jiffies takes is the build's HZ's: seconds times HZ must fit an int
(do_proc_dointvec_jiffies_conv()), so the catalog's range (HZ=100, the widest) narrows on a
kernel built with a higher HZ, and stays the widest where the HZ is not known."""

from __future__ import annotations

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelVersion

V618 = KernelVersion.parse("6.18")


@pytest.mark.parametrize(
    ("hz", "limit"), [(None, 21474836), (100, 21474836), (250, 8589934), (1000, 2147483)]
)
@pytest.mark.parametrize(
    "key",
    ["net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl"],
)
def test_a_jiffies_handlers_range_is_the_builds(
    kb: KnowledgeBase, key: str, hz: int | None, limit: int
) -> None:
    found = kb.catalog.bounds(key, V618, 64, hz)
    assert found is not None and (found["min"], found["max"]) == (-limit, limit)


def test_other_handlers_do_not_depend_on_hz(kb: KnowledgeBase) -> None:
    assert kb.catalog.bounds("net.ipv4.tcp_rmem", V618, 64, 1000) == kb.catalog.bounds(
        "net.ipv4.tcp_rmem", V618, 64
    )
