"""Plain-text descriptions for `explain`, `profiles` and `rules`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from sysctl_advisor.engine.plan_builder import build_plan, host_defaults
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.near_names import unknown_name
from sysctl_advisor.model.plan import Plan
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.outputs.plan_render import default_origin


def _wrap(text: str, indent: str = "  ") -> str:
    return "\n".join(
        textwrap.fill(p, width=96, initial_indent=indent, subsequent_indent=indent)
        for p in text.splitlines()
        if p.strip()
    )


def resolve_key(kb: KnowledgeBase, key: str) -> str:
    if key in kb.catalog.keys:
        return key
    alias = key.replace("-", "_")
    if alias in kb.catalog.by_alias:
        return str(kb.catalog.by_alias[alias])
    # a typo of a key or of its short name: the keys meant, by their full names
    names = {**{str(name): str(name) for name in kb.catalog.keys}, **kb.catalog.by_alias}
    raise unknown_name("key", key, names, "KEY", "rules/catalog/keys.yaml lists the keys")


def _kubernetes(kb: KnowledgeBase, name: str) -> str:
    """Whether a pod sets the key (its own namespace) and on which releases it is safe."""
    spec = kb.catalog.keys[name]
    if not (name.startswith("net.") and spec.netns_since):
        return "set on the node (one value for the node and all its pods)"
    if spec.netns_restricted:
        return (
            "set on the node, which new pods copy: in a pod the kernel accepts only what the "
            "node allows"
        )
    k8s = kb.kubernetes
    safe = next((s for s in k8s.spec.kubelet_safe if s.name == name), None)
    where = f"set in the pod's securityContext.sysctls (kernel {spec.netns_since}+)"
    if safe is None:
        return f"{where}; unsafe through Kubernetes {k8s.newest} (allowedUnsafeSysctls)"
    kernel = f" on kernel {safe.kernel}+" if safe.kernel else ""
    return f"{where}; a safe sysctl from Kubernetes {safe.since}{kernel}"


def _accepted(kb: KnowledgeBase, name: str) -> str:
    """The range a number key is meant for, and the one the newest verified kernel's handler
    takes where that is another (a write outside it fails with EINVAL there)."""
    spec, newest = kb.catalog.keys[name], kb.catalog.model.newest_verified
    found = kb.catalog.bounds(name, None, None) or {}
    low, high = found.get("min", spec.min), found.get("max", spec.max)
    if (low, high) == (spec.min, spec.max):
        return f"accepted {low}..{high}"
    why = f" ({found['note']})" if found.get("note") else ""
    return f"meaningful {spec.min}..{spec.max}; Linux {newest} accepts {low}..{high}{why}"


def explain_key(
    kb: KnowledgeBase,
    key: str,
    facts: HostFacts | None,
    profile: str | Sequence[str] | None,
    overrides: dict[str, str],
) -> str:
    name = resolve_key(kb, key)
    spec = kb.catalog.keys[name]
    out = [name, _wrap(spec.summary), ""]
    shape = f"{spec.length} values ({' '.join(spec.fields)})" if spec.fields else "one value"
    accepted = {
        "name": f"a kernel name of {spec.min}..{spec.max} characters",
        "ports": f"ports and first-last ranges within {spec.min}..{spec.max}, comma-separated",
    }.get(spec.unit) or _accepted(kb, name)
    out.append(f"  unit:      {spec.unit}, {shape}, {accepted}")
    out.append(
        f"  exists:    {('kernels ' + spec.exists) if spec.exists else 'all modelled kernels'}"
    )
    scope = f"per network namespace since {spec.netns_since}" if spec.netns_since else "global"
    if spec.netns_since:
        scope += (
            f"; a new namespace copies the initial namespace's value from "
            f"{spec.netns_copies_init_since}, else starts from the kernel default"
            if spec.netns_copies_init_since
            else "; a new namespace starts from the kernel default"
        )
    cited = list(spec.references)
    shown = spec.netns_reads_init
    if shown:
        cited += shown.references
        marks = f"[{len(spec.references) + 1}-{len(cited)}]"
        scope += (
            f"; from {shown.since} another network namespace (a pod, a container) shows the "
            "initial namespace's value in force, read-only; before, the key is absent there "
            + marks
        )
    out.append(f"  scope:     {scope}")
    out.append(f"  pods:      {_kubernetes(kb, name)}")
    policy = {
        "max": "largest want wins; never below the value in force (else the kernel default)",
        "min": "smallest want wins (a safety setting); never above the value in force",
        "choice": "the rules choose; the default takes no part",
        "one": "every rule must want the same name, or nothing is set; no caps",
        "union": "the set only grows: the ports in force stay, wants are added; no caps",
    }.get(str(spec.merge), "per element: " + ", ".join(spec.policies()))
    caps = "" if spec.is_text else "; caps always win"
    out.append(f"  merge:     {spec.merge} ({policy}){caps}")
    if spec.floor is not None:
        floor = (
            f"floor:     {spec.floor.value}; less would {spec.floor.breaks}. The plan never "
            "writes less, an undo never restores less, check.below-floor reports less"
        )
        out.append(
            textwrap.fill(
                floor, 96, initial_indent="  ", subsequent_indent=" " * 13, break_on_hyphens=False
            )
        )
    if spec.build_option:
        out.append(f"  build:     {spec.build_option} can choose another boot default")
    out.append("  kernel default by version:")
    for era in spec.default:
        value = " ".join(str(era.value).split()) if era.value is not None else "not modelled"
        if spec.unlimited is not None and era.value == spec.unlimited:
            value += " (unlimited)"
        applies = era.kernels or "all"
        if era.when:
            applies += f" when {era.when}"
        out.append(f"    {applies:<18} {value}")
        if era.note:
            out.append(_wrap(era.note, "                       "))
    setters = [r for r in kb.rules.values() if name in r.spec.set or name in r.spec.cap]
    out.append("  rules:")
    for rule in setters:
        role = "caps" if name in rule.spec.cap and name not in rule.spec.set else "sets"
        out.append(f"    {rule.id} ({role}): {rule.spec.title}")
    if not setters:
        out.append("    none")
    out += _references(kb, cited)
    if facts is not None:
        version = kb.catalog.kernel_for(facts)[0]
        out.append("")
        plan = None
        if not kb.catalog.exists(name, version):
            out.append(f"On kernel {version.short} this key does not exist.")
        elif profile is not None:
            plan = build_plan(kb, facts, profile, overrides)
            profile = plan.profile.name
            found = [s for s in plan.settings if s.key == name]
            if found:
                s = found[0]
                out.append(f"Profile {profile}: {name} = {s.value} ({s.human})")
                origin = default_origin(s.default_set_by, s.modelled_default)
                if origin is not None:
                    out.append(f"  host default here: {s.kernel_default} ({origin})")
                else:
                    out.append(f"  kernel default here: {s.kernel_default or 'unknown'}")
                out.append(_wrap(s.rationale))
                out += _references(kb, s.references)
            else:
                covered = [u for u in plan.unchanged if u.key == name]
                if covered:
                    u = covered[0]
                    origin = default_origin(u.default_set_by, u.modelled_default)
                    out.append(
                        f"Profile {profile}: the "
                        + ("kernel default" if origin is None else "host default")
                        + f" {u.kernel_default} "
                        + ("" if origin is None else f"({origin}) ")
                        + f"already covers what {', '.join(u.rules)} wants."
                    )
                else:
                    out.append(f"Profile {profile} does not set {name}.")
            # the findings about the key in full (a file's head gives their first sentence)
            for f in (f for f in plan.findings if f.key == name):
                out.append(f"  finding {f.id} ({f.severity}):")
                out.append(_wrap(one_line(" ".join(f.message.split())), "    "))
        default = host_defaults(kb, facts).get(name)
        out.append(
            f"Kernel default on this host ({version.short}): "
            f"{default if default is not None else 'unknown'}"
        )
        out += _observed(kb, facts, plan, name)
    return "\n".join(out) + "\n"


def _observed(kb: KnowledgeBase, facts: HostFacts, plan: Plan | None, name: str) -> list[str]:
    """The writers the facts' record shows writing the key (with a profile: the fix for its
    value in each one's configuration), and a fight over it; nothing without a record."""
    from sysctl_advisor.engine.observed_owners import observed_owners
    from sysctl_advisor.outputs.diff_report import SHOWN_OWNERS, more_owners, observed_line

    observed = observed_owners(kb, facts, plan)
    if observed is None:
        return []
    if not observed.available:
        return [
            _wrap(
                f"Observed writers: provenance {one_line(observed.provenance)[:200]}: the "
                "static tier only.",
                "",
            )
        ]
    owners = observed.by_key.get(name, [])
    out = [f"Observed writers ({one_line(observed.provenance)[:200]}):"]
    if not owners:
        out.append(f"  none wrote {name} while the record ran")
    for in_force in (True, None, False):  # as many of each as diff shows, the others counted
        chosen = [o for o in owners if o.in_force is in_force]
        for owner in chosen[:SHOWN_OWNERS]:
            line = observed_line(name, owner).removeprefix(f"{name}: ")
            out.append(_wrap(line[0].upper() + line[1:], "  "))
        if len(chosen) > SHOWN_OWNERS:
            line = more_owners(name, len(chosen) - SHOWN_OWNERS).removeprefix(f"{name}: ")
            out.append(_wrap(line[0].upper() + line[1:], "  "))
    for f in (f for f in observed.findings if f.key == name):
        out.append(f"  finding {f.id} ({f.severity}):")
        out.append(_wrap(one_line(" ".join(f.message.split())), "    "))
    return out


def _bound(value: float | None) -> str:
    """A parameter bound as written: integers whole (2147483647, not 2.14748e+09)."""
    if value is None:
        return ""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:g}"


def describe_profiles(kb: KnowledgeBase) -> str:
    out: list[str] = []
    for profile in kb.profiles.values():
        chain = " <- ".join(reversed(profile.chain))
        out.append(f"{profile.name}: {profile.summary}")
        if len(profile.chain) > 1:
            out.append(f"  extends: {chain}")
        if profile.includes:
            out.append(f"  includes: {', '.join(profile.includes)}")
        if profile.description:
            out.append(_wrap(profile.description))
        if profile.parameters:
            out.append("  parameters:")
            for name, p in profile.parameters.items():
                expr = p.default_expr and one_line(" ".join(p.default_expr.split()))
                default = (expr and f"from facts: {expr}") or repr(p.default)
                bounds = ""
                if p.min is not None or p.max is not None:
                    bounds = f", {_bound(p.min)}..{_bound(p.max)}"
                unit = f" {p.unit}" if p.unit else ""
                merge = f"; merged by {p.merge} across workloads" if p.merge else ""
                out.append(f"    {name} ({p.type}{unit}{bounds}; default {default}{merge})")
                out.append(_wrap(p.description, "      "))
        out.append(f"  rules: {', '.join(profile.rule_ids)}")
        out.append("")
    return "\n".join(out)


def describe_rules(kb: KnowledgeBase, rule_id: str | None) -> str:
    if rule_id is None:
        width = max(len(r) for r in [*kb.rules, *kb.check_rules])
        lines = ["Advice rules (recommend, diff, fleet):"]
        lines += [f"  {r.id:<{width}}  {r.spec.title}" for r in kb.rules.values()]
        lines += ["", "Check rules (check):"]
        lines += [
            f"  {r.id:<{width}}  {r.spec.severity:<7}  {r.spec.title}"
            for r in sorted(kb.check_rules.values(), key=lambda r: r.id)
        ]
        return "\n".join(lines) + "\n"
    if rule_id in kb.check_rules:
        return _describe_check_rule(kb, rule_id)
    if rule_id not in kb.rules:
        known = [*kb.rules, *kb.check_rules]
        raise unknown_name("rule", rule_id, known, "RULE_ID", "`sysctl-advisor rules` lists them")
    rule = kb.rules[rule_id]
    spec = rule.spec
    profiles = [p.name for p in kb.profiles.values() if rule_id in p.rule_ids]
    out = [f"{spec.id}: {spec.title}", _wrap(spec.description), ""]
    if spec.set:
        out.append("  sets: " + ", ".join(spec.set))
    if spec.cap:
        out.append("  caps: " + ", ".join(spec.cap))
    for f in spec.findings:
        out.append(f"  finding {f.id} ({f.severity})")
    for c in spec.companions:
        out.append(f"  companion for {c.target}")
    out.append("  profiles: " + (", ".join(profiles) or "none"))
    out += _references(kb, spec.references)
    out.append(f"  file: {rule.path}")
    return "\n".join(out) + "\n"


def _references(kb: KnowledgeBase, citations: list[str]) -> list[str]:
    """A numbered list of the sources cited, each with where in it and its address."""
    out = ["  references:"]
    for n, citation in enumerate(citations, 1):
        out.append(f"    [{n}] {kb.sources.describe(citation)}")
    return out


def _describe_check_rule(kb: KnowledgeBase, rule_id: str) -> str:
    rule = kb.check_rules[rule_id]
    spec = rule.spec
    out = [f"{spec.id} ({spec.severity}): {spec.title}", _wrap(spec.rationale), ""]
    if spec.keys != ["*"]:
        out.append("  keys: " + ", ".join(spec.keys))
    if spec.needs:
        out.append("  needs: " + ", ".join(spec.needs))
    for label, text in (("fires on", spec.examples.fires), ("quiet on", spec.examples.quiet)):
        out.append(f"  {label}: " + " | ".join(one_line(x) for x in text.strip("\n").split("\n")))
    out += _references(kb, spec.references)
    out.append(f"  file: {rule.path}")
    return "\n".join(out) + "\n"
