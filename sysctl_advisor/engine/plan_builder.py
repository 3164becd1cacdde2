"""build_plan: a pure function (facts, profile, params, rules, catalog) -> Plan, in phases, each
a module of its own:

1. resolve workloads (plan_host): the values in force, the host's defaults, the workloads'
   parameters and the rule runs;
2. run rules (plan_rules): each run evaluated with `planned` at the baseline;
3. merge wants (plan_merge): each key's wants and caps by the catalog's policy (`max` never
   goes below the kernel default; for keys the catalog marks as pure capacities, a value in
   force that already covers the wants is kept), less what no value can settle;
4. apply caps and floors (plan_resolve, plan_text_keys), key by key: caps beat wants (and the
   rationale says so), then vector order (min <= default <= max), the catalog's bounds and a
   capacity's floor;
5. settle (plan_settle): rules that read `planned` run again until nothing they read moves;
6. annotate (plan_annotate): settings, notes, findings, companions and references.

host_variables and host_defaults, what every expression sees of a host, live here too.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any, NamedTuple

from sysctl_advisor.engine.plan_annotate import annotate
from sysctl_advisor.engine.plan_host import resolve_workloads
from sysctl_advisor.engine.plan_rules import RuleRunner, run_rules
from sysctl_advisor.engine.plan_settle import settle
from sysctl_advisor.knowledge.catalog import KernelContext
from sysctl_advisor.knowledge.expression_budget import new_budget
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.servers import rule_listens
from sysctl_advisor.knowledge.values import conf_text
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.plan import Plan


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
    workload = kb.workload(profile_name)
    host = host_variables(kb, facts, memo)
    inputs = resolve_workloads(kb, facts, workload, host, overrides, netns_defaults)
    runner = RuleRunner(inputs)
    round_ = run_rules(runner)
    round_.merge(inputs)
    settle(runner, round_)
    return annotate(inputs, round_)
