"""Who else may write a file or a directory: the rule OpenSSH's StrictModes applies to
~/.ssh/config and the directories above it (openssh-portable misc.c, safe_path: owned by root
or the user, and not writable by group or others), with Debian's "Allow harmless
group-writability" patch (Colin Watson, 2014; openssh debian/patches/user-group-modes.patch):
group write is harmless when the group's only member is the owner, the user private group of
a umask-002 checkout.

A file that configures a run, or a directory it is found in, is trusted only if no user but
the running one and root may write it: a user who can write a directory can put any file of
theirs in place of one there (a sticky directory, /tmp, still lets anyone add one)."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from functools import lru_cache

TRUSTED_OWNERS = frozenset({0, os.geteuid()})


def others_may_write(info: os.stat_result) -> str | None:
    """Why users other than root and the running one may write the file or directory `info`
    describes (its owner, its group, everyone), or None when they may not."""
    if info.st_uid not in TRUSTED_OWNERS:
        return f"it belongs to uid {info.st_uid}"
    if info.st_mode & stat.S_IWOTH:
        return "every user may write to it"
    if info.st_mode & stat.S_IWGRP and not _owner_alone_in(info.st_gid, info.st_uid):
        return f"group {info.st_gid} may write to it"
    return None


@lru_cache(maxsize=16)
def _owner_alone_in(gid: int, uid: int) -> bool:
    """Whether the owner `uid` is the only member of group `gid` (as its primary group or a
    listed member); a group that cannot be looked up, or has no member, is not."""
    try:
        group = grp.getgrgid(gid)
        owner = pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return False
    if any(member != owner for member in group.gr_mem):
        return False
    primary = {user.pw_uid for user in pwd.getpwall() if user.pw_gid == gid}
    return primary <= {uid} and bool(primary or group.gr_mem)
