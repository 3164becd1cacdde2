"""What a value holds as check rules read it: its fields, its numbers as the kernel reads
them, and what each key holds once a configuration is applied (`final`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from sysctl_advisor.knowledge.catalog import parse_ports
from sysctl_advisor.model.kernel_write import kernel_int, kernel_write

if TYPE_CHECKING:
    from sysctl_advisor.knowledge.catalog import Catalog
    from sysctl_advisor.model.current_config import CurrentConfig
    from sysctl_advisor.model.kernel_version import KernelVersion


def fields(value: str) -> list[str]:
    """The value's fields: conf_parser has already joined them with single spaces; any other
    character (a tab aside) belongs to a field, where the kernel would refuse it."""
    return [part for part in value.split(" ") if part]


def numbers(value: str) -> list[int] | None:
    """Every field of the value as the kernel reads a number; None if any is not one."""
    found: list[int] = []
    for part in fields(value):
        number = kernel_int(part)
        if number is None:
            return None
        found.append(number)
    return found


def final_value(catalog: Catalog, key: str, text: str) -> list[int] | list[list[int]] | None:
    """What a key holds, as rules read another key: its numbers, or for a port set its
    merged [first, last] ranges; None when the kernel would refuse the text."""
    spec = catalog.keys.get(key)
    if spec is not None and spec.unit == "ports":
        try:
            return [[first, last] for first, last in parse_ports(text)]
        except ValueError:
            return None
    return numbers(text)


class Final(Mapping[str, Any]):
    """What each key holds once a configuration is applied (its last assignment there, else
    the value in force the facts show), as rules read another key (`final`): worked out for
    the keys a rule asks about, not for every line of a long file."""

    def __init__(
        self, catalog: Catalog, config: CurrentConfig, in_force: Mapping[str, str]
    ) -> None:
        self._catalog = catalog
        self._values = config.values
        self._in_force = in_force
        self._known: dict[str, list[int] | list[list[int]] | None] = {}

    def __getitem__(self, key: str) -> list[int] | list[list[int]] | None:
        if key in self._known:
            return self._known[key]
        found = self._values.get(key)
        text = found.value if found is not None else self._in_force[key]
        value = self._known[key] = final_value(self._catalog, key, text)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._values or key in self._in_force

    def __iter__(self) -> Iterator[str]:
        yield from self._values
        yield from (key for key in self._in_force if key not in self._values)

    def __len__(self) -> int:
        return len(self._values) + sum(key not in self._values for key in self._in_force)


def taken(
    catalog: Catalog, key: str, value: str, version: KernelVersion | None, bits: int | None
) -> tuple[int, ...] | None:
    """What the target kernel stores for a line of a numeric key, or None where it may refuse
    the line: a value it does not read whole (kernel_write), or an element beyond the range
    the key takes there (Catalog.bounds). A later line is certain to replace an earlier one,
    or to clear its twin, only where this is not None."""
    spec = catalog.keys.get(key)
    if spec is None or spec.is_text:
        return None
    write = kernel_write(value, spec.length)
    if not write.complete:
        return None
    bounds = catalog.bounds(key, version, bits)
    if bounds is not None and any(
        (bounds["min"] is not None and number < bounds["min"])
        or (bounds["max"] is not None and number > bounds["max"])
        for number in write.stored
    ):
        return None
    return write.stored
