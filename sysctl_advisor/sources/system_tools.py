"""The system's own programs, started without the caller's PATH or environment.

Root runs the advisor, and the caller's environment is not root's to trust: a program the
advisor starts (journalctl, dmesg, util-linux unshare, sh) is looked up in the system
directories only, in SYSTEM_DIRS order, never through $PATH, and runs with system_env(): the
system PATH and the C locale, nothing of the caller's (no LD_PRELOAD, PAGER, SYSTEMD_*, HOME).
"""

from __future__ import annotations

import shutil

SYSTEM_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
SYSTEM_PATH = ":".join(SYSTEM_DIRS)


def system_program(name: str) -> str | None:
    """The absolute path of the system's program `name` (a bare name), or None."""
    if not name or "/" in name:
        return None
    return shutil.which(name, path=SYSTEM_PATH)


def system_env() -> dict[str, str]:
    """The whole environment a system program runs with."""
    return {"PATH": SYSTEM_PATH, "LC_ALL": "C"}
