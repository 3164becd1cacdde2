"""Who wrote each sysctl: the facts' `writers:` section (model/sysctl_writers.py), from a watch
of the host for a window (`facts --watch`, sysctl_watch.py) or from the persistent record
(`facts --install`, sysctl_record.py), each write resolved to its unit or pod and namespace
and read back (observed_writes.py). Where neither can run, one line says why
(`provenance: unavailable (reason)`) and everything else runs: the static tier (the writers
catalog) still names probable owners."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.sysctl_writers import MAX_COUNT, MAX_DROPPED, MAX_WRITES, SysctlWriters
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.sources import sysctl_watch

HOOK_SINCE = KernelVersion.parse("5.2")  # BPF_PROG_TYPE_CGROUP_SYSCTL (kernel/bpf/cgroup.c)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def unavailable(reason: str) -> SysctlWriters:
    return SysctlWriters(provenance=f"unavailable ({one_line(reason)})")


def why_not(release: str) -> str | None:
    """Why no program can watch sysctl writes here (None: it may; loading can still be refused)."""
    if os.geteuid() != 0:
        return "not root: the sysctl hook needs CAP_BPF and CAP_SYS_ADMIN"
    try:
        if KernelVersion.parse(release) < HOOK_SINCE:
            return f"Linux {release} has no sysctl hook for programs (5.2 and later)"
    except ValueError:
        pass  # a release that does not parse: try, and let the kernel say
    if sysctl_watch.cgroup2_mount() is None:
        return "no cgroup v2 hierarchy is mounted"
    return None


def _cgroup_fd(cgroup: Path | None, mount: Path) -> int:
    """A descriptor on the cgroup v2 directory to watch (the whole hierarchy by default), opened
    once; a directory outside the hierarchy is bad input."""
    target = mount if cgroup is None else cgroup
    try:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror}", path=target, field="--cgroup") from None
    if cgroup is not None and os.fstat(fd).st_dev != os.stat(mount).st_dev:
        os.close(fd)
        raise InputError(
            f"not a directory of the cgroup v2 hierarchy (mounted at {mount})",
            path=cgroup,
            field="--cgroup",
        )
    return fd


def watched(seconds: int, cgroup: Path | None = None) -> SysctlWriters:
    """Every sysctl write under `cgroup` (default: every task) for `seconds`."""
    reason = why_not(os.uname().release)
    mount = sysctl_watch.cgroup2_mount()
    if reason is not None or mount is None:
        return unavailable(reason or "no cgroup v2 hierarchy is mounted")
    from sysctl_advisor.sources.observed_writes import Places, nameable, observed_writes

    fd = _cgroup_fd(cgroup, mount)
    kept: list[sysctl_watch.SysctlWrite] = []
    lost = 0  # past MAX_WRITES (a writer in a loop: held, they would fill memory), or unnamed
    try:
        since = now()
        with sysctl_watch.watch(fd, seconds) as events:
            for write in events:
                if len(kept) < MAX_WRITES and nameable(write):
                    kept.append(write)
                else:
                    lost += 1
        until = now()
    except sysctl_watch.Unavailable as exc:
        return unavailable(str(exc))
    finally:
        os.close(fd)
    where = mount if cgroup is None else cgroup
    return SysctlWriters(
        provenance=f"watch {seconds}s of {one_line(where)}",
        since=since,
        until=until,
        dropped=min(events.dropped + lost, MAX_DROPPED),
        not_given=list(events.left_out),
        writes=observed_writes(kept, Places.of_host(mount)),
    )


def recorded() -> SysctlWriters | None:
    """The persistent record's writes since it was attached; None where it is not installed
    (or, without root, cannot be looked at: bpffs is root's)."""
    from sysctl_advisor.sources import sysctl_record

    if os.geteuid() != 0:
        return None
    places = sysctl_record.Places.default()
    try:
        record = sysctl_record.read_record(places)
    except (sysctl_record.Unavailable, sysctl_record.Refused) as exc:
        return unavailable(str(exc))
    if record is None:
        return None
    from sysctl_advisor.sources import observed_writes

    kept = [last for last in record.writes[:MAX_WRITES] if observed_writes.nameable(last.write)]
    # a key the facts cannot name: its writes are counted with those the record could not keep
    unnamed = sum(max(1, last.count) for last in record.writes[:MAX_WRITES]) - sum(
        max(1, last.count) for last in kept
    )
    resolved = observed_writes.observed_writes(
        [last.write for last in kept], observed_writes.Places.of_host(places.cgroup_root)
    )
    counts = [min(max(1, last.count), MAX_COUNT) for last in kept]
    since = _iso(record.since)
    return SysctlWriters(
        provenance=(
            f"record since {since}"
            if since is not None
            else "record (its program is no longer attached: the writes end when it was detached)"
            if record.since is None
            else "record (since a time that is no date: its pin's time was set by hand)"
        ),
        since=since,
        until=now(),
        dropped=min(
            record.dropped + max(0, len(record.writes) - MAX_WRITES) + unnamed, MAX_DROPPED
        ),
        writes=[replace(write, count=count) for write, count in zip(resolved, counts, strict=True)],
    )


def _iso(seconds: float | None) -> str | None:
    """Epoch seconds (a pin's time) as ISO 8601 UTC; None where there is none or it is no
    date (a pin's time set past what a date holds)."""
    if seconds is None:
        return None
    try:
        moment = datetime.fromtimestamp(seconds, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def record_action(action: str, yes: bool) -> list[str]:
    """`facts --install` / `--uninstall`: what it would do, or with `yes` what it did."""
    from sysctl_advisor.sources import sysctl_record

    places = sysctl_record.Places.default()
    try:
        if action == "install":
            if yes:
                return sysctl_record.install(places)
            return [*sysctl_record.install_plan(places), "(nothing done: --yes installs it)"]
        if yes:
            return sysctl_record.uninstall(places)
        plan = sysctl_record.uninstall_plan(places)
        return (
            plan
            if plan == [sysctl_record.NOT_INSTALLED]
            else [*plan, "(nothing done: --yes removes it)"]
        )
    except (sysctl_record.Unavailable, sysctl_record.Refused) as exc:
        raise InputError(str(exc), field=f"--{action}") from None
