"""The sandbox of rule expressions and templates: the Jinja environment they run in and the
rewriting of their parsed code.

AdvisorSandbox narrows Jinja's immutable sandbox to plain data (which attributes, methods,
filters and callables a rule may use; arithmetic checked before it computes), with the
functions of expression_functions.py; _Bounded rewrites a parsed expression or template so
that its loops, literals, concatenations and comparisons pay the work budget
(expression_budget.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from jinja2 import StrictUndefined, nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, LoopContext, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from sysctl_advisor.knowledge.expression_budget import (
    _SCALAR_TYPES,
    MAX_BUILD,
    _block_concat,
    _bounded,
    _built,
    _charge,
    _charging,
    _concat,
    _size,
    _weighed,
    counted,
    weight,
)
from sysctl_advisor.knowledge.expression_functions import (
    FILTERS,
    GLOBALS,
    TESTS,
    _checked_format,
    _format,
    _join,
    _range,
    _replace,
    _round,
    _string,
    _sum,
)

# Limits on arithmetic: no hang, no blow-up.
MAX_EXPONENT = 1024  # x ** y: |y| at most this
MAX_INT_BITS = 65536  # no integer result beyond 2**65536
# What a rule may use of str methods, of a loop and of Jinja's own filters.
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

# Filters that take constant time whatever they are given: not worth a charge. Every other
# filter pays for its input (int and float too: CPython parses a long number in quadratic time).
_CONSTANT_TIME = frozenset({"length", "d", "default", "first", "last", "abs", "bool"})
# The only test whose work is not bounded by its own inputs: `x is in big` walks `big` for
# every item a select or reject hands it. The others compare or inspect the item, whose size
# the select or reject already paid for.
_WALKING_TESTS = frozenset({"in"})


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
    and rendered text is bounded (the MAX_* limits of the expression modules).
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


class _ShellWords(NodeTransformer):
    """Rewrites a command template so that every value it prints (each `{{ }}`, in loops and
    branches too) passes the `shell` filter: one shell word, whatever the facts hold. The
    template's own text is the command; only values are quoted."""

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [
            child
            if isinstance(child, nodes.TemplateData)
            else nodes.Filter(child, "shell", [], [], None, None, lineno=child.lineno)
            for child in node.nodes
        ]
        return node


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
