"""build_plan's caps-and-floors phase, key by key: the wants merged with the baseline (the
value in force, else the kernel default), the model's tolerance, every cap, vector order, the
kernel's accepted range and a capacity's floor (with its sources), each step with the line of
the rationale that says what it did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from sysctl_advisor.engine.plan_text_keys import resolve_text
from sysctl_advisor.engine.plan_work import (
    KeyBasis,
    KeyWork,
    element_list,
    element_name,
    pick,
    setting_for,
)
from sysctl_advisor.knowledge.catalog import CatalogKey
from sysctl_advisor.knowledge.rules import RuleResult
from sysctl_advisor.knowledge.values import Value, conf_text, numbers
from sysctl_advisor.model.plan import Setting, Unchanged

if TYPE_CHECKING:
    from sysctl_advisor.engine.plan_host import PlanInputs


def resolve_key(
    inputs: PlanInputs, item: KeyWork, by_rule: dict[str, RuleResult], text: bool = True
) -> Setting | Unchanged | str | None:
    """The key's wants and caps merged with its baseline: a Setting, an Unchanged (the kernel
    default already gives it), a note (str) when nothing can be said, or None (only caps that
    did not bite). A value a sysctl file sets is the operator's, not the model's, and one
    taken as the host's default that lies beyond the model's tolerance is no model error
    either: no tolerance keeps them from a cap or a want."""
    key, alias = item.key, item.spec.alias
    basis = KeyBasis(
        inputs.defaults.get(key),
        inputs.current.get(alias),
        inputs.current_text.get(key),
        {**by_rule, **item.results},
        inputs.facts.page_size,
        (key in inputs.operator_files)
        or (key in inputs.kernel_values and key not in inputs.modelled_of),
        inputs.modelled_of.get(key),
        text,
    )
    return resolve_text(item, basis) if item.spec.is_text else resolve_numbers(item, basis)


class _Baseline(NamedTuple):
    """A number key's baseline: its elements (None: neither in force nor modelled), what it
    is called in the rationale, and the model's figure where the value in force is the
    kernel's own within its tolerance (a cap judges such an element by the figure)."""

    values: list[int] | None
    name: str
    model: list[int] | None


def resolve_numbers(item: KeyWork, basis: KeyBasis) -> Setting | Unchanged | str | None:
    """Merge the wants with the baseline, apply caps, order, bounds, the floor.

    The baseline is the value in force when there is one, else the kernel default: a capacity
    want (`max`) never lowers it, a safety want (`min`) never raises it, and a cap only ever
    moves it in its own direction. Returns a note (str) when nothing can be said for lack of a
    baseline.
    """
    spec, current, default = item.spec, basis.current, basis.default
    baseline = current if current is not None else default
    base = _Baseline(
        numbers(baseline) if baseline is not None else None,
        "the value in force" if current is not None else "the kernel default",
        numbers(basis.modelled) if basis.modelled is not None and current is not None else None,
    )
    tolerance = 0.0 if basis.file_set else spec.default_tolerance
    merge = _merged_wants(item, base.values, tolerance)
    if isinstance(merge, str):
        return merge
    wanted, merged = merge
    merged, lines = _kept_baseline(item, base, wanted, merged, basis.file_set)
    before_caps = list(merged)
    merged, capped_by = _caps_applied(item, base, merged, basis.file_set)
    if capped_by:
        lines = _cap_lines(item, base, wanted, before_caps, merged, capped_by, lines)
    merged = _ordered_and_bounded(spec, merged, lines)
    final: Value = merged if spec.length > 1 else merged[0]
    want_rules = [r for r, _ in item.wants]
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
    current_text = basis.current_text
    shown = " ".join(current_text.split()) if current_text is not None else None
    return setting_for(
        item, basis, final, contributing, lines, shown,
        capped_by=capped_by, wanted=list(wanted), caps=[rule_id for rule_id, _ in item.caps],
    )  # fmt: skip


def _merged_wants(
    item: KeyWork, base: list[int] | None, tolerance: float
) -> tuple[list[int], list[int]] | str:
    """The wants merged element by element (an element no want is about takes the baseline),
    and that merge with the baseline kept where it already gives what they ask, within
    `tolerance`; without wants, the baseline itself. A note (str) where an element has no
    baseline to take."""
    policies = item.spec.policies()
    if item.wants:
        wanted = _fill([element_list(v) for _, v in item.wants], base, policies)
        if wanted is None:
            return (
                f"{item.key}: {', '.join(r for r, _ in item.wants)} set only some of its "
                "values, and the others are not modelled for this kernel nor given in the "
                "facts; not emitted"
            )
        merged = list(wanted)
        if base is not None:
            merged = [
                w if p == "choice" else _keep_or_want(w, b, p, tolerance)
                for w, b, p in zip(wanted, base, policies, strict=True)
            ]
        return wanted, merged
    if base is not None:
        return list(base), list(base)
    return (
        f"{item.key}: neither the value in force nor the kernel default on this host is "
        f"known, so the cap from {', '.join(r for r, _ in item.caps)} cannot be applied"
    )


def _kept_baseline(
    item: KeyWork, base: _Baseline, wanted: list[int], merged: list[int], file_set: bool
) -> tuple[list[int], list[str]]:
    """The merge with the kernel's own elements kept where the rules would leave the model's
    figure as it is (model error is not drift), and the lines that say what the baseline kept:
    where it already gives what the wants ask, and where it is the kernel's own."""
    spec, policies = item.spec, item.spec.policies()
    lines: list[str] = []
    kept_for_want = merged != wanted  # the baseline already gives what the wants ask
    near = (
        _left_as_modelled(item, merged, base.values, base.model, policies) if not file_set else []
    )
    if base.values is not None and near:
        merged = [base.values[i] if i in near else v for i, v in enumerate(merged)]
    if kept_for_want:
        lines.append(
            f"Where {base.name} ({conf_text(base.values or [])}) "
            f"{_beyond(spec, merged, wanted, policies)} the rules need ({conf_text(wanted)}), "
            "it is kept" + ("." if merged == base.values else f": {conf_text(merged)}.")
        )
    if base.model is not None and near:
        fields = " and ".join(element_name(spec, i) for i in near)
        whole = len(near) == len(merged)
        lines.append(
            f"The value in force ({conf_text(base.values or [])}) is the kernel's own, within "
            f"the model's tolerance of its figure ({conf_text(base.model)}), whose "
            f"{'value' if whole else fields} the rules would leave as it is: "
            f"{'it' if whole else 'its ' + fields} {'is' if whole or len(near) == 1 else 'are'} "
            "kept (model error is not drift)."
        )
    return merged, lines


def _caps_applied(
    item: KeyWork, base: _Baseline, merged: list[int], file_set: bool
) -> tuple[list[int], list[str]]:
    """Every cap applied, and the caps that bind: those whose limit is the final value of an
    element they moved. An element that is the kernel's own value (or the default), not a want
    or a file's, is judged within the model's tolerance."""
    kept_base = [
        base.values is not None and v == base.values[i] and not file_set
        for i, v in enumerate(merged)
    ]
    capped = _capped(item, merged, item.spec.policies(), kept_base, base.model)
    capped_by = [
        rule_id
        for rule_id, cap in item.caps
        if any(
            c is not None and c == v and v != b
            for c, v, b in zip(cap if isinstance(cap, list) else [cap], capped, merged, strict=True)
        )
    ]
    return capped, capped_by


def _cap_lines(
    item: KeyWork,
    base: _Baseline,
    wanted: list[int],
    before_caps: list[int],
    merged: list[int],
    capped_by: list[str],
    lines: list[str],
) -> list[str]:
    """The lines with the binding caps' own, which says where the value came from (in place of
    the line that says the baseline was kept)."""
    if not item.wants or before_caps == base.values:
        source = f"{base.name} {conf_text(before_caps)}"
    elif before_caps != wanted:
        source = f"{conf_text(before_caps)} (the wants {conf_text(wanted)} merged with {base.name})"
    else:
        source = f"the wanted {conf_text(wanted)}"
    kinds = {item.results[r].rule.spec.cap_kind for r in capped_by if r in item.results}
    label = "Preference cap" if kinds == {"preference"} else "Safety cap"
    return [
        *(line for line in lines if not line.startswith("Where ")),
        f"{label} ({', '.join(capped_by)}) wins: {source} becomes {conf_text(merged)}.",
    ]


def _ordered_and_bounded(spec: CatalogKey, merged: list[int], lines: list[str]) -> list[int]:
    """Vector order (min <= default <= max), the kernel's accepted range and the floor of a
    capacity, each with a line in `lines` where it moved the value."""
    merged = list(merged)
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
    return merged


def _fill(
    wants: list[list[int | None]], base: list[int] | None, policies: list[str]
) -> list[int] | None:
    """Merge the wants element by element; an element no rule is about takes the baseline
    (the value in force, else the kernel default). None when such an element has no baseline."""
    merged: list[int] = []
    for i, policy in enumerate(policies):
        column = [v for w in wants if (v := w[i]) is not None]
        if column:
            merged.append(pick(column, policy))
        elif base is not None:
            merged.append(base[i])
        else:
            return None
    return merged


def _keep_or_want(want: int, base: int, policy: str, tolerance: float) -> int:
    """The baseline when it already gives what the want asks, within the tolerance the catalog
    allows the key's modelled figures (a want a hair above a measured default is model
    rounding, not advice); else the want."""
    if policy == "max":
        return base if base >= want - tolerance * want else want
    return base if base <= want + tolerance * want else want


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


def _left_as_modelled(
    item: KeyWork,
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
    wanted = _fill([element_list(v) for _, v in item.wants], model, policies) or model
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
    item: KeyWork,
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
