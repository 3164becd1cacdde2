"""build_plan's caps-and-floors phase for a text key: a name every rule must agree on (merge
`one`), or a port set that only grows (merge `union`). Text keys take no caps (a rule that caps
one does not load)."""

from __future__ import annotations

from sysctl_advisor.engine.plan_work import KeyBasis, KeyWork, setting_for
from sysctl_advisor.knowledge.catalog import MAX_TEXT_VALUE, merge_ranges, parse_ports, ports_text
from sysctl_advisor.knowledge.values import conf_text
from sysctl_advisor.model.plan import Setting, Unchanged


def resolve_text(item: KeyWork, basis: KeyBasis) -> Setting | Unchanged | str | None:
    """The rules' text merged: one name they all want, or the port set in force (else the
    default) with every want added. A note (str) where nothing can be emitted: a value in force
    the advisor cannot read, names that differ, or more ports than `sysctl -p` writes."""
    current, current_text, default = basis.current, basis.current_text, basis.default
    wants = [(rule_id, str(v)) for rule_id, v in item.wants]
    if not wants:
        return None
    if current is None and current_text is not None:  # held, but not text the kernel prints
        return (
            f"{item.key}: the value in force ({current_text[:60]!r}) is not one the advisor "
            f"reads, so nothing is emitted that could drop part of it"
        )
    merged = _merged(item, basis, wants)
    if isinstance(merged, str):
        return merged
    final, wanted, lines = merged
    contributing = [r for r, _ in wants]
    if len(final) > MAX_TEXT_VALUE:
        return (
            f"{item.key}: {len(final):,} characters of ports ({', '.join(contributing)} with "
            f"what is in force) are more than `sysctl -p` writes in one go "
            f"({MAX_TEXT_VALUE:,}: the rest would be lost without an error); not emitted"
        )
    if final == default and (current is None or current == final):
        return Unchanged(
            key=item.key,
            kernel_default=conf_text(default),
            wanted=wanted,
            rules=contributing,
        )
    shown = current_text.strip() if current_text is not None else None
    return setting_for(item, basis, final, contributing, lines, shown)


def _merged(
    item: KeyWork, basis: KeyBasis, wants: list[tuple[str, str]]
) -> tuple[str, str, list[str]] | str:
    """The value the plan ends with, what the rules want, and the line that says the ports in
    force stay reserved; a note (str) where the rules want different names."""
    if item.spec.merge == "one":
        names = sorted({v for _, v in wants})
        if len(names) > 1:
            return (
                f"{item.key}: the rules want different values "
                f"({', '.join(f'{r}: {v}' for r, v in wants)}); not emitted"
            )
        return names[0], names[0], []
    baseline = basis.current if basis.current is not None else basis.default
    wanted = ports_text(merge_ranges([r for _, v in wants for r in parse_ports(v)]))
    held = parse_ports(str(baseline)) if baseline is not None else []
    final = ports_text(merge_ranges(held + parse_ports(wanted)))
    lines: list[str] = []
    if held and final != wanted:
        lines.append(
            f"The ports {'in force' if basis.current is not None else 'reserved by default'} "
            f"({baseline}) stay reserved: a port set only grows."
        )
    return final, wanted, lines
