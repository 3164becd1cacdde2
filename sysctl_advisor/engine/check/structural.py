"""The judge's structural findings: what the file reader noticed (inline comments, unparsable
lines, pasted shell commands, unreadable files), a key set twice in a file (to the same value,
as a fallback, or in conflict) or replaced by a later file, a value its twin's later write
clears (the catalog's `clears`), and a line a boot file another program installed replaces;
each reported under the structural rule whose `reports` names it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sysctl_advisor.engine.check.findings import CheckFinding
from sysctl_advisor.engine.check.values import taken
from sysctl_advisor.knowledge.values import same_value
from sysctl_advisor.model.sysctl_conf import is_sysctl_key
from sysctl_advisor.model.text_escape import quoted
from sysctl_advisor.model.vocabulary import key_matches

if TYPE_CHECKING:
    from sysctl_advisor.engine.check.listing import Listing
    from sysctl_advisor.knowledge.catalog import Catalog
    from sysctl_advisor.knowledge.check_rules import CheckRule
    from sysctl_advisor.model.current_config import CurrentConfig, Override
    from sysctl_advisor.model.kernel_version import KernelVersion
    from sysctl_advisor.model.plan import OwnerNote


def _split_source(source: str) -> tuple[str, int | None]:
    path, sep, line = source.rpartition(":")
    if sep and line.isascii() and line.isdigit():
        return path, int(line)
    return source, None


def structural(
    config: CurrentConfig,
    reported_by: Mapping[str, CheckRule],
    boot_writers: list[OwnerNote],
    catalog: Catalog,
    found: Listing,
    target: tuple[KernelVersion | None, int | None] = (None, None),
) -> None:
    """What the reader noticed, the overrides, and the lines later boot files replace;
    `target` is the kernel release and word size the lines are judged for."""
    for problem in config.problems:
        rule = reported_by.get(problem.code)
        if rule is None:
            continue
        path, line = _split_source(problem.source)
        found.add(CheckFinding(rule.id, rule.spec.severity, path, line, None, problem.message))
    _overrides(config, reported_by, catalog, found, target)
    rule = reported_by.get("twin-cleared")
    if rule is not None:
        _twins_cleared(config, rule, catalog, found, target)
    rule = reported_by.get("writer-file")
    if rule is not None and boot_writers:
        _later_writer_files(config, rule, boot_writers, catalog, found)


def _overrides(
    config: CurrentConfig,
    reported_by: Mapping[str, CheckRule],
    catalog: Catalog,
    found: Listing,
    target: tuple[KernelVersion | None, int | None],
) -> None:
    duplicate, override_rule = reported_by.get("duplicate"), reported_by.get("override")
    # within a file: the same value again is redundant; a key whose write the kernel may
    # refuse (the fallback rule's `keys`) set again may be a fallback
    same, fallback = reported_by.get("duplicate-same"), reported_by.get("duplicate-fallback")
    quoted_keys: dict[str, bool] = {}  # a long file repeats a few keys many times
    for override in config.overrides:
        hidden, winner = override.hidden, override.winner
        # file lines carry their file and number; anything else names its place in source
        hidden_path, hidden_line = (
            (hidden.file, hidden.line) if hidden.file is not None else _split_source(hidden.source)
        )
        winner_path, winner_line = (
            (winner.file, winner.line) if winner.file is not None else _split_source(winner.source)
        )
        same_file = hidden_path == winner_path
        key = override.key
        kind = "override"
        rule = override_rule
        if same_file:
            kind, rule = "duplicate", duplicate
            if same_value(hidden.value, winner.value, catalog.keys.get(key)):
                kind, rule = "same", same
            elif fallback is not None and fallback.looks_at(key):
                kind, rule = "fallback", fallback
        if rule is None:
            continue
        show = quoted_keys.get(key)
        if show is None:
            show = quoted_keys[key] = is_sysctl_key(key)
        # a later line the target kernel may refuse: `sysctl -p` then keeps this one
        refused = (
            kind == "duplicate"
            and key in catalog.keys
            and not catalog.keys[key].is_text
            and taken(catalog, key, winner.value, *target) is None
        )
        message = _override_message(override, kind, show, winner_line, refused)
        found.add(CheckFinding(rule.id, rule.spec.severity, hidden_path, hidden_line, key, message))


def _override_message(
    override: Override, kind: str, show_value: bool, winner_line: int | None, refused: bool
) -> str:
    key = override.key
    if kind == "same":
        return f"{key} is set to the same value again on line {winner_line}; one line is redundant"
    if kind == "fallback":
        return (
            f"{key} = {quoted(override.hidden.value)} is a fallback for the "
            f"{quoted(override.winner.value)} on line {winner_line}: `sysctl -p` keeps it only "
            f"where the kernel refuses {quoted(override.winner.value)} (a module it lacks), and "
            "then reports that line as an "
            "error and exits 1; systemd-sysctl at boot applies only the last line, so there "
            "it is never tried"
        )
    if kind == "duplicate" and refused:
        return (
            f"{key} is set again on line {winner_line}, to a value the kernel may refuse: "
            "systemd-sysctl at boot applies only that last line, so this value"
            + (f" ({quoted(override.hidden.value)})" if show_value else "")
            + " is never applied there, while `sysctl -p` keeps it where the later write fails"
        )
    if kind == "duplicate":
        return (
            f"{key} is set again on line {winner_line}; this value"
            + (f" ({quoted(override.hidden.value)})" if show_value else "")
            + " never takes effect"
        )
    if show_value:
        return (
            f"{key} = {quoted(override.hidden.value)} is silently replaced by "
            f"{quoted(override.winner.value)} at {override.winner.source} (applied later)"
        )
    return f"{key} is silently replaced at {override.winner.source} (applied later)"


def _later_writer_files(
    config: CurrentConfig,
    rule: CheckRule,
    boot_writers: list[OwnerNote],
    catalog: Catalog,
    found: Listing,
) -> None:
    """Lines that a file another program installed on the host (a boot write of the
    writers catalog, shown by the facts) replaces at boot: it sorts after the line's file
    and sets the key to another value. A file among those checked is check.overridden's."""
    checked = {display.rpartition("/")[2] for display, _ in config.documents}
    for display, assignments in config.documents:
        name = display.rpartition("/")[2]
        for item in assignments:
            for note in boot_writers:
                assert note.file is not None
                if (
                    note.file in checked
                    or note.file <= name
                    or item.is_glob
                    or not key_matches(note.key, item.key)
                ):
                    continue
                spec = catalog.keys.get(item.key)
                if note.value is not None and same_value(note.value, item.value, spec):
                    continue
                found.add(
                    CheckFinding(
                        rule.id,
                        rule.spec.severity,
                        display,
                        item.line,
                        item.key,
                        f"{item.key} = {quoted(item.value)} here, but {quoted(note.says)}, "
                        "which sorts "
                        f"after {name} and wins at boot",
                    )
                )


def _twins_cleared(
    config: CurrentConfig,
    rule: CheckRule,
    catalog: Catalog,
    found: Listing,
    target: tuple[KernelVersion | None, int | None],
) -> None:
    """Lines whose value a later write of the twin key clears (the catalog's `clears`:
    writing vm.dirty_ratio zeroes vm.dirty_bytes), in the order systemd-sysctl applies them:
    each key's last assignment, file by file. Only one of a pair is in force, the one written
    last; the earlier line does nothing, and a later 0 leaves both at 0."""
    in_force = config.values
    held: dict[str, int] = {}  # what each twin holds, once a line of this config wrote it
    wrote: dict[str, tuple[str, int, str]] = {}  # (file, line, value) of the write in force
    for display, assignments in config.documents:
        for item in assignments:
            spec = catalog.keys.get(item.key)
            twin = spec.clears if spec is not None else None
            final = in_force.get(item.key)
            if twin is None or final is None or (final.file, final.line) != (display, item.line):
                continue
            stored = taken(catalog, item.key, item.value, *target)
            if stored is None:  # the kernel may refuse it: nothing is certain to change
                continue
            number = stored[0]
            changed = held.get(item.key) != number
            held[item.key] = number
            wrote[item.key] = (display, item.line, item.value)
            if twin.when == "changed" and not changed:
                continue
            earlier = wrote.pop(twin.key, None)
            cleared = held.get(twin.key)
            held[twin.key] = 0
            if earlier is None or not cleared:
                continue
            path, line, value = earlier
            where = f"line {item.line}" if path == display else f"{display}:{item.line}"
            message = (
                f"{twin.key} = {quoted(value)} does nothing: {item.key} = "
                f"{quoted(item.value)} on {where} is "
                f"written after it, and writing {item.key} sets {twin.key} to 0; of the two, "
                "the one written last is in force"
            )
            if number == 0:
                message += "; both are now 0" + (f": {twin.both_zero}" if twin.both_zero else "")
            else:
                message += f"; keep only the line you mean ({item.key} wins as written)"
            found.add(CheckFinding(rule.id, rule.spec.severity, path, line, twin.key, message))
