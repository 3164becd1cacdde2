"""build_plan's first phase: the host and its workloads as every later phase reads them (the
values in force, the defaults taken from them and from the other writers, the workloads'
parameters and the rule runs), gathered once in PlanInputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from sysctl_advisor.engine.evidence_time import date_evidence
from sysctl_advisor.engine.owners import Owners, owners, writer_defaults
from sysctl_advisor.knowledge.catalog import Catalog, CatalogKey
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.rules import FindingResult
from sysctl_advisor.knowledge.values import Value, conf_text, numbers, parse_current
from sysctl_advisor.knowledge.workloads import RuleRun, Workload
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.kernel_version import KernelVersion
from sysctl_advisor.model.text_escape import one_line


class HostDefault(NamedTuple):
    """A host's default that is not the kernel's own: who set it (a tuning daemon and its
    profile file, a sysctl file and line, or UNKNOWN_SETTER), the kernel's own as modelled
    (None: not modelled) and, where it was not foreseen, a note for the plan."""

    set_by: str
    modelled: str | None
    note: str | None


UNKNOWN_SETTER = "no sysctl file (systemd, a tuning daemon, or the kernel unlike its model)"


@dataclass
class PlanInputs:
    """What the phases after the first read of the host and its workloads, set before any rule
    runs; only `variables["planned"]` (what the rules see of the values the plan ends with)
    changes after, while the plan settles."""

    kb: KnowledgeBase
    facts: HostFacts
    workload: Workload
    variables: dict[str, Any]  # what every expression sees
    defaults: dict[str, Any]  # by key: the host's defaults (the kernel's, or taken as its)
    notes: list[str]  # the plan's notes, in the order the phases add them
    current: dict[str, Value | None]  # by alias: the values in force the key can hold
    current_text: dict[str, str]  # by key: the values in force as the facts give them
    # keys whose value in force the model says the key cannot hold: the model or the facts
    # are wrong, and which is not known, so the plan says nothing of them (model error is
    # never drift: no advice may move such a value on the model's word)
    unmodelled: set[str]
    modelled_of: dict[str, Value]  # the model's figure where the kernel's own is near it
    kernel_values: dict[str, HostDefault]  # by key: who set a default not the kernel's own
    found: Owners  # the other writers that run on the host
    # keys a file other than the plan's own sets: the operator's values, judged exactly (the
    # plan's own file holds what the model's tolerance gave, and is judged as it was made)
    operator_files: set[str]
    params_by: dict[str, dict[str, Any]]  # by workload: the parameters its runs take
    runs: list[RuleRun]
    baseline: dict[str, Any]  # by alias: the value in force, else the default
    dated: list[FindingResult]  # evidence logged before the value in force was set

    @property
    def several(self) -> bool:
        """Whether the plan runs several workloads (a setting names its own)."""
        return len(self.workload.profiles) > 1


def resolve_workloads(
    kb: KnowledgeBase,
    facts: HostFacts,
    workload: Workload,
    host: tuple[dict[str, Any], dict[str, Any], list[str]],
    overrides: dict[str, str] | None = None,
    netns_defaults: dict[str, tuple[Any, str | None]] | None = None,
) -> PlanInputs:
    """Phase one: the host's values in force and defaults (`host`: host_variables' answer;
    `netns_defaults` replace those keys' defaults, each with a note), then the workloads'
    parameters and the rule runs they make. `planned` starts as the baseline (the value in
    force, else the default)."""
    catalog = kb.catalog
    variables, defaults, notes = host
    _netns_defaults(catalog, variables, defaults, notes, netns_defaults or {})
    dated = date_evidence(kb, facts, variables["observed"])  # lines older than the values
    current, current_text, unmodelled = _values_in_force(catalog, facts, notes)
    modelled_of: dict[str, Value] = {}
    kernel_values = _kernel_values_as_defaults(kb, facts, defaults, current, variables, modelled_of)
    found = owners(kb, variables)
    for key, (set_by, kernel) in writer_defaults(
        found, catalog, defaults, variables["default"]
    ).items():
        earlier = kernel_values.get(key)  # the value in force taken as the default: not now
        kernel_values[key] = HostDefault(set_by, earlier.modelled if earlier else kernel, None)
    variables["current"] = {**current, **_readable(catalog, facts)}
    params_by, runs = _workload_runs(kb, workload, variables, overrides or {})
    baseline = {
        spec.alias: current.get(spec.alias)
        if current.get(spec.alias) is not None
        else variables["default"].get(spec.alias)
        for spec in catalog.keys.values()
    }
    variables["planned"] = baseline
    operator_files = {
        key for key, source in (facts.sysctl_files or {}).items() if not kb.writers.is_own(source)
    }
    return PlanInputs(
        kb, facts, workload, variables, defaults, notes, current, current_text, unmodelled,
        modelled_of, kernel_values, found, operator_files, params_by, runs, baseline, dated,
    )  # fmt: skip


def _netns_defaults(
    catalog: Catalog,
    variables: dict[str, Any],
    defaults: dict[str, Any],
    notes: list[str],
    netns_defaults: dict[str, tuple[Any, str | None]],
) -> None:
    """A fresh network namespace's start values (Catalog.netns_new_defaults) in place of those
    keys' kernel defaults, each with a note saying why."""
    for name, (value, why) in netns_defaults.items():
        if name in defaults and defaults[name] != value:
            shown = conf_text(value)
            notes.append(
                f"{name}: a new network namespace starts from {shown}, not the kernel default "
                f"{conf_text(defaults[name]) if defaults[name] is not None else '(not modelled)'}"
                + (f" ({why})" if why else "")
                + "."
            )
            defaults[name] = variables["default"][catalog.keys[name].alias] = value


def _values_in_force(
    catalog: Catalog, facts: HostFacts, notes: list[str]
) -> tuple[dict[str, Value | None], dict[str, str], set[str]]:
    """The values in force by alias (None: not known), as the facts give them by key, and the
    keys whose value the key cannot hold (a note each: taken as not known, not emitted)."""
    current: dict[str, Value | None] = {}
    current_text: dict[str, str] = {}
    unmodelled: set[str] = set()
    version = _release(facts.kernel)
    for name, spec in catalog.keys.items():
        text = facts.sysctl.get(name)
        value = None
        if text is not None:
            current_text[name] = text
            value = parse_current(text, spec)
            low, high = _held_range(catalog, name, spec, version, facts.bits)
            if value is None or not _in_bounds(value, low, high):
                holds = (
                    f" ({spec.length} number{'s' if spec.length > 1 else ''} in {low}..{high})"
                    if not spec.is_text
                    else ""
                )
                notes.append(
                    f"facts: {name} = {one_line(text[:60])} is not a value this key holds"
                    f"{holds}; taken as not known, and not emitted (not modelled)"
                )
                unmodelled.add(name)
                value = None
        current[spec.alias] = value
    return current, current_text, unmodelled


def _readable(catalog: Catalog, facts: HostFacts) -> dict[str, list[str] | None]:
    """What the kernel offers, by alias: lists of names (the first 64)."""
    readable: dict[str, list[str] | None] = {}
    for name, spec in catalog.readable.items():
        text = facts.sysctl.get(name)
        readable[spec.alias] = text.split()[:64] if text is not None else None
    return readable


def _workload_runs(
    kb: KnowledgeBase, workload: Workload, variables: dict[str, Any], overrides: dict[str, str]
) -> tuple[dict[str, dict[str, Any]], list[RuleRun]]:
    """Each workload's parameters and the rule runs they make. Each listener of a server gets
    its own workload's backlog; `workloads` (what rules see) is the profiles the plan runs,
    each with those it extends: a rule can say which workload's profile is missing (a server
    the listeners show, run without its profile)."""
    own_params = workload.resolve(overrides, variables)
    params_by = workload.merge(own_params)
    _mark_wants(variables["listeners"], workload.server_params(own_params))
    variables["workloads"] = list(dict.fromkeys(n for p in workload.profiles for n in p.chain))
    return params_by, workload.runs(kb.rules, params_by)


def _kernel_values_as_defaults(
    kb: KnowledgeBase,
    facts: HostFacts,
    defaults: dict[str, Any],
    current: dict[str, Value | None],
    variables: dict[str, Any],
    modelled_of: dict[str, Value] | None = None,
) -> dict[str, HostDefault]:
    """Model error is never drift: a value in force that the kernel set itself (no sysctl.d
    file sets it, when the facts say which files do), that a tuning daemon's profile set, or
    that lies within the catalog's tolerance of the modelled default *is* this host's default.
    Replaces the modelled figure in `defaults`; what expressions see as `default` stays the
    kernel's own (the model, a value in force within its tolerance, which is the kernel's own
    measured, or one no file set of a key a boot parameter sizes, such as thash_entries): any
    other value no file explains may be a runtime write that the next boot undoes, and the
    advisor's own file, once applied, hides who set the value before it, so rules that judge
    by the kernel's default judge the same on every run;
    returns, by key, who set each such default when that is not the kernel as modelled (a
    value within the tolerance that no file sets is the kernel's own). `modelled_of` gets the
    modelled figure of each value in force taken for being within the tolerance of it."""
    taken: dict[str, HostDefault] = {}
    by_alias: dict[str, Any] = variables["default"]
    files = facts.sysctl_files
    for name, spec in kb.catalog.keys.items():
        held = current.get(spec.alias)
        if held is None or name not in defaults:
            continue
        modelled = defaults[name]
        if modelled is not None and modelled == held:
            continue
        source = files.get(name) if files is not None else None
        daemon = kb.catalog.tuning_daemon(source) if source is not None else None
        kernel_set = files is not None and source is None
        close = (
            modelled is not None
            and not spec.is_text
            and _within(held, modelled, spec.default_tolerance)
        )
        if not (kernel_set or daemon is not None or close):
            continue
        defaults[name] = held
        if close or (kernel_set and spec.boot_parameter):  # the kernel's own, measured
            by_alias[spec.alias] = held
        if close and modelled_of is not None and modelled is not None:
            modelled_of[name] = modelled
        setter = _taken_default(name, held, modelled, source, daemon, close)
        if setter is not None:
            taken[name] = setter
    return taken


def _taken_default(
    name: str,
    held: Value,
    modelled: Value | None,
    source: str | None,
    daemon: str | None,
    close: bool,
) -> HostDefault | None:
    """Who set a value in force taken as the host's default, and the note where that was not
    foreseen: a tuning daemon's profile, a sysctl file that sets the kernel's value (or near
    it), or no sysctl file at all; None where it is the kernel's own within the tolerance."""
    model_text = conf_text(modelled) if modelled is not None else None
    model_says = (
        f"the model gives {model_text}"
        if model_text is not None
        else "the model has no figure for this kernel"
    )
    if daemon is not None:
        return HostDefault(
            f"{daemon} from {source}",
            model_text,
            f"{name}: {conf_text(held)} in force is set by {daemon} ({source}), so it is "
            f"taken as this host's default ({model_says} for the kernel's own).",
        )
    if close and source is not None:  # a file sets the kernel's value, or near it
        return HostDefault(source, model_text, None)
    if not close:
        return HostDefault(
            UNKNOWN_SETTER,
            model_text,
            f"{name}: {conf_text(held)} in force is set by no sysctl file, so it is taken "
            "as this host's default ("
            + (
                f"{model_says}; the kernel, systemd or a tuning daemon set it otherwise"
                if modelled is not None
                else model_says
            )
            + ").",
        )
    return None


def _within(held: Value, modelled: Value, tolerance: float) -> bool:
    a, b = numbers(held), numbers(modelled)
    if len(a) != len(b):
        return False
    return all(abs(x - y) <= tolerance * abs(y) for x, y in zip(a, b, strict=True))


def _release(kernel: str | None) -> KernelVersion | None:
    try:
        return KernelVersion.parse(kernel) if kernel else None
    except ValueError:
        return None


def _held_range(
    catalog: Catalog, name: str, spec: CatalogKey, version: KernelVersion | None, bits: int
) -> tuple[int, int]:
    """The values in force the plan takes as known: the key's own min..max, widened to the
    range its `bounds:` give at the facts' release (upstream 3.10 and later hold a tcp_rmem
    field from 1, below the 4096 the advisor writes: such a value is the host's, not noise)."""
    found = catalog.bounds(name, version, bits) or {}
    low, high = found.get("min"), found.get("max")
    return (
        spec.min if low is None else min(spec.min, low),
        spec.max if high is None else max(spec.max, high),
    )


def _in_bounds(value: Value, low: int, high: int) -> bool:
    """Whether a number value lies in the range (a text key's parse said already)."""
    return isinstance(value, str) or all(low <= v <= high for v in numbers(value))


def _mark_wants(
    listeners: list[dict[str, Any]] | None, by_server: dict[str, dict[str, Any]]
) -> None:
    """Give each listener of a server the workload serves its own workload's listen backlog
    (`wants`, unmerged: the merged `params.listen_backlog` sizes somaxconn for every server,
    not what Redis is asked for) and the share of it the listener got (`wants_share`,
    backlog / wants); both None for other listeners."""
    for listener in listeners or ():
        server = listener.get("server")
        own = by_server.get(server["id"]) if server else None
        wants = own.get("listen_backlog") if own else None
        good = isinstance(wants, int) and not isinstance(wants, bool) and wants > 0
        listener["wants"] = wants if good else None
        listener["wants_share"] = listener["backlog"] / wants if good else None
