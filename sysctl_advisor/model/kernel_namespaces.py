"""The sysctls of a namespace other than the network one: written in a container's own UTS,
IPC or user namespace, they are that namespace's value, never the host's (Linux 6.18:
kernel/utsname_sysctl.c, ipc/ipc_sysctl.c, ipc/mq_sysctl.c, kernel/ucount.c). The network
namespace's keys are the catalog's (`netns_since`) and, beyond it, `net.*`."""

from __future__ import annotations

OTHER_NAMESPACES = (
    "kernel.hostname",
    "kernel.domainname",
    "kernel.shm",
    "kernel.msg",
    "kernel.sem",
    "kernel.auto_msgmni",
    "fs.mqueue.",
    "user.",
)


def of_another_namespace(key: str) -> bool:
    """Whether `key` belongs to a UTS, IPC or user namespace (not the network one)."""
    return key.startswith(OTHER_NAMESPACES)
