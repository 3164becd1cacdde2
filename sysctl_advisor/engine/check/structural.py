"""The judge's structural findings: what the file reader noticed (inline comments, unparsable
lines, unreadable files), a key set twice in a file or replaced by a later file, and a line a
boot file another program installed replaces; each reported under the structural rule whose
`reports` names it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sysctl_advisor.engine.check.findings import CheckFinding
from sysctl_advisor.knowledge.values import same_value
from sysctl_advisor.model.sysctl_conf import is_sysctl_key
from sysctl_advisor.model.vocabulary import key_matches

if TYPE_CHECKING:
    from sysctl_advisor.engine.check.listing import Listing
    from sysctl_advisor.knowledge.catalog import Catalog
    from sysctl_advisor.knowledge.check_rules import CheckRule
    from sysctl_advisor.model.current_config import CurrentConfig, Override
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
) -> None:
    """What the reader noticed, the overrides, and the lines later boot files replace."""
    for problem in config.problems:
        rule = reported_by.get(problem.code)
        if rule is None:
            continue
        path, line = _split_source(problem.source)
        found.add(CheckFinding(rule.id, rule.spec.severity, path, line, None, problem.message))
    _overrides(config, reported_by, found)
    rule = reported_by.get("writer-file")
    if rule is not None and boot_writers:
        _later_writer_files(config, rule, boot_writers, catalog, found)


def _overrides(config: CurrentConfig, reported_by: Mapping[str, CheckRule], found: Listing) -> None:
    duplicate, override_rule = reported_by.get("duplicate"), reported_by.get("override")
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
        rule = duplicate if same_file else override_rule
        if rule is None:
            continue
        key = override.key
        quoted = quoted_keys.get(key)
        if quoted is None:
            quoted = quoted_keys[key] = is_sysctl_key(key)
        message = _override_message(override, same_file, quoted, winner_line)
        found.add(CheckFinding(rule.id, rule.spec.severity, hidden_path, hidden_line, key, message))


def _override_message(
    override: Override, same_file: bool, quoted: bool, winner_line: int | None
) -> str:
    key = override.key
    if same_file:
        return (
            f"{key} is set again on line {winner_line}; this value"
            + (f" ({override.hidden.value})" if quoted else "")
            + " never takes effect"
        )
    if quoted:
        return (
            f"{key} = {override.hidden.value} is silently replaced by "
            f"{override.winner.value} at {override.winner.source} (applied later)"
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
                        f"{item.key} = {item.value} here, but {note.says}, which sorts "
                        f"after {name} and wins at boot",
                    )
                )
