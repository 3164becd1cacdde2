"""The catalog's boot-default formulas against the kernel this test runs on.

For every key whose default the catalog predicts, the value in /proc/sys must agree within 2%
per element — unless the host's own sysctl.d configuration (read with our own tree reader) sets
that key, in which case the value in force is not the boot default and is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine import host_defaults
from advisor.errors import InputError
from advisor.knowledge import KnowledgeBase
from advisor.local_host import collect
from advisor.sysctl_sources import read_tree

pytestmark = pytest.mark.skipif(
    not Path("/proc/sys/net/ipv4/tcp_mem").exists(), reason="needs a Linux /proc/sys"
)
TOLERANCE = 0.02


def _configured_keys(kb: KnowledgeBase) -> set[str]:
    try:
        return set(read_tree(Path("/"), kb.catalog.keys).values)
    except InputError:  # no sysctl.d at all: nothing is configured
        return set()


def test_catalog_defaults_match_this_kernel(kb: KnowledgeBase) -> None:
    facts = collect(list(kb.catalog.keys))
    predicted = host_defaults(kb, facts)
    configured = _configured_keys(kb)
    compared, mismatches = [], []
    for key, default in predicted.items():
        live = facts.sysctl.get(key)
        if default is None or live is None or key in configured:
            continue
        want = [int(x) for x in default.split()]
        got = [int(x) for x in live.split()]
        compared.append(key)
        if len(want) != len(got) or any(
            abs(w - g) > TOLERANCE * max(abs(g), 1) for w, g in zip(want, got, strict=True)
        ):
            mismatches.append(f"{key}: predicted {default}, kernel has {live}")
    assert not mismatches, "\n".join(mismatches)
    # Most of the catalog is compared on a stock host; a nearly empty comparison proves nothing.
    assert len(compared) >= len(predicted) // 2, (compared, configured)
