"""Whether the kernel took a write the watch saw: the hook runs at the attempt, before the
handler parses the value, so a refused write (`tcp_fin_timeout=bogus`) is seen too.

Of the writes of one key in one network namespace, in order, one was applied where the next
one's value before (`old`, as the handler printed it) is the value it wrote; the last is read
back now, from /proc/sys as seen in that namespace: /proc/sys/net resolves in the network
namespace of the task that looks it up (net/sysctl_net.c, `net_ctl_header_lookup` and
`is_seen` read `current->nsproxy->net_ns`, Linux 5.4 to 6.18), so a worker thread joins the
namespace (setns(2), through a process that still holds it) and reads there. Values compare
as the kernel reads them: integers and vectors by value (model/kernel_write.py), other text
with its blanks collapsed. Keys outside net.* are the host's (read from /proc/sys here), but
those of the UTS, IPC and user namespaces (kernel.hostname, kernel.shm*, fs.mqueue.*, user.*),
whose writer's namespace the watch does not give: unknown. Nothing is written.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from sysctl_advisor.model.kernel_namespaces import of_another_namespace
from sysctl_advisor.model.kernel_write import FIELD, kernel_int, kernel_write
from sysctl_advisor.model.sysctl_conf import key_of_path
from sysctl_advisor.sources.tree_paths import read_regular

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
VALUE_BYTES = 64 * 1024  # of a /proc/sys file read back (a page is what the handlers print)
JOIN_SECONDS = 10.0  # a read in another namespace that does not end is unknown


def per_network_namespace(key: str) -> bool:
    return key.startswith("net.")


def knowable(key: str) -> bool:
    """Whether a key's value can be read back without the writer's other namespaces."""
    return not of_another_namespace(key)


def _numbers(text: str) -> tuple[int, ...] | None:
    fields = [m.group(1) for m in FIELD.finditer(text)]
    numbers = [kernel_int(f) for f in fields]
    if not numbers or any(n is None for n in numbers):
        return None
    return tuple(n for n in numbers if n is not None)


def same_value(written: str, printed: str) -> bool:
    """Whether `printed` (a value as the handler prints it) is what writing `written` stores:
    integers by value (`0x10` is 16; fields past the key's length are dropped; fewer fields
    set only those), other text with its blanks collapsed."""
    numbers = _numbers(printed)
    if numbers is not None:
        result = kernel_write(written, len(numbers))
        stored = result.stored
        return not result.refused and stored == numbers[: len(stored)]
    return written.split() == printed.split()


def chained(writes: Sequence[tuple[str, str | None]]) -> list[bool | None]:
    """For the writes of one key in one namespace in order, each (value written, value
    before): whether each but the last was applied, from the next one's value before (None
    where the kernel gave none); the last is None (read it back)."""
    applied: list[bool | None] = []
    for (value, _), (_, after) in itertools.pairwise(writes):
        applied.append(None if after is None else same_value(value, after))
    return [*applied, None] if writes else []


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int, kind: int) -> None:
    if _libc.setns(fd, kind) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _read(proc: Path, key: str) -> str | None:
    data = read_regular(proc / "sys" / key_of_path(key), None, VALUE_BYTES)
    return None if data is None else data.decode("utf-8", "backslashreplace")


def read_here(proc: Path, key: str) -> str | None:
    """The key's value as this thread's namespaces show it, or None."""
    return _read(proc, key)


def read_in_namespace(
    proc: Path, holder: int, inode: int, keys: Iterable[str]
) -> dict[str, str | None]:
    """The keys' values in the network namespace `inode`, entered in one worker thread
    through process `holder`'s (checked to be that namespace once opened); None for each
    where it cannot be entered or read."""
    keys = list(keys)
    unknown: dict[str, str | None] = dict.fromkeys(keys)
    try:
        fd = os.open(proc / str(holder) / "ns" / "net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return unknown
    try:
        if os.fstat(fd).st_ino != inode:
            return unknown  # the process ended and its pid was handed out again

        def there() -> dict[str, str | None]:
            _setns(fd, CLONE_NEWNET)
            return {key: _read(proc, key) for key in keys}

        return in_thread(there) or unknown
    finally:
        os.close(fd)


def in_thread(work: Callable[[], T]) -> T | None:
    """`work` in a thread of its own, which ends with it (its namespaces end with it); None
    where it fails or does not end in JOIN_SECONDS."""
    result: list[T | None] = [None]

    def run() -> None:
        try:
            result[0] = work()
        except OSError:
            result[0] = None

    worker = threading.Thread(target=run, name="sysctl-readback", daemon=True)
    worker.start()
    worker.join(JOIN_SECONDS)
    return None if worker.is_alive() else result[0]
