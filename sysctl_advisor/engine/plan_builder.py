"""build_plan: a pure function (facts, profile, params, rules, catalog) -> Plan.

Per key: wants from every rule that sets it are merged by the catalog's policy (`max` never goes
below the kernel default; for keys the catalog marks as pure capacities, a value in force that
already covers the wants is kept), then every safety cap is applied (caps beat wants, and the
rationale says so), then vector order (min <= default <= max) and the catalog's bounds are
enforced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sysctl_advisor.engine.evidence_time import date_evidence
from sysctl_advisor.engine.kept_values import accept_kept
from sysctl_advisor.engine.own_file import held, own_keys
from sysctl_advisor.engine.owners import (
    Owners,
    contradiction,
    forbidden,
    owned_settings,
    owner_notes,
    owners,
    writer_defaults,
)
from sysctl_advisor.knowledge.catalog import (
    MAX_TEXT_VALUE,
    Catalog,
    CatalogKey,
    KernelContext,
    merge_ranges,
    parse_ports,
    ports_text,
)
from sysctl_advisor.knowledge.expression_budget import new_budget
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.rules import FindingResult, RuleResult
from sysctl_advisor.knowledge.servers import rule_listens
from sysctl_advisor.knowledge.sources import citation_parts
from sysctl_advisor.knowledge.values import (
    Value,
    as_list,
    conf_text,
    human,
    numbers,
    parse_current,
)
from sysctl_advisor.knowledge.workloads import RuleRun
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.plan import (
    Companion,
    Finding,
    Plan,
    PlanHost,
    PlanProfile,
    PlanReference,
    Setting,
    Unchanged,
)
from sysctl_advisor.model.severity import SEVERITY_ORDER
from sysctl_advisor.model.text_escape import one_line


@dataclass
class _KeyWork:
    """A key's wants and caps, by rule. A rule that ran for several workloads with different
    parameters has one want, merged by the key's policy (its text from the run whose want
    won), and one cap, the tightest; where the key is a choice and the runs disagree, each
    keeps its own want (a contradiction, reported and not picked)."""

    key: str
    spec: CatalogKey
    wants: list[tuple[str, Any]] = field(default_factory=list)
    caps: list[tuple[str, Any]] = field(default_factory=list)
    results: dict[str, RuleResult] = field(default_factory=dict)  # whose text explains it
    workloads: dict[str, list[str]] = field(default_factory=dict)  # by rule: who wanted it
    want_from: list[tuple[str, ...]] = field(default_factory=list)  # each want's workloads
    several: bool = False  # the plan runs several workloads: a setting names its own

    def workloads_of(self, rules: list[str]) -> list[str]:
        """The workloads whose runs of these rules wanted or capped the key."""
        return list(dict.fromkeys(w for rule_id in rules for w in self.workloads.get(rule_id, [])))

    def explained(
        self,
        contributing: list[str],
        by_rule: dict[str, RuleResult],
        lines: list[str],
        text: bool = True,
    ) -> tuple[Explained, list[str]]:
        """The setting's text (with the workloads that wanted it, where the plan runs several)
        and those workloads; without `text` (a value worked out for `planned`), no text."""
        workloads = self.workloads_of(contributing)
        if not text:
            return Explained("", "", [], {}), workloads
        if self.several:
            lines = [*lines, f"Workloads: {', '.join(workloads)}."]
        return _explained(self, contributing, by_rule, lines), workloads

    def rule_ids(self) -> list[str]:
        return list(dict.fromkeys(r for r, _ in self.wants + self.caps))

    def add(self, kind: str, run: RuleRun, result: RuleResult, value: Any) -> None:
        entries = self.wants if kind == "want" else self.caps
        rule_id = run.rule_id
        known = self.workloads.get(rule_id)
        if known is None:  # the rule's first run that is about this key: most keys' only one
            self.workloads[rule_id] = list(run.workloads)
            self.results[rule_id] = result
            entries.append((rule_id, value))
            if kind == "want":
                self.want_from.append(run.workloads)
            return
        known += [w for w in run.workloads if w not in known]
        policies = self.spec.policies()
        same = [i for i, (r, _) in enumerate(entries) if r == rule_id]
        if kind == "want" and all(p == "choice" for p in policies):
            for i in same:
                if entries[i][1] == value:
                    self.want_from[i] += run.workloads
                    return
            entries.append((rule_id, value))
            self.want_from.append(run.workloads)
            return
        if not same:
            entries.append((rule_id, value))
            if kind == "want":
                self.want_from.append(run.workloads)
            return
        i = same[0]
        old = _elements(entries[i][1])
        new = _elements(value)
        merged = [
            a
            if b is None
            else b
            if a is None
            else _tighter(a, b, p)
            if kind == "cap"
            else _pick([a, b], p)
            for a, b, p in zip(old, new, policies, strict=True)
        ]
        entries[i] = (rule_id, merged if isinstance(entries[i][1], list) else merged[0])
        if kind == "want":
            self.want_from[i] += run.workloads
            if merged == new and merged != old:
                self.results[rule_id] = result  # the run whose want won explains the key


class KernelDefaults(NamedTuple):
    """What the kernel model works out for a host: derived quantities, kernel context and
    boot defaults (by key, and by alias as expressions see them)."""

    host: dict[str, Any]
    kernel: KernelContext
    defaults: dict[str, Any]
    by_alias: dict[str, Any]

    def copy(self) -> KernelDefaults:
        """Copies a host can change (the plan replaces a default by the value in force)."""
        return KernelDefaults(
            dict(self.host), self.kernel, _copied(self.defaults), _copied(self.by_alias)
        )


def _copied(values: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, list) else v for k, v in values.items()}


def host_variables(
    kb: KnowledgeBase, facts: HostFacts, memo: MutableMapping[str, KernelDefaults] | None = None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What every expression sees about the host, its kernel defaults, and notes. `memo`: the
    kernel model's results by Catalog.host_key, shared by hosts of the same kernel and
    hardware (a fleet's)."""
    new_budget()  # the work every expression and template may do for this host
    version, distro, known, notes = kb.catalog.kernel_for(facts)
    data = facts.expression_data()  # plain data only: expressions never see a model object
    key = kb.catalog.host_key(facts, data) if memo is not None else None
    saved = memo.get(key) if memo is not None and key is not None else None
    if saved is not None:
        host, kernel = saved.host, saved.kernel
    else:
        host, kernel = kb.catalog.evaluate_host(facts, version, distro, known, data)
    listeners, distinct = kb.servers.annotate(data["listeners"])
    if listeners is not None and distinct > len(listeners):
        notes.append(
            f"The host has {distinct:,} distinct listening sockets; the rules looked at the "
            f"{len(listeners):,} with the fullest accept queues and shortest backlogs."
        )
    for name, service in data["services"].items():
        listens = service["listens"]
        service["listens"] = rule_listens(listens)
        if len(service["listens"]) < len(listens):
            notes.append(
                f"{name}'s configuration has {len(listens):,} listening sockets; the rules "
                f"looked at the {len(service['listens']):,} with the shortest backlogs."
            )
    variables: dict[str, Any] = {
        "facts": data,
        "host": host,
        "kernel": kernel,
        "page_size": facts.page_size,
        "observed": data["observed"],
        "services": data["services"],
        "nics": data["nics"],
        "listeners": listeners,
        "message_families": kb.message_texts,
        "kubernetes": kb.kubernetes.node_view(data),
        "container_runtimes": kb.servers.container_runtimes(data["listeners"]),
    }
    if saved is not None:
        copy = saved.copy()
        variables["host"], variables["default"] = copy.host, copy.by_alias
        return variables, copy.defaults, notes
    defaults, _ = kb.catalog.defaults(variables)
    if memo is not None and key is not None:
        memo[key] = KernelDefaults(host, kernel, defaults, variables["default"]).copy()
    return variables, defaults, notes


def host_defaults(kb: KnowledgeBase, facts: HostFacts) -> dict[str, str | None]:
    """The kernel boot default of every catalog key on this host, as sysctl.conf text."""
    _, defaults, _ = host_variables(kb, facts)
    return {k: (conf_text(v) if v is not None else None) for k, v in defaults.items()}


class HostDefault(NamedTuple):
    """A host's default that is not the kernel's own: who set it (a tuning daemon and its
    profile file, a sysctl file and line, or UNKNOWN_SETTER), the kernel's own as modelled
    (None: not modelled) and, where it was not foreseen, a note for the plan."""

    set_by: str
    modelled: str | None
    note: str | None


UNKNOWN_SETTER = "no sysctl file (systemd, a tuning daemon, or the kernel unlike its model)"


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
        model_text = conf_text(modelled) if modelled is not None else None
        model_says = (
            f"the model gives {model_text}"
            if model_text is not None
            else "the model has no figure for this kernel"
        )
        if daemon is not None:
            taken[name] = HostDefault(
                f"{daemon} from {source}",
                model_text,
                f"{name}: {conf_text(held)} in force is set by {daemon} ({source}), so it is "
                f"taken as this host's default ({model_says} for the kernel's own).",
            )
        elif close and source is not None:  # a file sets the kernel's value, or near it
            taken[name] = HostDefault(source, model_text, None)
        elif not close:
            taken[name] = HostDefault(
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
    return taken


def _within(held: Value, modelled: Value, tolerance: float) -> bool:
    a, b = numbers(held), numbers(modelled)
    if len(a) != len(b):
        return False
    return all(abs(x - y) <= tolerance * abs(y) for x, y in zip(a, b, strict=True))


def _in_bounds(value: Value, spec: CatalogKey) -> bool:
    """Whether a number value lies in the key's bounds (a text key's parse said already)."""
    return isinstance(value, str) or all(spec.min <= v <= spec.max for v in numbers(value))


# How many times `planned` is worked out at most: once from the first pass, again while a
# reader that ran again moved a key another reader reads.
_PLANNED_PASSES = 4


def build_plan(
    kb: KnowledgeBase,
    facts: HostFacts,
    profile_name: str | Sequence[str],
    overrides: dict[str, str] | None = None,
    memo: MutableMapping[str, KernelDefaults] | None = None,
    netns_defaults: dict[str, tuple[Any, str | None]] | None = None,
) -> Plan:
    """The host's plan for one profile or several (`profile_name`: a name, or names); `memo`
    as for host_variables. `netns_defaults` (a fresh network namespace's plan:
    Catalog.netns_new_defaults) replaces those keys' kernel defaults, each with a note saying
    why."""
    catalog = kb.catalog
    workload = kb.workload(profile_name)
    variables, defaults, notes = host_variables(kb, facts, memo)
    for name, (value, why) in (netns_defaults or {}).items():
        if name in defaults and defaults[name] != value:
            shown = conf_text(value)
            notes.append(
                f"{name}: a new network namespace starts from {shown}, not the kernel default "
                f"{conf_text(defaults[name]) if defaults[name] is not None else '(not modelled)'}"
                + (f" ({why})" if why else "")
                + "."
            )
            defaults[name] = variables["default"][catalog.keys[name].alias] = value
    version = variables["kernel"].version
    dated = date_evidence(kb, facts, variables["observed"])  # lines older than the values
    current: dict[str, Value | None] = {}
    current_text: dict[str, str] = {}
    # Keys whose value in force the model says the key cannot hold: the model or the facts
    # are wrong, and which is not known, so the plan says nothing of them (model error is
    # never drift: no advice may move such a value on the model's word).
    unmodelled: set[str] = set()
    for name, spec in catalog.keys.items():
        text = facts.sysctl.get(name)
        value = None
        if text is not None:
            current_text[name] = text
            value = parse_current(text, spec)
            if value is None or not _in_bounds(value, spec):
                holds = (
                    f" ({spec.length} number{'s' if spec.length > 1 else ''} in "
                    f"{spec.min}..{spec.max})"
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
    modelled_of: dict[str, Value] = {}  # the model's figure where the kernel's own is near it
    kernel_values = _kernel_values_as_defaults(kb, facts, defaults, current, variables, modelled_of)
    found = owners(kb, variables)  # the other writers that run on the host
    for key, (set_by, kernel) in writer_defaults(
        found, catalog, defaults, variables["default"]
    ).items():
        earlier = kernel_values.get(key)  # the value in force taken as the default: not now
        kernel_values[key] = HostDefault(set_by, earlier.modelled if earlier else kernel, None)
    readable: dict[str, list[str] | None] = {}  # what the kernel offers: lists of names
    for name, spec_r in catalog.readable.items():
        text = facts.sysctl.get(name)
        readable[spec_r.alias] = text.split()[:64] if text is not None else None
    variables["current"] = {**current, **readable}
    own_params = workload.resolve(overrides or {}, variables)
    params_by = workload.merge(own_params)
    _mark_wants(variables["listeners"], workload.server_params(own_params))
    # the profiles the plan runs, each with those it extends: a rule can say which workload's
    # profile is missing (a server the listeners show, run without its profile)
    variables["workloads"] = list(dict.fromkeys(n for p in workload.profiles for n in p.chain))
    runs = workload.runs(kb.rules, params_by)

    # `planned`: the values the plan ends with. On the first pass it holds the baseline (the
    # value in force, else the default); a rule that reads it runs again only when a key it
    # reads ends elsewhere, and one that sets and caps nothing (its findings and companions
    # quote the plan) runs once, after the others.
    baseline = {
        spec.alias: current.get(spec.alias)
        if current.get(spec.alias) is not None
        else variables["default"].get(spec.alias)
        for spec in catalog.keys.values()
    }
    variables["planned"] = baseline
    # what the rules see, and the context their `when`s share (read-only), by the workload
    # whose parameters a run takes
    seen: dict[str, tuple[dict[str, Any], Any]] = {}

    def evaluate(run: RuleRun) -> RuleResult | None:
        first = run.workloads[0]
        if first not in seen:
            run_variables = {**variables, "params": params_by[first]}
            seen[first] = (run_variables, kb.compiler.context(run_variables))
        run_variables, screen = seen[first]
        return kb.rules[run.rule_id].evaluate(run_variables, screen=screen)

    by_run: dict[int, RuleResult | None] = {}
    later: list[int] = []
    for i, run in enumerate(runs):
        rule = kb.rules[run.rule_id]
        if rule.reads_planned and not (rule.spec.set or rule.spec.cap):
            later.append(i)
            continue
        by_run[i] = evaluate(run)
    results = [(runs[i], r) for i, r in sorted(by_run.items()) if r is not None]
    several = len(workload.profiles) > 1

    def merged_work(
        results: list[tuple[RuleRun, RuleResult]],
    ) -> tuple[dict[str, _KeyWork], list[FindingResult]]:
        """Each key's wants and caps, less those no value can settle: a key an owner on the
        host forbids other values of, and a mode the workloads want two ways (findings say
        which). Before `planned` is worked out, so rules that read it see what the plan does."""
        work = _work(results, catalog, several)
        found_here = _left_to_owners(work, found, catalog)
        contradictions = _contradictions(work, workload.names, current_text)
        preferences = _preference_contradictions(work, workload.names, current_text)
        return work, found_here + contradictions + preferences

    work, contradictions = merged_work(results)

    # keys a file other than the plan's own sets: the operator's values, judged exactly (the
    # plan's own file holds what the model's tolerance gave, and is judged as it was made)
    operator_files = {
        key for key, source in (facts.sysctl_files or {}).items() if not kb.writers.is_own(source)
    }

    def resolved(
        item: _KeyWork, by_rule: dict[str, RuleResult], text: bool = True
    ) -> Setting | Unchanged | str | None:
        """The key's wants and caps merged with its baseline. A value a sysctl file sets is
        the operator's, not the model's, and one taken as the host's default that lies beyond
        the model's tolerance is no model error either: no tolerance keeps them from a cap or
        a want."""
        resolve = _resolve_text if item.spec.is_text else _resolve
        return resolve(
            item,
            defaults.get(item.key),
            current.get(item.spec.alias),
            current_text.get(item.key),
            {**by_rule, **item.results},
            facts.page_size,
            (item.key in operator_files)
            or (item.key in kernel_values and item.key not in modelled_of),
            modelled_of.get(item.key),
            text,
        )

    reader_rules = [r.rule for _, r in results if r.rule.reads_planned] + [
        kb.rules[runs[i].rule_id] for i in later
    ]
    if reader_rules:
        wanted: set[str] | None = set()  # the aliases they read (None: all)
        for rule in reader_rules:
            aliases = rule.planned_aliases
            wanted = None if wanted is None or aliases is None else wanted | aliases
        # The values the readers were evaluated with; a reader whose own wants depend on
        # `planned` (postgresql.overcommit's ratio, tcp-buffers.bdp's maxima) can move a key
        # another reader reads once it runs again, so `planned` is worked out again until
        # nothing a reader reads moves (a few passes at most).
        given = baseline
        touched: set[str] | None = None  # after a rerun, the keys whose wants may have moved
        for _ in range(_PLANNED_PASSES):
            planned = dict(baseline if touched is None else given)
            first_by_rule = _first_by_rule(results)
            for key in touched if touched is not None else work:
                spec = catalog.keys[key]
                if wanted is not None and spec.alias not in wanted:
                    continue
                item = work.get(key)
                first = resolved(item, first_by_rule, text=False) if item is not None else None
                planned[spec.alias] = (  # else the baseline
                    parse_current(first.value, spec)
                    if isinstance(first, Setting)
                    else baseline[spec.alias]
                )
            moved = {alias for alias, value in planned.items() if value != given[alias]}
            index = {id(r): i for i, r in by_run.items() if r is not None}
            rerun = [
                index[id(result)]
                for _, result in results
                if result.rule.reads_planned
                and ((aliases := result.rule.planned_aliases) is None or aliases & moved)
            ]
            if not rerun:
                break
            variables["planned"] = given = planned
            seen.clear()
            touched = {key for i in rerun for key in kb.rules[runs[i].rule_id].keys}
            for i in rerun:
                by_run[i] = evaluate(runs[i])
            results = [(runs[i], r) for i, r in sorted(by_run.items()) if r is not None]
            work, contradictions = merged_work(results)
        if later:  # they set nothing: once, with the values the plan ends with
            variables["planned"] = planned
            seen.clear()
            for i in later:
                by_run[i] = evaluate(runs[i])
            results = [(runs[i], r) for i, r in sorted(by_run.items()) if r is not None]
            work, contradictions = merged_work(results)
    by_rule = _first_by_rule(results)

    settings: list[Setting] = []
    unchanged: list[Unchanged] = []

    def ends_with(key: str) -> Any:
        """The value the plan ends with for a key: its setting, else the value in force (or
        the default)."""
        spec = catalog.keys[key]
        item = work.get(key) if key not in unmodelled else None  # not emitted: as it is
        setting = resolved(item, by_rule, text=False) if item is not None else None
        if isinstance(setting, Setting):
            return parse_current(setting.value, spec)
        return baseline[spec.alias]

    def acts(key: str) -> bool:
        """Whether the key has an effect with the plan's values (its `acts_only_with`)."""
        other = catalog.keys[key].acts_only_with
        return other is None or ends_with(other.key) in other.values

    own = {  # keys the advisor's own file sets: the plan keeps them, not against an owner,
        # nor where the key it acts only with ends elsewhere (a strict-mode ratio, mode 0)
        key: held_key
        for key, held_key in own_keys(kb, facts, runs, {r.rule.id for _, r in results}).items()
        if forbidden(found, catalog, key, [held_key.value]) is None and acts(key)
    }
    for key, spec in catalog.keys.items():  # catalog order, sorted by section below
        if (key not in work and key not in own) or key in unmodelled:
            continue
        work_item = work.get(key)
        wanted_by = ", ".join(work_item.rule_ids() if work_item is not None else own[key].rules)
        if not acts(key):
            other = spec.acts_only_with
            assert other is not None
            notes.append(
                f"{key} acts only while {other.key} is "
                f"{' or '.join(str(v) for v in other.values)}, which this plan does not end "
                f"with (the value in force is not known or another one stays); not emitted "
                f"(wanted by {wanted_by})"
            )
            continue
        if not catalog.exists(key, version):
            notes.append(
                f"{key} does not exist on kernel {version.short}; not emitted "
                f"(wanted by {wanted_by})"
            )
            continue
        if spec.module and key not in facts.sysctl:
            notes.append(
                f"{key} exists only where the {spec.module} module is loaded, and the facts "
                f"do not show it; not emitted (wanted by {wanted_by})"
            )
            continue
        host_default = kernel_values.get(key)
        if host_default is not None and host_default.note is not None:
            notes.append(host_default.note)
        setting = resolved(work_item, by_rule) if work_item is not None else None
        if key in own and (setting is None or isinstance(setting, Unchanged)):
            setting = held(
                key, own[key], spec, defaults.get(key), current_text.get(key),
                facts.page_size, several, [r for r, _ in work_item.caps] if work_item else [],
            )  # fmt: skip
        if host_default is not None and isinstance(setting, Setting | Unchanged):
            setting = dataclasses.replace(
                setting,
                default_set_by=host_default.set_by,
                modelled_default=host_default.modelled,
            )
        if isinstance(setting, str):
            notes.append(setting)
        elif isinstance(setting, Unchanged):
            unchanged.append(setting)
        elif setting is not None:
            settings.append(setting)

    section_order = {s.id: i for i, s in enumerate(catalog.sections)}
    key_order = {k: i for i, k in enumerate(catalog.keys)}
    settings.sort(key=lambda s: (section_order[s.section], key_order[s.key]))
    settings = accept_kept(kb, facts, variables, defaults, settings)

    reported = _reported(results, work)
    owned, owner_companions = owned_settings(kb, found, settings, facts.cpu.threads or 1)
    findings = sorted(
        {
            (f.id, f.key, f.message): Finding(
                id=f.id, severity=f.severity, key=f.key, message=f.message, rule=f.rule
            )
            for f in [
                *(f for r in reported for f in r.findings),
                *contradictions,
                *dated,
                *owned,
            ]
        }.values(),
        key=lambda f: (SEVERITY_ORDER[f.severity], f.id, f.key or "", f.message),
    )
    companions = list(
        {
            (c.target, c.setting): Companion(
                target=c.target, setting=c.setting, rationale=c.rationale, rule=c.rule
            )
            for c in [*(c for r in reported for c in r.companions), *owner_companions]
        }.values()
    )
    companions.sort(key=lambda c: (c.target, c.setting))

    return Plan(
        host=PlanHost(
            hostname=facts.hostname,
            kernel=facts.kernel,
            arch=facts.arch,
            bits=facts.bits,
            memory_total=facts.memory.total,
            lowmem=facts.lowmem if facts.bits == 32 else None,
            page_size=facts.page_size,
            kernel_modelled_as=version.short,
        ),
        profile=PlanProfile(
            name=workload.name, params=workload.shown(params_by), workloads=workload.names
        ),
        settings=settings,
        findings=findings,
        companions=companions,
        unchanged=unchanged,
        notes=notes,
        applied_rules=list(dict.fromkeys(r.rule.id for _, r in results)),
        references=_references(kb, settings),
        owners=owner_notes(found, catalog),
    )


def _references(kb: KnowledgeBase, settings: list[Setting]) -> list[PlanReference]:
    """Every source the settings cite, once, in the order first cited."""
    found: dict[str, PlanReference] = {}
    for setting in settings:
        for citation in setting.references:
            source_id, _ = citation_parts(citation)
            known = kb.sources.references.get(source_id)
            if known is not None and source_id not in found:
                found[source_id] = PlanReference(known.id, known.citation, known.url)
    return list(found.values())


def _pick(values: list[int], policy: str) -> int:
    return max(values) if policy in ("max", "choice") else min(values)


def _keep_or_want(want: int, base: int, policy: str, tolerance: float) -> int:
    """The baseline when it already gives what the want asks, within the tolerance the catalog
    allows the key's modelled figures (a want a hair above a measured default is model
    rounding, not advice); else the want."""
    if policy == "max":
        return base if base >= want - tolerance * want else want
    return base if base <= want + tolerance * want else want


def _fill(
    wants: list[list[int | None]], base: list[int] | None, policies: list[str]
) -> list[int] | None:
    """Merge the wants element by element; an element no rule is about takes the baseline
    (the value in force, else the kernel default). None when such an element has no baseline."""
    merged: list[int] = []
    for i, policy in enumerate(policies):
        column = [v for w in wants if (v := w[i]) is not None]
        if column:
            merged.append(_pick(column, policy))
        elif base is not None:
            merged.append(base[i])
        else:
            return None
    return merged


def _tighter(a: int, b: int, policy: str) -> int:
    """Of two caps on one element, the one that binds first."""
    return max(a, b) if policy == "min" else min(a, b)


def _work(
    results: list[tuple[RuleRun, RuleResult]], catalog: Catalog, several: bool = False
) -> dict[str, _KeyWork]:
    """Each key's wants and caps, by rule (`several`: the plan runs several workloads)."""
    work: dict[str, _KeyWork] = {}
    for run, result in results:
        for kind, values in (("want", result.wants), ("cap", result.caps)):
            for key, value in values.items():
                item = work.get(key)
                if item is None:
                    item = work[key] = _KeyWork(key, catalog.keys[key], several=several)
                item.add(kind, run, result, value)
    return work


def _reported(
    results: list[tuple[RuleRun, RuleResult]], work: dict[str, _KeyWork]
) -> list[RuleResult]:
    """What each rule reports: a rule that ran for several workloads (with different
    parameters) says its findings and companions once, from the run whose wants won the most
    keys (the one the plan follows), plus what only another run says (a finding id and key,
    a companion target, the lead run has not)."""
    by_rule: dict[str, list[RuleResult]] = {}
    for _, result in results:
        by_rule.setdefault(result.rule.id, []).append(result)
    if len(by_rule) == len(results):  # each rule ran once
        return [result for _, result in results]
    won: dict[int, int] = {}
    for item in work.values():
        for result in item.results.values():
            won[id(result)] = won.get(id(result), 0) + 1
    reported: list[RuleResult] = []
    for runs in by_rule.values():
        lead = max(runs, key=lambda r: won.get(id(r), 0))  # the first of equals
        findings = {(f.id, f.key) for f in lead.findings}
        targets = {c.target for c in lead.companions}
        reported.append(lead)
        for other in runs:
            if other is not lead:
                reported.append(
                    dataclasses.replace(
                        other,
                        findings=[f for f in other.findings if (f.id, f.key) not in findings],
                        companions=[c for c in other.companions if c.target not in targets],
                    )
                )
    return reported


def _first_by_rule(results: list[tuple[RuleRun, RuleResult]]) -> dict[str, RuleResult]:
    """Each rule's result (its first run's, where it ran for several workloads)."""
    found: dict[str, RuleResult] = {}
    for _, result in results:
        found.setdefault(result.rule.id, result)
    return found


def _left_to_owners(
    work: dict[str, _KeyWork], found: Owners, catalog: Catalog
) -> list[FindingResult]:
    """Keys a writer on the host forbids any other value of (the kubelet's vm.overcommit_memory)
    where a rule wants another: the key leaves the plan (its wants and caps dropped) and a
    contradiction names the writer and what to do instead."""
    findings: list[FindingResult] = []
    for key, item in list(work.items()):
        wants = [value for _, value in item.wants]
        conflict = forbidden(found, catalog, key, wants) if wants else None
        if conflict is None:
            continue
        write, theirs = conflict
        rules = [rule_id for rule_id, _ in item.wants]
        wanted = " or ".join(dict.fromkeys(conf_text(v) for v in wants))
        findings.append(
            FindingResult(
                "plan.contradiction",
                "warning",
                key,
                contradiction(key, wanted, rules, write, theirs),
                rules[0],
            )
        )
        del work[key]
    return findings


def _contradictions(
    work: dict[str, _KeyWork], workloads: list[str], in_force: dict[str, str]
) -> list[FindingResult]:
    """Modes the rules (or the workloads) want differently: a choice key has no larger value
    that serves both, so the plan picks none. The key keeps the value in force and a warning
    says who wants what (a rule's workloads where not every one runs it) and each reason; the
    operator decides, or runs the workloads apart."""
    found: list[FindingResult] = []
    for key, item in work.items():
        if (
            len(item.wants) < 2
            or len({repr(v) for _, v in item.wants}) < 2
            or not all(p == "choice" for p in item.spec.policies())
        ):
            continue
        by_value: dict[str, list[str]] = {}
        reasons: list[str] = []
        for (rule_id, value), runs in zip(item.wants, item.want_from, strict=True):
            who = list(dict.fromkeys(runs))
            named = f"{rule_id} ({', '.join(who)})" if len(who) < len(workloads) else rule_id
            by_value.setdefault(conf_text(value), []).append(named)
            reasons.append(f"{rule_id}: {item.results[rule_id].summary_for(key).splitlines()[0]}")
        wanted = "; ".join(f"{value} by {', '.join(rules)}" for value, rules in by_value.items())
        held = in_force.get(key)
        kept = f"the value in force ({held}) is kept" if held else "nothing is set"
        found.append(
            FindingResult(
                "plan.contradiction",
                "warning",
                key,
                f"{key} is wanted as {wanted}: no value serves both, so {kept}. "
                + " ".join(reasons)
                + " Choose one in a sysctl file of your own, or run these workloads on "
                "different hosts.",
                item.wants[0][0],
            )
        )
        item.wants.clear()
        item.want_from.clear()
    for key in [k for k, item in work.items() if not item.wants and not item.caps]:
        del work[key]
    return found


def _beyond(spec: CatalogKey, merged: list[Any], wanted: list[Any], policies: list[str]) -> str:
    """How a kept baseline goes past the wants: `is already lower` (`shorter` for a time) where
    every element kept is one that only goes down (merge `min`: a timeout, swappiness),
    `already gives more` where each only goes up, `already goes further` where both."""
    kept = {p for m, w, p in zip(merged, wanted, policies, strict=True) if m != w}
    if kept == {"min"}:
        return "is already shorter than" if spec.unit == "seconds" else "is already lower than"
    if "min" in kept:
        return "already goes further than"
    return "already gives more than"


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


def _preference_contradictions(
    work: dict[str, _KeyWork], workloads: list[str], in_force: dict[str, str]
) -> list[FindingResult]:
    """A cap its rule declares a preference (`cap_kind: preference`: what one workload would
    rather have, not what keeps the kernel safe) that would move an element against another
    rule's want is a contradiction, settled as two modes are: neither applies to that element,
    which keeps the value in force (else the kernel default), and a warning says who wants what
    and why. The cap still holds the elements no want disagrees with."""
    found: list[FindingResult] = []
    for item in work.values():
        policies = item.spec.policies()
        for cap_index, (cap_rule, cap) in enumerate(item.caps):
            if item.results[cap_rule].rule.spec.cap_kind != "preference":
                continue
            limits = _elements(cap)
            clashes: dict[int, list[int]] = {}  # element -> the wants it clashes with
            for want_index, (want_rule, want) in enumerate(item.wants):
                for i, (c, w, p) in enumerate(zip(limits, _elements(want), policies, strict=True)):
                    if want_rule != cap_rule and _against(c, w, p):
                        clashes.setdefault(i, []).append(want_index)
            if not clashes:
                continue
            found.append(_preference_finding(item, cap_rule, limits, clashes, workloads, in_force))
            for i, indexes in clashes.items():
                limits[i] = None
                for want_index in indexes:
                    rule_id, want = item.wants[want_index]
                    elements = _elements(want)
                    elements[i] = None
                    item.wants[want_index] = (rule_id, elements if isinstance(want, list) else None)
            item.caps[cap_index] = (cap_rule, limits if isinstance(cap, list) else None)
        kept = [
            i for i, (_, v) in enumerate(item.wants) if any(e is not None for e in _elements(v))
        ]
        item.wants[:] = [item.wants[i] for i in kept]
        item.want_from[:] = [item.want_from[i] for i in kept]
        item.caps[:] = [(r, v) for r, v in item.caps if any(e is not None for e in _elements(v))]
    for key in [k for k, item in work.items() if not item.wants and not item.caps]:
        del work[key]
    return found


def _against(cap: int | None, want: int | None, policy: str) -> bool:
    """A cap would move a wanted element back (below a capacity want, above a safety one)."""
    if cap is None or want is None:
        return False
    return want < cap if policy == "min" else want > cap


def _preference_finding(
    item: _KeyWork,
    cap_rule: str,
    limits: list[int | None],
    clashes: dict[int, list[int]],
    workloads: list[str],
    in_force: dict[str, str],
) -> FindingResult:
    """The warning for a preference cap against wants: each element, who wants what, the
    value that stays, and each rule's reason."""

    def named(rule_id: str) -> str:
        who = item.workloads.get(rule_id, [])
        return f"{rule_id} ({', '.join(who)})" if who and len(who) < len(workloads) else rule_id

    # the value in force as the kernel holds it: words of text it cannot hold are not one
    text = in_force.get(item.key)
    parsed = parse_current(text, item.spec) if text is not None else None
    held = [str(v) for v in as_list(parsed)] if isinstance(parsed, int | list) else []
    parts: list[str] = []
    rules = [cap_rule]
    for i, indexes in sorted(clashes.items()):
        field_name = _field(item.spec, i) if item.spec.length > 1 else "value"
        wants = "; ".join(
            f"{named(item.wants[w][0])} wants {_elements(item.wants[w][1])[i]}" for w in indexes
        )
        stays = (
            f"the value in force ({held[i]}) stays"
            if len(held) == item.spec.length
            else "the kernel default stays"
        )
        parts.append(
            f"its {field_name}: {named(cap_rule)} would hold it at {limits[i]}, a preference of "
            f"that workload, not a safety limit; {wants}. No value serves both, so {stays}."
        )
        rules += [item.wants[w][0] for w in indexes if item.wants[w][0] not in rules]
    reasons = [
        f"{rule_id}: {item.results[rule_id].summary_for(item.key).splitlines()[0]}"
        for rule_id in rules
        if item.results[rule_id].summary_for(item.key)
    ]
    return FindingResult(
        "plan.contradiction",
        "warning",
        item.key,
        f"{item.key}, "
        + " ".join(parts)
        + (" " + " ".join(reasons) if reasons else "")
        + " Choose one in a sysctl file of your own, or run these workloads on different hosts.",
        cap_rule,
    )


def _resolve(
    item: _KeyWork,
    default: Value | None,
    current: Value | None,
    current_text: str | None,
    by_rule: dict[str, RuleResult],
    page_size: int,
    file_set: bool = False,
    modelled: Value | None = None,
    text: bool = True,
) -> Setting | Unchanged | str | None:
    """Merge the wants with the baseline, apply caps, order, bounds. `modelled`: the model's
    figure for a value in force that is the kernel's own within the tolerance of it; a cap
    judges such an element by the model's figure, as it would without the value in force.

    The baseline is the value in force when there is one, else the kernel default: a capacity
    want (`max`) never lowers it, a safety want (`min`) never raises it, and a cap only ever
    moves it in its own direction. Returns a note (str) when nothing can be said for lack of a
    baseline.
    """
    spec = item.spec
    policies = spec.policies()
    baseline = current if current is not None else default
    base = numbers(baseline) if baseline is not None else None
    base_name = "the value in force" if current is not None else "the kernel default"
    want_rules = [r for r, _ in item.wants]
    tolerance = 0.0 if file_set else spec.default_tolerance
    lines: list[str] = []
    if item.wants:
        wanted = _fill([_elements(v) for _, v in item.wants], base, policies)
        if wanted is None:
            return (
                f"{item.key}: {', '.join(want_rules)} set only some of its values, and the "
                "others are not modelled for this kernel nor given in the facts; not emitted"
            )
        merged = list(wanted)
        if base is not None:
            merged = [
                w if p == "choice" else _keep_or_want(w, b, p, tolerance)
                for w, b, p in zip(wanted, base, policies, strict=True)
            ]
    elif base is not None:
        merged = list(base)
        wanted = list(base)
    else:
        return (
            f"{item.key}: neither the value in force nor the kernel default on this host is "
            f"known, so the cap from {', '.join(r for r, _ in item.caps)} cannot be applied"
        )
    kept_for_want = merged != wanted  # the baseline already gives what the wants ask
    model = numbers(modelled) if modelled is not None and current is not None else None
    near = _left_as_modelled(item, merged, base, model, policies) if not file_set else []
    if base is not None and near:
        merged = [base[i] if i in near else v for i, v in enumerate(merged)]
    if kept_for_want:
        lines.append(
            f"Where {base_name} ({conf_text(base or [])}) "
            f"{_beyond(spec, merged, wanted, policies)} the rules need ({conf_text(wanted)}), "
            "it is kept" + ("." if merged == base else f": {conf_text(merged)}.")
        )
    if model is not None and near:
        fields = " and ".join(_field(spec, i) for i in near)
        whole = len(near) == len(merged)
        lines.append(
            f"The value in force ({conf_text(base or [])}) is the kernel's own, within the "
            f"model's tolerance of its figure ({conf_text(model)}), whose "
            f"{'value' if whole else fields} the rules would leave as it is: "
            f"{'it' if whole else 'its ' + fields} {'is' if whole or len(near) == 1 else 'are'} "
            "kept (model error is not drift)."
        )

    before_caps = list(merged)
    kept_base = [
        base is not None and v == base[i] and not file_set for i, v in enumerate(merged)
    ]  # elements that are the kernel's own value (or the default), not a want or a file's
    merged = _capped(item, merged, policies, kept_base, model)
    # The caps that bind: those whose limit is the final value of an element they moved.
    capped_by = [
        rule_id
        for rule_id, cap in item.caps
        if any(
            c is not None and c == v and v != b
            for c, v, b in zip(
                cap if isinstance(cap, list) else [cap], merged, before_caps, strict=True
            )
        )
    ]
    if capped_by:
        if not item.wants or before_caps == base:
            source = f"{base_name} {conf_text(before_caps)}"
        elif before_caps != wanted:
            source = (
                f"{conf_text(before_caps)} (the wants {conf_text(wanted)} merged with {base_name})"
            )
        else:
            source = f"the wanted {conf_text(wanted)}"
        lines = [
            line for line in lines if not line.startswith("Where ")
        ]  # the cap line says where the value came from
        kinds = {item.results[r].rule.spec.cap_kind for r in capped_by if r in item.results}
        label = "Preference cap" if kinds == {"preference"} else "Safety cap"
        lines.append(
            f"{label} ({', '.join(capped_by)}) wins: {source} becomes {conf_text(merged)}."
        )

    if spec.ordered:
        for i in range(len(merged) - 2, -1, -1):
            if merged[i] > merged[i + 1]:
                lines.append(
                    f"Lowered {(spec.fields or [])[i] if spec.fields else i} to "
                    f"{merged[i + 1]} so the values stay in order."
                )
                merged[i] = merged[i + 1]
    bounded = [min(max(v, spec.min), spec.max) for v in merged]
    if bounded != merged:
        lines.append(f"Clamped to the kernel's accepted range {spec.min}..{spec.max}.")
        merged = bounded
    if spec.floor is not None and merged[0] < spec.floor.value:
        lines.append(
            f"Raised to {spec.floor.value}, the floor of this capacity: less would "
            f"{spec.floor.breaks}. {spec.floor.reason}"
        )
        merged = [spec.floor.value]

    final: Value = merged if spec.length > 1 else merged[0]
    contributing = want_rules + [r for r in capped_by if r not in want_rules]
    if not item.wants and not capped_by:
        return None  # only caps that did not bite: nothing to say
    if final == default and (current is None or current == final):
        return Unchanged(
            key=item.key,
            kernel_default=conf_text(default),
            wanted=conf_text(wanted),
            rules=contributing,
            capped_by=capped_by,
        )

    why, workloads = item.explained(contributing, by_rule, lines, text)
    return Setting(
        key=item.key,
        value=conf_text(final),
        values=numbers(final),
        unit=spec.unit,
        current=" ".join(current_text.split()) if current_text is not None else None,
        kernel_default=conf_text(default) if default is not None else None,
        rules=contributing,
        rationale=why.rationale,
        summary=why.summary,
        references=why.references,
        cited=why.cited,
        section=spec.section,
        human=human(final, spec, page_size),
        capped_by=capped_by,
        wanted=list(wanted),
        caps=[rule_id for rule_id, _ in item.caps],
        workloads=workloads,
    )


class Explained(NamedTuple):
    rationale: str
    summary: str
    references: list[str]  # the rules' citations, then the catalog key's
    cited: dict[str, list[str]]  # each rule's own


def _explained(
    item: _KeyWork, contributing: list[str], by_rule: dict[str, RuleResult], lines: list[str]
) -> Explained:
    """A setting's rationale (each contributing rule's paragraph, then the merge's own lines),
    its summary (each rule's one sentence, then the same lines) and references (the rules',
    then the catalog's not already cited more precisely)."""
    paragraphs = [
        f"[{rid}] {by_rule[rid].rationale_for(item.key)}"
        for rid in contributing
        if by_rule[rid].rationale_for(item.key)
    ]
    summaries = [
        f"[{rid}] {by_rule[rid].summary_for(item.key)}"
        for rid in contributing
        if by_rule[rid].summary_for(item.key)
    ]
    references: list[str] = []
    cited = {rid: list(by_rule[rid].rule.spec.references) for rid in contributing}
    for ref in (r for refs in cited.values() for r in refs):
        if ref not in references:
            references.append(ref)
    cited_ids = {citation_parts(r)[0] for r in references}
    for ref in item.spec.references:  # the catalog's, unless cited already or more precisely
        source_id, at = citation_parts(ref)
        if ref not in references and (at is not None or source_id not in cited_ids):
            references.append(ref)
    return Explained("\n".join(paragraphs + lines), "\n".join(summaries + lines), references, cited)


def _resolve_text(
    item: _KeyWork,
    default: Value | None,
    current: Value | None,
    current_text: str | None,
    by_rule: dict[str, RuleResult],
    page_size: int,
    file_set: bool = False,
    modelled: Value | None = None,
    text: bool = True,
) -> Setting | Unchanged | str | None:
    """A text key: a name every rule must agree on (`one`), or a port set that only grows
    (`union`: the value in force, else the default, with every want added). Text keys take no
    caps (a rule that caps one does not load)."""
    spec = item.spec
    baseline = current if current is not None else default
    wants = [(rule_id, str(v)) for rule_id, v in item.wants]
    if not wants:
        return None
    if current is None and current_text is not None:  # held, but not text the kernel prints
        return (
            f"{item.key}: the value in force ({current_text[:60]!r}) is not one the advisor "
            f"reads, so nothing is emitted that could drop part of it"
        )
    lines: list[str] = []
    if spec.merge == "one":
        names = sorted({v for _, v in wants})
        if len(names) > 1:
            return (
                f"{item.key}: the rules want different values "
                f"({', '.join(f'{r}: {v}' for r, v in wants)}); not emitted"
            )
        final = wanted = names[0]
    else:
        wanted = ports_text(merge_ranges([r for _, v in wants for r in parse_ports(v)]))
        held = parse_ports(str(baseline)) if baseline is not None else []
        final = ports_text(merge_ranges(held + parse_ports(wanted)))
        if held and final != wanted:
            lines.append(
                f"The ports {'in force' if current is not None else 'reserved by default'} "
                f"({baseline}) stay reserved: a port set only grows."
            )
    contributing = [r for r, _ in wants]
    if len(final) > MAX_TEXT_VALUE:
        return (
            f"{item.key}: {len(final):,} characters of ports ({', '.join(contributing)} with "
            f"what is in force) are more than `sysctl -p` writes in one go "
            f"({MAX_TEXT_VALUE:,}: the rest would be lost without an error); not emitted"
        )
    if final == default and (current is None or current == final):
        return Unchanged(
            key=item.key,
            kernel_default=conf_text(default),
            wanted=wanted,
            rules=contributing,
        )
    why, workloads = item.explained(contributing, by_rule, lines, text)
    return Setting(
        key=item.key,
        value=final,
        values=[],
        unit=spec.unit,
        current=current_text.strip() if current_text is not None else None,
        kernel_default=conf_text(default) if default is not None else None,
        rules=contributing,
        rationale=why.rationale,
        summary=why.summary,
        references=why.references,
        cited=why.cited,
        section=spec.section,
        human=human(final, spec, page_size),
        wanted=None,
        workloads=workloads,
    )


def _left_as_modelled(
    item: _KeyWork,
    merged: list[int],
    base: list[int] | None,
    model: list[int] | None,
    policies: list[str],
) -> list[int]:
    """Model error is never drift: the elements that the wants and caps would leave at the
    model's figure were that in force, where the kernel's own value near it (within the key's
    tolerance) is in force instead and `merged` moves it. Those keep the kernel's value: a
    want capped at a limit equal to the modelled default, or one within the tolerance above
    it, would otherwise move the kernel's value by the model's error alone."""
    if base is None or model is None or len(model) != len(merged):
        return []
    tolerance = item.spec.default_tolerance
    wanted = _fill([_elements(v) for _, v in item.wants], model, policies) or model
    as_modelled = [
        w if p == "choice" else _keep_or_want(w, m, p, tolerance)
        for w, m, p in zip(wanted, model, policies, strict=True)
    ]
    kept = [v == m for v, m in zip(as_modelled, model, strict=True)]
    as_modelled = _capped(item, as_modelled, policies, kept)
    return [
        i
        for i, p in enumerate(policies)
        if p != "choice" and as_modelled[i] == model[i] and merged[i] != base[i]
    ]


def _capped(
    item: _KeyWork,
    values: list[int],
    policies: list[str],
    kept: list[bool],
    modelled: list[int] | None = None,
) -> list[int]:
    """Every cap applied to `values`. A `kept` element (the baseline itself) is left alone
    within the key's model tolerance of a cap, judged by `modelled` where given: the model's
    figure for a kernel's own value near it."""
    judged: list[int | None] = list(modelled) if modelled is not None else [None] * len(values)
    tolerance = item.spec.default_tolerance
    for _, cap in item.caps:
        limits = cap if isinstance(cap, list) else [cap]
        values = [
            _apply_cap(v, c, p, tolerance if k else 0.0, m if k else None)
            for v, c, p, k, m in zip(values, limits, policies, kept, judged, strict=True)
        ]
    return values


def _field(spec: CatalogKey, index: int) -> str:
    """A vector element's name (`max`), else its index."""
    return spec.fields[index] if spec.fields else f"element {index}"


def _apply_cap(
    value: int, cap: int | None, policy: str, tolerance: float, modelled: int | None = None
) -> int:
    """A cap moves a value only in its own direction. A baseline element within the key's
    model tolerance of the cap is left alone: the model's figures are that uncertain, and a
    value the kernel set a hair above a cap that equals its modelled default is not drift.
    `modelled`: the model's figure for a kernel's own value near it, which is what is judged
    (model error is never drift)."""
    if cap is None:
        return value
    probe = value if modelled is None else modelled
    if policy == "min":
        return value if probe >= cap - tolerance * cap else cap
    return value if probe <= cap + tolerance * cap else cap


def _elements(value: Any) -> list[int | None]:
    """A want as a list, one entry per element (None: the rule is not about that element)."""
    return list(value) if isinstance(value, list) else [value]
