"""The catalog's boot-default formulas against the kernel this test runs on.

For every key whose default the catalog predicts, the value in /proc/sys must agree within 2%
per element — unless the host's own sysctl.d configuration (read with our own tree reader) sets
that key, in which case the value in force is not the boot default and is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sysctl_advisor.engine.plan_builder import host_defaults
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.sources.local_host import collect
from sysctl_advisor.sources.sysctl_files import read_tree

pytestmark = pytest.mark.skipif(
    not Path("/proc/sys/net/ipv4/tcp_mem").exists(), reason="needs a Linux /proc/sys"
)
TOLERANCE = 0.02


def _configured_keys(kb: KnowledgeBase) -> set[str]:
    try:
        return set(read_tree(Path("/"), kb.catalog.keys).values)
    except InputError:  # no sysctl.d at all: nothing is configured
        return set()


def _build_config() -> dict[str, str]:
    """This kernel's build options (/proc/config.gz, else /boot/config-<release>); empty when
    neither is there."""
    import gzip
    import os

    text = ""
    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        try:
            text = Path(f"/boot/config-{os.uname().release}").read_text()
        except OSError:
            return {}
    options = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.startswith("CONFIG_"):
            options[name] = value.strip('"')
    return options


def test_catalog_defaults_match_this_kernel(kb: KnowledgeBase) -> None:
    facts = collect(list(kb.catalog.keys))
    version = kb.catalog.kernel_for(facts)[0]
    predicted = host_defaults(kb, facts)
    configured = _configured_keys(kb)
    compared, mismatches = [], []
    for key in kb.catalog.keys:
        # The catalog's kernel range agrees with the kernel: the key is present exactly where
        # the catalog says (tcp_tw_recycle, gone since 4.12, must be absent here).
        exists = kb.catalog.exists(key, version)
        if kb.catalog.keys[key].module and key not in facts.sysctl:
            continue  # its module is not loaded here: absence says nothing of the era
        assert (key in facts.sysctl) == exists, f"{key}: catalog says exists={exists}"
    for key, default in predicted.items():
        live = facts.sysctl.get(key)
        if default is None or live is None:
            continue
        if key in configured:
            continue  # the host's sysctl.d sets it: the value in force is not the boot default
        spec = kb.catalog.keys[key]
        if spec.is_text:
            # A distribution may build another default than upstream's (this machine's
            # CONFIG_DEFAULT_TCP_CONG is bbr): the build option, when this kernel says, wins.
            built = _build_config().get(spec.build_option or "", default)
            compared.append(key)
            if live.strip() != built:
                mismatches.append(f"{key}: predicted {built!r}, kernel has {live!r}")
            continue
        want = [int(x) for x in default.split()]
        got = [int(x) for x in live.split()]
        compared.append(key)
        if len(want) != len(got) or any(
            abs(w - g) > TOLERANCE * max(abs(g), 1) for w, g in zip(want, got, strict=True)
        ):
            mismatches.append(f"{key}: predicted {default}, kernel has {live}")
    assert not mismatches, "\n".join(mismatches)
    # Every key whose default the catalog predicts here was compared, unless configured.
    with_default = {k for k, v in predicted.items() if v is not None}
    assert with_default - set(compared) <= configured, with_default - set(compared)
    assert compared, "nothing compared"


@pytest.mark.parametrize("profile", ["base", "frontend-proxy", "gridftp", "c1m-server"])
def test_untouched_kernel_values_are_never_drift(kb: KnowledgeBase, profile: str) -> None:
    """`diff` on this host: no change is proposed for a key whose value in force the kernel set
    itself (no sysctl.d file sets it), when the only reason would be the model's own figure.
    Whatever diff proposes for such a key must differ from the value in force by more than the
    catalog's tolerance, i.e. be real advice; base proposes nothing at all here."""
    from sysctl_advisor.engine.diff import build_diff
    from sysctl_advisor.engine.plan_builder import build_plan
    from sysctl_advisor.model.current_config import from_values

    facts = collect(list(kb.catalog.keys))
    configured = _configured_keys(kb)
    plan = build_plan(kb, facts, profile)
    version = kb.catalog.kernel_for(facts)[0]
    report = build_diff(
        plan, from_values(facts.sysctl, "live", "/proc/sys", "{path}"), kb.catalog, version
    )
    model = host_defaults(kb, facts)
    for entry in report.entries:
        if entry.status != "change" or entry.key in configured:
            continue
        spec = kb.catalog.keys[entry.key]
        assert entry.current is not None and entry.recommended is not None
        if spec.is_text:  # a name or port set: a change is a different value, never model error
            assert entry.recommended.strip() != entry.current.strip(), entry
            continue
        current = [int(x) for x in entry.current.split()]
        recommended = [int(x) for x in entry.recommended.split()]
        assert recommended != [int(x) for x in (model[entry.key] or "").split()], entry
        assert any(
            abs(r - c) > spec.default_tolerance * max(abs(c), 1)
            for r, c in zip(recommended, current, strict=True)
        ), entry
    if profile == "base" and not configured:
        assert report.entries == [], report.entries
