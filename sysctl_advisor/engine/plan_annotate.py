"""build_plan's last phase: the settled round made a Plan. Each key the rules or the advisor's
own file are about is emitted with its caps and floors applied, or left out with a note (it
acts only with a value the plan does not end with, does not exist on the kernel, or needs a
module the facts do not show); then the findings, companions and references, each once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sysctl_advisor.engine.kept_values import accept_kept
from sysctl_advisor.engine.own_file import OwnKey, held, own_keys
from sysctl_advisor.engine.owners import forbidden, owned_settings, owner_notes
from sysctl_advisor.engine.plan_host import HostDefault, PlanInputs
from sysctl_advisor.engine.plan_resolve import resolve_key
from sysctl_advisor.engine.plan_rules import RuleRound
from sysctl_advisor.engine.plan_work import KeyWork, first_by_rule
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.rules import CompanionResult, FindingResult, RuleResult
from sysctl_advisor.knowledge.sources import citation_parts
from sysctl_advisor.knowledge.values import parse_current
from sysctl_advisor.knowledge.workloads import RuleRun
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


@dataclass
class _Ends:
    """The values the plan ends with, key by key: what decides whether a key that acts only
    with another is emitted."""

    inputs: PlanInputs
    round_: RuleRound
    by_rule: dict[str, RuleResult]

    def resolved(self, key: str, text: bool = True) -> Setting | Unchanged | str | None:
        """The key's outcome (None where no rule wants or caps it)."""
        item = self.round_.work.get(key)
        return resolve_key(self.inputs, item, self.by_rule, text) if item is not None else None

    def ends_with(self, key: str) -> Any:
        """The value the plan ends with for a key: its setting, else the value in force (or
        the default)."""
        spec = self.inputs.kb.catalog.keys[key]
        setting = self.resolved(key, text=False) if key not in self.inputs.unmodelled else None
        if isinstance(setting, Setting):  # a key not emitted stays as it is
            return parse_current(setting.value, spec)
        return self.inputs.baseline[spec.alias]

    def acts(self, key: str) -> bool:
        """Whether the key has an effect with the plan's values (its `acts_only_with`)."""
        other = self.inputs.kb.catalog.keys[key].acts_only_with
        return other is None or self.ends_with(other.key) in other.values


def annotate(inputs: PlanInputs, round_: RuleRound) -> Plan:
    """Phase six: the plan. Settings in catalog order, sorted by section, with the values in
    force a check rule would flag accepted; the findings of the rules (once each where a rule
    ran for several workloads), the merge's contradictions, the evidence set aside and the
    other writers'; their companions; the references the settings cite."""
    kb, facts = inputs.kb, inputs.facts
    ends = _Ends(inputs, round_, first_by_rule(round_.results))
    settings, unchanged = _settings(inputs, ends)
    settings = accept_kept(kb, facts, inputs.variables, inputs.defaults, settings)
    reported = _reported(round_.results, round_.work)
    owned, owner_companions = owned_settings(kb, inputs.found, settings, facts.cpu.threads or 1)
    workload = inputs.workload
    return Plan(
        host=PlanHost(
            hostname=facts.hostname,
            kernel=facts.kernel,
            arch=facts.arch,
            bits=facts.bits,
            memory_total=facts.memory.total,
            lowmem=facts.lowmem if facts.bits == 32 else None,
            page_size=facts.page_size,
            kernel_modelled_as=inputs.variables["kernel"].version.short,
        ),
        profile=PlanProfile(
            name=workload.name, params=workload.shown(inputs.params_by), workloads=workload.names
        ),
        settings=settings,
        findings=_findings(
            [*(f for r in reported for f in r.findings), *round_.contradictions],
            [*inputs.dated, *owned],
        ),
        companions=_companions([*(c for r in reported for c in r.companions), *owner_companions]),
        unchanged=unchanged,
        notes=inputs.notes,
        applied_rules=list(dict.fromkeys(r.rule.id for _, r in round_.results)),
        references=_references(kb, settings),
        owners=owner_notes(inputs.found, kb.catalog),
    )


def _settings(inputs: PlanInputs, ends: _Ends) -> tuple[list[Setting], list[Unchanged]]:
    """Each key the rules or the advisor's own file are about: a setting, an unchanged key, or
    a note in the plan's notes (after the note of a host default not foreseen)."""
    catalog, work = inputs.kb.catalog, ends.round_.work
    own = _own_kept(inputs, ends)
    settings: list[Setting] = []
    unchanged: list[Unchanged] = []
    for key in catalog.keys:  # catalog order, sorted by section below
        if (key not in work and key not in own) or key in inputs.unmodelled:
            continue
        why_not = _not_emitted(inputs, ends, own, key)
        if why_not is not None:
            inputs.notes.append(why_not)
            continue
        host_default = inputs.kernel_values.get(key)
        if host_default is not None and host_default.note is not None:
            inputs.notes.append(host_default.note)
        setting = _outcome(inputs, ends, own, key, host_default)
        if isinstance(setting, str):
            inputs.notes.append(setting)
        elif isinstance(setting, Unchanged):
            unchanged.append(setting)
        elif setting is not None:
            settings.append(setting)
    section_order = {s.id: i for i, s in enumerate(catalog.sections)}
    key_order = {k: i for i, k in enumerate(catalog.keys)}
    settings.sort(key=lambda s: (section_order[s.section], key_order[s.key]))
    return settings, unchanged


def _own_kept(inputs: PlanInputs, ends: _Ends) -> dict[str, OwnKey]:
    """Keys the advisor's own file sets: the plan keeps them, not against an owner, nor where
    the key it acts only with ends elsewhere (a strict-mode ratio, mode 0)."""
    kb, catalog = inputs.kb, inputs.kb.catalog
    applied = {r.rule.id for _, r in ends.round_.results}
    return {
        key: held_key
        for key, held_key in own_keys(kb, inputs.facts, inputs.runs, applied).items()
        if forbidden(inputs.found, catalog, key, [held_key.value]) is None and ends.acts(key)
    }


def _not_emitted(inputs: PlanInputs, ends: _Ends, own: dict[str, OwnKey], key: str) -> str | None:
    """Why a key the plan is about is left out (a note), or None: it acts only while another
    key holds a value the plan does not end with, it does not exist on the kernel, or its
    module is not loaded."""
    catalog, spec = inputs.kb.catalog, inputs.kb.catalog.keys[key]
    version = inputs.variables["kernel"].version
    work_item = ends.round_.work.get(key)
    wanted_by = ", ".join(work_item.rule_ids() if work_item is not None else own[key].rules)
    if not ends.acts(key):
        other = spec.acts_only_with
        assert other is not None
        return (
            f"{key} acts only while {other.key} is "
            f"{' or '.join(str(v) for v in other.values)}, which this plan does not end "
            f"with (the value in force is not known or another one stays); not emitted "
            f"(wanted by {wanted_by})"
        )
    if not catalog.exists(key, version):
        return (
            f"{key} does not exist on kernel {version.short}; not emitted (wanted by {wanted_by})"
        )
    if spec.module and key not in inputs.facts.sysctl:
        return (
            f"{key} exists only where the {spec.module} module is loaded, and the facts "
            f"do not show it; not emitted (wanted by {wanted_by})"
        )
    return None


def _outcome(
    inputs: PlanInputs,
    ends: _Ends,
    own: dict[str, OwnKey],
    key: str,
    host_default: HostDefault | None,
) -> Setting | Unchanged | str | None:
    """The key's outcome, with its caps and floors applied; a key the advisor's own file sets
    that no rule moves is held as it is; both say who set the host's default, where that is
    not the kernel as modelled."""
    spec = inputs.kb.catalog.keys[key]
    work_item: KeyWork | None = ends.round_.work.get(key)
    setting = ends.resolved(key)
    if key in own and (setting is None or isinstance(setting, Unchanged)):
        setting = held(
            key, own[key], spec, inputs.defaults.get(key), inputs.current_text.get(key),
            inputs.facts.page_size, inputs.several,
            [r for r, _ in work_item.caps] if work_item else [],
        )  # fmt: skip
    if host_default is not None and isinstance(setting, Setting | Unchanged):
        setting = dataclasses.replace(
            setting,
            default_set_by=host_default.set_by,
            modelled_default=host_default.modelled,
        )
    return setting


def _findings(reported: list[FindingResult], others: list[FindingResult]) -> list[Finding]:
    """The findings, each (id, key, message) once, most severe first."""
    return sorted(
        {
            (f.id, f.key, f.message): Finding(
                id=f.id, severity=f.severity, key=f.key, message=f.message, rule=f.rule
            )
            for f in [*reported, *others]
        }.values(),
        key=lambda f: (SEVERITY_ORDER[f.severity], f.id, f.key or "", f.message),
    )


def _companions(found: list[CompanionResult]) -> list[Companion]:
    """The companions, each (target, setting) once, in their order."""
    companions = list(
        {
            (c.target, c.setting): Companion(
                target=c.target, setting=c.setting, rationale=c.rationale, rule=c.rule
            )
            for c in found
        }.values()
    )
    companions.sort(key=lambda c: (c.target, c.setting))
    return companions


def _reported(
    results: list[tuple[RuleRun, RuleResult]], work: dict[str, KeyWork]
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
