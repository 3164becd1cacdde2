"""The running kernel as `check` sees it when this host's own kernel is the target: the keys its
/proc/sys lists (a build may leave out a key its release has: `kernel.sysrq` without
CONFIG_MAGIC_SYSRQ), those it makes read-only, the directories it lists, the congestion
controls it offers and the modules on disk. sources.running_kernel reads it; the check judge
prefers it to the release's tables (knowledge.kernel_keys) for every key it can tell of."""

from __future__ import annotations

from dataclasses import dataclass

# NOT_INTERFACES: the interface directories every host has by these names, looked up as they
# are: `default` holds keys the devices' directories lack (neigh.default.gc_thresh3), `all` is
# no device either.
from sysctl_advisor.model.vocabulary import NOT_INTERFACES


def interface_free(key: str, interface_directories: frozenset[tuple[str, ...]]) -> str:
    """The key with a device's name written `*` where its directory is a per-interface tree
    (net.ipv4.conf.eth0.rp_filter -> net.ipv4.conf.*.rp_filter; `all` and `default` stay as
    they are), as the kernel-keys table writes it; other keys as they are."""
    parts = key.split(".")
    if "" in parts:  # an empty component names no interface: the key is as it is
        return key
    for at in range(2, len(parts) - 1):
        if tuple(parts[:at]) in interface_directories and parts[at] not in NOT_INTERFACES:
            return ".".join([*parts[:at], "*", *parts[at + 1 :]])
    return key


@dataclass(frozen=True)
class RunningKernel:
    release: str
    keys: frozenset[str]  # every key /proc/sys lists, devices' names written `*`
    read_only: frozenset[str]  # those whose file has no write bit
    directories: frozenset[str]  # every directory it lists, written as the keys are
    # the per-interface trees (the kernel-keys table's `*`), as tuples of components
    interface_directories: frozenset[tuple[str, ...]]
    # whether /proc/sys/net is the initial network namespace's, which alone lists the global
    # net keys (netdev_max_backlog, tcp_mem, ...): in a container's namespace they are absent,
    # and a net key /proc/sys does not list there says nothing of the kernel
    whole_net: bool
    offered: tuple[str, ...]  # tcp_available_congestion_control
    modules: dict[str, list[str]] | None  # on disk, as the facts' kernel_modules; None: unread

    def verdict(self, key: str, release: dict[str, object] | None) -> dict[str, object] | None:
        """The running kernel's word on a key, in the shape of the release tables' verdict
        (knowledge.kernel_keys), or None where /proc/sys cannot tell: a net key seen from a
        container's network namespace, or a key of a directory it does not list that the
        release's tables do not know either. A key whose directory /proc/sys does not list
        now (a module not loaded, a filesystem not mounted, a security module not active) is
        never called missing: `late` names that directory."""
        if key.startswith("net.") and not self.whole_net:
            return None
        base: dict[str, object] = dict(release) if release is not None else {"module": None}
        name = interface_free(key, self.interface_directories)
        if name in self.keys:
            return {
                **base,
                "exists": True,
                "read_only": name in self.read_only,
                "live": True,
                "shown": True,  # listed now (a module's key: its module is loaded)
            }
        parent = name.rpartition(".")[0]
        if parent not in self.directories:
            if base.get("exists") or base.get("module"):
                return {**base, "exists": True, "live": True, "late": parent}
            return None
        if base.get("module"):  # a module's key: it exists once its module is loaded
            return {**base, "live": True}
        if base.get("exists") is False:  # the release's tables say so too, and say when
            return base
        why = (
            f"this build leaves it out: its /proc/sys has none, though Linux {base['release']} "
            "has the key"
            if base.get("exists")
            else "its /proc/sys has none"
        )
        return {**base, "exists": False, "read_only": False, "why": why, "live": True}
