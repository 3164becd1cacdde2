"""Fleet runs: Ansible facts of many hosts in, one annotated file per host and a playbook out.

Each host is a pure function of its facts file, so hosts are spread over worker processes that
inherit the compiled rules and templates from the parent (fork): they are compiled once per run.
Results stream back in input order as small summary rows; no plan is held after its files are
written, so memory stays flat however many hosts there are.

Output goes to a staging directory beside OUTDIR and replaces the previous run's output in one
atomic exchange, only when the run finished with at least one host written: OUTDIR shows one
whole run, never a mix, a host the advisor skipped this time keeps no stale file from last time,
and a directory holding files the advisor did not write is never touched (fleet_outdir).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os
import re
import signal
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sysctl_advisor import __version__
from sysctl_advisor.commands.common import Quiet, choose, load_knowledge, note, say
from sysctl_advisor.engine.plan_cache import HostShape, PlanCache
from sysctl_advisor.engine.undo import undo_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.profile_map import ProfileMap, load_profile_map
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs.fleet_outdir import (
    check_outdir,
    discard,
    locked,
    publish,
    staging_directory,
)
from sysctl_advisor.outputs.fleet_summary import HostOutcome, SummaryWriter
from sysctl_advisor.outputs.plan_render import Renderer, rebuild_command
from sysctl_advisor.outputs.progress import progress_reporter
from sysctl_advisor.sources.ansible_facts import fact_files, load_ansible_facts

# An inventory name becomes two file names: only names that cannot climb out of, or hide in,
# host_files/ and host_vars/.
# At most 250 characters: `<host>.conf` must fit a file name's 255 bytes.
_HOST_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@+-]{0,249}$")
_PR_SET_PDEATHSIG = 1
HOST_FILES = "host_files"
HOST_VARS = "host_vars"
HOST_UNDO = "host_undo"  # each host's undo file: the plan's inverse (engine.undo)


@dataclass(frozen=True)
class FleetHistory:
    """Peaks over time for every host from one Prometheus (`fleet --prometheus`)."""

    url: str
    instance: str | None = None  # a template, {host} the inventory name; else that name, any port
    since: str = "14d"
    timeout: float = 10.0

    def add_to(self, facts: HostFacts, host: str) -> HostFacts:
        from sysctl_advisor.model.host_facts import Observed
        from sysctl_advisor.model.model_base import plain_data, validate
        from sysctl_advisor.sources.prometheus import read_history, with_history

        # The inventory name, never the hostname the host reports: a compromised host must
        # not choose whose figures its plan is made from.
        instance = self.instance.replace("{host}", host) if self.instance else None
        peaks = read_history(
            self.url,
            instance=instance,
            hostname=host,
            since=self.since,
            timeout=self.timeout,
        )
        observed = with_history(plain_data(facts.observed), peaks)
        return replace(facts, observed=validate(Observed, observed))


@dataclass
class FleetJob:
    """Everything one host needs, built once in the parent before the workers fork."""

    kb: KnowledgeBase
    renderer: Renderer
    profile_map: ProfileMap
    staging: Path
    history: FleetHistory | None = None
    plans: PlanCache | None = None  # plans by host shape (process-local)
    detail: str = "normal"  # how much each host's conf says of each value (formats.DETAIL)
    undo: bool = False  # also write each host's undo file (host_undo/HOST.conf)

    def advise(self, path: Path) -> HostOutcome:
        host = path.name
        if not _HOST_FILE_NAME.match(host):
            return HostOutcome(
                "".join(c if c.isprintable() else "?" for c in host)[:80],
                str(path),
                error="the file name is not an inventory host name the advisor can write "
                "files for (letters, digits and . _ - : @ +, at most 250)",
            )
        try:
            return self._advise(path, host)
        except InputError as exc:
            return HostOutcome(host, str(path), error=str(exc))
        except Exception as exc:  # one host's surprise must not stop the fleet
            return HostOutcome(
                host, str(path), error=f"internal error: {type(exc).__name__}: {exc}"
            )

    def _advise(self, path: Path, host: str) -> HostOutcome:
        choice = self.profile_map.choose(host)
        if choice is None:
            return HostOutcome(host, str(path), error="no profile: the map matches nothing")
        facts = load_ansible_facts(path)
        if self.history is not None:
            facts = self.history.add_to(facts, host)
        if self.plans is None:
            self.plans = PlanCache(self.kb)
        shape = self.plans.lookup(self.kb, facts, choice.profile, choice.overrides)
        plan = shape.plan
        base = rebuild_command(choice.profile, path, choice.overrides)
        after = f" --detail {self.detail}" if self.detail != "normal" else ""
        if self.history is not None:  # the peaks are not in the Ansible facts: say so
            after += f"  (observed peaks: Prometheus over {self.history.since}, not in these facts)"
        command = base + after
        conf = self.renderer.render_for_shape(plan, "conf", command, shape.rendered, self.detail)
        host_vars = self.renderer.render_for_shape(plan, "ansible", command, shape.rendered)
        _write(self.staging / HOST_FILES / f"{host}.conf", conf)
        _write(self.staging / HOST_VARS / f"{host}.yml", host_vars)
        if self.undo:
            undo = self._undo(plan, facts, f"{base} --undo{after}", shape)
            _write(self.staging / HOST_UNDO / f"{host}.conf", undo)
        return HostOutcome(
            host,
            str(path),
            profile=choice.profile,
            hostname=facts.hostname,
            kernel=facts.kernel,
            changes=tuple(s.key for s in plan.settings),
            findings=tuple((f.id, f.severity) for f in plan.findings),
        )

    def _undo(self, plan: Plan, facts: HostFacts, command: str, shape: HostShape) -> str:
        """The host's undo file; its plan and text are shared by the shape's hosts (the time
        the values in force were read, when the facts say it, is part of the text)."""
        period = facts.observed.period
        read_at = period.at if period is not None and period.kind == "snapshot" else None
        memo: dict[str, Any] = shape.rendered.setdefault(f"undo:{read_at}", {})
        undo = memo.get("plan")
        if undo is None:
            undo = memo["plan"] = undo_plan(plan, self.kb.catalog, read_at)
        return self.renderer.render_for_shape(undo, "conf", command, memo, self.detail, undo=True)


def _write(path: Path, text: str) -> None:
    """A plain write: the staging directory, not each file, is what becomes visible atomically."""
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


# The job the worker processes inherit when they fork; set only while a run is in progress.
_JOB: FleetJob | None = None
_PARENT = 0  # the pid that forked the workers


def _advise_in_worker(path: Path) -> HostOutcome:
    assert _JOB is not None
    return _JOB.advise(path)


def _ignore_interrupts() -> None:
    """Worker start: Ctrl-C is the parent's to handle, and a worker dies with its parent
    (prctl PR_SET_PDEATHSIG) instead of writing on into a run that was killed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != _PARENT:  # the parent died before the signal was armed
        os._exit(1)


def advise_all(
    job: FleetJob, paths: Sequence[Path], jobs: int
) -> Generator[HostOutcome, None, None]:
    """Outcomes in input order; with jobs > 1, computed by forked workers."""
    global _JOB
    if jobs <= 1 or len(paths) < 64 or "fork" not in multiprocessing.get_all_start_methods():
        yield from (job.advise(p) for p in paths)
        return
    _JOB = job
    global _PARENT
    _PARENT = os.getpid()
    try:
        context = multiprocessing.get_context("fork")
        # Workers ignore Ctrl-C: the parent alone stops the run, with one line (exit 130), and
        # the pool's exit terminates them without a traceback from each.
        with context.Pool(jobs, initializer=_ignore_interrupts) as pool:
            yield from pool.imap(_advise_in_worker, paths, chunksize=32)
    finally:
        _JOB = None


def run_fleet(
    kb: KnowledgeBase,
    paths: Sequence[Path],
    profile_map: ProfileMap,
    outdir: Path,
    jobs: int,
    on_host: Callable[[HostOutcome], None],
    summary_writer: Callable[[Path, Iterator[HostOutcome]], int],
    note: Callable[[str], None] = lambda _: None,
    history: FleetHistory | None = None,
    detail: str = "normal",
    undo: bool = False,
) -> int:
    """Advise every host, write the outputs; returns how many hosts were written. OUTDIR is
    replaced as a whole, only when at least one host was written (see fleet_outdir). `undo`:
    each host's undo file too, in host_undo/."""
    check_outdir(outdir)
    renderer = Renderer(kb.catalog)
    with locked(outdir):
        check_outdir(outdir)
        staging = staging_directory(outdir)
        advised: Generator[HostOutcome, None, None] | None = None
        try:
            for name in (HOST_FILES, HOST_VARS, HOST_UNDO) if undo else (HOST_FILES, HOST_VARS):
                (staging / name).mkdir()
            job = FleetJob(kb, renderer, profile_map, staging, history, detail=detail, undo=undo)
            hosts: list[str] = []
            advised = advise_all(job, paths, jobs)

            def outcomes() -> Iterator[HostOutcome]:
                for outcome in advised:
                    if outcome.written:
                        hosts.append(outcome.host)
                    on_host(outcome)
                    yield outcome

            written = summary_writer(staging, outcomes())
            playbook = renderer.env.get_template("playbook.yml.j2").render(version=__version__)
            _write(staging / "playbook.yml", playbook)
            if written:
                files = ["playbook.yml", "summary.json", "summary.md"]
                files += [f"{HOST_FILES}/{h}.conf" for h in hosts]
                files += [f"{HOST_VARS}/{h}.yml" for h in hosts]
                files += [f"{HOST_UNDO}/{h}.conf" for h in hosts if undo]
                kept = publish(staging, outdir, files)
                if kept is not None:
                    note(
                        f"files appeared in {outdir} during the run; the previous run was kept "
                        f"as {kept} with them (remove it when you have looked)"
                    )
            return written
        finally:
            # Stop the workers before the staging directory goes: a Ctrl-C outside the
            # generator would otherwise leave them writing into it while it is removed.
            if advised is not None:
                advised.close()
            discard(staging)


def fleet(
    ansible_facts: Path,
    out: Path,
    profile: str | None = None,
    profile_map: Path | None = None,
    inventory: Path | None = None,
    jobs: int = 0,
    rules_dir: list[Path] | None = None,
    profiles_dir: list[Path] | None = None,
    prometheus: str | None = None,
    instance: str | None = None,
    since: str = "14d",
    query_timeout: float = 10.0,
    detail: str = "normal",
    undo: bool = False,
) -> int:
    """Exit 0: every host written; 1: some hosts skipped; nothing written is an InputError."""
    from sysctl_advisor.outputs import formats

    choose(detail, formats.DETAIL, "--detail")
    history = None
    if prometheus is not None:
        history = FleetHistory(prometheus, instance, since, query_timeout)
        from sysctl_advisor.sources.prometheus import check_server, parse_duration

        parse_duration(history.since)
        check_server(history.url, history.timeout)
    kb = load_knowledge(rules_dir, profiles_dir)
    pmap = load_profile_map(profile_map, profile, kb.profiles, inventory)
    paths = fact_files(ansible_facts)
    summary = SummaryWriter(ansible_facts, profile_map, profile)
    with progress_reporter(len(paths), sys.stderr.isatty() and not Quiet.on) as on_host:
        written = run_fleet(
            kb,
            paths,
            pmap,
            out,
            jobs or os.cpu_count() or 1,
            on_host,
            summary,
            note,
            history,
            detail,
            undo,
        )
    totals = summary.totals
    for host, reason in totals.skipped:
        say(f"skipped {host}: {reason}")
    if totals.skipped_count > len(totals.skipped):
        say(f"... and {totals.skipped_count - len(totals.skipped)} more skipped hosts")
    if not written:
        raise InputError(
            f"no host could be advised ({totals.skipped_count} skipped); {out} is unchanged"
        )
    say(f"{written} of {totals.hosts} hosts written to {out} (playbook.yml, summary.md)")
    return 1 if totals.skipped_count else 0
