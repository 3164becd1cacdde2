"""Rule expressions and rationale templates: sandboxed Jinja2, compiled once.

Code generation is the expensive part of Jinja (about 0.7 ms per expression), so generated code
objects are kept in a marshal file under the user's cache directory, keyed by a hash of the
source, the same way Python keeps .pyc files. A warm run only unmarshals; a missing or unwritable
cache only costs time. Set SYSCTL_ADVISOR_CACHE=off to disable it.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

import jinja2
from jinja2 import StrictUndefined, nodes, pass_context
from jinja2.exceptions import SecurityError, TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.parser import Parser
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import SandboxedEnvironment

from advisor import __version__
from advisor.errors import InputError
from advisor.units import (
    human_bytes,
    human_count,
    pow2_ceil,
    pow2_floor,
    size_ceil,
    size_floor,
    tidy_ceil,
)


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


FILTERS: dict[str, Callable[..., Any]] = {
    "bytes": human_bytes,
    "pages": _pages,
    "percent": _percent,
    "count": human_count,
    "num": _num,
    "mbits": _mbits,
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


def make_environment() -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False
    )
    env.filters.update(FILTERS)
    env.tests.update(TESTS)
    env.globals.update(GLOBALS)
    return env


def cache_directory() -> Path | None:
    """$SYSCTL_ADVISOR_CACHE, else $XDG_CACHE_HOME/sysctl-advisor, else ~/.cache/sysctl-advisor;
    None when SYSCTL_ADVISOR_CACHE is off/0/no/false."""
    setting = os.environ.get("SYSCTL_ADVISOR_CACHE", "")
    if setting.lower() in {"off", "0", "no", "false"}:
        return None
    if setting:
        return Path(setting)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "sysctl-advisor"


def save_cache_file(path: Path, data: bytes) -> bool:
    """Replace a cache file atomically; False (and nothing else) if it cannot be written,
    since a cache that cannot be written only costs time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


class _CodeCache:
    """Generated code objects by source hash, in one marshal file per Python/Jinja version."""

    def __init__(self) -> None:
        self._codes: dict[str, bytes] = {}
        self._dirty = False
        self._path = self._locate()
        if self._path is not None:
            try:
                loaded = marshal.loads(self._path.read_bytes())
                if isinstance(loaded, dict):
                    self._codes = loaded
            except (OSError, ValueError, EOFError, TypeError):
                self._codes = {}

    @staticmethod
    def _locate() -> Path | None:
        base = cache_directory()
        if base is None:
            return None
        tag = (
            f"py{sys.version_info[0]}{sys.version_info[1]}-jinja{jinja2.__version__}-{__version__}"
        )
        return base / f"expressions-{tag}.marshal"

    def get(self, key: str) -> CodeType | None:
        raw = self._codes.get(key)
        if raw is None:
            return None
        try:
            code = marshal.loads(raw)
        except (ValueError, EOFError, TypeError):
            return None
        return code if isinstance(code, CodeType) else None

    def put(self, key: str, code: CodeType) -> None:
        self._codes[key] = marshal.dumps(code)
        self._dirty = True

    def save(self) -> None:
        if self._dirty and self._path is not None:
            self._dirty = not save_cache_file(self._path, marshal.dumps(self._codes))


class Compiler:
    """Compiles expressions and templates once per process, through the code cache."""

    def __init__(self) -> None:
        self.env = make_environment()
        self._cache = _CodeCache()
        # A flat dict, not jinja's ChainMap: every evaluation copies the globals into its
        # context, and copying a ChainMap costs a lookup per name through both maps.
        self._globals: dict[str, Any] = dict(self.env.globals)
        self._memo: dict[tuple[str, str], jinja2.Template] = {}

    def _template(self, kind: str, source: str, build: Callable[[], CodeType]) -> jinja2.Template:
        memo_key = (kind, source)
        template = self._memo.get(memo_key)
        if template is not None:
            return template
        key = hashlib.sha1(f"{kind}\0{source}".encode()).hexdigest()
        code = self._cache.get(key)
        if code is None:
            code = build()
            self._cache.put(key, code)
        template = self.env.template_class.from_code(self.env, code, self._globals)
        self._memo[memo_key] = template
        return template

    def expression(self, source: str) -> Expression:
        def build() -> CodeType:
            try:
                parser = Parser(self.env, source, state="variable")
                expr = parser.parse_expression()
                if not parser.stream.eos:
                    raise TemplateSyntaxError("unexpected text after the expression", 1)
            except TemplateSyntaxError as exc:
                raise ExpressionError(f"invalid expression {source!r}: {exc.message}") from None
            body = [nodes.Assign(nodes.Name("result", "store"), expr, lineno=1)]
            code = self.env.compile(nodes.Template(body, lineno=1))
            assert isinstance(code, CodeType)
            return code

        return Expression(source, self._template("expr", source, build))

    def template(self, source: str) -> Text:
        def build() -> CodeType:
            try:
                code = self.env.compile(source)
            except TemplateSyntaxError as exc:
                raise ExpressionError(
                    f"invalid template (line {exc.lineno}): {exc.message}"
                ) from None
            assert isinstance(code, CodeType)
            return code

        return Text(source, self._template("text", source, build))

    def save(self) -> None:
        self._cache.save()


def _explain(exc: Exception) -> str:
    if isinstance(exc, SecurityError):
        return f"refused by the sandbox: {exc}"
    if isinstance(exc, UndefinedError):
        return f"undefined name: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


class Expression:
    """A compiled expression; evaluate() returns a native Python value."""

    def __init__(self, source: str, template: jinja2.Template) -> None:
        self.source = source
        self._template = template

    def evaluate(self, variables: dict[str, Any]) -> Any:
        try:
            ctx = self._template.new_context(variables)  # copies
            for _ in self._template.root_render_func(ctx):
                pass
            value = ctx.vars["result"]
            if isinstance(value, Undefined):
                value._fail_with_undefined_error()
        except (TemplateError, ArithmeticError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise ExpressionError(f"{self.source!r}: {_explain(exc)}") from None
        return value


class Text:
    """A compiled rationale/message template."""

    def __init__(self, source: str, template: jinja2.Template) -> None:
        self.source = source
        self._template = template

    def render(self, variables: dict[str, Any]) -> str:
        try:
            return self._template.render(variables).strip()
        except (TemplateError, ArithmeticError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise ExpressionError(f"template: {_explain(exc)}") from None


def as_input_error(exc: ExpressionError, path: Path | str | None, field: str) -> InputError:
    return InputError(str(exc), path=path, field=field)
