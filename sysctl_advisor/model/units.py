"""Sizes in, sizes out: parse "8 GiB" and print 1048576 as "1 MiB".

Every unit is a power of 1024, as in /proc/meminfo ("kB" there means KiB).
"""

from __future__ import annotations

import math
import re

_SIZE_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
    "tib": 1024**4,
}
_SIZE_RE = r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$"  # compiled on first use (re's cache)


def parse_size(value: object) -> int:
    """Bytes from an int or a string such as "8 GiB", "896M", "24684084 kB"."""
    if isinstance(value, bool):
        raise ValueError("a size must be a number of bytes or a number with a unit, not a boolean")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"size must be positive, got {value}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"size must be a positive number, got {value}")
        return int(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a size like '8 GiB', got {type(value).__name__}")
    match = re.match(_SIZE_RE, value)
    if not match:
        raise ValueError(f"cannot read {value!r} as a size (examples: 8589934592, '8 GiB', '896M')")
    number, unit = match.groups()
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(
            f"unknown unit {unit!r} in {value!r} (use KiB, MiB, GiB, TiB, k, M, G, T, kB)"
        )
    scaled = float(number) * factor
    if not math.isfinite(scaled):
        raise ValueError(f"{value[:40]!r}... is not a size any machine has")
    size = int(scaled)
    if size <= 0:
        raise ValueError(f"size must be positive, got {value!r}")
    return size


MAX_DECIMAL_DIGITS = 20  # 2**64 - 1 has 20: no counter a kernel prints is longer


def is_decimal(text: str) -> bool:
    """ASCII digits only, at most MAX_DECIMAL_DIGITS of them: str.isdigit() also accepts '²'
    or '٤', which int() then refuses, and int() refuses a run of more than 4300 digits (a
    hostile /proc file in a copied tree) with an error no reader expects."""
    return len(text) <= MAX_DECIMAL_DIGITS and text.isascii() and text.isdigit()


def human_bytes(n: float) -> str:
    """1048576 -> "1 MiB", 87380 -> "85.3 KiB", 3670016 -> "3.5 MiB"."""
    if n < 0:
        return "-" + human_bytes(-n)
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor:
            return _trim(n / factor) + " " + unit
    return f"{int(n)} B"


def _trim(x: float) -> str:
    if abs(x - round(x)) < 0.005:
        return str(round(x))
    return f"{x:.2f}".rstrip("0").rstrip(".") if x < 10 else f"{x:.1f}".rstrip("0").rstrip(".")


def human_count(n: float) -> str:
    """350000 -> "350,000"."""
    return f"{round(n):,}"


def pow2_ceil(x: float) -> int:
    """Smallest power of two >= x (1 for x <= 1)."""
    if x <= 1:
        return 1
    return 1 << math.ceil(math.log2(x))


def pow2_floor(x: float) -> int:
    """Largest power of two <= x (1 for x < 2)."""
    if x < 2:
        return 1
    return 1 << math.floor(math.log2(x))


def tidy_ceil(x: float) -> int:
    """Round up to two significant digits: 86256 -> 87000, 1234 -> 1300."""
    if x <= 0:
        return 0
    n = math.ceil(x)
    digits = len(str(n))
    if digits <= 2:
        return n
    step: int = 10 ** (digits - 2)
    return int(-(-n // step) * step)


_MIB = 1024 * 1024
_BUFFER_STEP = 64 * 1024


def size_ceil(x: float) -> int:
    """Round a buffer size up: to a whole MiB from 1 MiB on, else to a multiple of 64 KiB.
    (Powers of two overshoot by up to 2x; a buffer maximum only needs to be large enough.)"""
    if x <= 0:
        return 0
    step = _MIB if x > _MIB else _BUFFER_STEP
    return int(-(-math.ceil(x) // step) * step)


def size_floor(x: float) -> int:
    """Round a buffer size down: to a whole MiB from 1 MiB on, else to a multiple of 64 KiB
    (at least 64 KiB)."""
    step = _MIB if x >= _MIB else _BUFFER_STEP
    return max(int(x // step * step), _BUFFER_STEP)
