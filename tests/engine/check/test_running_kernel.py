"""`check` whose target is the running kernel: its /proc/sys decides which keys exist and which
are read-only (a build may leave out a key its release has), for every key it can show, and
what it offers decides a congestion control (model.running_kernel)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.check.judge import Checker
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.running_kernel import RunningKernel, interface_free
from tests.check_paths import check_paths

RELEASE = "6.18.44-vendor"
LISTED = frozenset(
    {
        "kernel.pid_max",
        "net.core.netdev_max_backlog",
        "net.core.somaxconn",
        "net.ipv4.conf.*.rp_filter",
        "net.ipv4.conf.*.mc_forwarding",
        "net.netfilter.nf_conntrack_max",
    }
)


INTERFACES = frozenset({("net", "ipv4", "conf"), ("net", "ipv4", "neigh")})


def _running(keys: frozenset[str] = LISTED, whole_net: bool = True) -> RunningKernel:
    return RunningKernel(
        release=RELEASE,
        keys=keys,
        read_only=frozenset({"net.ipv4.conf.*.mc_forwarding"}),
        # every key's directory, as the walk lists them (net.netfilter too: it has other keys)
        directories=frozenset(k.rpartition(".")[0] for k in LISTED)
        | {"net.netfilter", "net.ipv4", "net.ipv4.neigh.default"},
        interface_directories=INTERFACES,
        whole_net=whole_net,
        offered=("reno", "cubic", "bbr"),
        modules=None,
    )


def _found(
    kb: KnowledgeBase, tmp_path: Path, text: str, running: RunningKernel | None
) -> set[tuple[int, str]]:
    conf = tmp_path / "a.conf"
    conf.write_text(text)
    context = CheckContext(kernel=KernelVersion.parse(RELEASE), running=running)
    report = check_paths(Checker(kb, kb.check_rules, context), [conf])
    return {(f.line, f.id) for f in report.findings if f.severity != "info"}


def test_a_key_the_release_has_but_this_build_leaves_out_is_an_error(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    text = "kernel.sysrq = 16\nkernel.pid_max = 4194304\n"
    # The release's tables have kernel.sysrq: without the running kernel, nothing is said.
    assert (1, "check.key-not-in-kernel") not in _found(kb, tmp_path, text, None)
    found = _found(kb, tmp_path, text, _running())
    assert (1, "check.key-not-in-kernel") in found
    assert not any(line == 2 for line, _ in found)


def test_a_read_only_file_is_an_error_and_an_interface_is_any_interface(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    text = "net.ipv4.conf.eth7.mc_forwarding = 0\nnet.ipv4.conf.eth7.rp_filter = 1\n"
    found = _found(kb, tmp_path, text, _running())
    assert (1, "check.read-only-key") in found
    assert not any(line == 2 and rule.endswith("key") for line, rule in found)


def test_a_net_key_seen_from_a_containers_namespace_is_left_to_the_release(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """A child network namespace lists no global net key: its /proc/sys says nothing of them."""
    text = "net.ipv4.tcp_mem = 786432 1048576 1572864\n"
    inside = _running(frozenset({"kernel.pid_max", "net.core.somaxconn"}), whole_net=False)
    assert (1, "check.key-not-in-kernel") not in _found(kb, tmp_path, text, inside)
    outside = _running(frozenset({"kernel.pid_max", "net.core.netdev_max_backlog"}))
    assert (1, "check.key-not-in-kernel") in _found(kb, tmp_path, text, outside)


def test_a_loaded_modules_key_is_quiet_and_a_congestion_control_not_offered_is_an_error(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    text = (
        "net.netfilter.nf_conntrack_max = 262144\n"
        "net.ipv4.tcp_congestion_control = tsunami\n"
        "net.ipv4.tcp_congestion_control = bbr\n"
    )
    found = _found(kb, tmp_path, text, _running())
    assert (1, "check.module-key") not in found
    assert (2, "check.name-not-offered") in found and (3, "check.name-not-offered") not in found
    unloaded = _running(LISTED - {"net.netfilter.nf_conntrack_max"})
    assert (1, "check.module-key") in _found(kb, tmp_path, text, unloaded)


def test_interface_names_are_written_as_the_tables_write_them() -> None:
    assert (
        interface_free("net.ipv4.conf.eth0.disable_ipv6", INTERFACES)
        == "net.ipv4.conf.*.disable_ipv6"
    )
    # `default` (and `all`) are no device: neigh.default holds keys the devices lack
    assert (
        interface_free("net.ipv4.neigh.default.gc_thresh3", INTERFACES)
        == "net.ipv4.neigh.default.gc_thresh3"
    )
    assert interface_free("net.ipv4.tcp_rmem", INTERFACES) == "net.ipv4.tcp_rmem"


def test_a_default_only_key_written_for_a_device_is_missing(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    running = dataclasses.replace(
        _running(), keys=LISTED | {"net.ipv4.neigh.default.gc_thresh3", "net.ipv4.neigh.*.x"}
    )
    running = dataclasses.replace(running, directories=running.directories | {"net.ipv4.neigh.*"})
    text = "net.ipv4.neigh.default.gc_thresh3 = 8192\nnet.ipv4.neigh.eth0.gc_thresh3 = 8192\n"
    found = _found(kb, tmp_path, text, running)
    assert (2, "check.key-not-in-kernel") in found
    assert not any(line == 1 for line, _ in found)


def test_a_key_whose_directory_is_not_listed_is_late_never_missing(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """kernel.yama without Yama active, fs.nfs before NFS is loaded: /proc/sys lists no such
    directory, and the key may come; a warning says so, never a missing-key error."""
    text = "kernel.yama.ptrace_scope = 1\n"
    found = _found(kb, tmp_path, text, _running())
    assert found == {(1, "check.module-key")}
