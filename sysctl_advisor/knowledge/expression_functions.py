"""The filters, tests and functions rule expressions and templates may call.

The project's own (human units, pow2, clamp, fill …: FILTERS, GLOBALS, TESTS), and bounded
replacements for Jinja's filters and functions that build or walk without limit (string, join,
format and `%`, sum, range, replace, round), each paying the work budget
(expression_budget.py) for what it does.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jinja2 import pass_context, pass_environment, pass_eval_context
from jinja2.exceptions import SecurityError
from jinja2.filters import make_attrgetter
from jinja2.nodes import EvalContext
from jinja2.runtime import Context

from sysctl_advisor.knowledge.expression_budget import (
    MAX_BUILD,
    _charge,
    _text_of,
    counted,
    weight,
)
from sysctl_advisor.model.units import (
    human_bytes,
    human_count,
    pow2_ceil,
    pow2_floor,
    size_ceil,
    size_floor,
    tidy_ceil,
)

# Limits on what the functions below may be asked for: no hang, no blow-up.
MAX_SEQUENCE = 100_000  # range() at most this many numbers
MAX_FORMAT_WIDTH = 64  # '%64d' at most: widths and precisions in % formatting
MAX_PRECISION = 30  # round(x, n): |n| at most this


def _percent(x: float) -> str:
    value = x * 100
    return f"{value:.0f}%" if abs(value - round(value)) < 0.05 else f"{value:.1f}%"


@pass_context
def _pages(ctx: Context, n: float) -> str:
    page_size = ctx.get("page_size", 4096)
    return f"{human_count(n)} pages ({human_bytes(n * page_size)})"


def _clamp(x: float, low: float, high: float) -> float:
    return max(low, min(high, x))


def _mbits(bits_per_second: float) -> str:
    mbps = bits_per_second / 1e6
    if mbps >= 1000:
        return f"{mbps / 1000:g} Gbit/s"
    return f"{mbps:.3g} Mbit/s"


def _num(x: float) -> str:
    """A plain number for prose: integers without decimals, others with up to 3 significant
    digits; from 1,000 up never in scientific notation but rounded to 3 significant digits and
    grouped (1512.4 -> "1,510", 0.0123 -> "0.0123")."""
    if isinstance(x, float) and not x.is_integer():
        rounded = f"{x:.3g}"
        if 1000 <= abs(float(rounded)) < 1e15:  # beyond, digits say nothing more
            return human_count(float(rounded))
        return rounded
    return human_count(x)


MAX_FILLED = 4096  # characters `fill` may return


def _address(address: object) -> str:
    """An IP address as it is written before `:port`: IPv6 in brackets."""
    if not isinstance(address, str):
        raise ValueError("address: not an address")
    text = address[:64]  # the longest IPv6 text form is 45 characters
    return f"[{text}]" if ":" in text else text


def _fill(template: object, **numbers: object) -> str:
    """A setting from the server table with its {name} placeholders filled by integers:
    `listen {port} backlog={backlog};` | fill(port=443, backlog=16384). Bounded: a template of
    at most 1,000 characters, integers of at most 20 digits, at most MAX_FILLED out."""
    if not isinstance(template, str) or len(template) > 1000:
        raise ValueError("fill: the template must be text of at most 1,000 characters")
    text = template
    for name, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"fill: {name} must be a number")
        if not math.isfinite(value) or abs(value) >= 10**20:
            raise ValueError(f"fill: {name} is out of range")
        text = text.replace("{" + name + "}", str(int(value)))
        if len(text) > MAX_FILLED:
            raise ValueError(f"fill: more than {MAX_FILLED} characters")
    return text


def _shell(value: object) -> str:
    """A text or number as one shell word (shlex.quote): a name from the facts (an
    interface's: the kernel lets one hold `$`, `(`, `;`, quotes) stays one argument of the
    command the operator runs, never shell syntax. Every value of a `command: true`
    companion's setting passes through it."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("shell: not a text or a number")
    return shlex.quote(str(value))


# A size as a comment writes it: "256MB", "1 GiB", "2G", "64k" (a unit letter right after the
# number, or after one space). Memory sizes: K, M, G and T count 1024s whatever the spelling.
_SIZE = re.compile(
    r"(?<![\w.])(\d{1,15}(?:\.\d{1,6})?) ?([kKmMgGtT])(?:i?[bB])?(?![A-Za-z0-9_])", re.ASCII
)
_SIZE_UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
MAX_SIZES = 8  # sizes `sizes` returns at most
MAX_SIZE_TEXT = 1000  # characters of its text `sizes` reads at most


def _sizes(text: object) -> list[int]:
    """The byte counts a text names ("kernel.shmall: 256MB" -> [268435456]), at most
    MAX_SIZES of them, from its first MAX_SIZE_TEXT characters: what a comment above a line
    says its value is."""
    if not isinstance(text, str):
        raise ValueError("sizes: not a text")
    found = []
    for match in _SIZE.finditer(text[:MAX_SIZE_TEXT]):
        found.append(int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]))
        if len(found) == MAX_SIZES:
            break
    return found


def _number_only(function: Callable[..., str]) -> Callable[..., str]:
    """A formatting filter that takes one number (a list would be repeated, not formatted)."""

    def formatted(*args: Any) -> str:
        value = args[-1]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{function.__name__.strip('_')}: not a number")
        return function(*args)

    for attribute in ("jinja_pass_arg", "__name__"):
        if hasattr(function, attribute):
            setattr(formatted, attribute, getattr(function, attribute))
    return formatted


FILTERS: dict[str, Callable[..., Any]] = {
    "address": _address,
    "fill": _fill,
    "shell": _shell,
    "sizes": _sizes,
    "bytes": _number_only(human_bytes),
    "pages": _number_only(_pages),
    "percent": _number_only(_percent),
    "count": _number_only(human_count),
    "num": _number_only(_num),
    "mbits": _number_only(_mbits),
}
GLOBALS: dict[str, Any] = {
    "pow2_ceil": pow2_ceil,
    "pow2_floor": pow2_floor,
    "tidy_ceil": tidy_ceil,
    "size_ceil": size_ceil,
    "size_floor": size_floor,
    "ceil": math.ceil,
    "floor": math.floor,
    "isqrt": lambda x: math.isqrt(int(x)),
    "log2": math.log2,
    "clamp": _clamp,
    "min": min,
    "max": max,
    "int": int,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}


TESTS: dict[str, Callable[..., bool]] = {
    "startswith": lambda value, prefix: isinstance(value, str) and value.startswith(prefix),
}


# Jinja's own filters and functions that build or walk without bound, replaced by ones that
# pay the budget for their work.


def _string(value: Any) -> str:
    return _text_of([value], "string")


@pass_eval_context
def _join(eval_ctx: EvalContext, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
    items: Iterable[Any] = value
    if attribute is not None:
        items = map(make_attrgetter(eval_ctx.environment, attribute), value)
    return _text_of(_interleave(counted(items), str(d)), "join")


def _interleave(items: Iterable[Any], separator: str) -> Iterator[Any]:
    for i, item in enumerate(items):
        if i and separator:
            yield separator
        yield item


_FORMAT_SPEC = r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?"  # re's own cache


def _checked_format(fmt: str, args: Any) -> str:
    """`fmt % args` once the widths, precisions and the output size are known to be small."""
    if "%(" in fmt and re.search(r"%\([^)]*\(", fmt):
        raise SecurityError("a % format key with parentheses in it")
    specs = 0
    for match in re.finditer(_FORMAT_SPEC, fmt):
        specs += 1
        for number in match.groups():
            if number == "*" or (number is not None and int(number) > MAX_FORMAT_WIDTH):
                raise SecurityError(
                    f"format width or precision {number} (at most {MAX_FORMAT_WIDTH})"
                )
    largest = max(weight(args), MAX_FORMAT_WIDTH)
    if len(fmt) + specs * largest > MAX_BUILD:
        raise SecurityError(f"% formatting could build more than {MAX_BUILD:,} characters")
    _charge(len(fmt) + specs * largest)
    return str(fmt % args)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    if args and kwargs:
        raise ValueError("format takes positional or keyword arguments, not both")
    return _checked_format(_string(value), kwargs or args)


@pass_environment
def _sum(environment: Any, values: Iterable[Any], attribute: Any = None, start: Any = 0) -> Any:
    """Jinja's sum, for numbers only (adding lists or strings would build without bound)."""
    if attribute is not None:
        values = map(make_attrgetter(environment, attribute), values)
    total = start
    for value in counted(values):
        if not isinstance(value, int | float) or isinstance(total, str | list | tuple):
            raise TypeError("sum adds numbers only")
        total = total + value
    return total


def _range(*args: int) -> Iterator[int]:
    numbers = range(*args)
    if len(numbers) > MAX_SEQUENCE:
        raise SecurityError(f"range of {len(numbers):,} numbers (at most {MAX_SEQUENCE:,})")
    return counted(numbers)


def _replace(value: Any, old: str, new: str, count: int | None = None) -> str:
    text, old, new = _string(value), str(old), str(new)
    grows = text.count(old) * max(len(new) - len(old), 0) if old else len(text) * len(new)
    if len(text) + grows > MAX_BUILD:
        raise SecurityError(f"replace would build more than {MAX_BUILD:,} characters")
    _charge(len(text) + grows)
    return text.replace(old, new, -1 if count is None else count)


def _round(value: float, precision: int = 0, method: str = "common") -> float:
    """Jinja's round, with a precision a number can have (10 ** 100000000 would hang)."""
    if not isinstance(precision, int) or abs(precision) > MAX_PRECISION:
        raise SecurityError(f"round to {precision} places (at most {MAX_PRECISION})")
    if method not in ("common", "ceil", "floor"):
        raise ValueError("round's method is common, ceil or floor")
    if method == "common":
        return round(value, precision)
    step = 10**precision
    rounded = (math.ceil if method == "ceil" else math.floor)(value * step)
    return float(rounded / step)
