"""The running kernel as `check` sees it when this host's own kernel is the target: the keys its
/proc/sys lists (a build may leave out a key its release has: `kernel.sysrq` without
CONFIG_MAGIC_SYSRQ), those it makes read-only, the congestion controls it offers and the
modules on disk. sources.running_kernel reads it; the check judge prefers it to the release's
tables (knowledge.kernel_keys) for every key it can see."""

from __future__ import annotations

from dataclasses import dataclass

# The directories whose next component is an interface's name: a key is looked up with `*`
# there, as the kernel-keys table writes it (the host's interfaces are not the kernel's keys).
INTERFACE_DIRECTORIES = frozenset(
    {
        ("net", "ipv4", "conf"),
        ("net", "ipv6", "conf"),
        ("net", "ipv4", "neigh"),
        ("net", "ipv6", "neigh"),
    }
)


def interface_free(key: str) -> str:
    """The key with an interface's name written `*` (net.ipv4.conf.eth0.rp_filter ->
    net.ipv4.conf.*.rp_filter); other keys as they are."""
    parts = key.split(".")
    if len(parts) >= 5 and tuple(parts[:3]) in INTERFACE_DIRECTORIES:
        return ".".join([*parts[:3], "*", *parts[4:]])
    return key


@dataclass(frozen=True)
class RunningKernel:
    release: str
    keys: frozenset[str]  # every key /proc/sys lists, interface names written `*`
    read_only: frozenset[str]  # those whose file has no write bit
    # whether /proc/sys/net is the initial network namespace's, which alone lists the global
    # net keys (netdev_max_backlog, tcp_mem, ...): in a container's namespace they are absent,
    # and a net key /proc/sys does not list there says nothing of the kernel
    whole_net: bool
    offered: tuple[str, ...]  # tcp_available_congestion_control
    modules: dict[str, list[str]] | None  # on disk, as the facts' kernel_modules; None: unread

    def verdict(self, key: str, release: dict[str, object] | None) -> dict[str, object] | None:
        """The running kernel's word on a key, in the shape of the release tables' verdict
        (knowledge.kernel_keys), or None where /proc/sys cannot tell (a net key seen from a
        container's network namespace)."""
        if key.startswith("net.") and not self.whole_net:
            return None
        base: dict[str, object] = dict(release) if release is not None else {"module": None}
        name = interface_free(key)
        if name in self.keys:
            return {
                **base,
                "exists": True,
                "read_only": name in self.read_only,
                "live": True,
                "shown": True,  # listed now (a module's key: its module is loaded)
            }
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
