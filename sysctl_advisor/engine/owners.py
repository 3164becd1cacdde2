"""Every key may have another owner: the programs of the writers catalog that run on the host.

A plan never sets a key against its owner silently:
* a writer that forbids another value (the kubelet's six keys) wins: the key leaves the plan and
  a `plan.contradiction` finding names the writer and what to do instead;
* a writer that would overwrite the planned value at its start (kube-proxy's nf_conntrack_max)
  gets the value in its own configuration (a companion from the write's `fix`), and a finding
  names it;
* a value a known writer sets at start is that writer's default, not a raise: rules judge the
  value in force against it (kube-proxy's maxPerCore x CPUs).
`diff` and `check --facts` name the probable writer of a value in force (`probable_owner`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sysctl_advisor.knowledge.catalog import Catalog, CatalogKey, normalise
from sysctl_advisor.knowledge.expressions import ExpressionError
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.rules import CompanionResult, FindingResult
from sysctl_advisor.knowledge.values import Value, conf_text
from sysctl_advisor.knowledge.writers import WHEN_WORDS, Write
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.plan import OwnerNote, Setting
from sysctl_advisor.model.severity import Severity
from sysctl_advisor.model.vocabulary import key_matches

START = frozenset({"start", "start-if-different", "start-if-lower"})  # it sets it as it starts


class Owners(NamedTuple):
    """The writes of the writers that run on the host, by the catalog key they write."""

    writes: list[Write]
    by_key: dict[str, list[Write]]

    def of(self, key: str) -> list[Write]:
        found = self.by_key.get(key)
        if found is None:
            found = self.by_key[key] = [w for w in self.writes if key_matches(w.spec.key, key)]
        return found


def owners(kb: KnowledgeBase, variables: dict[str, Any]) -> Owners:
    """The writers whose signs show in the facts (what rules see, plain data)."""
    facts = variables["facts"]
    view = variables.get("kubernetes") or {}
    node = list(view.get("signs") or []) if view.get("node") else []
    return Owners(kb.writers.present(facts, node, variables, kb.compiler), {})


def _value(value: Any, spec: CatalogKey) -> Value | None:
    """A writer's value in the key's shape; None where it has not that shape."""
    try:
        return normalise(value, spec)  # type: ignore[no-any-return]
    except ValueError:
        return None


def shown(write: Write, catalog: Catalog, key: str) -> str | None:
    """The value a write writes as sysctl.conf text (None: it depends)."""
    if write.value is None:
        return None
    spec = catalog.keys.get(key)
    if spec is None:
        return (
            " ".join(str(v) for v in write.value)
            if isinstance(write.value, list)
            else str(write.value)
        )
    value = _value(write.value, spec)
    return conf_text(value) if value is not None else None


def writer_defaults(
    found: Owners, catalog: Catalog, defaults: dict[str, Any], by_alias: dict[str, Any]
) -> dict[str, tuple[str, str | None]]:
    """A value a writer running on the host sets as it starts (kube-proxy's nf_conntrack_max)
    is the host's default, not a raise: it replaces the kernel's in `defaults` and in what rules
    see as `default` (for `start-if-lower`, where it is above the kernel's). Returns, by key,
    who set each such default and the kernel's own (None: not modelled)."""
    taken: dict[str, tuple[str, str | None]] = {}
    if not found.writes:
        return taken
    for key, spec in catalog.keys.items():
        for write in found.of(key):
            if write.spec.when not in START or write.value is None:
                continue
            value = _value(write.value, spec)
            kernel = defaults.get(key)
            if value is None:
                continue
            if write.spec.when == "start-if-lower" and kernel is not None and kernel >= value:
                continue
            defaults[key] = by_alias[spec.alias] = value
            who = f"{write.name}, {WHEN_WORDS[write.spec.when]} ({', '.join(write.signs)})"
            taken[key] = (who, conf_text(kernel) if kernel is not None else None)
            break
    return taken


def forbidden(
    found: Owners, catalog: Catalog, key: str, wants: list[Value]
) -> tuple[Write, str] | None:
    """A writer that forbids any value but its own, where a want differs from it."""
    for write in found.of(key):
        if not write.spec.forbids_other:
            continue
        theirs = shown(write, catalog, key)
        if theirs is None or any(conf_text(w) != theirs for w in wants):
            return write, theirs or "its own value"
    return None


def contradiction(key: str, wanted: str, rules: list[str], write: Write, theirs: str) -> str:
    writer = write.writer
    return (
        f"{key} is wanted as {wanted} by {', '.join(rules)}, but {write.says(theirs)} "
        f"({', '.join(write.signs)}), and no other value lasts there: "
        f"{' '.join(write.spec.note.split())} The plan leaves {key} to {writer.name}."
        + (f" {' '.join(writer.instead.split())}" if writer.instead else "")
    )


def owned_settings(
    kb: KnowledgeBase, found: Owners, settings: list[Setting], cpus: int
) -> tuple[list[FindingResult], list[CompanionResult]]:
    """For each planned key another writer on the host writes too (a value other than the
    plan's, or one not known): a finding that names it and, where its write would undo the
    plan's value, the companion that puts the value in its own configuration."""
    findings: list[FindingResult] = []
    companions: list[CompanionResult] = []
    if not found.writes:
        return findings, companions
    for setting in settings:
        for write in found.of(setting.key):
            theirs = shown(write, kb.catalog, setting.key)
            if write.spec.forbids_other or theirs == setting.value:
                continue  # the owner's own value (a contradiction otherwise), or the same
            who = f"{setting.key}: {write.says(theirs)} ({', '.join(write.signs)})"
            if write.spec.file is not None and write.spec.file < kb.writers.own_name:
                findings.append(
                    _other_writer(
                        write,
                        setting,
                        "info",
                        f"{who}; the plan's file ({kb.writers.own_name}) sorts after it and wins.",
                    )
                )
                continue
            fix = kb.writers.fixes.get((write.writer.id, write.index))
            if fix is not None and write.spec.fix is not None:
                context = kb.compiler.context(
                    {"value": _plain(setting), "key": setting.key, "cpus": cpus}
                )
                try:
                    line, why = fix[0].render_in(context), fix[1].render_in(context)
                except ExpressionError as exc:
                    raise InputError(
                        str(exc), path=kb.writers.path, field=f"writers.{write.writer.id}.fix"
                    ) from None
                target = write.spec.fix.target
                companions.append(CompanionResult(target, line, why, f"writers.{write.writer.id}"))
                then = f"so {setting.value} lasts only with the companion setting for {target}."
            elif write.spec.file is not None:
                then = (
                    f"{write.spec.file} sorts after the plan's file and wins: remove the line "
                    f"from it, or set {setting.value} in a file that sorts after it."
                )
            else:
                then = (
                    f"so {setting.value} lasts only until it does: "
                    f"{' '.join(write.spec.note.split())}"
                )
            findings.append(_other_writer(write, setting, "warning", f"{who}, {then}"))
    return findings, companions


def _other_writer(
    write: Write, setting: Setting, severity: Severity, message: str
) -> FindingResult:
    return FindingResult(
        "plan.other-writer", severity, setting.key, message, f"writers.{write.writer.id}"
    )


def _plain(setting: Setting) -> Any:
    if not setting.values:
        return setting.value
    return setting.values if len(setting.values) > 1 else setting.values[0]


def owner_notes(found: Owners, catalog: Catalog, every: bool = False) -> list[OwnerNote]:
    """The record of the other writers of catalog keys on the host (`every`: of every key they
    write, each under the key as the catalog of writers names it, `*` for an interface)."""
    notes: list[OwnerNote] = []
    if not found.writes:
        return notes
    pairs = (
        [(w.spec.key, w) for w in found.writes]
        if every
        else [(key, w) for key in catalog.keys for w in found.of(key)]
    )
    for key, write in pairs:
        theirs = shown(write, catalog, key)
        fix = write.spec.fix
        notes.append(
            OwnerNote(
                key,
                f"{write.says(theirs)} ({', '.join(write.signs)})",
                theirs,
                write.spec.file,
                write.spec.forbids_other,
                fix.target if fix is not None else None,
                " ".join(write.spec.note.split()),
                write.writer.id,
                write.index,
            )
        )
    return notes


def fix_line(kb: KnowledgeBase, writer: str, index: int, key: str, value: Any) -> str | None:
    """The line for a writer's own configuration that makes `value` of `key` last, or None
    where the catalog gives none (or it does not render for this value)."""
    templates = kb.writers.fixes.get((writer, index))
    if templates is None:
        return None
    try:
        return templates[0].render_in(kb.compiler.context({"value": value, "key": key, "cpus": 1}))
    except ExpressionError:
        return None


def probable_owner(
    notes: list[OwnerNote], key: str, in_force: str | None, source: str | None
) -> str | None:
    """Who probably wrote the value in force of `key`: a writer on the host that writes that
    value (or a value not known); a boot write only where its file is the one that sets it."""
    if in_force is None:
        return None
    held = " ".join(in_force.split())
    for note in notes:
        if note.key != key:
            continue
        if note.file is not None:
            if source is not None and note.file == source.rpartition(":")[0].rpartition("/")[2]:
                return note.says
            continue
        if note.value is None or note.value == held:
            return note.says
    return None
