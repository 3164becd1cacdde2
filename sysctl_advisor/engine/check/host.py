"""What `check` knows of a host from its facts (the context its rules read): apart from the
judge, because it builds the plan, and the plan builder runs the judge over the values in force
it keeps (engine.kept_values)."""

from __future__ import annotations

from collections.abc import Sequence

from sysctl_advisor.engine.check.findings import CheckContext
from sysctl_advisor.engine.owners import owner_notes, owners
from sysctl_advisor.engine.plan_builder import build_plan, host_variables
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.host_facts import HostFacts


def host_context(
    kb: KnowledgeBase,
    facts: HostFacts,
    profile: str | Sequence[str] | None = None,
    overrides: dict[str, str] | None = None,
) -> CheckContext:
    """What check knows of a host from its facts: its kernel (with the era quantities the
    rules read, as recommend sees them), its modelled defaults, whether it is a Kubernetes
    node, and the plan for `profile` run with `overrides` (the --set parameters)."""
    variables, defaults, _ = host_variables(kb, facts)
    kernel = variables["kernel"]
    return CheckContext(
        owners=owner_notes(owners(kb, variables), kb.catalog, every=True),
        facts=facts,
        kernel=kernel.version,
        host=variables["host"],
        defaults=defaults,
        plan=build_plan(kb, facts, profile, overrides) if profile is not None else None,
        kernel_data=kernel,
        kubernetes=variables["kubernetes"],
    )
