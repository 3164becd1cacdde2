"""Fleet runs: Ansible facts of many hosts in, one annotated file per host and a playbook out.

Each host is a pure function of its facts file, so hosts are spread over worker processes that
inherit the compiled rules and templates from the parent (fork): they are compiled once per run.
Results stream back in input order as small summary rows; no plan is held after its files are
written, so memory stays flat however many hosts there are.

Output goes to a staging directory inside OUTDIR and replaces the previous run's output only when
the run finished with at least one host written: OUTDIR shows one whole run, never a mix, and a
host the advisor skipped this time keeps no stale file from last time.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from advisor import __version__
from advisor.ansible_facts import load_ansible_facts
from advisor.engine import build_plan
from advisor.errors import InputError
from advisor.knowledge import KnowledgeBase
from advisor.profile_map import ProfileMap
from advisor.render import Renderer, rebuild_command
from advisor.rules import SEVERITY_ORDER

HOST_FILES = "host_files"
HOST_VARS = "host_vars"
OUTPUTS = (HOST_FILES, HOST_VARS, "playbook.yml", "summary.json", "summary.md")


@dataclass(frozen=True)
class HostOutcome:
    """What one host's run produced: a summary row, or the reason it was skipped."""

    host: str
    source: str
    profile: str | None = None
    error: str | None = None
    hostname: str | None = None
    kernel: str | None = None
    changes: tuple[str, ...] = ()
    findings: tuple[tuple[str, str], ...] = ()  # (id, severity), in plan order

    @property
    def written(self) -> bool:
        return self.error is None

    def by_severity(self) -> dict[str, int]:
        counts = dict.fromkeys(SEVERITY_ORDER, 0)
        for _, severity in self.findings:
            counts[severity] += 1
        return counts


@dataclass
class FleetJob:
    """Everything one host needs, built once in the parent before the workers fork."""

    kb: KnowledgeBase
    renderer: Renderer
    profile_map: ProfileMap
    staging: Path

    def advise(self, path: Path) -> HostOutcome:
        host = path.name
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
        plan = build_plan(self.kb, facts, choice.profile, choice.overrides)
        command = rebuild_command(choice.profile, path, choice.overrides)
        conf = self.renderer.render(plan, "conf", command)
        host_vars = self.renderer.render(plan, "ansible", command)
        _write(self.staging / HOST_FILES / f"{host}.conf", conf)
        _write(self.staging / HOST_VARS / f"{host}.yml", host_vars)
        return HostOutcome(
            host,
            str(path),
            profile=choice.profile,
            hostname=facts.hostname,
            kernel=facts.kernel,
            changes=tuple(s.key for s in plan.settings),
            findings=tuple((f.id, f.severity) for f in plan.findings),
        )


def _write(path: Path, text: str) -> None:
    """A plain write: the staging directory, not each file, is what becomes visible atomically."""
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def fact_files(source: Path) -> list[Path]:
    """The hosts' files: a --tree directory (hidden files skipped) or one host's file."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise InputError("no such file or directory", path=source, field="--ansible-facts")
    try:
        entries = sorted(source.iterdir())
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror}", path=source) from None
    files = [p for p in entries if not p.name.startswith(".") and p.is_file()]
    if not files:
        raise InputError(
            "no facts files here (write them with `ansible all -m setup --tree DIR`)",
            path=source,
            field="--ansible-facts",
        )
    return files


# The job the worker processes inherit when they fork; set only while a run is in progress.
_JOB: FleetJob | None = None


def _advise_in_worker(path: Path) -> HostOutcome:
    assert _JOB is not None
    return _JOB.advise(path)


def advise_all(job: FleetJob, paths: list[Path], jobs: int) -> Iterator[HostOutcome]:
    """Outcomes in input order; with jobs > 1, computed by forked workers."""
    global _JOB
    if jobs <= 1 or len(paths) < 64 or "fork" not in multiprocessing.get_all_start_methods():
        yield from (job.advise(p) for p in paths)
        return
    _JOB = job
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(jobs) as pool:
            yield from pool.imap(_advise_in_worker, paths, chunksize=32)
    finally:
        _JOB = None


@dataclass
class Staging:
    """The run's output directory-to-be, inside OUTDIR."""

    outdir: Path
    path: Path = field(init=False)

    def __post_init__(self) -> None:
        try:
            self.outdir.mkdir(parents=True, exist_ok=True)
            self.path = Path(tempfile.mkdtemp(prefix=".sysctl-advisor-", dir=self.outdir))
            (self.path / HOST_FILES).mkdir()
            (self.path / HOST_VARS).mkdir()
        except OSError as exc:
            raise InputError(
                f"cannot write: {exc.strerror}", path=self.outdir, field="--out"
            ) from None

    def publish(self) -> None:
        """Replace the previous outputs with this run's, then drop the staging directory."""
        os.sync()  # the files' contents reach the disk before the renames that publish them
        retired = self.path / ".previous"
        retired.mkdir()
        for name in OUTPUTS:
            target = self.outdir / name
            if target.exists() or target.is_symlink():
                target.rename(retired / name)
            (self.path / name).rename(target)
        self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def run_fleet(
    kb: KnowledgeBase,
    paths: list[Path],
    profile_map: ProfileMap,
    outdir: Path,
    jobs: int,
    on_host: Callable[[HostOutcome], None],
    summary_writer: Callable[[Path, Iterator[HostOutcome]], int],
) -> int:
    """Advise every host, write the outputs; returns how many hosts were written."""
    renderer = Renderer(kb.catalog)
    staging = Staging(outdir)
    try:
        job = FleetJob(kb, renderer, profile_map, staging.path)

        def outcomes() -> Iterator[HostOutcome]:
            for outcome in advise_all(job, paths, jobs):
                on_host(outcome)
                yield outcome

        written = summary_writer(staging.path, outcomes())
        playbook = renderer.env.get_template("playbook.yml.j2").render(version=__version__)
        _write(staging.path / "playbook.yml", playbook)
        if written:
            staging.publish()
        return written
    finally:
        staging.discard()
