"""`facts`: read this host (or a copied tree) into a facts file for --facts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sysctl_advisor.commands.common import choose, emit, load_knowledge, say
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.outputs import formats

if TYPE_CHECKING:
    from sysctl_advisor.model.sysctl_writers import SysctlWriters

WATCH_BOUNDS = (1, 86400)  # --watch: a second .. a day


@dataclass(frozen=True)
class HistoryOptions:
    """Where the evidence over time comes from (all optional)."""

    prometheus: str | None = None
    instance: str | None = None
    since: str = "14d"
    kernel_log: Path | None = None
    query_timeout: float = 10.0


def facts(
    root: Path = Path("/"),
    fmt: str = "yaml",
    output: Path | None = None,
    prometheus: str | None = None,
    instance: str | None = None,
    since: str = "14d",
    kernel_log: Path | None = None,
    query_timeout: float = 10.0,
    watch: str | None = None,
    cgroup: Path | None = None,
    install: bool = False,
    uninstall: bool = False,
    yes: bool = False,
) -> int:
    if install or uninstall or yes:
        return _record(install, uninstall, yes, root, output)
    from sysctl_advisor.model.host_facts import facts_from_data, facts_to_data
    from sysctl_advisor.model.model_base import plain_data
    from sysctl_advisor.outputs.facts_file import render_facts
    from sysctl_advisor.sources.local_host import collect_data
    from sysctl_advisor.sources.prometheus import parse_duration
    from sysctl_advisor.sources.service_configs import with_service_configs

    choose(fmt, formats.FACTS, "--format")
    history = HistoryOptions(prometheus, instance, since, kernel_log, query_timeout)
    if not root.is_dir():
        raise InputError("not a directory", path=root, field="--root")
    window = parse_duration(history.since)
    writers = _writers(root, watch, cgroup)
    kb = load_knowledge()
    data = collect_data(
        kb.catalog.read_keys(),
        root,
        kb.message_matchers(),
        history.kernel_log,
        window,
        kb.catalog.tuned_places(),
        kb.app_readers(),
        kb.kubernetes.node_places(),
    )
    read_at = data["observed"]["period"]["at"]  # the snapshot's time, before any history
    if history.prometheus is not None:
        _add_history(data, history)
    if writers is not None:
        data["writers"] = plain_data(writers)
    host = facts_from_data(data, path=root)
    # what the services' configs set, recorded with when it was read: the file is complete
    # away from the host (a config path of the host is not read where the file is used)
    tree = None if root.resolve() == Path("/") else root
    data = facts_to_data(with_service_configs(host, tree=tree, read_at=read_at))
    emit(render_facts(data, fmt, root), output)
    return 0


def _add_history(data: dict[str, Any], history: HistoryOptions) -> None:
    """Replace the snapshot figures with peaks over the window from Prometheus; a figure the
    server lacks keeps no value (a gap, named in observed.period.gaps)."""
    from sysctl_advisor.sources.prometheus import read_history, with_history

    assert history.prometheus is not None
    peaks = read_history(
        history.prometheus,
        instance=history.instance,
        hostname=data.get("hostname"),
        since=history.since,
        timeout=history.query_timeout,
    )
    data["observed"] = with_history(data.get("observed", {}), peaks)


def _writers(root: Path, watch: str | None, cgroup: Path | None) -> SysctlWriters | None:
    """The sysctl writes seen on this host: watched for `watch`, else the persistent record
    where it is installed, else None (not watched). Unavailable: one line on stderr, and the
    facts say why; everything else runs."""
    from sysctl_advisor.sources import sysctl_provenance
    from sysctl_advisor.sources.prometheus import parse_duration

    live = root.resolve() == Path("/")
    if watch is None:
        if cgroup is not None:
            raise InputError("only with --watch", field="--cgroup")
        return sysctl_provenance.recorded() if live else None
    seconds = parse_duration(watch, "--watch", WATCH_BOUNDS)
    if not live:
        raise InputError("watches this host: not with --root", field="--watch")
    writers = sysctl_provenance.watched(seconds, cgroup)
    if not writers.available:
        say(f"writers: {writers.provenance}")
    return writers


def _record(install: bool, uninstall: bool, yes: bool, root: Path, output: Path | None) -> int:
    """--install / --uninstall: show what it does; with --yes, do it."""
    from sysctl_advisor.sources import sysctl_provenance

    if install == uninstall:
        raise InputError(
            "one of --install or --uninstall" if not install else "not both",
            field="--install" if install else "--yes",
        )
    if root.resolve() != Path("/"):
        raise InputError("installs on this host: not with --root", field="--install")
    lines = sysctl_provenance.record_action("install" if install else "uninstall", yes)
    emit("".join(f"{line}\n" for line in lines), output)
    return 0
