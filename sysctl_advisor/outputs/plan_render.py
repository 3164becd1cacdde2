"""Renderers: format a Plan with the templates in templates/. They compute nothing new."""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from sysctl_advisor import __version__
from sysctl_advisor.cache.code import TemplateCodeCache, code_cache_name
from sysctl_advisor.knowledge.catalog import Catalog, CatalogKey
from sysctl_advisor.knowledge.resources import data_dir
from sysctl_advisor.knowledge.sources import citation_parts
from sysctl_advisor.knowledge.values import human, parse_current
from sysctl_advisor.knowledge.workloads import workload_names
from sysctl_advisor.model.documents import dump_json
from sysctl_advisor.model.kernel_version import KernelRange
from sysctl_advisor.model.plan import Finding, Plan, Setting
from sysctl_advisor.model.sysctl_conf import unmarked
from sysctl_advisor.model.text_escape import one_line
from sysctl_advisor.model.units import human_bytes
from sysctl_advisor.outputs.markdown_text import (
    FOLD_ROWS,
    Limits,
    fit_document,
    md_code,
    md_code_cell,
    md_text,
    md_text_clipped,
)

YAML_WIDTH = 80  # yamllint's default line-length
# The widest line of a conf or tuned file, but for lines no break can shorten: a setting's
# assignment, the rebuild command (copied whole), a single word such as a URL.
WIDTH = 100
# A finding or a change outside sysctl takes at most this many lines in a file's head: its
# first sentence, cut at a word with an ellipsis where longer (in full: `-f markdown`).
HEAD_LINES = 2
# A quotation (a log line) longer than this is cut in the head, at a word, with an ellipsis.
QUOTE_CHARS = 48
ELLIPSIS = "\u2026"
TEMPLATES = {
    "conf": "sysctl.conf.j2",
    "markdown": "plan.md.j2",
    "tuned": "tuned.conf.j2",
    "ansible": "ansible.yml.j2",
}


def wrap_words(text: str, width: int) -> list[str]:
    """Greedy word wrap on whitespace, words never broken (textwrap with break_long_words and
    break_on_hyphens off gives the same lines; this is several times faster, and a fleet run
    wraps a few dozen paragraphs per host)."""
    return _rows(text.split(), width, width)


class Lines(str):
    """Text a filter has already made safe line by line (comment blocks): `finalize` keeps it,
    but for a wrapped line that would read back as a suppression comment."""


def _finalize(value: Any) -> Any:
    return unmarked(value) if isinstance(value, Lines) else one_line(value)


@functools.lru_cache(maxsize=4096)  # a fleet wraps the same rationales for every host of a kind
def _comment(text: str, indent: str = "#   ", width: int = 96) -> str:
    """Wrap prose into comment lines; every line starts with `indent`."""
    lines: list[str] = []
    for paragraph in str(text).splitlines():
        wrapped = wrap_words(one_line(paragraph), width - len(indent))
        # a paragraph's closing source numbers ("[1-11,14]") stay on its last line of text
        # rather than stand alone, a few characters past the width (never past WIDTH)
        if (
            len(wrapped) > 1
            and _SOURCES.fullmatch(wrapped[-1])
            and len(indent) + len(wrapped[-2]) + 1 + len(wrapped[-1]) <= max(width, WIDTH)
        ):
            wrapped[-2:] = [f"{wrapped[-2]} {wrapped[-1]}"]
        lines.extend(indent + w for w in wrapped)
    return Lines("\n".join(lines))


_SOURCES = re.compile(r"\[[0-9,-]+\]")


@functools.lru_cache(maxsize=4096)
def _hanging(text: str, first: str = "# ", rest: str = "#   ", width: int = 96) -> str:
    """One paragraph as comment lines: the first line after `first`, the others after `rest`."""
    words = wrap_words(one_line(" ".join(str(text).split())), width - len(rest))
    if not words:
        return Lines(first.rstrip())
    head, *tail = words
    if len(first) + len(head) > width and " " in head:  # rewrap the first at its own indent
        head, *more = wrap_words(head, width - len(first))
        tail = more + tail
    return Lines("\n".join([first + head, *(rest + line for line in tail)]))


def _rows(words: list[str], first: int, rest: int) -> list[str]:
    """Greedy wrap of words into rows, the first `first` characters wide, the others `rest`."""
    rows: list[str] = []
    row, room = "", first
    for word in words:
        if not row:
            row = word
        elif len(row) + 1 + len(word) <= room:
            row = f"{row} {word}"
        else:
            rows.append(row)
            row, room = word, rest
    if row:
        rows.append(row)
    return rows


def listed(parts: Sequence[str], first: str, rest: str = "#           ", width: int = WIDTH) -> str:
    """Parts joined by ", " as comment lines, a line broken only between parts ("page size
    4 KiB" stays whole), a part wider than a line wrapped at its words; each part escaped as
    every comment is (`one_line`)."""
    rows: list[str] = []
    items = [" ".join(one_line(str(p)).split()) for p in parts]
    for n, part in enumerate(items):
        # room for the part and the comma after it, unless it is the last
        room = width - len(rest if len(rows) > 1 else first) - (n < len(items) - 1)
        if rows and len(rows[-1]) + 2 + len(part) <= room:
            rows[-1] = f"{rows[-1]}, {part}"
        elif rows:
            rows[-1] += ","
            rows += wrap_words(part, width - len(rest) - 1)
        else:
            rows += wrap_words(part, room) or [""]
    return Lines("\n".join([first + rows[0], *(rest + row for row in rows[1:])]))


@functools.lru_cache(maxsize=4096)
def clipped(
    text: str,
    first: str = "#   ",
    rest: str = "#       ",
    width: int = WIDTH,
    lines: int = HEAD_LINES,
) -> str:
    """One paragraph in at most `lines` comment lines of `width`: the first after `first`, the
    others after `rest`; where longer, cut at a word and ended with an ellipsis (a word too
    long for any line is cut too: the full text is elsewhere)."""
    room = width - max(len(first), len(rest)) - len(ELLIPSIS)
    flat = one_line(" ".join(str(text).split()))
    words = [w if len(w) <= room else w[:room] + ELLIPSIS for w in flat.split()]
    rows = _rows(words, width - len(first), width - len(rest))
    if len(rows) > lines:
        rows = rows[:lines]
        room = width - len(first if lines == 1 else rest) - len(ELLIPSIS)
        last = rows[-1]
        while len(last) > room and " " in last:
            last = last.rsplit(" ", 1)[0]
        rows[-1] = last.rstrip(",;:") + ELLIPSIS
    if not rows:
        return Lines(first.rstrip())
    return Lines("\n".join([first + rows[0], *(rest + row for row in rows[1:])]))


_QUOTE = re.compile(r'"([^"]{' + str(QUOTE_CHARS + 1) + ',})"')


def _short_quote(match: re.Match[str]) -> str:
    words = match[1].split()
    kept = _rows(words, QUOTE_CHARS, QUOTE_CHARS)[0][:QUOTE_CHARS] if words else ""
    return f'"{kept}{ELLIPSIS}"' if kept != " ".join(words) else match[0]


@functools.lru_cache(maxsize=4096)
def head_sentence(text: str) -> str:
    """A finding's or companion's point for a file's head: its first sentence, with each long
    quotation (a log line) cut to its opening words."""
    return first_sentence(_QUOTE.sub(_short_quote, " ".join(text.split())), drop_tag=False)


def head_findings(findings: Sequence[Finding]) -> list[tuple[str, str]]:
    """The findings a head shows one by one, each once (the same id and key twice is one
    finding), as (tag, text): "[warning] id (key)" and the finding's point, the key left out
    of the tag when the point names it; infos aside."""
    seen: dict[tuple[str, str | None], tuple[str, str]] = {}
    for f in findings:
        if f.severity != "info" and (f.id, f.key) not in seen:
            text = head_sentence(f.message)
            key = f" ({f.key})" if f.key and f.key not in text else ""
            seen[(f.id, f.key)] = (f"[{f.severity}] {f.id}{key}", text)
    return list(seen.values())


@functools.lru_cache(maxsize=4096)
def _yaml_comment(text: str, indent: str = "#   ", first: str | None = None) -> str:
    """Comment lines for YAML outputs, each at most 80 characters (yamllint's default
    line-length). A word too long for a line stands alone after "# ", the form yamllint's
    allow-non-breakable-words accepts (a hostname or path has no space to break at)."""
    lines: list[str] = []
    for paragraph in str(text).splitlines() or [""]:
        prefix, line = first or indent, ""
        for word in one_line(paragraph).split():
            if line and len(prefix) + len(line) + 1 + len(word) <= YAML_WIDTH:
                line = f"{line} {word}"
                continue
            if line:
                lines.append(prefix + line)
                prefix = indent
            line = word
            if len(prefix) + len(word) > YAML_WIDTH:
                lines.append("# " + word)
                prefix, line = indent, ""
        if line or not lines:
            lines.append((prefix + line).rstrip())
    return Lines("\n".join(lines))


def _param(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):  # exact, so the rebuild line rebuilds the same plan
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def rebuild_command(
    profile: str | Sequence[str],
    facts: Path | None,
    overrides: dict[str, str],
    fmt: str = "conf",
) -> str:
    """The `recommend` command line that reproduces a plan (shown in every rendered header)."""
    parts = ["sysctl-advisor", "recommend"]
    if facts is not None:
        parts += ["--facts", str(facts)]
    for name in workload_names(profile):
        parts += ["--profile", name]
    for name in sorted(overrides):
        parts += ["--set", f"{name}={overrides[name]}"]
    if fmt != "conf":
        parts += ["--format", fmt]
    return shlex.join(parts)


def _yaml_string(value: Any) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is a subset of YAML's)."""
    return json.dumps(str(value))


@functools.lru_cache(maxsize=4096)  # a fleet shows the same findings for many hosts
def first_sentence(text: str, drop_tag: bool = True) -> str:
    """The first sentence of prose, flattened; `drop_tag` removes a leading "[rule-id] "."""
    flat = " ".join(text.split())
    if drop_tag and flat.startswith("[") and "] " in flat:
        flat = flat.split("] ", 1)[1]
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


def default_origin(set_by: str | None, modelled: str | None) -> str | None:
    """Where a host's default that is not the kernel's own came from (a tuning daemon or a
    file set it), with the kernel's own beside it. None: the default is the kernel's."""
    if set_by is None:
        return None
    kernel = "not modelled" if modelled is None else modelled or "none (empty)"
    return f"set by {set_by}; the kernel's is {kernel}"


def host_default(set_by: str | None, modelled: str | None) -> str | None:
    """The same, said as the host's default: "host default, set by tuned from …; the
    kernel's is …"."""
    origin = default_origin(set_by, modelled)
    return None if origin is None else f"host default, {origin}"


def _shown(raw: str | None, human_form: str | None) -> str:
    if raw is None:
        return "not modelled"
    if not raw:
        return "none (empty)"
    return human_form if human_form and human_form != raw else raw


_UNIT_IN_HUMAN = ("bytes", "pages", "kbytes", "seconds")  # the human form names it: "4 KiB", "30 s"


def _setting_head(s: Setting, x: dict[str, Any], width: int = 96) -> str:
    """A setting's first comment lines: key, unit and the value in human units; then the
    default it replaces (and who set it, when not the kernel) and what is in force, on the
    same line when it fits."""
    fields = f" ({x['fields']})" if x["fields"] else ""
    unit = "" if s.unit in _UNIT_IN_HUMAN else f", {s.unit}"
    head = f"{s.key}{fields}{unit}: {s.human}"
    if s.default_set_by is not None:
        was = (
            f"host default {_shown(s.kernel_default, x['default_human'])}, set by "
            f"{s.default_set_by}; the kernel's {_shown(s.modelled_default, x['modelled_human'])}"
        )
    else:
        was = f"kernel default {_shown(s.kernel_default, x['default_human'])}"
    if s.current is not None and s.current != s.kernel_default:
        was += f"; in force {_shown(s.current, x['current_human'])}"
    if len(head) + 2 + len(was) <= width:
        return Lines(f"# {one_line(head)}; {one_line(was)}")
    return Lines(f"{_hanging(head, '# ', '#   ', width)}\n{_comment(was, '#   ', width)}")


def _cited_summary(s: Setting, known: dict[str, Any], numbers: dict[str, int]) -> tuple[str, str]:
    """The setting's summary, each rule's sentence followed by its sources' numbers in this
    file ([1, 3]), and all those numbers ("[1, 3, 4]", or ""); sources get the next number
    the first time they are cited."""
    out = []
    every: list[int] = []
    for line in s.summary.split("\n"):
        rule = line[1 : line.find("] ")] if line.startswith("[") and "] " in line else None
        ids = [citation_parts(c)[0] for c in s.cited.get(rule, [])] if rule else []
        cited = [numbers.setdefault(i, len(numbers) + 1) for i in dict.fromkeys(ids) if i in known]
        out.append(f"{line} [{_numbers(cited)}]" if cited else line)
        every += [n for n in cited if n not in every]
    return "\n".join(out), f"[{_numbers(every)}]" if every else ""


def _reason(summary: str) -> str:
    """A setting's reason on one line: the first rule's sentence, then how the merge moved the
    value when it did (a value in force kept, a cap that won), so the line names the value set."""
    first, *rest = summary.split("\n")
    return " ".join([first_sentence(first), *(line for line in rest if not line.startswith("["))])


def _numbers(numbers: list[int]) -> str:
    """Reference numbers in order, runs of three or more as a range, with no space a line
    could break at: "1-11,14"."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)


def at_least(spec: CatalogKey, setting: Setting) -> bool:
    """Whether tuned may keep a higher value in force (its ">" prefix): a single-number
    capacity (the catalog's `max` merge) that no safety cap governs on this host, binding or
    not (a higher value in force at apply time would stay above the cap). tuned compares with
    int(), so on a vector it would write the ">" to the kernel."""
    held_down = bool(setting.capped_by) or bool(setting.caps)
    return spec.length == 1 and spec.merge == "max" and not held_down


def removed_in(exists: str) -> str | None:
    """The first kernel without the key, from the catalog's `exists` range ("<4.12" -> "4.12");
    None when no newer kernel drops it."""
    for op, numbers in KernelRange.parse(exists).clauses:
        if op == "<":
            parts = list(numbers)
            while len(parts) > 2 and parts[-1] == 0:
                parts.pop()
            return ".".join(map(str, parts))
    return None


def _host_vars(plan: Plan) -> str:
    """The host_vars data, from the JSON serializer (a JSON document is YAML, and Ansible
    reads it as such; json is ten times faster than a YAML dumper). The template before it
    writes only comments."""
    data = {
        "sysctl_advisor_profile": plan.profile.name,
        "sysctl_advisor_settings": [{"name": s.key, "value": s.value} for s in plan.settings],
    }
    return "---\n" + json.dumps(data, indent=2, ensure_ascii=False) + "\n"


class RenderCheckError(Exception):
    """A rendered file does not hold exactly the plan's settings: never written, exit 3."""


def _assignments(text: str) -> list[str]:
    """The lines procps and systemd-sysctl apply: split on \\n only, blank lines and lines
    whose first non-blank character is # or ; skipped."""
    return [
        line for line in text.split("\n") if (stripped := line.strip()) and stripped[0] not in "#;"
    ]


def rendered_settings(fmt: str, text: str) -> dict[str, str] | None:
    """The settings a rendered file holds, read back as its consumer reads it (procps/systemd
    line syntax for conf, ini for tuned, the YAML document after the comment header for
    host_vars); None for formats that carry no settings to apply."""
    if fmt == "conf":
        found: dict[str, str] = {}
        for line in _assignments(text):
            key, sep, value = line.partition("=")
            key, value = key.strip(), " ".join(value.split())
            if not sep or not key or key[0] == "-" or key in found or any(c in key for c in "*?["):
                raise RenderCheckError(f"{line[:60]!r} is not a plain, single assignment")
            found[key] = value
        return found
    if fmt == "tuned":
        import configparser

        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None, strict=True)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        try:
            parser.read_string(text)
        except configparser.Error as exc:
            raise RenderCheckError(f"not an ini file: {exc.__class__.__name__}") from None
        if set(parser.sections()) - {"main", "sysctl"}:
            raise RenderCheckError(f"unexpected sections {parser.sections()}")
        if not parser.has_section("sysctl"):
            return {}
        settings = {}
        for key, raw in parser.items("sysctl"):
            value = raw[1:-1] if raw[:1] == raw[-1:] == '"' else raw  # tuned's unquote
            if value[:1] == ">":  # "at least": tuned compares int(rest) with the value in force
                value = value[1:]
                if not value.isascii() or not value.isdigit():
                    raise RenderCheckError(f"{key}: tuned cannot compare {raw[:40]!r}")
            settings[key] = value
        return settings
    if fmt == "ansible":
        header, sep, document = text.partition("\n---\n")
        if not sep or any(line and line[0] != "#" for line in header.split("\n")):
            raise RenderCheckError("host_vars hold more than comments before the document")
        try:
            data = json.loads(document)
        except ValueError:
            raise RenderCheckError("the host_vars document is not the serializer's") from None
        if not isinstance(data, dict) or set(data) != {
            "sysctl_advisor_profile",
            "sysctl_advisor_settings",
        }:
            raise RenderCheckError("host_vars hold other variables than the advisor's two")
        items = data["sysctl_advisor_settings"]
        pairs = {str(i.get("name")): str(i.get("value")) for i in items if isinstance(i, dict)}
        if len(pairs) != len(items):
            raise RenderCheckError("host_vars settings are not unique name/value items")
        return pairs
    return None


def check_rendered(plan: Plan, fmt: str, text: str) -> None:
    """The output invariant: what the consumer will read from the file is exactly the plan's
    keys and values, nothing more, nothing less (so no text embedded in a comment can become
    a setting)."""
    found = rendered_settings(fmt, text)
    if found is None:
        return
    wanted = {s.key: s.value for s in plan.settings}
    if found != wanted:
        extra = sorted(set(found) - set(wanted)) or sorted(
            k for k in found if found[k] != wanted.get(k)
        )
        raise RenderCheckError(
            f"the rendered {fmt} output does not read back as the plan "
            f"({', '.join(extra[:3]) or 'settings missing'}); nothing was written"
        )


_HUMANS_REMEMBERED = 4096


class Renderer:
    def __init__(self, catalog: Catalog, templates: Path | None = None) -> None:
        self.catalog = catalog
        self._humans: dict[tuple[str, str, int], str | None] = {}
        # Bytecode of the shipped templates, in a cache file named after this module's source:
        # Jinja keys its cache by template text only, not by environment options such as
        # `finalize`, so code from another version of the renderer must never be loaded.
        bytecode_cache = TemplateCodeCache(code_cache_name("templates", __name__))
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(templates or data_dir("templates"))),
            autoescape=False,
            finalize=_finalize,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            undefined=jinja2.StrictUndefined,
            bytecode_cache=bytecode_cache,
            # the shipped templates do not change under a run: no stat of the file each time
            # a template is fetched (a fleet fetches two per host)
            auto_reload=False,
        )
        self.env.filters["comment"] = _comment
        self.env.filters["yaml_comment"] = _yaml_comment
        self.env.filters["hanging"] = _hanging
        self.env.filters["text"] = md_text
        self.env.filters["prose"] = md_text_clipped
        self.env.filters["code"] = md_code
        self.env.filters["cell_code"] = md_code_cell
        self.env.filters["first_sentence"] = first_sentence
        self.env.filters["head_sentence"] = head_sentence
        self.env.filters["clipped"] = clipped
        self.env.filters["listed"] = listed
        # A rationale's line breaks are where the engine joined its sentences: spaces in prose.
        self.env.filters["flat"] = lambda text: " ".join(str(text).split())
        self.env.filters["param"] = _param
        self.env.filters["yaml_string"] = _yaml_string
        self.env.filters["host_default"] = lambda s: host_default(
            s.default_set_by, s.modelled_default
        )

    def _human(self, key: str, text: str | None, page_size: int) -> str | None:
        """A value's human form; remembered (bounded), since a fleet's hosts share values."""
        if text is None or key not in self.catalog.keys:
            return None
        memo_key = (key, text, page_size)
        if memo_key in self._humans:
            return self._humans[memo_key]
        if len(self._humans) >= _HUMANS_REMEMBERED:
            self._humans.clear()
        found = self._humans[memo_key] = self._human_form(key, text, page_size)
        return found

    def _human_form(self, key: str, text: str, page_size: int) -> str | None:
        spec = self.catalog.keys[key]
        if spec.unit in ("count", "port", "name"):
            return None  # the number is already the human form
        value = parse_current(text, spec)
        return human(value, spec, page_size) if value is not None else None

    def render(
        self, plan: Plan, fmt: str, command: str, detail: str = "normal", undo: bool = False
    ) -> str:
        """The plan in `fmt`, checked by reading it back (see `check_rendered`); `detail`
        (formats.DETAIL) is how much a conf or tuned file says of each value; `undo`: the plan
        is an undo (engine.undo), said in the header, every value written exactly."""
        if fmt == "json":
            return dump_json(plan.to_json_data())
        if fmt == "markdown":
            return self._markdown(plan, command, undo)
        if fmt == "kubernetes":
            raise ValueError("the kubernetes format renders a Placement: render_kubernetes()")
        context = self._context(plan, command, detail, undo)
        text = self.env.get_template(TEMPLATES[fmt]).render(**context)
        if fmt == "ansible":
            text += _host_vars(plan)
        check_rendered(plan, fmt, text)
        return text

    def render_for_shape(
        self,
        plan: Plan,
        fmt: str,
        command: str,
        memo: dict[str, Any],
        detail: str = "normal",
        undo: bool = False,
    ) -> str:
        """`render(plan, fmt, command, detail)` for a fleet host whose shape's other hosts share
        `memo` (engine.plan_cache): the template's `body` block, which does not name the host, is
        rendered once per shape; the `head` (host name, rebuild command) for each host. Every
        host's file is read back, as `render` does, in two parts (see below)."""
        template = self.env.get_template(TEMPLATES[fmt])
        base = memo.get("context")
        if base is None:
            base = memo["context"] = self._context(plan, command, detail, undo)
        context = template.new_context({**base, "plan": plan, "command": command})
        head = "".join(template.blocks["head"](context))
        body: str | None = memo.get(f"body:{fmt}")
        if body is None:
            body = "".join(template.blocks["body"](context))
            if fmt == "ansible":
                body += _host_vars(plan)
            memo[f"body:{fmt}"] = body
        # The read-back of `render`, in two parts: the head holds only comment lines (so the
        # file reads as its body does) and the body, the same text and the same settings for
        # the whole shape, reads back as the plan: checked once per shape.
        if not head.endswith("\n") or any(
            line and line[0] != "#" for line in head[:-1].split("\n")
        ):
            raise RenderCheckError(f"the {fmt} head holds more than comment lines")
        if not memo.get(f"read back:{fmt}"):
            check_rendered(plan, fmt, body)
            memo[f"read back:{fmt}"] = True
        return head + body

    def tuned_for_operator(self, plan: Plan, command: str) -> str:
        """The tuned profile the Node Tuning Operator embeds: the tuned output, told it runs
        under the operator (on top of openshift-node), its findings left to the manifest."""
        context = {**self._context(plan, command), "operator": True}
        text = self.env.get_template(TEMPLATES["tuned"]).render(**context)
        check_rendered(plan, "tuned", text)
        return text

    def _markdown(self, plan: Plan, command: str, undo: bool = False) -> str:
        """The plan as a pull-request comment, within GitHub's size limit: notes, unchanged
        keys, companions and findings lose rows first, the settings table last."""
        template = self.env.get_template(TEMPLATES["markdown"])
        context = self._context(plan, command, undo=undo)
        sections = ("settings", "findings", "companions", "unchanged", "notes")

        def render(limits: Limits) -> str:
            shown = {name: limits.get(name) for name in sections}
            return template.render(**context, limits=shown, fold=FOLD_ROWS)

        counts = {name: len(getattr(plan, name)) for name in sections}
        tiers = [{k: counts[k] for k in sections[1:]}, {"settings": counts["settings"]}]
        return fit_document(render, tiers)

    def _context(
        self, plan: Plan, command: str, detail: str = "normal", undo: bool = False
    ) -> dict[str, Any]:
        sections: list[dict[str, Any]] = []
        for section in self.catalog.sections:
            rows = [s for s in plan.settings if s.section == section.id]
            if rows:
                sections.append({"title": section.title, "settings": rows})
        page_size = plan.host.page_size
        extra: dict[str, dict[str, Any]] = {}
        known = {r.id: r for r in plan.references}
        numbers: dict[str, int] = {}  # source id -> its number in this file, first cited first
        for s in (s for section in sections for s in section["settings"]):
            spec = self.catalog.keys[s.key]
            x = extra[s.key] = {
                "fields": " ".join(spec.fields) if spec.fields else "",
                "default_human": self._human(s.key, s.kernel_default, page_size),
                "modelled_human": self._human(s.key, s.modelled_default, page_size),
                "current_human": self._human(s.key, s.current, page_size),
                # an undo restores exact values: never tuned's "at least"
                "at_least": not undo and at_least(spec, s),
                "removed_in": removed_in(spec.exists),
            }
            x["head"] = _setting_head(s, x)
            x["why"], x["cites"] = _cited_summary(s, known, numbers)
            x["reason"] = _reason(s.summary)
        return {
            "plan": plan,
            "detail": detail,
            "references": [(n, known[i]) for i, n in numbers.items()],
            "head_findings": head_findings(plan.findings),
            "width": WIDTH,
            "sections": sections,
            "extra": extra,
            "command": command,
            "version": __version__,
            "memory_human": human_bytes(plan.host.memory_total),
            "lowmem_human": human_bytes(plan.host.lowmem) if plan.host.lowmem else None,
            "page_human": human_bytes(page_size),
            "operator": False,
            "undo": undo,
            "profile_params": " ".join(
                f"{k}={_param(v)}" for k, v in sorted(plan.profile.params.items())
            ),
        }
