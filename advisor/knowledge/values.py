"""Sysctl values as the kernel and sysctl.conf write them, and in human units."""

from __future__ import annotations

from advisor.knowledge.catalog import CatalogKey
from advisor.model.kernel_write import kernel_write
from advisor.model.units import human_bytes, human_count

Value = int | list[int]


def as_list(value: Value) -> list[int]:
    return list(value) if isinstance(value, list) else [value]


def conf_text(value: Value) -> str:
    """What a sysctl.conf line carries: vectors space-separated."""
    return " ".join(str(v) for v in as_list(value))


def parse_current(text: str, key: CatalogKey) -> Value | None:
    """A value as `sysctl -a` prints it (tabs or spaces) or a sysctl.conf line gives it: what
    the kernel holds once the text is written (`15 # faster` is 15); None when that is not
    the whole of the key (the write is refused, or sets only some elements)."""
    write = kernel_write(text, key.length)
    if not write.complete:
        return None
    return write.stored[0] if key.length == 1 else list(write.stored)


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
