"""Sysctl values as the kernel and sysctl.conf write them, and in human units."""

from __future__ import annotations

from sysctl_advisor.knowledge.catalog import CatalogKey, parse_ports, text_value
from sysctl_advisor.model.kernel_write import kernel_write
from sysctl_advisor.model.units import human_bytes, human_count

Value = int | list[int] | str  # str: a text key's value (a name, a port set)


def as_list(value: int | list[int]) -> list[int]:
    return list(value) if isinstance(value, list) else [value]


def numbers(value: Value) -> list[int]:
    """The numbers a value holds: none for a text key."""
    return [] if isinstance(value, str) else as_list(value)


def conf_text(value: Value) -> str:
    """What a sysctl.conf line carries: vectors space-separated, text as it is."""
    if isinstance(value, str):
        return value
    return " ".join(str(v) for v in as_list(value))


def same_value(text_a: str, text_b: str, key: CatalogKey | None) -> bool:
    """Whether two values as written mean the same to the kernel: vectors compare field by
    field (the kernel prints them tab-separated), port sets as sets."""
    if key is not None and key.is_text:
        a, b = parse_text(text_a, key), parse_text(text_b, key)
        return a is not None and a == b
    return text_a.split() == text_b.split()


def parse_text(text: str, key: CatalogKey, *, to_write: bool = True) -> str | None:
    """A text key's value as the kernel holds it after `text` is written (to_write: through
    `sysctl -p`, one write) or as a host reports it; None when the kernel refuses it."""
    try:
        return text_value(text, key, to_write=to_write)
    except ValueError:
        return None


def parse_current(text: str, key: CatalogKey) -> Value | None:
    """A value as `sysctl -a` prints it (tabs or spaces) or a sysctl.conf line gives it: what
    the kernel holds once the text is written (`15 # faster` is 15); None when that is not
    the whole of the key (the write is refused, or sets only some elements)."""
    if key.is_text:
        return parse_text(text, key, to_write=False)
    write = kernel_write(text, key.length)
    if not write.complete:
        return None
    stored = [v + 2**32 if key.unsigned32 and -(2**31) <= v < 0 else v for v in write.stored]
    return stored[0] if key.length == 1 else stored


def human(value: Value, key: CatalogKey, page_size: int) -> str:
    """4096 87380 1048576 (bytes) -> "4 KiB / 85.3 KiB / 1 MiB"."""
    if isinstance(value, str):
        if key.unit != "ports":
            return value
        count = sum(b - a + 1 for a, b in parse_ports(value))
        return f"{count:,} port{'s' if count != 1 else ''} reserved" if count else "none"
    return " / ".join(_one(v, key, page_size) for v in as_list(value))


def _one(v: int, key: CatalogKey, page_size: int) -> str:
    unit = key.unit
    if v == key.unlimited:
        return "unlimited"
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
