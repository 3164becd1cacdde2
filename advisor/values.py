"""Sysctl values as the kernel and sysctl.conf write them, and in human units."""

from __future__ import annotations

from advisor.catalog import CatalogKey
from advisor.units import human_bytes, human_count

Value = int | list[int]


def as_list(value: Value) -> list[int]:
    return list(value) if isinstance(value, list) else [value]


def conf_text(value: Value) -> str:
    """What a sysctl.conf line carries: vectors space-separated."""
    return " ".join(str(v) for v in as_list(value))


def parse_current(text: str, key: CatalogKey) -> Value | None:
    """A value as `sysctl -a` prints it (tabs or spaces), or None if it is not numeric."""
    parts = text.split()
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        return None
    if key.length == 1:
        return numbers[0] if len(numbers) == 1 else None
    return numbers if len(numbers) == key.length else None


def human(value: Value, key: CatalogKey, page_size: int) -> str:
    """4096 87380 1048576 (bytes) -> "4 KiB / 85.3 KiB / 1 MiB"."""
    return " / ".join(_one(v, key, page_size) for v in as_list(value))


def _one(v: int, key: CatalogKey, page_size: int) -> str:
    unit = key.unit
    if unit == "bytes":
        return human_bytes(v)
    if unit == "pages":
        return human_bytes(v * page_size)
    if unit == "kbytes":
        return human_bytes(v * 1024)
    if unit == "seconds":
        return f"{v} s"
    if unit == "boolean":
        return "on" if v else "off"
    if unit == "choice" and key.choices:
        return key.choices.get(v, str(v))
    if unit == "port":
        return str(v)
    return human_count(v)
