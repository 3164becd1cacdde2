"""What `explain` and the plan's comments say of a key's value where the catalog knows more
than a number: a "no limit" sentinel (tcp_notsent_lowat's UINT_MAX) and what a network
namespace other than the initial one shows of a global key (rmem_max, wmem_max)."""

from __future__ import annotations

import os
import platform

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.values import human, parse_current
from sysctl_advisor.model.kernel_version import KernelVersion
from tests.conftest import ROOT, Cli
from tests.namespaces import in_namespace, needs_netns

APP_NODE = str(ROOT / "examples" / "app-node.yaml")


def test_a_no_limit_sentinel_reads_unlimited(kb: KnowledgeBase) -> None:
    spec = kb.catalog.keys["net.ipv4.tcp_notsent_lowat"]
    assert spec.unlimited == 4294967295
    # what 4.10 and later print, and what older kernels print for the same UINT_MAX (-1)
    for printed in ("4294967295", "-1"):
        value = parse_current(printed, spec)
        assert value is not None and human(value, spec, 4096) == "unlimited"
    assert human(16384, spec, 4096) == "16 KiB"
    for name, key in kb.catalog.keys.items():  # the class: every key with such a sentinel
        if key.unlimited is not None:
            assert human(key.unlimited, key, 4096) == "unlimited", name


def test_explain_and_the_plan_call_tcp_notsent_lowat_default_unlimited(cli: Cli) -> None:
    explained = cli("explain", "tcp_notsent_lowat").stdout
    assert "4294967295 (unlimited)" in explained and "GiB" not in explained
    conf = cli("recommend", "--facts", APP_NODE, "-p", "frontend-proxy").stdout
    (line,) = [x for x in conf.splitlines() if x.startswith("# net.ipv4.tcp_notsent_lowat:")]
    assert line.endswith("kernel default unlimited"), line


@pytest.mark.parametrize("key", ["net.core.rmem_max", "net.core.wmem_max"])
def test_explain_says_what_another_namespace_sees(cli: Cli, kb: KnowledgeBase, key: str) -> None:
    out = cli("explain", key).stdout
    (scope,) = [line for line in out.splitlines() if line.startswith("  scope:")]
    assert "from 6.11 another network namespace" in scope
    assert "the initial namespace's value in force, read-only" in scope
    assert "absent there" in scope and "[3-5]" in scope
    assert "[3] Linux commit 19249c0724f2" in out
    shown = kb.catalog.keys[key].netns_reads_init
    assert shown is not None and shown.since == "6.11"


@needs_netns
@pytest.mark.parametrize("key", ["net.core.rmem_max", "net.core.wmem_max"])
def test_the_running_kernel_shows_another_namespace_what_the_catalog_says(
    kb: KnowledgeBase, key: str
) -> None:
    """Measured on the kernel the suite runs on: from the catalog's release a new network
    namespace shows the key read-only, with the initial namespace's value; before, no key."""
    shown = kb.catalog.keys[key].netns_reads_init
    assert shown is not None
    path = "/proc/sys/" + key.replace(".", "/")
    script = (
        'if [ -e "$1" ]; then cat "$1"; if echo 8192 > "$1"; then echo written; '
        'else echo refused; fi; cat "$1"; else echo absent; fi'
    )
    seen = in_namespace(script, path)
    assert seen.returncode == 0, seen.stderr
    running = KernelVersion.parse(platform.release())
    if running >= KernelVersion.parse(shown.since):
        with open(path) as host:
            value = host.read().strip()
        assert seen.stdout.split() == [value, "refused", value]
    else:
        assert seen.stdout.split() == ["absent"]
    assert os.path.exists(path)
