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
import multiprocessing
import os
import re
import signal
import sys
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sysctl_advisor import __version__
from sysctl_advisor.commands.common import Quiet, choose, load_knowledge, note, say
from sysctl_advisor.engine.plan_cache import HostShape, PlanCache
from sysctl_advisor.engine.undo import undo_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.kubernetes import KubernetesVersion
from sysctl_advisor.knowledge.profile_map import ProfileMap, load_profile_map
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.outputs import formats
from sysctl_advisor.outputs.fleet_document import KeyDifference, NodePoolOutcome, PoolHost
from sysctl_advisor.outputs.fleet_outdir import OutDir, Staging
from sysctl_advisor.outputs.fleet_summary import HostOutcome, SummaryWriter
from sysctl_advisor.outputs.node_platforms import extension
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
NODE_POOLS = "node_pools"  # each node pool's platform output (--node-pools)
_IMPLICIT_GROUPS = ("all", "ungrouped")  # Ansible's own groups: never a node pool


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
    staging: Staging
    history: FleetHistory | None = None
    plans: PlanCache | None = None  # plans by host shape (process-local)
    detail: str = "normal"  # how much each host's conf says of each value (formats.DETAIL)
    undo: bool = False  # also write each host's undo file (host_undo/HOST.conf)
    pools: NodePools | None = None  # node pools: a pool host's outcome carries its node plan

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
        # a host of a node pool is a Kubernetes node: the inventory says so (its host file
        # reserves the NodePorts as its pool's file does)
        pool = self.pools.pool_of.get(host) if self.pools is not None else None
        if pool is not None:
            from sysctl_advisor.engine.kubernetes_placement import as_node

            facts = as_node(facts)
        if self.plans is None:
            self.plans = PlanCache(self.kb)
        shape = self.plans.lookup(self.kb, facts, choice.profile, choice.overrides)
        plan = shape.plan
        # its node plan first: a host that fails here has no file written
        node: tuple[tuple[str, str], ...] = ()
        placement = None
        if pool is not None and self.pools is not None:
            from sysctl_advisor.engine.kubernetes_placement import placement_for

            placement = placement_for(
                self.kb, facts, choice.profile, choice.overrides, self.pools.version
            )
            node = tuple((s.key, s.value) for s in placement.node.settings)
        base = rebuild_command(choice.profile, path, choice.overrides)
        after = f" --detail {self.detail}" if self.detail != "normal" else ""
        if self.history is not None:  # the peaks are not in the Ansible facts: say so
            after += f"  (observed peaks: Prometheus over {self.history.since}, not in these facts)"
        command = base + after
        conf = self.renderer.render_for_shape(plan, "conf", command, shape.rendered, self.detail)
        host_vars = self.renderer.render_for_shape(plan, "ansible", command, shape.rendered)
        self.staging.write(f"{HOST_FILES}/{host}.conf", conf)
        self.staging.write(f"{HOST_VARS}/{host}.yml", host_vars)
        if self.undo:
            undo = self._undo(plan, facts, f"{base} --undo{after}", shape)
            self.staging.write(f"{HOST_UNDO}/{host}.conf", undo)
        return HostOutcome(
            host,
            str(path),
            profile=choice.profile,
            hostname=facts.hostname,
            kernel=facts.kernel,
            changes=tuple(s.key for s in plan.settings),
            findings=tuple((f.id, f.severity) for f in plan.findings),
            pool=pool,
            node=node,
            placement=placement,
            writers=self._writers(facts),
        )

    def _writers(self, facts: HostFacts) -> tuple[tuple[str, str], ...] | None:
        """Who the facts' record shows writing each key; None: no record (or none made)."""
        if facts.writers is None or not facts.writers.available:
            return None
        from sysctl_advisor.engine.observed_owners import writers_by_key

        return writers_by_key(self.kb, facts)

    def _undo(self, plan: Plan, facts: HostFacts, command: str, shape: HostShape) -> str:
        """The host's undo file; its plan and text are shared by the shape's hosts (the time
        the values in force were read, when the facts say it, is part of the text)."""
        read_at = facts.values_read_at
        memo: dict[str, Any] = shape.rendered.setdefault(f"undo:{read_at}", {})
        undo = memo.get("plan")
        if undo is None:
            undo = memo["plan"] = undo_plan(plan, self.kb.catalog, read_at)
        return self.renderer.render_for_shape(undo, "conf", command, memo, self.detail, undo=True)


class NodePools:
    """Fleet to clusters (`--node-pools`): the hosts of each inventory group the pattern names
    are one Kubernetes node pool, which gets one platform output (`--node-format`). Its plan is
    the node plan of its representative, the host whose own node plan most of the pool's
    hosts share (ties: the first name), so the fewest hosts are given a plan not their own;
    each host whose own node plan differs is listed in the summary, key by key."""

    def __init__(
        self,
        kb: KnowledgeBase,
        profile_map: ProfileMap,
        groups: dict[str, frozenset[str]],
        pattern: str,
        fmt: str,
    ) -> None:
        from sysctl_advisor.knowledge.host_patterns import PatternError, compile_pattern, matches

        try:
            compiled = compile_pattern(pattern)
        except PatternError as exc:
            raise InputError(str(exc), field="--node-pools") from None
        pools = {
            g: hosts
            for g, hosts in sorted(groups.items())
            if g not in _IMPLICIT_GROUPS and matches(compiled, g)
        }
        if not pools:
            raise InputError(
                f"no inventory group matches {pattern!r}; give a pattern of the groups that "
                "are node pools (e.g. 'pool_*')",
                field="--node-pools",
            )
        self.pool_of: dict[str, str] = {}
        for pool, hosts in pools.items():
            if not _HOST_FILE_NAME.match(pool):
                raise InputError(
                    f"group {pool[:80]!r} cannot name a file (letters, digits and . _ - : @ +); "
                    "narrow the pattern",
                    field="--node-pools",
                )
            for host in sorted(hosts):
                other = self.pool_of.setdefault(host, pool)
                if other != pool:
                    raise InputError(
                        f"host {host} is in two node pools, {other} and {pool}: a node has one "
                        "pool's configuration; narrow the pattern or fix the inventory",
                        field="--node-pools",
                    )
        self.kb = kb
        self.profile_map = profile_map
        self.fmt = fmt
        self.version: KubernetesVersion = kb.kubernetes.version(None)
        self.members: dict[str, list[HostOutcome]] = {}  # without their placements
        # pool -> node plan -> the outcome, with its placement, of the first host with it
        self.placements: dict[str, dict[tuple[tuple[str, str], ...], HostOutcome]] = {}
        self.results: list[NodePoolOutcome] = []
        self.files: list[str] = []

    def add(self, outcome: HostOutcome) -> None:
        """A pool host's outcome: its node plan is kept, and its placement while it is the
        first name with that plan in its pool (the one that would represent the pool)."""
        if not outcome.written or outcome.pool is None:
            return
        first = self.placements.setdefault(outcome.pool, {}).get(outcome.node)
        if first is None or outcome.host < first.host:
            self.placements[outcome.pool][outcome.node] = outcome
        self.members.setdefault(outcome.pool, []).append(replace(outcome, placement=None))

    def _named_by_profile(self, fmt: str) -> bool:
        """The platform's objects are named, and select their nodes, by the profile."""
        return self.kb.node_platforms[fmt].spec.document.wrapper == "daemonset"

    def finish(self, staging: Staging, renderer: Renderer) -> None:
        """Write each pool's output into staging/node_pools/; a pool without a written host
        gets none. The file is rendered from the representative's own placement, the one its
        node plan (which the summary compares) was cut from: no host's facts are read twice."""
        if self.members:
            staging.mkdir(NODE_POOLS)
        by_profile: dict[str, tuple[str, dict[str, str]]] = {}
        for pool in sorted(self.members):
            hosts = sorted(self.members[pool], key=lambda o: o.host)
            plans = Counter(o.node for o in hosts)
            representative = self.placements[pool][
                min(hosts, key=lambda o: (-plans[o.node], o.host)).node
            ]
            # only what every host's own node plan says: a key the hosts differ on is left
            # out (a 32-bit host's tcp_mem must not reach a 128 GiB one), and listed
            own = dict(representative.node)
            agreed = {k for k, v in own.items() if all(dict(o.node).get(k) == v for o in hosts)}
            plan, text = self._render(pool, representative, renderer, agreed)
            if self._named_by_profile(self.fmt) and representative.profile is not None:
                # the DaemonSet is named, and selects nodes, by the profile: two pools of one
                # profile with different plans would overwrite each other on the cluster
                other = by_profile.setdefault(representative.profile, (pool, plan))
                if other[1] != plan:
                    raise InputError(
                        f"node pools {other[0]} and {pool} both get profile "
                        f"{representative.profile} with different node plans: their DaemonSets "
                        f"would share one name and node label; give each pool its own profile "
                        f"in the profile map, or a per-pool --node-format "
                        f"({', '.join(f for f in formats.NODE if not self._named_by_profile(f))})",
                        field="--node-format",
                    )
            name = f"{NODE_POOLS}/{pool}.{extension(self.kb.node_platforms[self.fmt])}"
            staging.write(name, text)
            self.files.append(name)
            differing = [
                PoolHost(o.host, o.profile, _differences(own, dict(o.node)))
                for o in hosts
                if dict(o.node) != own
            ]
            if differing:
                left_out = sorted(set(own) - agreed)
                note(
                    f"node pool {pool}: {len(differing)} of {len(hosts)} hosts differ from "
                    f"{representative.host}'s node plan; {name} leaves out the keys they differ "
                    f"on ({', '.join(left_out) or 'none'}): see summary.md, and set those per "
                    "host or give the hosts a pool of their own"
                )
            self.results.append(
                NodePoolOutcome(
                    pool, name, representative.host, representative.profile or "", len(hosts),
                    tuple(differing),
                )
            )  # fmt: skip

    def _render(
        self, pool: str, outcome: HostOutcome, renderer: Renderer, agreed: set[str]
    ) -> tuple[dict[str, str], str]:
        """The pool's node plan (the representative's placement, cut to the `agreed` keys:
        those every host of the pool plans alike) and document, through recommend's own
        path."""
        from sysctl_advisor.commands.recommend import node_document

        placement = outcome.placement
        assert placement is not None  # kept by add() for the first host of each plan
        choice = self.profile_map.choose(outcome.host)
        assert choice is not None  # the host was written with it
        node = placement.node
        placement = replace(
            placement, node=replace(node, settings=[s for s in node.settings if s.key in agreed])
        )
        command = rebuild_command(choice.profile, Path(outcome.source), choice.overrides, self.fmt)
        command += f" --kubernetes-version {self.version}"
        text = node_document(
            self.kb,
            renderer,
            placement,
            command,
            self.fmt,
            on_refused=lambda line: note(f"node pool {pool}: {line}"),
        )
        return {s.key: s.value for s in placement.node.settings}, text


def _differences(pool: dict[str, str], host: dict[str, str]) -> tuple[KeyDifference, ...]:
    """Key by key, where a host's own node plan and its pool's differ (in the pool's order,
    then the keys only the host sets)."""
    keys = [*pool, *(k for k in host if k not in pool)]
    return tuple(
        KeyDifference(k, pool.get(k), host.get(k)) for k in keys if pool.get(k) != host.get(k)
    )


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
        # the interpreter's own C library: find_library would run gcc and ld from PATH
        libc = ctypes.CDLL(None, use_errno=True)
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
        # the pool's exit terminates them without a traceback from each. Ctrl-C is held while
        # the pool is built: one that landed inside Pool() left a pool no exit terminates, whose
        # thread restarted the workers the interpreter's exit was waiting for (a hang).
        with contextlib.ExitStack() as stack:
            held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                pool = stack.enter_context(context.Pool(jobs, initializer=_ignore_interrupts))
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
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
    summary_writer: Callable[[Staging, Iterator[HostOutcome]], int],
    note: Callable[[str], None] = lambda _: None,
    history: FleetHistory | None = None,
    detail: str = "normal",
    undo: bool = False,
    pools: NodePools | None = None,
) -> int:
    """Advise every host, write the outputs; returns how many hosts were written. OUTDIR is
    replaced as a whole, only when at least one host was written (see fleet_outdir). `undo`:
    each host's undo file too, in host_undo/; `pools`: each node pool's output, in
    node_pools/, written once every host is in (before the summary, which lists them)."""
    renderer = Renderer(kb.catalog)
    with OutDir(outdir) as out:
        out.check()
        with out.locked():
            out.check()
            return _run(kb, paths, profile_map, out, jobs, on_host, summary_writer, note,
                        history, detail, undo, pools, renderer)  # fmt: skip


def _run(
    kb: KnowledgeBase,
    paths: Sequence[Path],
    profile_map: ProfileMap,
    out: OutDir,
    jobs: int,
    on_host: Callable[[HostOutcome], None],
    summary_writer: Callable[[Staging, Iterator[HostOutcome]], int],
    note: Callable[[str], None],
    history: FleetHistory | None,
    detail: str,
    undo: bool,
    pools: NodePools | None,
    renderer: Renderer,
) -> int:
    """run_fleet inside OUTDIR's lock: build the run in staging, publish it when a host was
    written, and never leave the staging directory behind."""
    staging = out.staging()
    advised: Generator[HostOutcome, None, None] | None = None
    try:
        for name in (HOST_FILES, HOST_VARS, HOST_UNDO) if undo else (HOST_FILES, HOST_VARS):
            staging.mkdir(name)
        job = FleetJob(
            kb, renderer, profile_map, staging, history, detail=detail, undo=undo, pools=pools
        )
        hosts: list[str] = []
        advised = advise_all(job, paths, jobs)

        def outcomes() -> Iterator[HostOutcome]:
            for outcome in advised:
                if outcome.written:
                    hosts.append(outcome.host)
                if pools is not None:
                    pools.add(outcome)
                on_host(outcome)
                yield outcome
            if pools is not None:
                pools.finish(staging, renderer)

        written = summary_writer(staging, outcomes())
        playbook = renderer.env.get_template("playbook.yml.j2").render(version=__version__)
        staging.write("playbook.yml", playbook)
        if written:
            files = ["playbook.yml", "summary.json", "summary.md"]
            files += [f"{HOST_FILES}/{h}.conf" for h in hosts]
            files += [f"{HOST_VARS}/{h}.yml" for h in hosts]
            files += [f"{HOST_UNDO}/{h}.conf" for h in hosts if undo]
            files += pools.files if pools is not None else []
            kept = out.publish(staging, files)
            if kept is not None:
                note(
                    f"files appeared in {out.path} during the run; the previous run was kept "
                    f"as {kept} with them (remove it when you have looked)"
                )
        return written
    finally:
        # Stop the workers before the staging directory goes: a Ctrl-C outside the
        # generator would otherwise leave them writing into it while it is removed.
        if advised is not None:
            advised.close()
        out.discard(staging)


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
    node_pools: str | None = None,
    node_format: str = "daemonset",
) -> int:
    """Exit 0: every host written; 1: some hosts skipped; nothing written is an InputError."""
    choose(detail, formats.DETAIL, "--detail")
    choose(node_format, formats.NODE, "--node-format")
    if node_pools is not None and inventory is None:
        raise InputError(
            "node pools are inventory groups: pass --inventory FILE (the output of "
            "`ansible-inventory -i INVENTORY --list`)",
            field="--node-pools",
        )
    history = None
    if prometheus is not None:
        history = FleetHistory(prometheus, instance, since, query_timeout)
        from sysctl_advisor.sources.prometheus import check_server, parse_duration

        parse_duration(history.since)
        check_server(history.url, history.timeout)
    kb = load_knowledge(rules_dir, profiles_dir)
    pmap = load_profile_map(profile_map, profile, kb.profiles, inventory)
    pools = None
    if node_pools is not None and inventory is not None:
        from sysctl_advisor.knowledge.profile_map import load_inventory_groups

        groups = load_inventory_groups(inventory)
        pools = NodePools(kb, pmap, groups, node_pools, node_format)
    paths = fact_files(ansible_facts)
    summary = SummaryWriter(
        ansible_facts,
        profile_map,
        profile,
        (lambda: (node_format, pools.results)) if pools is not None else None,
    )
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
            pools,
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
