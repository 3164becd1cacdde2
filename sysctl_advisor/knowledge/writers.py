"""Who else writes sysctls on a host (rules/catalog/writers.yaml): each writer's signs in the
facts, the keys it writes (the value, when, and whether it tolerates another), and where an
operator puts a value so that it lasts (the writer's own configuration).

The advisor is one of the writers: its own file (`own: true`) is what a plan replaces whole,
so a key it sets stays the plan's while a rule of the plan is about it (engine/own_file.py).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.expressions import Compiler, Expression, ExpressionError, Text
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import Field, SpecModel, model
from sysctl_advisor.model.vocabulary import SysctlKeyGlob

WRITER_ID = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"

When = Literal["start", "start-if-lower", "start-if-different", "link", "pod", "boot", "continuous"]
WHEN_WORDS: dict[str, str] = {
    "start": "at every start",
    "start-if-lower": "at start, where the value in force is lower",
    "start-if-different": "at start, where the value in force differs",
    "link": "on each interface as it comes up",
    "pod": "at each pod's network setup",
    "boot": "at boot, from its sysctl.d file",
    "continuous": "at any time while it runs",
}


@model
class SignsSpec(SpecModel):
    """How a writer shows in the facts; any one sign is enough."""

    processes: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="/proc/PID/comm of a running program (facts.processes) or of a listener's",
    )
    links: list[str] = Field(
        default_factory=list, max_length=20, description="prefixes of interface names it makes"
    )
    files: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="globs on the name of a sysctl file that sets a key (facts.sysctl_files)",
    )
    node: bool = Field(default=False, description="every Kubernetes node runs it")
    units: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="globs on the systemd unit a write the host was seen making came from "
        "(facts.writers)",
    )
    pods: bool = Field(
        default=False,
        description="a write seen from a pod's cgroup, or into a pod's network namespace, that "
        "no other writer's signs name (an init container, a privileged container)",
    )


@model
class FixSpec(SpecModel):
    """Where a value the plan wants goes so that the writer keeps it: its own configuration."""

    target: str = Field(max_length=40, description="the companion's target")
    setting: str = Field(description="a template over `value` (the plan's), `cpus`, `facts`")
    rationale: str


@model
class WriteSpec(SpecModel):
    key: SysctlKeyGlob = Field(description="the key; `*` stands for one interface name")
    value: str | None = Field(
        default=None,
        description="an expression over `facts`, `cpus` and `default` (the kernel's, by key "
        "alias): the value it writes; absent: it depends (the note says on what)",
    )
    when: When
    forbids_other: bool = Field(
        default=False,
        description="no other value lasts: the writer rewrites it at every start, or refuses "
        "to run with another",
    )
    note: str
    file: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.+-]{1,64}\.conf$",
        description="for a `boot` write, the sysctl.d file name that holds it: systemd-sysctl "
        "applies the files in the order of their names, so one that sorts after the plan's "
        "own file wins over it",
    )
    fix: FixSpec | None = None
    references: list[str] = Field(min_length=1, max_length=10)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.when == "boot") != (self.file is not None):
            raise ValueError("file: a `boot` write names its sysctl.d file, and only a boot write")


@model
class PodFixSpec(SpecModel):
    """Where a pod's write goes instead: templates over `key`, `value` (the plan's), `pod`
    (namespace/name, else its UID) and `why` (what Kubernetes says of the key)."""

    sysctls: str = Field(
        description="where Kubernetes lets a pod set the key (a safe sysctl at the release): "
        "the pod spec's securityContext.sysctls"
    )
    command: str = Field(description="else: the init container's command that writes it")


@model
class FightSpec(SpecModel):
    """Two writers taking turns on one key (A, B, A...) within the record."""

    id: str = Field(pattern=r"^[a-z]+\.[a-z-]+$", description="the finding's id")
    severity: Literal["info", "warning", "error"]
    switches: int = Field(
        ge=2, le=100, description="changes of writer on the key that make a fight (A, B, A: 2)"
    )
    message: str = Field(
        description="a template over `key` and `writers` (each: name, values, count, fix)"
    )


@model
class ObservedSpec(SpecModel):
    """What the advisor says of the writes a host was seen making (facts.writers)."""

    remove: str = Field(
        description="a template over `key` and `writer`: the fix where the writer's catalog "
        "entry gives none for the key"
    )
    unknown: str = Field(
        description="a template over `key`: the fix where no catalog writer is known"
    )
    command: str = Field(
        description="a template over `key`, `value` (the plan's, or none) and `unit`: the fix "
        "where a writer is named by its unit only (a command the unit runs wrote the key)"
    )
    file: str = Field(
        description="a template over `key`, `value` (the plan's, or none) and `file` (the "
        "sysctl file and line that sets the key, or none): the fix for a writer that applies "
        "sysctl.d files (`applies_files`)"
    )
    own: str = Field(
        description="a template over `key` and `file`: a write of the plan's value from the "
        "advisor's own file, by a writer that applies sysctl.d files"
    )
    fight: FightSpec


@model
class WriterSpec(SpecModel):
    id: str = Field(pattern=WRITER_ID)
    name: str = Field(max_length=60)
    summary: str
    own: bool = Field(default=False, description="the advisor's own file")
    signs: SignsSpec
    applies_files: bool = Field(
        default=False,
        description="it writes what the sysctl.d files say: the fix for its write is the file "
        "that sets the key (facts.sysctl_files), never its own configuration",
    )
    writes: list[WriteSpec] = Field(default_factory=list, max_length=40)
    instead: str | None = Field(
        default=None,
        description="what to do where a workload wants another value of a key it forbids",
    )
    pod_fix: PodFixSpec | None = Field(
        default=None, description="for the writer of pods' writes (`signs.pods`): the fix"
    )
    references: list[str] = Field(default_factory=list, max_length=20)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.own and not self.references:
            raise ValueError("references: a writer other than the advisor cites its source")
        signs = self.signs
        if not any(
            (signs.processes, signs.links, signs.files, signs.node, signs.units, signs.pods)
        ):
            raise ValueError("signs: at least one sign (a process, link, file, node, unit or pod)")
        if (self.pod_fix is not None) != signs.pods:
            raise ValueError("pod_fix: the writer of pods' writes has one, and only it")


@model
class WritersSpec(SpecModel):
    observed: ObservedSpec
    writers: list[WriterSpec] = Field(min_length=1, max_length=100)

    def __post_init__(self) -> None:
        super().__post_init__()
        ids = [w.id for w in self.writers]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"writer {twice[0]!r} is listed twice")
        if sum(w.signs.pods for w in self.writers) > 1:
            raise ValueError("signs.pods: one writer at most stands for pods' own writes")
        if sum(w.own for w in self.writers) != 1:
            raise ValueError("exactly one writer is the advisor itself (own: true)")
        own = next(w for w in self.writers if w.own)
        if not own.signs.files or "*" in own.signs.files[0]:
            raise ValueError("the advisor's own entry names its file first (signs.files[0])")


@dataclass(frozen=True)
class Write:
    """A key a writer that runs on the host writes, with the value worked out for it."""

    writer: WriterSpec
    spec: WriteSpec
    index: int  # in the writer's `writes`
    value: Any  # the value (int, list or text), None: it depends
    signs: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.writer.name

    def says(self, shown: str | None) -> str:
        """'the kubelet writes 1 at every start' (the value as the caller shows it)."""
        what = f"writes {shown}" if shown is not None else "writes it"
        when = (
            f"at boot, from {self.spec.file}"
            if self.spec.file is not None
            else WHEN_WORDS[self.spec.when]
        )
        return f"{self.writer.name} {what} {when}"


class Seen(NamedTuple):
    """What the facts (plain data) show of the programs on a host, once for every writer."""

    running: frozenset[str]  # the programs running, and those holding a listening socket
    links: tuple[str, ...]  # every interface name
    files: tuple[str, ...]  # the sysctl files that set keys ("path:line"), sorted
    node: list[str]  # what shows a Kubernetes node (empty: none)
    observed: tuple[dict[str, Any], ...] = ()  # the writes the host was seen making

    @classmethod
    def of(cls, facts: dict[str, Any], node: list[str]) -> Seen:
        listeners = facts.get("listeners") or []
        running = frozenset(
            [
                *(facts.get("processes") or []),
                *((sock.get("process") or {}).get("command") for sock in listeners),
            ]
        )
        links = (*(facts.get("links") or []), *(n["name"] for n in facts.get("nics") or []))
        files = tuple(sorted(set((facts.get("sysctl_files") or {}).values())))
        observed = tuple((facts.get("writers") or {}).get("writes") or ())
        return cls(running, links, files, node, observed)


class Writers:
    """The catalog, compiled: each write's value expression and each fix's templates."""

    def __init__(self, spec: WritersSpec, path: Path, compiler: Compiler) -> None:
        self.spec = spec
        self.path = path
        self.own = next(w for w in spec.writers if w.own)
        # the name the outputs install the plan as (the own entry's first file)
        self.own_name = self.own.signs.files[0]
        self.values: dict[tuple[str, int], Expression] = {}
        self.fixes: dict[tuple[str, int], tuple[Text, Text]] = {}
        # what diff and explain say of observed writes (compiled once, as the fixes are)
        self.texts: dict[str, Text] = {}
        observed = spec.observed
        sources = {
            "remove": observed.remove,
            "unknown": observed.unknown,
            "command": observed.command,
            "file": observed.file,
            "own": observed.own,
            "fight": observed.fight.message,
        }
        for writer in spec.writers:
            if writer.pod_fix is not None:
                sources["pod-sysctls"] = writer.pod_fix.sysctls
                sources["pod-command"] = writer.pod_fix.command
        for name, source in sources.items():
            try:
                self.texts[name] = compiler.template(source)
            except ExpressionError as exc:
                raise InputError(str(exc), path=path, field=f"observed.{name}") from None
        for writer in spec.writers:
            for i, write in enumerate(writer.writes):
                where = f"writers.{writer.id}.writes[{i}]"
                try:
                    if write.value is not None:
                        self.values[writer.id, i] = compiler.expression(write.value)
                    if write.fix is not None:
                        self.fixes[writer.id, i] = (
                            compiler.template(write.fix.setting),
                            compiler.template(write.fix.rationale),
                        )
                except ExpressionError as exc:
                    raise InputError(str(exc), path=path, field=where) from None

    @classmethod
    def load(cls, path: Path, specs: SpecCache, compiler: Compiler) -> Writers:
        return cls(specs.load(path, WritersSpec, "the writers catalog"), path, compiler)

    def is_own(self, source: str | None) -> bool:
        """Whether a sysctl file ("path:line", as facts.sysctl_files gives it) is the advisor's."""
        return source is not None and _file_matches(source, self.own.signs.files)

    def writer_of(
        self,
        comm: str | None,
        unit: str | None,
        parent: str | None,
        in_pod: bool,
    ) -> tuple[WriterSpec, str] | None:
        """The catalog writer an observed write names, and by what: the writer that claims
        its systemd unit (`signs.units`) first, since a process name is the writer's to choose;
        else its process name (comm) or its parent's name (a program a writer runs, as wg-quick
        runs sysctl), trusted only where the unit is not known or the writer names no units;
        else, for a write from a pod's cgroup or into a pod's network namespace, the writer of
        pods' own writes; None: none (the write is named by what it shows)."""
        writers = [w for w in self.spec.writers if not w.own]
        if unit is not None:
            for writer in writers:
                if any(fnmatch.fnmatchcase(unit, glob) for glob in writer.signs.units):
                    if comm is not None and comm in writer.signs.processes:
                        return writer, f"process {comm}"
                    return writer, f"unit {unit}"

        def trusted(writer: WriterSpec) -> bool:  # no unit of its own shows another unit
            return unit is None or not writer.signs.units

        for name, by in ((comm, "process"), (parent, "parent")):
            if name is None:
                continue
            for writer in writers:
                if name in writer.signs.processes and trusted(writer):
                    return writer, f"{by} {name}"
        if in_pod:
            pods = next((w for w in writers if w.signs.pods), None)
            if pods is not None:
                return pods, "a pod"
        return None

    def observed_signs(self, seen: Seen) -> dict[str, str]:
        """By writer id, the first observed write that names it (a sign it runs)."""
        found: dict[str, str] = {}
        for write in seen.observed:
            netns = write.get("netns") or {}
            named = self.writer_of(
                write.get("comm"),
                write.get("unit"),
                write.get("parent_comm"),
                write.get("pod") is not None or netns.get("kind") == "pod",
            )
            if named is not None and named[0].id not in found:
                found[named[0].id] = f"a write of {write.get('key')} seen ({named[1]})"
        return found

    def signs(
        self, writer: WriterSpec, seen: Seen, observed: dict[str, str] | None = None
    ) -> tuple[str, ...]:
        """What in the facts shows the writer runs; empty: it does not show (`observed`:
        `observed_signs`, worked out once for every writer)."""
        found = [f"a {name} process" for name in writer.signs.processes if name in seen.running]
        for prefix in writer.signs.links:
            hit = next((link for link in seen.links if link.startswith(prefix)), None)
            if hit is not None:
                found.append(f"interface {hit}")
        if writer.signs.files:
            for source in seen.files:
                if _file_matches(source, writer.signs.files):
                    found.append(source.rpartition(":")[0] or source)
                    break
        if writer.signs.node and seen.node:
            found.append(f"a Kubernetes node: {seen.node[0]}")
        if observed is None and seen.observed:
            observed = self.observed_signs(seen)
        if observed and writer.id in observed:
            found.append(observed[writer.id])
        return tuple(dict.fromkeys(found))

    def present(
        self, facts: dict[str, Any], node: list[str], variables: dict[str, Any], compiler: Compiler
    ) -> list[Write]:
        """Every write of every writer (the advisor's own file aside) whose signs show on the
        host, its value worked out (`variables`: what rule expressions see of the host; `node`:
        what shows the host is a Kubernetes node, empty where it is not one)."""
        found: list[Write] = []
        context = None
        seen = Seen.of(facts, node)
        observed = self.observed_signs(seen) if seen.observed else {}
        for writer in self.spec.writers:
            if writer.own:
                continue
            signs = self.signs(writer, seen, observed)
            if not signs:
                continue
            for i, write in enumerate(writer.writes):
                value = None
                expression = self.values.get((writer.id, i))
                if expression is not None:
                    if context is None:
                        context = compiler.context(variables)
                    try:
                        value = expression.run(context)
                    except ExpressionError as exc:
                        raise InputError(
                            str(exc), path=self.path, field=f"writers.{writer.id}.writes[{i}]"
                        ) from None
                found.append(Write(writer, write, i, value, signs))
        return found


def _file_matches(source: str, globs: list[str]) -> bool:
    path = source.rpartition(":")[0] if source.rpartition(":")[2].isdigit() else source
    name = path.rpartition("/")[2]
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)
