"""The keys each read release has (rules/catalog/kernel-keys.yaml), and what a release that was
not read, or a distribution's kernel, is told."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelVersion

# release: (a key it has, a key it lacks that a neighbouring read release has or had)
PER_RELEASE = {
    "2.6.32": ("net.ipv4.netfilter.ip_conntrack_max", "net.ipv4.tcp_fastopen"),
    "3.10.4": ("net.ipv4.tcp_tw_recycle", "net.ipv4.tcp_min_rtt_wlen"),
    "4.4.121": ("net.ipv4.tcp_tw_recycle", "net.ipv4.conf.eth0.drop_gratuitous_arp"),
    "4.19.304": ("net.ipv4.fib_multipath_hash_policy", "net.ipv4.tcp_tw_recycle"),
    "5.4.59": ("net.ipv4.tcp_comp_sack_nr", "net.ipv4.netfilter.ip_conntrack_max"),
    "5.15.135": ("net.ipv4.tcp_migrate_req", "net.ipv4.tcp_tw_recycle"),
    "6.1.20": ("net.core.netdev_tstamp_prequeue", "net.ipv4.tcp_tw_recycle"),
    "6.12.19": ("net.ipv4.tcp_rto_min_us", "net.ipv4.tcp_tw_recycle"),
    "6.18.19": ("net.ipv4.tcp_rto_min_us", "kernel.exec-shield"),
}


@pytest.fixture(scope="module")
def kk(kb: KnowledgeBase):  # type: ignore[no-untyped-def]
    return kb.kernel_keys


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.lazy()


@pytest.mark.parametrize("release", sorted(PER_RELEASE))
def test_each_read_release(kk, release: str) -> None:  # type: ignore[no-untyped-def]
    has, lacks = PER_RELEASE[release]
    version = KernelVersion.parse(release)
    assert kk.verdict(has, version, False)["exists"] is True
    assert kk.verdict(lacks, version, False)["exists"] is False


def test_between_read_releases_that_disagree(kk) -> None:  # type: ignore[no-untyped-def]
    found = kk.verdict("net.ipv4.tcp_tw_recycle", KernelVersion.parse("4.12"), False)
    assert found["exists"] is None and found["why"] == "removed between 4.4 and 4.19"


def test_unread_releases(kk) -> None:  # type: ignore[no-untyped-def]
    older = kk.verdict("net.core.somaxconn", KernelVersion.parse("2.6.18"), False)
    assert older["exists"] is None
    newer = kk.verdict("net.ipv4.tcp_tw_recycle", KernelVersion.parse("7.2"), False)
    assert newer["exists"] is False and newer["release"] == "6.18"
    # a key no read release has may be one a release past the newest read added
    new_knob = kk.verdict("net.ipv4.tcp_brand_new_knob", KernelVersion.parse("7.2"), False)
    assert new_knob["exists"] is None and "after 6.18" in new_knob["why"]
    assert (
        kk.verdict("net.ipv4.tcp_brand_new_knob", KernelVersion.parse("6.18"), False)["exists"]
        is False
    )


def test_distribution_kernels(kk) -> None:  # type: ignore[no-untyped-def]
    rhel = KernelVersion.parse("3.10.0-1160.el7.x86_64")
    assert kk.verdict("net.ipv4.tcp_fastopen_blackhole_timeout_sec", rhel, True)["exists"] is None
    ubuntu = KernelVersion.parse("5.15.0-91-generic")
    assert kk.verdict("kernel.unprivileged_userns_clone", ubuntu, False)["exists"] is None
    plain = KernelVersion.parse("5.15.135")
    assert kk.verdict("kernel.unprivileged_userns_clone", plain, False)["exists"] is False
    # A release with a suffix is a distribution's build: a key mainline added later may be a
    # backport there (not verified), a key mainline removed is still missing.
    el7 = KernelVersion.parse("3.10.0-1160.el7.x86_64")
    later = kk.verdict("net.ipv4.tcp_fastopen_blackhole_timeout_sec", el7, False)
    assert later["exists"] is None and "distribution" in later["why"]
    assert kk.verdict("net.ipv4.tcp_fastopen_blackhole_timeout_sec", plain, False)["exists"]
    assert kk.verdict("net.ipv4.tcp_tw_recycle", ubuntu, False)["exists"] is False


def test_read_only_and_modules(kk) -> None:  # type: ignore[no-untyped-def]
    old = kk.verdict("net.netfilter.nf_conntrack_buckets", KernelVersion.parse("3.10.4"), False)
    assert old["read_only"] is True and old["module"] == "nf_conntrack"
    new = kk.verdict("net.netfilter.nf_conntrack_buckets", KernelVersion.parse("5.4"), False)
    assert new["read_only"] is False


@given(
    key=st.sampled_from(["net.ipv4.tcp_tw_recycle", "net.ipv4.conf.all.drop_gratuitous_arp"]),
    minor=st.integers(min_value=5, max_value=18),
)
def test_never_an_answer_between_disagreeing_releases(key: str, minor: int) -> None:
    kk = KnowledgeBase.lazy().kernel_keys
    found = kk.verdict(key, KernelVersion.parse(f"4.{minor}"), False)
    assert found["exists"] is None


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
@pytest.mark.skipif(
    not os.uname().release.startswith("6.18."),
    reason="the running kernel is not a 6.18 one: its keys are not the 6.18 data's to hold",
)
def test_fresh_namespace_keys_are_in_the_618_data(kk) -> None:  # type: ignore[no-untyped-def]
    """Every key a fresh network namespace of the running kernel lists under the covered net
    directories is in the data for 6.18 (vendor builds may add their own: none were found
    under net/ on the machine this was written on)."""
    run = subprocess.run(
        ["unshare", "-n", "find", "/proc/sys/net", "-type", "f"],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        pytest.skip(f"unshare -n failed: {run.stderr.strip()[:100]}")
    version = KernelVersion.parse("6.18.19")
    keys = [p.removeprefix("/proc/sys/").replace("/", ".") for p in run.stdout.split()]
    missing = [
        k for k in keys if kk.covers(k) and kk.verdict(k, version, False)["exists"] is not True
    ]
    assert not missing
