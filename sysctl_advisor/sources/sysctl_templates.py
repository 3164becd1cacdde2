"""A Jinja template of a sysctl file (an Ansible role's `sysctl.conf.j2`) as the sysctl lines it
renders, read with Jinja's own lexer (jinja2, imported only when a template is read).

* A line that holds only statements (`{% if %}`, `{% for %}`, `{% endif %}`) or comments
  (`{# #}`, over several lines too) is no sysctl line: it is left blank, so every other line
  keeps its number.
* A line whose key holds Jinja (`{{ item.key }} = {{ item.value }}`) says nothing a reader can
  judge before rendering: it is left blank too.
* A line whose value holds Jinja (`net.core.somaxconn = {{ somaxconn }}`) is an assignment
  whose key is judged and whose value is not: its number is in `templated`.
* A line inside a statement block (`{% if %}` ... `{% endif %}`, a loop) is `conditional`: the
  same key in two branches of an `if` is not a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

# Statements that open a block, as Jinja names them; `end…` closes the innermost.
_OPENS = frozenset({"if", "for", "macro", "call", "filter", "block", "with", "autoescape"})
_EXPRESSION, _STATEMENT = "\x00{{", "\x00{%"  # what each Jinja part leaves in a line
# Jinja tags one template may hold, at most: Jinja reads some 10,000 a second, and a role's
# sysctl template holds a few dozen; a file of millions (16 MiB of `{{x}}`) is refused whole.
MAX_TAGS = 10_000
# Jinja tokens (names, operators, blanks, text between tags) one template may hold, at most:
# a single tag of millions (`{{ x ~ x ~ ...}}`) takes Jinja's parser as long as millions of
# tags; lexed lazily, a template is refused after this many, before it is parsed.
MAX_TOKENS = 200_000


@dataclass(frozen=True)
class TemplateLines:
    """The sysctl text a template renders to, as far as it can be read unrendered."""

    text: str  # the template's lines, Jinja statements, comments and unjudgeable lines blank
    templated: frozenset[int]  # lines whose value holds Jinja
    conditional: frozenset[int]  # lines inside a statement block
    error: tuple[int, str] | None = None  # (line, reason) when it is not read


def template_lines(text: str) -> TemplateLines:
    """The sysctl lines of a template's text (see the module's description)."""
    import jinja2

    raw = text.split("\n")
    tags = text.count("{{") + text.count("{%") + text.count("{#")
    if tags > MAX_TAGS:
        reason = f"more than {MAX_TAGS:,} Jinja tags ({tags:,}): not read as a template"
        return TemplateLines("", frozenset(), frozenset(), (1, reason))
    parts: dict[int, list[str]] = {}
    conditional: set[int] = set()
    opened: list[str] = []  # the statement blocks open, innermost last
    statement = False  # the next name is a statement's
    block_set = False  # a `{% set x %}` so far: a block until an `=` says it is not
    # the statements Ansible's templates may use (`do`, `break`, `continue`) are known
    env = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
    try:
        tokens = list(islice(env.lex(text), MAX_TOKENS + 1))
    except jinja2.TemplateSyntaxError:
        tokens = []  # within MAX_TOKENS: the parser says why, as it meets it
    if len(tokens) > MAX_TOKENS:
        reason = f"more than {MAX_TOKENS:,} Jinja tokens: not read as a template"
        return TemplateLines("", frozenset(), frozenset(), (1, reason))
    try:
        env.parse(text)  # a template Jinja cannot read is one error, not a line-by-line guess
        for number, kind, value in tokens:
            if kind == "data":
                for offset, piece in enumerate(value.split("\n")):
                    parts.setdefault(number + offset, []).append(piece)
                    if opened and piece.strip():
                        conditional.add(number + offset)
            elif kind == "variable_begin":
                parts.setdefault(number, []).append(_EXPRESSION)
            elif kind == "block_begin":
                parts.setdefault(number, []).append(_STATEMENT)
                statement = True
            elif kind == "name" and statement:
                statement = False
                block_set = value == "set"
                if value in _OPENS:
                    opened.append(value)
                elif opened and value == "end" + opened[-1]:
                    opened.pop()
            elif kind == "operator" and value == "=":
                block_set = False
            elif kind == "block_end":
                if block_set:  # `{% set x %}...{% endset %}` opens a block of its own
                    opened.append("set")
                block_set = statement = False
            elif kind != "whitespace":
                statement = False
    except jinja2.TemplateSyntaxError as exc:
        where = exc.lineno if 1 <= exc.lineno <= len(raw) else 1
        reason = f"Jinja cannot read the template: {exc.message}"
        return TemplateLines("", frozenset(), frozenset(), (where, reason))
    except RecursionError:  # blocks or brackets nested thousands deep
        reason = "Jinja cannot read the template: it nests too deep"
        return TemplateLines("", frozenset(), frozenset(), (1, reason))
    lines: list[str] = []
    templated: set[int] = set()
    for number, original in enumerate(raw, start=1):
        line = "".join(parts.get(number, []))
        if "\x00" not in line:
            lines.append(line)
            continue
        key, sep, _ = line.partition("=")
        if not sep or "\x00" in key:  # statements alone, or a key Jinja makes
            lines.append("")
        else:
            lines.append(original)
            templated.add(number)
    return TemplateLines("\n".join(lines), frozenset(templated), frozenset(conditional))
