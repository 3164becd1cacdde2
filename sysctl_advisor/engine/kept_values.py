"""A value in force the plan keeps (it already gives what the rules ask, in the direction they
ask) can be one a check rule flags: an operator's vm.swappiness = 0 under a rule that wants 1.
The plan is the whole desired state, so it still writes the line, and says on it, with the
suppression comment check reads (`# sysctl-advisor: ignore[check.ID] reason`), that the value
is kept on purpose: the advisor's own file passes its own check, and the plan's findings say
whether to change the value."""

from __future__ import annotations

import dataclasses
from typing import Any

from sysctl_advisor.knowledge.catalog import CatalogKey
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.values import as_list, conf_text, parse_current
from sysctl_advisor.model.current_config import CurrentConfig, CurrentValue
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.plan import Setting
from sysctl_advisor.model.severity import SEVERITY_ORDER

_SHOWN = "(the plan)"  # the name the kept lines are judged under


def _kept(setting: Setting, spec: CatalogKey) -> bool:
    """The value written is the one in force, and not what the rules asked for. The value in
    force is compared as the kernel holds it: the facts may spell it otherwise (`00`, `0x0`,
    `0 # note`) than the plan writes it."""
    if setting.current is None or setting.wanted is None or setting.values == setting.wanted:
        return False
    if setting.current.split() == setting.value.split():
        return True
    held = None if spec.is_text else parse_current(setting.current, spec)
    return isinstance(held, int | list) and as_list(held) == setting.values


def accept_kept(
    kb: KnowledgeBase,
    facts: HostFacts,
    variables: dict[str, Any],
    defaults: dict[str, Any],
    settings: list[Setting],
) -> list[Setting]:
    """The settings, each kept value in force that a check rule (warning or error) flags
    carrying that rule's id and the reason it is kept."""
    kept = [s for s in settings if _kept(s, kb.catalog.keys[s.key])]
    if not kept:
        return settings
    # check's judge only for a plan that keeps such a value: most plans never define it
    from sysctl_advisor.engine.check.findings import CheckContext
    from sysctl_advisor.engine.check.judge import Checker
    from sysctl_advisor.model.sysctl_conf import Assignment

    kernel = variables["kernel"]
    context = CheckContext(
        facts=facts,
        kernel=kernel.version,
        host=variables["host"],
        defaults=defaults,
        kernel_data=kernel,
        kubernetes=variables["kubernetes"],
    )
    # the whole file the plan writes, as check reads it: a rule may read another line
    lines = [Assignment(s.key, s.value, number) for number, s in enumerate(settings, start=1)]
    kept_keys = {s.key for s in kept}
    config = CurrentConfig(
        "file",
        _SHOWN,
        values={
            a.key: CurrentValue(a.key, a.value, f"{_SHOWN}:{a.line}", file=_SHOWN, line=a.line)
            for a in lines
        },
        files=[_SHOWN],
        documents=[(_SHOWN, lines)],
    )
    flagged: dict[str | None, list[str]] = {}
    for finding in Checker(kb, kb.check_rules, context).check_config(config):
        serious = SEVERITY_ORDER[finding.severity] <= SEVERITY_ORDER["warning"]
        if finding.key in kept_keys and serious:
            flagged.setdefault(finding.key, []).append(finding.id)
    return [
        dataclasses.replace(s, accepted=[(r, _reason(s)) for r in dict.fromkeys(flagged[s.key])])
        if s.key in flagged
        else s
        for s in settings
    ]


def _reason(setting: Setting) -> str:
    """Short: the comment is one line, and check reads the reason to its end."""
    return f"kept as in force, the rules ask {conf_text(setting.wanted or [])}"
