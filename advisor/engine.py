"""The engine: a pure function (facts, profile, params, rules, catalog) -> Plan.

Per key: wants from every rule that sets it are merged by the catalog's policy (`max` never goes
below the kernel default; for keys the catalog marks as pure capacities, a value in force that
already covers the wants is kept), then every safety cap is applied (caps beat wants, and the
rationale says so), then vector order (min <= default <= max) and the catalog's bounds are
enforced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.catalog import CatalogKey
from advisor.facts import HostFacts
from advisor.knowledge import KnowledgeBase
from advisor.plan import Companion, Finding, Plan, PlanHost, PlanProfile, Setting, Unchanged
from advisor.rules import SEVERITY_ORDER, RuleResult
from advisor.values import Value, as_list, conf_text, human, parse_current


@dataclass
class _KeyWork:
    key: str
    spec: CatalogKey
    wants: list[tuple[str, Any]] = field(default_factory=list)
    caps: list[tuple[str, Any]] = field(default_factory=list)


def host_variables(
    kb: KnowledgeBase, facts: HostFacts
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What every expression sees about the host, its kernel defaults, and notes."""
    version, distro, known, notes = kb.catalog.kernel_for(facts)
    host, kernel = kb.catalog.evaluate_host(facts, version, distro, known)
    variables: dict[str, Any] = {
        "facts": facts,
        "host": host,
        "kernel": kernel,
        "page_size": facts.page_size,
        "observed": facts.observed,
        "services": facts.services,
        "nics": facts.nics,
    }
    defaults, _ = kb.catalog.defaults(variables)
    return variables, defaults, notes


def host_defaults(kb: KnowledgeBase, facts: HostFacts) -> dict[str, str | None]:
    """The kernel boot default of every catalog key on this host, as sysctl.conf text."""
    _, defaults, _ = host_variables(kb, facts)
    return {k: (conf_text(v) if v is not None else None) for k, v in defaults.items()}


def build_plan(
    kb: KnowledgeBase, facts: HostFacts, profile_name: str, overrides: dict[str, str] | None = None
) -> Plan:
    catalog = kb.catalog
    profile = kb.profile(profile_name)
    variables, defaults, notes = host_variables(kb, facts)
    version = variables["kernel"].version
    current: dict[str, Value | None] = {}
    current_text: dict[str, str] = {}
    for name, spec in catalog.keys.items():
        text = facts.sysctl.get(name)
        if text is not None:
            current_text[name] = text
        current[spec.alias] = parse_current(text, spec) if text is not None else None
    variables["current"] = current
    variables["params"] = params = profile.resolve(overrides or {}, variables)

    results: list[RuleResult] = []
    for rule_id in profile.rule_ids:
        result = kb.rules[rule_id].evaluate(variables)
        if result is not None:
            results.append(result)

    work: dict[str, _KeyWork] = {}
    for result in results:
        for key, value in result.wants.items():
            work.setdefault(key, _KeyWork(key, catalog.keys[key])).wants.append(
                (result.rule.id, value)
            )
        for key, value in result.caps.items():
            work.setdefault(key, _KeyWork(key, catalog.keys[key])).caps.append(
                (result.rule.id, value)
            )
    by_rule = {r.rule.id: r for r in results}

    settings: list[Setting] = []
    unchanged: list[Unchanged] = []
    for key in catalog.keys:  # catalog order, then sorted by section below: deterministic
        if key not in work:
            continue
        item = work[key]
        if not catalog.exists(key, version):
            notes.append(
                f"{key} does not exist on kernel {version.short}; not emitted "
                f"(wanted by {', '.join(r for r, _ in item.wants + item.caps)})"
            )
            continue
        if not item.wants and defaults.get(key) is None:
            notes.append(
                f"{key}: the kernel default on this host is not known and no rule sets "
                f"a value, so the cap from {', '.join(r for r, _ in item.caps)} "
                "cannot be applied"
            )
            continue
        setting = _resolve(
            item,
            defaults.get(key),
            current.get(item.spec.alias),
            current_text.get(key),
            by_rule,
            facts.page_size,
        )
        if isinstance(setting, Unchanged):
            unchanged.append(setting)
        elif setting is not None:
            settings.append(setting)

    section_order = {s.id: i for i, s in enumerate(catalog.sections)}
    key_order = {k: i for i, k in enumerate(catalog.keys)}
    settings.sort(key=lambda s: (section_order[s.section], key_order[s.key]))

    findings = sorted(
        {
            (f.id, f.key, f.message): Finding(
                id=f.id, severity=f.severity, key=f.key, message=f.message, rule=f.rule
            )
            for r in results
            for f in r.findings
        }.values(),
        key=lambda f: (SEVERITY_ORDER[f.severity], f.id, f.key or "", f.message),
    )
    companions = list(
        {
            (c.target, c.setting): Companion(
                target=c.target, setting=c.setting, rationale=c.rationale, rule=c.rule
            )
            for r in results
            for c in r.companions
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
        profile=PlanProfile(name=profile.name, params=params),
        settings=settings,
        findings=findings,
        companions=companions,
        unchanged=unchanged,
        notes=notes,
        applied_rules=[r.rule.id for r in results],
    )


def _merge(values: list[list[int]], policies: list[str]) -> list[int]:
    return [
        max(column) if policy == "max" else min(column)
        for column, policy in zip(zip(*values, strict=True), policies, strict=True)
    ]


def _resolve(
    item: _KeyWork,
    default: Value | None,
    current: Value | None,
    current_text: str | None,
    by_rule: dict[str, RuleResult],
    page_size: int,
) -> Setting | Unchanged | None:
    """Merge the wants (the kernel default is an implicit one), apply caps, order, bounds."""
    spec = item.spec
    policies = spec.policies()
    want_rules = [r for r, _ in item.wants]
    lines: list[str] = []
    if item.wants:
        wanted = _merge([as_list(v) for _, v in item.wants], policies)
        merged = wanted
        if default is not None and "choice" not in policies:
            merged = _merge([wanted, as_list(default)], policies)
    elif default is not None:
        merged = as_list(default)
        wanted = list(merged)
    else:
        return None

    kept: list[int] | None = None
    if spec.keep_higher_current and item.wants and current is not None:
        held = as_list(current)
        # Even below the kernel default: the operator's value already does what the rules need.
        same_shape = len(held) == len(wanted)
        if same_shape and held != merged and all(h >= w for h, w in zip(held, wanted, strict=True)):
            kept = merged = held

    before_caps = list(merged)
    capped_by: list[str] = []
    for rule_id, cap in item.caps:
        limits = cap if isinstance(cap, list) else [cap]
        lowered = [
            v if c is None else (min(v, c) if p == "max" else max(v, c))
            for v, c, p in zip(merged, limits, policies, strict=True)
        ]
        if lowered != merged:
            capped_by.append(rule_id)
            merged = lowered
    if capped_by:
        if kept is not None:
            source = f"the value in force {conf_text(kept)}"
        elif not item.wants:
            source = f"the kernel default {conf_text(before_caps)}"
        elif before_caps != wanted:
            source = (
                f"{conf_text(before_caps)} (the wants {conf_text(wanted)} merged with the "
                f"kernel default)"
            )
        else:
            source = f"the wanted {conf_text(wanted)}"
        lines.append(
            f"Safety cap ({', '.join(capped_by)}) wins: {source} becomes {conf_text(merged)}."
        )
    elif kept is not None:
        lines.append(
            f"The value in force, {conf_text(kept)}, already covers what the rules need "
            f"({conf_text(wanted)}); it is kept."
        )
    elif item.wants and merged != wanted:
        lines.append(
            f"Where the kernel default gives more than the rules want "
            f"({conf_text(wanted)}), the default is kept."
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
        )

    paragraphs = [
        f"[{rid}] {by_rule[rid].rationale_for(item.key)}"
        for rid in contributing
        if by_rule[rid].rationale_for(item.key)
    ]
    rationale = "\n".join(paragraphs + lines)
    references: list[str] = []
    for rid in contributing:
        for ref in by_rule[rid].rule.spec.references:
            if ref not in references:
                references.append(ref)
    for ref in spec.references:
        if not any(r.startswith(ref) for r in references):
            references.append(ref)
    return Setting(
        key=item.key,
        value=conf_text(final),
        values=as_list(final),
        unit=spec.unit,
        current=" ".join(current_text.split()) if current_text is not None else None,
        kernel_default=conf_text(default) if default is not None else None,
        rules=contributing,
        rationale=rationale,
        references=references,
        section=spec.section,
        human=human(final, spec, page_size),
        capped_by=capped_by,
    )
