"""The plan is the whole desired state of the keys the advisor manages.

Every way of delivering a plan installs it whole: a sysctl.d file replaces the last one, a
ConfigMap or a node pool's configuration replaces the last one, `fleet` rewrites host_vars.
Several rules set a key only while the value in force falls short (a cap that binds, a table
raised where it overflowed, a value lowered only where it is higher): once the plan is applied
they ask nothing more, and a plan that then left the key out would undo its own advice at the
next install. So a key that the advisor's own file sets (facts.sysctl_files, recognised by the
writers catalog's `own` entry) stays in the plan while a rule the plan runs is about it (sets
or caps it): at the value the rules give, or, where they give nothing, at the value in force.
Keeping the value in force is never a move; the file's value as the facts give it
(sysctl_file_settings) is not what is in force where another program wrote the key since, and
the facts are hostile (a file named like the advisor's own and any value beside it): a plan
never sets a value no rule wants but the one in force. Where the value in force is not known,
the key is not kept.
A key no rule of the plan is about any more (a workload removed) leaves the plan, and so does
one that acts only with another key's values (the catalog's `acts_only_with`:
vm.overcommit_ratio counts only under vm.overcommit_memory = 2) where the plan ends with that
key elsewhere (plan_annotate.py checks it).
"""

from __future__ import annotations

from typing import NamedTuple

from sysctl_advisor.knowledge.catalog import CatalogKey
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.values import Value, conf_text, human, numbers, parse_current
from sysctl_advisor.knowledge.workloads import RuleRun
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.plan import Setting


class OwnKey(NamedTuple):
    """A key the advisor's own file sets: the file and line, the value in force (the one the
    plan keeps), the plan's rules about it and their workloads."""

    source: str
    value: Value
    rules: tuple[str, ...]
    workloads: tuple[str, ...]


def own_keys(
    kb: KnowledgeBase, facts: HostFacts, runs: list[RuleRun], applied: set[str]
) -> dict[str, OwnKey]:
    """The keys the advisor's own file sets that a rule the plan runs sets or caps (whether
    or not its `when` holds now: a rule that acts only while the value is wrong is still about
    the key once it is right); each names the rules that applied to the host where some did."""
    files = facts.sysctl_files
    if not files:
        return {}
    about: dict[str, dict[str, list[str]]] = {}  # key -> rule -> workloads
    for run in runs:
        for key in kb.rules[run.rule_id].keys:
            names = about.setdefault(key, {}).setdefault(run.rule_id, [])
            names += [w for w in run.workloads if w not in names]
    found: dict[str, OwnKey] = {}
    for key, source in files.items():
        spec = kb.catalog.keys.get(key)
        if spec is None or key not in about or not kb.writers.is_own(source):
            continue
        # the value in force, never the file's as the facts give it: keeping is no move, and
        # a value only the facts' sysctl_file_settings name would be one no rule asked for
        text = facts.sysctl.get(key)
        value = parse_current(text, spec) if text is not None else None
        if value is None:
            continue  # no value in force known, or none the key can hold
        by_rule = about[key]
        named = [r for r in by_rule if r in applied] or list(by_rule)
        workloads = tuple(dict.fromkeys(w for r in named for w in by_rule[r]))
        found[key] = OwnKey(source, value, tuple(named), workloads)
    return found


def held(
    key: str,
    own: OwnKey,
    spec: CatalogKey,
    default: Value | None,
    current_text: str | None,
    page_size: int,
    several: bool,
    caps: list[str],
) -> Setting:
    """The key at its value in force, which the advisor's own file sets, where the rules ask
    nothing else (`caps`: the safety caps that applied to it, none binding)."""
    shown = conf_text(own.value)
    why = (
        f"Kept at {shown}, as {own.source} sets it (the plan's own file, or the one a node "
        "platform writes the plan's values into): "
        f"{', '.join(own.rules)} ask{'s' if len(own.rules) == 1 else ''} no other value of it "
        "on this host now, and the plan holds every key it manages (installed whole, a key "
        "left out would go back to what the kernel or another file gives)."
    )
    lines = [why]
    if several:
        lines.append(f"Workloads: {', '.join(own.workloads)}.")
    text = "\n".join(lines)
    return Setting(
        key=key,
        value=shown,
        values=numbers(own.value),
        unit=spec.unit,
        current=" ".join(current_text.split()) if current_text is not None else None,
        kernel_default=conf_text(default) if default is not None else None,
        rules=list(own.rules),
        rationale=text,
        summary=text,
        references=list(spec.references),
        section=spec.section,
        human=human(own.value, spec, page_size),
        wanted=numbers(own.value) or None,
        caps=caps,
        workloads=list(own.workloads),
    )
