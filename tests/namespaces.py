"""Helpers for tests that run commands in a private network namespace (`unshare -n`).

Such tests need root and util-linux `unshare`; elsewhere they skip with the reason. Everything a
test starts inside the namespace dies with it: the namespace lives exactly as long as the
command that `unshare` runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Counters the kernel updates by itself; every other file under these trees is configuration.
VOLATILE = {"fs/dentry-state", "fs/file-nr", "fs/inode-nr", "fs/inode-state", "fs/aio-nr"}
HOST_TREES = ("fs", "vm", "net/core", "net/ipv4", "net/ipv6", "net/netfilter")


# The scratch paths of an unprivileged test nginx, all inside its own prefix (a format
# template: `{prefix}`), for the `http` block of the configs the tests write.
NGINX_SCRATCH_PATHS = """\
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
"""


def namespace_problem() -> str | None:
    """Why namespace tests cannot run here, or None."""
    if not Path("/proc/sys/net").is_dir():
        return "needs a Linux /proc/sys"
    if os.geteuid() != 0:
        return "needs root to create a network namespace"
    if shutil.which("unshare") is None:
        return "needs util-linux unshare"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create a network namespace: {probe.stderr.strip()}"
    return None


needs_netns = pytest.mark.skipif(namespace_problem() is not None, reason=str(namespace_problem()))


def in_namespace(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run a shell script in a fresh network namespace with loopback up."""
    return subprocess.run(
        ["unshare", "-n", "--", "sh", "-euc", "ip link set lo up\n" + script, "sh", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def host_sysctls() -> dict[str, str]:
    """Every readable setting under /proc/sys/{fs,vm,net/...} as this (the host's) namespace
    sees it, counters excepted: the before/after picture that proves a test changed nothing."""
    values: dict[str, str] = {}
    for tree in HOST_TREES:
        for directory, _, files in os.walk(f"/proc/sys/{tree}"):
            for name in files:
                path = os.path.join(directory, name)
                key = path.removeprefix("/proc/sys/")
                if key in VOLATILE or key.startswith("fs/quota/"):
                    continue
                try:
                    with open(path) as handle:
                        values[key] = handle.read()
                except OSError:  # write-only (vm/compact_memory, route/flush) or refused
                    continue
    return values


def processes_with(text: str) -> list[str]:
    """Command lines of running processes that contain `text` (to prove a test stopped them)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # the process ended while we looked
        if text in line and "pytest" not in line:
            found.append(line)
    return found
