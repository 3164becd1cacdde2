"""Rule expressions and rationale templates: sandboxed Jinja2, compiled once.

The public face of the expression language: Compiler, Expression, Text, ExpressionError and
the helpers rules use (each, as_input_error). What expressions may call is in
expression_functions.py, the environment they run in and the rewriting of their code in
expression_sandbox.py, the work budget they share in expression_budget.py.

Generated code objects are kept between runs by the code cache (cache/code.py), keyed by a
hash of the source: a warm run only unmarshals; a missing, unwritable or untrusted cache only
costs time. Set SYSCTL_ADVISOR_CACHE=off to disable it.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import CodeType
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError, TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.parser import Parser
from jinja2.runtime import Context, Undefined, new_context

from sysctl_advisor.cache.code import CodeCache, code_cache_name, load_code, put_code
from sysctl_advisor.knowledge.expression_budget import LOOP_COST, _charge
from sysctl_advisor.knowledge.expression_sandbox import _Bounded, _ShellWords, make_environment
from sysctl_advisor.model.errors import InputError

# Changes whenever code generation changes (the loop budget), so cached code is rebuilt.
_CODE_SALT = "sandbox-5"
_RESULT = "_advisor_result"  # where a compiled expression leaves its value
# The modules besides this one whose source shapes the generated code (the filters' pass_*
# decorators, the sandbox's filter names and the rewriting of parsed code): the code cache's
# file is named after all of them, so editing any one retires cached code.
_GENERATORS = (
    "sysctl_advisor.knowledge.expression_budget",
    "sysctl_advisor.knowledge.expression_functions",
    "sysctl_advisor.knowledge.expression_sandbox",
)

# Limits on sources and rendered text: no hang, no blow-up.
MAX_EXPRESSION_SOURCE = 4096  # characters in one expression (the rules' longest is under 1,000)
MAX_TEMPLATE_SOURCE = 32768  # characters in one template (the rules' longest is about 1,100)
MAX_TEXT = 256 * 1024  # characters one template may render
MAX_NESTING = 48  # ( [ { nesting in an expression or template's source


class ExpressionError(Exception):
    """An expression or template that does not compile or evaluate; the caller adds the place."""


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


class _Compiled:
    """A template's generated code, made into a jinja2.Template on first use."""

    __slots__ = ("_build", "_code", "_compiler", "_key", "_raw", "_template")

    def __init__(
        self,
        compiler: Compiler,
        build: Callable[[], CodeType],
        key: str,
        code: CodeType | None = None,
        raw: bytes | None = None,
    ) -> None:
        self._compiler = compiler
        self._build = build
        self._key = key
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
        code = load_code(self._raw)
        if code is None:  # a damaged entry: built again, and the cache mended for next time
            code = self._build()
            self._compiler.mend(self._key, code)
        return code


class Compiler:
    """Compiles expressions and templates once per process, through the code cache: one cache
    file per kind of knowledge (`for_kind`), opened when that kind first compiles, so a run
    reads and prunes only the code of the knowledge it loads."""

    def __init__(self) -> None:
        self.env = make_environment()
        self._caches: dict[str, CodeCache] = {}
        self._kind = ""  # the knowledge kind compiling now ("" outside any)
        self._where: dict[str, CodeCache] = {}  # key -> the cache it came from (to mend it)
        # A flat dict, not jinja's ChainMap: every evaluation copies the globals into its
        # context, and copying a ChainMap costs a lookup per name through both maps.
        self._globals: dict[str, Any] = dict(self.env.globals)
        self._memo: dict[tuple[str, str], _Compiled] = {}

    def _template(self, kind: str, source: str, build: Callable[[], CodeType]) -> _Compiled:
        """The compiled template for `source`. Generated code not in the cache is built now
        (length and nesting checked first), so a source that does not compile is refused when
        the knowledge is loaded; cached code (its source passed the same checks and compiled
        before: the cache file is named after the source of the modules that generate code)
        is unmarshalled when the template first runs, since a run evaluates only the
        expressions of its rules."""
        memo_key = (kind, source)
        compiled = self._memo.get(memo_key)
        if compiled is not None:
            return compiled
        key = hashlib.sha1(f"{kind}\0{_CODE_SALT}\0{source}".encode()).hexdigest()
        cache = self._where[key] = self._cache()
        raw = cache.get(key)
        if raw is None:
            code = build()
            put_code(cache, key, code)
            compiled = _Compiled(self, build, key, code=code)
        else:
            compiled = _Compiled(self, build, key, raw=raw)
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
        return self._text(source, "text")

    def command(self, source: str) -> Text:
        """A template that renders a shell command: every value it prints is one shell word
        (quoted with shlex.quote where it holds anything but letters, digits and @%+=:,./-)."""
        return self._text(source, "command")

    def _text(self, source: str, kind: str) -> Text:
        def build() -> CodeType:
            _check_source(source, MAX_TEMPLATE_SOURCE, "template")
            try:
                tree = self.env.parse(source)
                if kind == "command":
                    tree = _ShellWords().visit(tree)
                return self._compile(_Bounded().visit(tree))
            except TemplateSyntaxError as exc:
                raise ExpressionError(
                    f"invalid template (line {exc.lineno}): {exc.message}"
                ) from None
            except (RecursionError, SyntaxError, MemoryError):
                raise ExpressionError("template too deeply nested") from None

        return Text(source, self._template(kind, source, build))

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

    def attributes(self, source: str, template: bool = False) -> dict[str, frozenset[str]]:
        """Every name an expression (or, with `template`, a template) looks up, with the
        attributes it reads of it by constant name (`kernel.short`: kernel -> {short}),
        however else it uses the name too. Parsed afresh, for checks made when rules load."""
        if template:
            tree: nodes.Node = self.env.parse(source)
        else:
            tree = Parser(self.env, source, state="variable").parse_expression()
        found: dict[str, set[str]] = {}
        every = [tree, *tree.find_all(nodes.Node)]  # find_all leaves out the root itself
        for node in every:
            if isinstance(node, nodes.Name):
                found.setdefault(node.name, set())
        for node in every:
            if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name):
                found[node.node.name].add(node.attr)
        return {name: frozenset(attrs) for name, attrs in found.items()}

    @contextlib.contextmanager
    def for_kind(self, kind: str) -> Iterator[None]:
        """Compile what this block compiles through the code cache of one knowledge kind."""
        before, self._kind = self._kind, kind
        try:
            yield
        finally:
            self._kind = before

    def _cache(self) -> CodeCache:
        cache = self._caches.get(self._kind)
        if cache is None:
            name = code_cache_name("expressions", __name__, *_GENERATORS)
            if self._kind:  # expressions-...-KIND.marshal: the cache pruning's file pattern
                name = name.replace(".marshal", f"-{self._kind}.marshal")
            cache = self._caches[self._kind] = CodeCache(name)
        return cache

    def save(self, kind: str | None = None, keep_unused: bool = False) -> None:
        """Save the code caches this run opened, or one kind's: each drops the entries the run
        did not use, unless `keep_unused` (a kind loaded in part)."""
        for name, cache in self._caches.items():
            if kind is None or name == kind:
                cache.save(keep_unused)

    def mend(self, key: str, code: CodeType) -> None:
        """Replace a damaged cache entry found when its template first ran (after the load
        saved the cache): written at once, since no later save comes."""
        cache = self._where.get(key) or self._cache()
        put_code(cache, key, code)
        cache.save()

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
