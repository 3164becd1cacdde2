"""The work budget of rule expressions and templates, and the weighing of what they build.

One budget per host (or checked file), shared by all its expressions and templates: a loop
iteration costs LOOP_COST, building, comparing or walking a value one unit per character or
item it holds (`weight`), and no single built value may exceed MAX_BUILD. The sandbox
(expression_sandbox.py) and the bounded filters (expression_functions.py) charge it;
new_budget() starts a host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar

from jinja2.exceptions import SecurityError

# Work per host (or per checked file), all expressions and templates together: a loop
# iteration costs LOOP_COST, building a value one unit per character or item it holds.
MAX_WORK = 10_000_000
LOOP_COST = 100
MAX_BUILD = 1_000_000  # characters and items in any value a literal, operator or filter builds


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
