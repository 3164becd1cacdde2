"""The observed owner of a key: the writes a host was seen making (the facts' `writers:`
section), joined with the writers catalog (`Writers.writer_of`), gathered per key, writer and
network namespace, each with the fix in that writer's configuration for the plan's value; and
the keys two writers take turns on (`drift.writers-fight`, the catalog's `observed.fight`).

The writes are taken by time (equal times in the record's order). Writes in the host's
network namespace, or of a key that is not per namespace, are where the value in force is;
of those, the writer of the last applied one explains it (`ObservedOwner.explains`), the
others wrote earlier; writes in pods' namespaces are kept apart, and those whose namespace the
kernel does not give stand in a group of their own (`ObservedOwner.in_force` None) and take
no turn in a fight. A writer the catalog does not know is named by its process, unit and
parent, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import pairwise
from typing import Any

from sysctl_advisor.engine.owners import fix_line
from sysctl_advisor.knowledge.expressions import ExpressionError
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.writers import WriterSpec
from sysctl_advisor.model.diff import ObservedOwner
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.kernel_namespaces import of_another_namespace
from sysctl_advisor.model.plan import Finding, Plan, Setting
from sysctl_advisor.model.sysctl_writers import ObservedWrite, WriterPod
from sysctl_advisor.model.timestamps import moment
from sysctl_advisor.model.vocabulary import key_matches

MAX_VALUES = 8  # distinct values kept per writer of a key
MAX_FIGHTERS = 4  # writers a fight names
SHOWN_VALUE = 40  # characters of a value a fight's message shows
# what one host's record adds to a fleet's count: so many writers of a key, and so many keys,
# the others counted as one row (a hostile host's 100,000 writers are not 100,000 rows)
HOST_WRITERS = 16
HOST_KEYS = 1024
OTHER_WRITERS = f"(other writers: a host's record shows more than {HOST_WRITERS})"
OTHER_KEYS = f"(other keys: a host's record shows more than {HOST_KEYS})"
NOT_GIVEN = "not given"  # the namespace of a write the kernel does not say (before 5.10)


@dataclass(frozen=True)
class Observed:
    """What the record says, by key: its writers (those that explain the value in force
    first) and the fights; `provenance` as the facts give it."""

    provenance: str
    by_key: dict[str, list[ObservedOwner]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return not self.provenance.startswith("unavailable")


@dataclass
class _Group:
    """One writer's writes of one key in one network namespace."""

    writer: WriterSpec | None
    named_by: str | None
    namespace: str
    in_force: bool | None  # None: the kernel does not say which namespace
    last: ObservedWrite
    count: int = 0
    explains: bool = False
    values: list[str] = field(default_factory=list)


def _pod_name(pod: WriterPod | None) -> str | None:
    if pod is None:
        return None
    return f"{pod.namespace}/{pod.name}" if pod.namespace and pod.name else pod.uid


def _namespace(write: ObservedWrite) -> str:
    netns = write.netns
    if netns is None:
        return NOT_GIVEN
    if netns.kind == "host":
        return "host"
    if netns.kind == "pod":
        return f"pod {_pod_name(netns.pod) or '(unknown)'}"
    return f"other net:[{netns.inode}]" if netns.inode is not None else "other"


def _per_namespace(kb: KnowledgeBase, key: str) -> bool:
    spec = kb.catalog.keys.get(key)
    if spec is not None:
        return bool(spec.netns_since)
    return key.startswith("net.")


def _identity(writer: WriterSpec | None, write: ObservedWrite) -> tuple[str | None, ...]:
    """Who a write is by: a catalog writer (a pod's own writes: that pod), else what it shows."""
    if writer is not None and not writer.signs.pods:
        return ("writer", writer.id)
    pod = write.pod or (write.netns.pod if write.netns is not None else None)
    if writer is not None:
        return ("pod", pod.uid if pod is not None else None)
    return ("unknown", write.comm, write.unit, write.parent_comm)


EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


def _moment(time: str) -> datetime:
    """A write's time, to order by: one that is no instant sorts first."""
    return moment(time) or EARLIEST


def observed_owners(kb: KnowledgeBase, facts: HostFacts, plan: Plan | None) -> Observed | None:
    """The record's writers by key, or None where the facts carry no record."""
    record = facts.writers
    if record is None:
        return None
    if not record.available:
        return Observed(record.provenance)
    planned = {s.key: s for s in plan.settings} if plan is not None else {}
    groups: dict[tuple[Any, ...], _Group] = {}
    turns: dict[tuple[str, str], list[tuple[tuple[str | None, ...], str]]] = {}
    last_in_force: dict[str, tuple[Any, ...]] = {}  # by key: the group of its last applied write
    # by time, not by the order in the file (equal times keep the file's order)
    ordered = sorted(enumerate(record.writes), key=lambda pair: (_moment(pair[1].time), pair[0]))
    for _, write in ordered:
        pod = write.pod is not None or (write.netns is not None and write.netns.kind == "pod")
        named = kb.writers.writer_of(write.comm, write.unit, write.parent_comm, pod)
        writer = named[0] if named is not None else None
        namespace = _namespace(write)
        per_namespace = _per_namespace(kb, write.key)
        in_force: bool | None
        if write.pod is not None and of_another_namespace(write.key):
            # a pod's UTS, IPC or user key: its own namespace's value, not the host's
            namespace, in_force = f"pod {_pod_name(write.pod) or '(unknown)'}", False
        else:
            if not per_namespace:
                namespace = "host" if namespace == NOT_GIVEN else namespace
            in_force = (
                True
                if namespace == "host" or not per_namespace
                else None
                if namespace == NOT_GIVEN
                else False
            )
        who = _identity(writer, write)
        index = (write.key, who, namespace)
        group = groups.get(index)
        if group is None:
            group = groups[index] = _Group(
                writer, named[1] if named is not None else None, namespace, in_force, write
            )
        group.last = write
        group.count += write.count
        if write.value not in group.values and len(group.values) < MAX_VALUES:
            group.values.append(write.value)
        if write.applied is not False and in_force:
            last_in_force[write.key] = index
        # a write whose namespace is not known takes no turn: two writers in two namespaces
        # would look like a fight
        if write.applied is not False and in_force is not None:
            turns.setdefault((write.key, "host" if in_force else namespace), []).append(
                (who, write.value)
            )
    for index in last_in_force.values():
        groups[index].explains = True
    by_key: dict[str, list[ObservedOwner]] = {}
    fixes: dict[tuple[Any, ...], tuple[str | None, str | None]] = {}
    kernel = kb.catalog.kernel_for(facts)[0]
    for (key, who, _), group in groups.items():
        fix = fixes[key, who] = _fix(kb, facts, group, key, planned.get(key), kernel)
        by_key.setdefault(key, []).append(_owner(group, fix))
    for owners in by_key.values():
        owners.sort(key=_standing)  # stable: by time of the first write within
    findings = [
        finding
        for (key, _), sequence in turns.items()
        if (finding := _fight(kb, key, sequence, groups, fixes)) is not None
    ]
    return Observed(record.provenance, by_key, findings)


def _standing(owner: ObservedOwner) -> int:
    """The writer that explains the value in force, the earlier ones, those whose namespace is
    not known, then those apart."""
    if owner.explains:
        return 0
    return {True: 1, None: 2, False: 3}[owner.in_force]


def _owner(group: _Group, fix: tuple[str | None, str | None]) -> ObservedOwner:
    last = group.last
    writer = group.writer
    name = (
        writer.name
        if writer is not None
        else " ".join(
            part
            for part in (
                last.comm or "a process",
                f"(unit {last.unit})" if last.unit else "",
                f"(parent {last.parent_comm})" if last.parent_comm else "",
            )
            if part
        )
    )
    return ObservedOwner(
        writer=writer.id if writer is not None else None,
        name=name,
        named_by=group.named_by,
        comm=last.comm,
        pid=last.pid,
        parent=last.parent_comm,
        parent_pid=last.parent_pid,
        unit=last.unit,
        pod=_pod_name(last.pod),
        namespace=group.namespace,
        in_force=group.in_force,
        explains=group.explains,
        value=last.value,
        values=list(group.values),
        applied=last.applied,
        last=last.time,
        count=group.count,
        fix=fix[0],
        fix_target=fix[1],
    )


def _plain(setting: Setting) -> Any:
    if not setting.values:
        return setting.value
    return setting.values if len(setting.values) > 1 else setting.values[0]


def _render(kb: KnowledgeBase, name: str, variables: dict[str, Any]) -> str:
    try:
        return " ".join(kb.writers.texts[name].render(variables).split())
    except ExpressionError as exc:
        raise InputError(str(exc), path=kb.writers.path, field=f"observed.{name}") from None


def _fix(
    kb: KnowledgeBase,
    facts: HostFacts,
    group: _Group,
    key: str,
    setting: Setting | None,
    kernel: Any,
) -> tuple[str | None, str | None]:
    """The fix for the plan's value in the writer's configuration, and where it goes: for a
    writer that applies sysctl.d files, the file that sets the key; for a pod, its spec; the
    catalog write's `fix`; for a writer named by its unit only, the unit's command too; else
    removing the write from the writer."""
    writer = group.writer
    if writer is None:
        return _render(kb, "unknown", {"key": key}), None
    value = setting.value if setting is not None else None
    if writer.applies_files:
        return _file_fix(kb, facts, group, key, setting)
    if writer.signs.pods:
        if setting is None:
            return None, None
        pod = _pod_name(group.last.pod) or (
            _pod_name(group.last.netns.pod) if group.last.netns is not None else None
        )
        kubernetes = kb.kubernetes
        verdict = kubernetes.verdict(key, kubernetes.newest, kernel)
        allowed = verdict.safe and _per_namespace(kb, key)
        why = f"{verdict.why}; Kubernetes {kubernetes.newest}'s lists"
        text = "pod-sysctls" if allowed else "pod-command"
        variables = {"key": key, "value": value, "pod": pod or "(unknown)", "why": why}
        return _render(kb, text, variables), "pod spec"
    unit = group.last.unit
    command = None
    if unit is not None and (group.named_by or "").startswith("unit "):
        command = _render(kb, "command", {"key": key, "value": value, "unit": unit})
    if setting is not None:
        for index, write in enumerate(writer.writes):
            if write.fix is None or not key_matches(write.key, key):
                continue
            line = fix_line(kb, writer.id, index, key, _plain(setting))
            if line is not None:
                return (f"{line}; and {command}" if command else line), write.fix.target
    if command is not None:
        return command, unit
    return _render(kb, "remove", {"key": key, "writer": writer.name}), writer.name


def _file_fix(
    kb: KnowledgeBase, facts: HostFacts, group: _Group, key: str, setting: Setting | None
) -> tuple[str | None, str | None]:
    """A writer that applies sysctl.d files: the file (and line) that sets the key, where the
    facts name it; nothing to change where that is the advisor's own file and the write is the
    plan's value."""
    files = facts.sysctl_files or {}
    source = files.get(key) or next(
        (where for glob, where in files.items() if key_matches(glob, key)), None
    )
    value = setting.value if setting is not None else None
    if (
        source is not None
        and kb.writers.is_own(source)
        and value is not None
        and " ".join(group.last.value.split()) == " ".join(value.split())
    ):
        return _render(kb, "own", {"key": key, "file": source}), None
    target = source.rpartition(":")[0] if source and source.rpartition(":")[2].isdigit() else source
    return _render(kb, "file", {"key": key, "value": value, "file": source}), target


def _fight(
    kb: KnowledgeBase,
    key: str,
    sequence: list[tuple[tuple[str | None, ...], str]],
    groups: dict[tuple[Any, ...], _Group],
    fixes: dict[tuple[Any, ...], tuple[str | None, str | None]],
) -> Finding | None:
    """Two writers (or more) taking turns on the key with different values."""
    spec = kb.writers.spec.observed.fight
    switches = sum(1 for a, b in pairwise(sequence) if a[0] != b[0])
    if switches < spec.switches or len({value for _, value in sequence}) < 2:
        return None
    fighters = list(dict.fromkeys(who for who, _ in sequence))
    writers = []
    for who in fighters[:MAX_FIGHTERS]:
        group = next(g for (k, w, _), g in groups.items() if k == key and w == who)
        owner = _owner(group, fixes[key, who])
        values = list(dict.fromkeys(v for w, v in sequence if w == who))
        writers.append(
            {
                "name": owner.name,
                "values": ", ".join(_clip(v) for v in values[:MAX_VALUES]),
                "count": sum(1 for w, _ in sequence if w == who),
                "fix": owner.fix or _render(kb, "remove", {"key": key, "writer": owner.name}),
            }
        )
    others = f"{len(fighters) - MAX_FIGHTERS:,}" if len(fighters) > MAX_FIGHTERS else ""
    message = _render(kb, "fight", {"key": key, "writers": writers, "others": others})
    return Finding(id=spec.id, severity=spec.severity, key=key, message=message, rule="writers")


def _clip(value: str) -> str:
    return value if len(value) <= SHOWN_VALUE else value[: SHOWN_VALUE - 1] + "…"


def writers_by_key(kb: KnowledgeBase, facts: HostFacts) -> tuple[tuple[str, str], ...]:
    """(key, writer) for every key the facts' record shows written, each pair once, sorted:
    what `fleet` counts across hosts (a catalog writer by its name, another by what it
    shows)."""
    observed = observed_owners(kb, facts, None)
    if observed is None or not observed.available:
        return ()
    pairs: set[tuple[str, str]] = set()
    known = {o.name for owners in observed.by_key.values() for o in owners if o.writer}
    keys = sorted(observed.by_key)
    for key in keys[:HOST_KEYS]:
        owners = observed.by_key[key]  # the catalog's writers first, then by name
        names = sorted({o.name for o in owners}, key=lambda n: (n not in known, n))
        pairs.update((key, name) for name in names[:HOST_WRITERS])
        if len(names) > HOST_WRITERS:
            pairs.add((key, OTHER_WRITERS))
    if len(keys) > HOST_KEYS:
        pairs.add((OTHER_KEYS, OTHER_WRITERS))
    return tuple(sorted(pairs))
