"""Rule expressions and rationale templates: sandboxed Jinja2, compiled once.

Generated code objects are kept between runs by the code cache (cache/code.py), keyed by a
hash of the source: a warm run only unmarshals; a missing, unwritable or untrusted cache only
costs time. Set SYSCTL_ADVISOR_CACHE=off to disable it.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import CodeType
from typing import Any, ClassVar, cast

import jinja2
from jinja2 import StrictUndefined, nodes, pass_context, pass_environment, pass_eval_context
from jinja2.exceptions import SecurityError, TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.filters import make_attrgetter
from jinja2.nodes import EvalContext
from jinja2.parser import Parser
from jinja2.runtime import Context, LoopContext, Undefined, new_context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from sysctl_advisor.cache.code import CodeCache, code_cache_file, load_code, put_code
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.units import (
    human_bytes,
    human_count,
    pow2_ceil,
    pow2_floor,
    size_ceil,
    size_floor,
    tidy_ceil,
)

# Changes whenever code generation changes (the loop budget), so cached code is rebuilt.
_CODE_SALT = "sandbox-5"
_RESULT = "_advisor_result"  # where a compiled expression leaves its value


class ExpressionError(Exception):
    """An expression or template that does not compile or evaluate; the caller adds the place."""


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
    """A plain number for prose: integers without decimals, others with up to 3 significant."""
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.3g}"
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


# Limits that keep a rule from doing more than produce wrong numbers: no hang, no blow-up.
MAX_EXPONENT = 1024  # x ** y: |y| at most this
MAX_INT_BITS = 65536  # no integer result beyond 2**65536
MAX_SEQUENCE = 100_000  # range() at most this many numbers
MAX_BUILD = 1_000_000  # characters and items in any value a literal, operator or filter builds
MAX_FORMAT_WIDTH = 64  # '%64d' at most: widths and precisions in % formatting
MAX_PRECISION = 30  # round(x, n): |n| at most this
MAX_EXPRESSION_SOURCE = 4096  # characters in one expression (the rules' longest is under 1,000)
MAX_TEMPLATE_SOURCE = 32768  # characters in one template (the rules' longest is about 1,100)
# Work per host (or per checked file), all expressions and templates together: a loop
# iteration costs LOOP_COST, building a value one unit per character or item it holds.
MAX_WORK = 10_000_000
LOOP_COST = 100
MAX_TEXT = 256 * 1024  # characters one template may render
MAX_NESTING = 48  # ( [ { nesting in an expression or template's source
SAFE_STR_METHODS = frozenset({"split", "strip", "lower", "upper", "startswith", "endswith"})
LOOP_ATTRIBUTES = frozenset(
    {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0"}
)
# Jinja's own filters that rules may use; the others (random, center, indent, wordwrap,
# pprint, xmlattr, urlize …) are nondeterministic, can allocate without bound, or are unused.
BUILTIN_FILTERS = frozenset(
    {
        "abs", "count", "d", "default", "dictsort", "first", "float", "int", "items", "join",
        "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr",
        "reverse", "round", "select", "selectattr", "sort", "string", "sum", "trim",
        "truncate", "unique", "upper", "attr", "format", "bool",
    }
)  # fmt: skip


class _Budget:
    """Work left for the host (or checked file) in progress: one process evaluates one host at
    a time (fleet workers are processes). new_budget() starts a host."""

    left = MAX_WORK
    weighed: ClassVar[dict[int, tuple[Any, int]]] = {}  # id -> (container, weight), this host


def new_budget() -> None:
    """Start a new unit of work (a host's plan, a checked file) with the full budget."""
    _Budget.left = MAX_WORK
    _Budget.weighed = {}


def _charge(units: int) -> None:
    _Budget.left -= units
    if _Budget.left < 0:
        raise SecurityError(
            f"more work than one host may take ({MAX_WORK // LOOP_COST:,} loop iterations, "
            f"or {MAX_WORK:,} characters and items built, compared or walked)"
        )


_SMALL = 2**64
_FLAT = frozenset({float, bool, type(None)})
_NUMERIC = frozenset({int, float, bool})


def _flat_weight(seq: list[Any] | tuple[Any, ...]) -> int | None:
    """The weight of a list of scalars or of strings, counted at C speed; None for anything
    else (nested, mixed, huge integers), which weight() walks."""
    kinds = set(map(type, seq))
    if kinds <= _FLAT:
        return len(seq)
    if kinds <= _NUMERIC:
        return len(seq) if max(map(abs, seq)) < _SMALL else None
    if kinds == {str}:
        return len(seq) + sum(map(len, seq))
    return None


def weight(value: Any, limit: int = MAX_BUILD) -> int:
    """Characters and items in a value, a shared part counted each time it occurs (as str()
    or a comparison would meet it); counting stops once past `limit`."""
    kind = type(value)
    if kind is int:
        return 1 if -_SMALL < value < _SMALL else value.bit_length() // 3  # ~ its digits
    if kind is float or kind is bool or value is None:
        return 1
    if kind is str:
        return len(value)
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        total += 1
        if isinstance(item, str):
            total += len(item)
        elif type(item) is int and not -_SMALL < item < _SMALL:
            total += item.bit_length() // 3
        elif isinstance(item, list | tuple):
            if total + len(item) > limit:
                return total + len(item)
            flat = _flat_weight(item)
            if flat is None:
                stack.extend(item)
            else:
                total += flat
        elif isinstance(item, Mapping):
            if total + 2 * len(item) > limit:
                return total + 2 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
    return total


_SCALAR_TYPES = frozenset({int, float, bool, type(None)})
_QUICK = 16  # containers this small are sized by one pass over their items


def _quick_size(value: Any) -> int | None:
    """The weight of a small list, tuple or dict of scalars and strings (almost every value a
    rule handles), in one short pass; None for anything else."""
    kind = type(value)
    if kind is dict:
        if len(value) > _QUICK:
            return None
        items: Iterable[Any] = (*value.keys(), *value.values())
        size = 1
    elif kind is list or kind is tuple:
        if len(value) > _QUICK:
            return None
        items = value
        size = 1
    else:
        return None
    for item in items:
        item_kind = type(item)
        size += 1
        if item_kind is str:
            size += len(item)
        elif item_kind not in _SCALAR_TYPES or (item_kind is int and not -_SMALL < item < _SMALL):
            return None
    return size


def _bounded(value: Any, what: str) -> Any:
    size = _quick_size(value)
    if size is not None:
        _charge(size)
        return value
    size = weight(value)
    if size > MAX_BUILD:
        raise SecurityError(f"{what} of more than {MAX_BUILD:,} characters and items")
    _charge(size)
    return value


def _built(value: Any) -> Any:
    """Every list, tuple and dict literal passes through here."""
    return _bounded(value, "a literal")


def counted(iterable: Iterable[Any]) -> Iterator[Any]:
    """Every template loop iterates through this, paying LOOP_COST an iteration."""
    for item in iterable:
        _charge(LOOP_COST)
        yield item


def _text_of(parts: Iterable[Any], what: str) -> str:
    """str() of each part and their concatenation, each part weighed before it is converted."""
    texts: list[str] = []
    size = 0
    for part in parts:
        size += len(part) if type(part) is str else weight(part, MAX_BUILD - size)
        if size > MAX_BUILD:
            raise SecurityError(f"{what} longer than {MAX_BUILD:,} characters")
        texts.append(part if type(part) is str else str(part))
    _charge(size)
    return "".join(texts)


def _concat(parts: list[Any]) -> str:
    """`a ~ b ~ c`."""
    return _text_of(parts, "a ~ concatenation")


def _block_concat(parts: Iterable[str]) -> str:
    """What a `{% set %}` block or `{% filter %}` body renders."""
    return _text_of(parts, "a block")


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


_FORMAT_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _checked_format(fmt: str, args: Any) -> str:
    """`fmt % args` once the widths, precisions and the output size are known to be small."""
    if "%(" in fmt and re.search(r"%\([^)]*\(", fmt):
        raise SecurityError("a % format key with parentheses in it")
    specs = 0
    for match in _FORMAT_SPEC.finditer(fmt):
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


def _size(value: Any) -> int:
    """What walking a value costs, for the budget: its weight, counted no further than the
    budget left (a walk past that fails anyway). Rules cannot change a list or mapping, so a
    container's weight is remembered for the rest of the host by identity."""
    kind = type(value)
    if kind is int or kind is float or kind is bool or value is None:
        return 1
    if kind is str:
        return len(value)
    if not (kind is dict or kind is list or kind is tuple):
        return 1  # a generator (map, select), the kernel view, a loop: nothing to walk yet
    quick = _quick_size(value)
    if quick is not None:
        return quick
    known = _Budget.weighed.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    size = weight(value, _Budget.left + 1)
    if size <= _Budget.left:
        _Budget.weighed[id(value)] = (value, size)  # the reference keeps the id unique
    return size


def _weighed(value: Any) -> Any:
    """A compared or sliced value pays for its walk (`a == b`, `x in big`, `big[::-1]`)."""
    kind = type(value)
    if kind is int or kind is float or kind is bool or value is None:
        return value
    _charge(_size(value))
    return value


def _charging(jinja_callable: Callable[..., Any]) -> Callable[..., Any]:
    """One of Jinja's filters or tests that walks its input: it pays for the input's size
    (and its arguments') before it runs, and for what it returns."""
    passes = getattr(jinja_callable, "jinja_pass_arg", None)
    skip = 1 if passes is not None else 0

    def charged(*args: Any, **kwargs: Any) -> Any:
        # Called for every item a select or map passes a test: kept to a few operations.
        units = 1
        for arg in args[skip:]:
            kind = type(arg)
            if kind is str:
                units += len(arg)
            elif not (kind is int or kind is float or kind is bool or arg is None):
                units += _size(arg)
        for arg in kwargs.values():
            units += _size(arg)
        _Budget.left -= units
        if _Budget.left < 0:
            _charge(0)  # raises
        result = jinja_callable(*args, **kwargs)
        kind = type(result)
        if kind is list or kind is tuple or kind is str:
            _charge(len(result))
        return result

    if passes is not None:
        charged.jinja_pass_arg = passes  # type: ignore[attr-defined]
    return charged


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


# Filters that take constant time whatever they are given: not worth a charge. Every other
# filter pays for its input (int and float too: CPython parses a long number in quadratic time).
_CONSTANT_TIME = frozenset({"length", "d", "default", "first", "last", "abs", "bool"})
# The only test whose work is not bounded by its own inputs: `x is in big` walks `big` for
# every item a select or reject hands it. The others compare or inspect the item, whose size
# the select or reject already paid for.
_WALKING_TESTS = frozenset({"in"})


def _nesting(source: str) -> int:
    """How deep ( [ { nest in the source (an upper bound: brackets inside strings count)."""
    opening = source.count("(") + source.count("[") + source.count("{")
    if opening <= MAX_NESTING:
        return opening  # no deeper than the number of brackets: no need to walk the text
    depth = deepest = 0
    for char in source:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


class KernelData:
    """What a rule may read about the kernel: the fields it exposes, nothing callable. Compares
    with version strings (`kernel < '4.12'`)."""

    fields: frozenset[str] = frozenset()


class _Removed:
    """Stands for a Jinja global the sandbox removed (cycler, joiner, lipsum, namespace, dict):
    any use is refused, with the name in the message."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        raise SecurityError(f"{self.name} is not available in rule expressions")


_REMOVED_GLOBALS = ("cycler", "joiner", "lipsum", "namespace", "dict")


_NUMBERS = (int, float)


class AdvisorSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, narrowed to plain data.

    Expressions see mappings, lists, strings, numbers, booleans, None and KernelData objects.
    Attribute access reads a mapping's items (never its methods) and a KernelData's fields;
    the only methods are a handful of str ones; the only callables are the project's own
    functions. `**` and `*` are checked before they compute, loops share an iteration budget
    and rendered text is bounded (see the MAX_* limits above).
    """

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filters = {
            name: f if name in _CONSTANT_TIME else _charging(f)
            for name, f in self.filters.items()
            if name in BUILTIN_FILTERS
        }
        tests: dict[str, Any] = {}
        for name, test in self.tests.items():
            plain = cast(Callable[..., Any], test)
            tests[name] = _charging(plain) if name in _WALKING_TESTS else plain
        self.tests = tests
        self.filters.update(
            {"replace": _replace, "join": _join, "format": _format, "string": _string}
        )
        self.filters.update({"sum": _sum, "round": _round})
        # What _Bounded rewrites parsed code to call (filters are called directly, not
        # through the sandbox's call check).
        self.filters.update(
            {
                "_advisor_loop": counted,
                "_advisor_built": _built,
                "_advisor_concat": _concat,
                "_advisor_weighed": _weighed,
            }
        )
        self.concat = _block_concat  # type: ignore[method-assign]  # {% set %} and {% filter %} bodies
        self.globals = {"range": _range}
        self.globals.update({name: _Removed(name) for name in _REMOVED_GLOBALS})
        self._callables: set[int] = set()

    def allow_callables(self, functions: Iterable[Any]) -> None:
        self._callables.update(id(f) for f in functions)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, str):
            return attr in SAFE_STR_METHODS
        if isinstance(obj, KernelData):
            return attr in obj.fields
        if isinstance(obj, LoopContext):
            return attr in LOOP_ATTRIBUTES
        return False

    def call(
        __self,
        __context: Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        """Every call a rule makes (the project's functions, a str method) pays for the data
        it is handed: `big.split()`, `max(big)`."""
        receiver = getattr(__obj, "__self__", None)
        units = len(receiver) if isinstance(receiver, str) else 0  # big.split(), (big|e).split()
        for arg in args:
            if type(arg) not in _SCALAR_TYPES:
                units += _size(arg)
        for arg in kwargs.values():
            units += _size(arg)
        if units:
            _charge(units)
        return super().call(__context, __obj, *args, **kwargs)

    def is_safe_callable(self, obj: Any) -> bool:
        if id(obj) in self._callables:
            return True
        owner = getattr(obj, "__self__", None)
        return isinstance(owner, str) and getattr(obj, "__name__", "") in SAFE_STR_METHODS

    def _refused(self, obj: Any, attribute: Any) -> SecurityError:
        return SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is refused"
        )

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict or isinstance(obj, Mapping):  # exact type first: the common case
            if attribute in obj:
                return obj[attribute]
            if hasattr(type(obj), attribute):
                raise self._refused(obj, attribute)
            return self.undefined(obj=obj, name=attribute)
        if isinstance(obj, Undefined):
            return self.undefined(obj=obj, name=attribute)
        try:
            value = getattr(obj, attribute)
        except AttributeError:
            if isinstance(obj, KernelData):
                return self.undefined(obj=obj, name=attribute)
            raise self._refused(obj, attribute) from None
        if not self.is_safe_attribute(obj, attribute, value):
            raise self._refused(obj, attribute)
        return value

    def getitem(self, obj: Any, argument: Any) -> Any:
        if type(obj) is dict or isinstance(obj, Mapping):
            if argument in obj:
                return obj[argument]
            return self.undefined(obj=obj, name=argument)
        if isinstance(obj, list | tuple | str) and isinstance(argument, int | slice):
            try:
                return obj[argument]
            except IndexError:
                return self.undefined(obj=obj, name=str(argument))
        if isinstance(argument, str):
            return self.getattr(obj, argument)
        raise self._refused(obj, argument)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        kinds = (type(left), type(right))
        if kinds[0] in _NUMBERS and kinds[1] in _NUMBERS:
            if operator == "*" and float not in kinds:
                if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                    raise SecurityError("the product would be too large a number")
            elif operator == "**":
                return self._power(left, right)
            return self.binop_table[operator](left, right)  # floats overflow to inf: caught later
        if operator == "**":
            return self._power(left, right)
        if operator == "%" and isinstance(left, str):
            return _checked_format(left, right)
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(times, int):
                    size = weight(seq) * max(times, 0)
                    if size > MAX_BUILD:
                        raise SecurityError(f"repetition would build {size:,} items")
                    _charge(size)
        elif operator == "+" and isinstance(left, str | list | tuple):
            _bounded([left, right], "a sum")
        return self.binop_table[operator](left, right)

    @staticmethod
    def _power(left: Any, right: Any) -> Any:
        if isinstance(right, int | float) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"exponent {right} is too large (at most {MAX_EXPONENT})")
        whole = type(left) is int and type(right) is int and right > 0
        if whole and left.bit_length() * right > MAX_INT_BITS:
            raise SecurityError("the power would be too large a number")
        return left**right


def make_environment() -> AdvisorSandbox:
    env = AdvisorSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)
    # No compile-time constant folding: `10 ** 10 ** 10` must meet call_binop, not the compiler.
    env.optimized = False
    env.filters.update({name: _charging(f) for name, f in FILTERS.items()})
    env.tests.update(TESTS)
    env.globals.update(GLOBALS)
    env.allow_callables([*GLOBALS.values(), _range])
    return env


class _Bounded(NodeTransformer):
    """Rewrites a parsed expression or template so that its work is paid for: every
    `{% for %}` iterable pays the loop cost, every list, tuple and dict literal and every
    `~` concatenation is weighed as it is built (_built, _concat), and every compared or
    sliced value pays for its walk (_weighed). The helpers are filters, which Jinja calls
    directly."""

    def _wrap(self, name: str, node: nodes.Node, lineno: int) -> nodes.Filter:
        return nodes.Filter(node, name, [], [], None, None, lineno=lineno)

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._wrap("_advisor_loop", node.iter, node.lineno)
        return node

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        return self._wrap("_advisor_built", node, node.lineno)

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return self._wrap("_advisor_built", node, node.lineno)

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        if node.ctx != "load":  # a loop's or assignment's targets
            return node
        return self._wrap("_advisor_built", node, node.lineno)

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return self._wrap("_advisor_concat", nodes.List(node.nodes), node.lineno)

    def _weigh(self, node: nodes.Expr) -> nodes.Expr:
        if isinstance(node, nodes.Const):
            return node  # a literal number or short string: nothing to walk
        return self._wrap("_advisor_weighed", node, node.lineno)

    def visit_Compare(self, node: nodes.Compare) -> nodes.Node:
        self.generic_visit(node)
        walks = any(op.op in ("in", "notin") for op in node.ops)
        sides = [node.expr, *(op.expr for op in node.ops)]
        if not walks and len(sides) == 2 and any(isinstance(x, nodes.Const) for x in sides):
            return node  # against a literal: as long as the literal, at most (x > 0, k == 'a')
        node.expr = self._weigh(node.expr)
        for operand in node.ops:
            operand.expr = self._weigh(operand.expr)
        return node

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Node:
        self.generic_visit(node)
        if isinstance(node.arg, nodes.Slice):  # slices bypass the sandbox's getitem
            node.node = self._weigh(node.node)
        return node


class _Compiled:
    """A template's generated code, made into a jinja2.Template on first use."""

    __slots__ = ("_build", "_code", "_compiler", "_raw", "_template")

    def __init__(
        self,
        compiler: Compiler,
        build: Callable[[], CodeType],
        code: CodeType | None = None,
        raw: bytes | None = None,
    ) -> None:
        self._compiler = compiler
        self._build = build
        self._code = code
        self._raw = raw
        self._template: jinja2.Template | None = None

    @property
    def template(self) -> jinja2.Template:
        template = self._template
        if template is None:
            template = self._template = self._compiler.from_code(self._load())
        return template

    def _load(self) -> CodeType:
        if self._code is not None:
            return self._code
        return load_code(self._raw) or self._build()


class Compiler:
    """Compiles expressions and templates once per process, through the code cache."""

    def __init__(self) -> None:
        self.env = make_environment()
        self._cache = CodeCache(code_cache_file("expressions", __name__))
        # A flat dict, not jinja's ChainMap: every evaluation copies the globals into its
        # context, and copying a ChainMap costs a lookup per name through both maps.
        self._globals: dict[str, Any] = dict(self.env.globals)
        self._memo: dict[tuple[str, str], _Compiled] = {}

    def _template(self, kind: str, source: str, build: Callable[[], CodeType]) -> _Compiled:
        """The compiled template for `source`. Generated code not in the cache is built now
        (length and nesting checked first), so a source that does not compile is refused when
        the knowledge is loaded; cached code (its source passed the same checks and compiled
        before: the cache file is named after this module's source) is unmarshalled when the
        template first runs, since a run evaluates only the expressions of its rules."""
        memo_key = (kind, source)
        compiled = self._memo.get(memo_key)
        if compiled is not None:
            return compiled
        key = hashlib.sha1(f"{kind}\0{_CODE_SALT}\0{source}".encode()).hexdigest()
        raw = self._cache.get(key)
        if raw is None:
            code = build()
            put_code(self._cache, key, code)
            compiled = _Compiled(self, build, code=code)
        else:
            compiled = _Compiled(self, build, raw=raw)
        self._memo[memo_key] = compiled
        return compiled

    def from_code(self, code: CodeType) -> jinja2.Template:
        return self.env.template_class.from_code(self.env, code, self._globals)

    def expression(self, source: str) -> Expression:
        def build() -> CodeType:
            _check_source(source, MAX_EXPRESSION_SOURCE, "expression")
            try:
                parser = Parser(self.env, source, state="variable")
                expr = parser.parse_expression()
                if not parser.stream.eos:
                    raise TemplateSyntaxError("unexpected text after the expression", 1)
                body = [nodes.Assign(nodes.Name(_RESULT, "store"), expr, lineno=1)]
                tree = _Bounded().visit(nodes.Template(body, lineno=1))
                return self._compile(tree)
            except TemplateSyntaxError as exc:  # TemplateAssertionError too: unknown filters
                raise ExpressionError(f"invalid expression {source!r}: {exc.message}") from None
            except (RecursionError, SyntaxError, MemoryError):
                raise ExpressionError(f"expression too deeply nested: {source[:60]!r}") from None

        return Expression(source, self._template("expr", source, build))

    def template(self, source: str) -> Text:
        def build() -> CodeType:
            _check_source(source, MAX_TEMPLATE_SOURCE, "template")
            try:
                return self._compile(_Bounded().visit(self.env.parse(source)))
            except TemplateSyntaxError as exc:
                raise ExpressionError(
                    f"invalid template (line {exc.lineno}): {exc.message}"
                ) from None
            except (RecursionError, SyntaxError, MemoryError):
                raise ExpressionError("template too deeply nested") from None

        return Text(source, self._template("text", source, build))

    def _compile(self, tree: nodes.Template) -> CodeType:
        """Jinja's code generation, then Python's compiler (which refuses more than 200
        nested parentheses with a SyntaxError: a long operator chain)."""
        code = self.env.compile(tree)
        assert isinstance(code, CodeType)
        return code

    def reads(self, source: str, mapping: str) -> tuple[frozenset[str], frozenset[str] | None]:
        """What an expression reads: the names it looks up, and the fields of the variable
        `mapping` it reads by constant name (`facts.memory`, `facts['bits']`); None for the
        fields when it uses `mapping` any other way (passes it whole, indexes it by a value).
        Parsed afresh, so only for callers that need it (a fleet's kernel-defaults memo)."""
        tree = Parser(self.env, source, state="variable").parse_expression()
        names: set[str] = set()
        fields: set[str] = set()
        whole = False

        def walk(node: nodes.Node) -> None:
            nonlocal whole
            target = getattr(node, "node", None)
            if isinstance(target, nodes.Name) and target.name == mapping:
                if isinstance(node, nodes.Getattr):
                    fields.add(node.attr)
                    names.add(mapping)
                    return
                key = node.arg if isinstance(node, nodes.Getitem) else None
                if isinstance(key, nodes.Const) and isinstance(key.value, str):
                    fields.add(key.value)
                    names.add(mapping)
                    return
            if isinstance(node, nodes.Name):
                names.add(node.name)
                whole = whole or node.name == mapping
            for child in node.iter_child_nodes():
                walk(child)

        walk(tree)
        return frozenset(names), None if whole else frozenset(fields)

    def save(self) -> None:
        self._cache.save()

    def context(self, variables: dict[str, Any]) -> Context:
        """One evaluation context for many expressions and templates over the same variables
        (a rule: its `when`, `let`s, wants, findings and rationale). Building a context copies
        the variables, which costs more than most expressions; values a caller adds to
        `context.vars` (a `let`) are seen by every expression run in it after that. The work
        budget is the host's (new_budget), not the context's."""
        return new_context(self.env, None, {}, variables, False, self._globals, None)


# What a hostile or broken expression can raise while it runs; each becomes one line.
_EVALUATION_ERRORS = (
    TemplateError,
    ArithmeticError,
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    NameError,  # e.g. a float overflow folded to `inf` by older generated code
    AssertionError,  # Jinja's filters assert on their arguments (truncate(-1))
    AttributeError,  # a filter given the wrong kind of value ([1, 2] | dictsort)
    RecursionError,
    MemoryError,
)


def _check_source(source: str, longest: int, what: str) -> None:
    if len(source) > longest:
        raise ExpressionError(f"{what} longer than {longest:,} characters: {source[:60]!r}")
    if _nesting(source) > MAX_NESTING:
        raise ExpressionError(f"nested more than {MAX_NESTING} brackets deep: {source[:60]!r}")


def _explain(exc: BaseException) -> str:
    if isinstance(exc, SecurityError):
        return f"refused by the sandbox: {exc}"
    if isinstance(exc, UndefinedError):
        return f"undefined name: {exc.message}"
    if isinstance(exc, RecursionError):
        return "refused by the sandbox: recursion too deep"
    if isinstance(exc, MemoryError):
        return "refused by the sandbox: out of memory"
    if isinstance(exc, OverflowError):
        return f"number too large: {exc}"
    return f"{type(exc).__name__}: {exc}"


class Expression:
    """A compiled expression; evaluate() returns a native Python value."""

    def __init__(self, source: str, compiled: _Compiled) -> None:
        self.source = source
        self._compiled = compiled
        self._root: Callable[[Context], Iterator[str]] | None = None

    def evaluate(self, variables: dict[str, Any]) -> Any:
        return self.run(self._compiled.template.new_context(variables))  # copies the variables

    def run(self, ctx: Context) -> Any:
        """Evaluate in a context from Compiler.context (shared with the rule's other
        expressions)."""
        root = self._root
        if root is None:  # a fleet runs each expression per host: look it up once
            root = self._root = self._compiled.template.root_render_func
        try:
            for _ in root(ctx):
                pass
            value = ctx.vars.pop(_RESULT)
            ctx.exported_vars.discard(_RESULT)
            if isinstance(value, Undefined):
                value._fail_with_undefined_error()
        except _EVALUATION_ERRORS as exc:
            raise ExpressionError(f"{self.source!r}: {_explain(exc)}") from None
        return value


class Text:
    """A compiled rationale/message template."""

    def __init__(self, source: str, compiled: _Compiled) -> None:
        self.source = source
        self._compiled = compiled

    def render(self, variables: dict[str, Any]) -> str:
        template = self._compiled.template
        return self._collect(template.root_render_func(template.new_context(variables)))

    def render_in(self, ctx: Context) -> str:
        """Render over a shared context; a `{% set %}` in the template stays in the template."""
        return self._collect(self._compiled.template.root_render_func(ctx.derived()))

    @staticmethod
    def _collect(parts: Iterable[str]) -> str:
        kept: list[str] = []
        size = 0
        try:
            for part in parts:
                size += len(part)
                if size > MAX_TEXT:
                    raise SecurityError(f"rendered text longer than {MAX_TEXT:,} characters")
                kept.append(part)
        except _EVALUATION_ERRORS as exc:
            raise ExpressionError(f"template: {_explain(exc)}") from None
        return "".join(kept).strip()


def each(items: Iterable[Any]) -> Iterator[Any]:
    """Items a rule repeats something for (a companion's for_each), each paying a loop
    iteration of the host's budget."""
    for item in items:
        try:
            _charge(LOOP_COST)
        except SecurityError as exc:
            raise ExpressionError(f"for_each: {_explain(exc)}") from None
        yield item


def as_input_error(exc: ExpressionError, path: Path | str | None, field: str) -> InputError:
    return InputError(str(exc), path=path, field=field)
