"""build_plan's merge phase: the rules' wants and caps gathered by key, less those no value can
settle (a key an owner on the host forbids other values of, a mode the workloads want two
ways, a preference cap against another rule's want), each of which a contradiction names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sysctl_advisor.engine.owners import Owners, contradiction, forbidden
from sysctl_advisor.engine.plan_work import KeyWork, element_list, element_name, work_of
from sysctl_advisor.knowledge.catalog import Catalog
from sysctl_advisor.knowledge.rules import FindingResult, RuleResult
from sysctl_advisor.knowledge.values import as_list, conf_text, parse_current
from sysctl_advisor.knowledge.workloads import RuleRun

if TYPE_CHECKING:
    from sysctl_advisor.engine.plan_host import PlanInputs


def merge_wants(
    results: list[tuple[RuleRun, RuleResult]], inputs: PlanInputs
) -> tuple[dict[str, KeyWork], list[FindingResult]]:
    """Each key's wants and caps, less those no value can settle: a key an owner on the
    host forbids other values of, and a mode the workloads want two ways (findings say
    which). Before `planned` is worked out, so rules that read it see what the plan does."""
    catalog = inputs.kb.catalog
    names = inputs.workload.names
    work = work_of(results, catalog, inputs.several)
    found_here = _left_to_owners(work, inputs.found, catalog)
    contradictions = _contradictions(work, names, inputs.current_text)
    preferences = _preference_contradictions(work, names, inputs.current_text)
    return work, found_here + contradictions + preferences


def _left_to_owners(
    work: dict[str, KeyWork], found: Owners, catalog: Catalog
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
    work: dict[str, KeyWork], workloads: list[str], in_force: dict[str, str]
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


def _preference_contradictions(
    work: dict[str, KeyWork], workloads: list[str], in_force: dict[str, str]
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
            limits = element_list(cap)
            clashes: dict[int, list[int]] = {}  # element -> the wants it clashes with
            for want_index, (want_rule, want) in enumerate(item.wants):
                for i, (c, w, p) in enumerate(
                    zip(limits, element_list(want), policies, strict=True)
                ):
                    if want_rule != cap_rule and _against(c, w, p):
                        clashes.setdefault(i, []).append(want_index)
            if not clashes:
                continue
            found.append(_preference_finding(item, cap_rule, limits, clashes, workloads, in_force))
            for i, indexes in clashes.items():
                limits[i] = None
                for want_index in indexes:
                    rule_id, want = item.wants[want_index]
                    elements = element_list(want)
                    elements[i] = None
                    item.wants[want_index] = (rule_id, elements if isinstance(want, list) else None)
            item.caps[cap_index] = (cap_rule, limits if isinstance(cap, list) else None)
        kept = [
            i for i, (_, v) in enumerate(item.wants) if any(e is not None for e in element_list(v))
        ]
        item.wants[:] = [item.wants[i] for i in kept]
        item.want_from[:] = [item.want_from[i] for i in kept]
        item.caps[:] = [(r, v) for r, v in item.caps if any(e is not None for e in element_list(v))]
    for key in [k for k, item in work.items() if not item.wants and not item.caps]:
        del work[key]
    return found


def _against(cap: int | None, want: int | None, policy: str) -> bool:
    """A cap would move a wanted element back (below a capacity want, above a safety one)."""
    if cap is None or want is None:
        return False
    return want < cap if policy == "min" else want > cap


def _named(item: KeyWork, rule_id: str, workloads: list[str]) -> str:
    """A rule, with the workloads it ran for where the plan runs others too."""
    who = item.workloads.get(rule_id, [])
    return f"{rule_id} ({', '.join(who)})" if who and len(who) < len(workloads) else rule_id


def _preference_finding(
    item: KeyWork,
    cap_rule: str,
    limits: list[int | None],
    clashes: dict[int, list[int]],
    workloads: list[str],
    in_force: dict[str, str],
) -> FindingResult:
    """The warning for a preference cap against wants: each element, who wants what, the
    value that stays, and each rule's reason."""
    # the value in force as the kernel holds it: words of text it cannot hold are not one
    text = in_force.get(item.key)
    parsed = parse_current(text, item.spec) if text is not None else None
    held = [str(v) for v in as_list(parsed)] if isinstance(parsed, int | list) else []
    parts: list[str] = []
    rules = [cap_rule]
    for i, indexes in sorted(clashes.items()):
        field_name = element_name(item.spec, i) if item.spec.length > 1 else "value"
        wants = "; ".join(
            f"{_named(item, item.wants[w][0], workloads)} wants {element_list(item.wants[w][1])[i]}"
            for w in indexes
        )
        stays = (
            f"the value in force ({held[i]}) stays"
            if len(held) == item.spec.length
            else "the kernel default stays"
        )
        capper = _named(item, cap_rule, workloads)
        parts.append(
            f"its {field_name}: {capper} would hold it at {limits[i]}, a preference of "
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
