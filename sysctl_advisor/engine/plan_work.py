"""Each key's wants and caps, by rule, as the plan gathers them from the rules' results: the
structure the merge, the caps and the annotations of build_plan work on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sysctl_advisor.knowledge.catalog import Catalog, CatalogKey
from sysctl_advisor.knowledge.rules import RuleResult
from sysctl_advisor.knowledge.sources import citation_parts
from sysctl_advisor.knowledge.values import Value, conf_text, human, numbers
from sysctl_advisor.knowledge.workloads import RuleRun
from sysctl_advisor.model.plan import Setting


@dataclass
class KeyWork:
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
        old = element_list(entries[i][1])
        new = element_list(value)
        merged = [
            a
            if b is None
            else b
            if a is None
            else tighter(a, b, p)
            if kind == "cap"
            else pick([a, b], p)
            for a, b, p in zip(old, new, policies, strict=True)
        ]
        entries[i] = (rule_id, merged if isinstance(entries[i][1], list) else merged[0])
        if kind == "want":
            self.want_from[i] += run.workloads
            if merged == new and merged != old:
                self.results[rule_id] = result  # the run whose want won explains the key


class Explained(NamedTuple):
    rationale: str
    summary: str
    references: list[str]  # the rules' citations, then the catalog key's
    cited: dict[str, list[str]]  # each rule's own


def _explained(
    item: KeyWork, contributing: list[str], by_rule: dict[str, RuleResult], lines: list[str]
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


def work_of(
    results: list[tuple[RuleRun, RuleResult]], catalog: Catalog, several: bool = False
) -> dict[str, KeyWork]:
    """Each key's wants and caps, by rule (`several`: the plan runs several workloads)."""
    work: dict[str, KeyWork] = {}
    for run, result in results:
        for kind, values in (("want", result.wants), ("cap", result.caps)):
            for key, value in values.items():
                item = work.get(key)
                if item is None:
                    item = work[key] = KeyWork(key, catalog.keys[key], several=several)
                item.add(kind, run, result, value)
    return work


def first_by_rule(results: list[tuple[RuleRun, RuleResult]]) -> dict[str, RuleResult]:
    """Each rule's result (its first run's, where it ran for several workloads)."""
    found: dict[str, RuleResult] = {}
    for _, result in results:
        found.setdefault(result.rule.id, result)
    return found


def pick(values: list[int], policy: str) -> int:
    return max(values) if policy in ("max", "choice") else min(values)


def tighter(a: int, b: int, policy: str) -> int:
    """Of two caps on one element, the one that binds first."""
    return max(a, b) if policy == "min" else min(a, b)


def element_name(spec: CatalogKey, index: int) -> str:
    """A vector element's name (`max`), else its index."""
    return spec.fields[index] if spec.fields else f"element {index}"


def element_list(value: Any) -> list[int | None]:
    """A want as a list, one entry per element (None: the rule is not about that element)."""
    return list(value) if isinstance(value, list) else [value]


class KeyBasis(NamedTuple):
    """What a key's wants and caps are resolved against: its kernel default, the value in
    force (parsed, and as the facts give it), each rule's result by id (whose text explains
    it), the page size (for the human figure), whether a sysctl file the operator owns sets
    it, or it is the host's default beyond the model's tolerance (`file_set`: no tolerance
    keeps it from a cap or a want), the model's figure for a value in force taken for the
    kernel's own within its tolerance (`modelled`), and whether to write the explanation
    (`text`: False for a value worked out for `planned`)."""

    default: Value | None
    current: Value | None
    current_text: str | None
    by_rule: dict[str, RuleResult]
    page_size: int
    file_set: bool = False
    modelled: Value | None = None
    text: bool = True


def setting_for(
    item: KeyWork,
    basis: KeyBasis,
    final: Value,
    contributing: list[str],
    lines: list[str],
    current: str | None,
    **internal: Any,
) -> Setting:
    """The setting that moves a key to `final`: `values` and `current` as the key's kind
    writes them, explained by the contributing rules' text and the merge's `lines` (and the
    workloads that wanted it, where the plan runs several); `internal`: what only a number
    key carries (its caps and wants)."""
    spec = item.spec
    why, workloads = item.explained(contributing, basis.by_rule, lines, basis.text)
    return Setting(
        key=item.key,
        value=conf_text(final),
        values=numbers(final) if not spec.is_text else [],
        unit=spec.unit,
        current=current,
        kernel_default=conf_text(basis.default) if basis.default is not None else None,
        rules=contributing,
        rationale=why.rationale,
        summary=why.summary,
        references=why.references,
        cited=why.cited,
        section=spec.section,
        human=human(final, spec, basis.page_size),
        workloads=workloads,
        **internal,
    )
