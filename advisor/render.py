"""Renderers: format a Plan with the templates in templates/. They compute nothing new."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import jinja2

from advisor import __version__
from advisor.catalog import Catalog
from advisor.expressions import cache_directory
from advisor.plan import Plan
from advisor.resources import data_dir
from advisor.units import human_bytes
from advisor.values import human, parse_current
from advisor.yamlio import dump_json

FORMATS = ("conf", "json", "markdown", "tuned", "ansible")
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
    lines: list[str] = []
    line = ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line = f"{line} {word}"
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def _comment(text: str, indent: str = "#   ", width: int = 96) -> str:
    """Wrap prose into comment lines; every line starts with `indent`."""
    lines: list[str] = []
    for paragraph in text.splitlines():
        lines.extend(indent + w for w in wrap_words(paragraph, width - len(indent)))
    return "\n".join(lines)


def md_cell(text: str) -> str:
    """Text for one markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _param(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def rebuild_command(
    profile: str, facts: Path | None, overrides: dict[str, str], fmt: str = "conf"
) -> str:
    """The `recommend` command line that reproduces a plan (shown in every rendered header)."""
    parts = ["sysctl-advisor", "recommend"]
    if facts is not None:
        parts += ["--facts", str(facts)]
    parts += ["--profile", profile]
    for name in sorted(overrides):
        parts += ["--set", f"{name}={overrides[name]}"]
    if fmt != "conf":
        parts += ["--format", fmt]
    return shlex.join(parts)


def _yaml_string(value: Any) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is a subset of YAML's)."""
    return json.dumps(str(value))


def first_sentence(text: str, drop_tag: bool = True) -> str:
    """The first sentence of prose, flattened; `drop_tag` removes a leading "[rule-id] "."""
    flat = " ".join(text.split())
    if drop_tag and flat.startswith("[") and "] " in flat:
        flat = flat.split("] ", 1)[1]
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


class Renderer:
    def __init__(self, catalog: Catalog, templates: Path | None = None) -> None:
        self.catalog = catalog
        cache_dir = cache_directory()
        bytecode_cache: jinja2.BytecodeCache | None = None
        if cache_dir is not None:
            try:
                (cache_dir / "templates").mkdir(parents=True, exist_ok=True)
                bytecode_cache = jinja2.FileSystemBytecodeCache(str(cache_dir / "templates"))
            except OSError:
                bytecode_cache = None
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(templates or data_dir("templates"))),
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            undefined=jinja2.StrictUndefined,
            bytecode_cache=bytecode_cache,
        )
        self.env.filters["comment"] = _comment
        self.env.filters["md"] = md_cell
        self.env.filters["first_sentence"] = first_sentence
        self.env.filters["param"] = _param
        self.env.filters["yaml_string"] = _yaml_string

    def _human(self, key: str, text: str | None, page_size: int) -> str | None:
        if text is None or key not in self.catalog.keys:
            return None
        spec = self.catalog.keys[key]
        if spec.unit in ("count", "port"):
            return None  # the number is already the human form
        value = parse_current(text, spec)
        return human(value, spec, page_size) if value is not None else None

    def render(self, plan: Plan, fmt: str, command: str) -> str:
        if fmt == "json":
            return dump_json(plan.to_json_data())
        return self.env.get_template(TEMPLATES[fmt]).render(**self._context(plan, command))

    def _context(self, plan: Plan, command: str) -> dict[str, Any]:
        sections = []
        for section in self.catalog.sections:
            rows = [s for s in plan.settings if s.section == section.id]
            if rows:
                sections.append({"title": section.title, "settings": rows})
        page_size = plan.host.page_size
        extra: dict[str, dict[str, Any]] = {}
        for s in plan.settings:
            spec = self.catalog.keys[s.key]
            extra[s.key] = {
                "fields": " ".join(spec.fields) if spec.fields else "",
                "default_human": self._human(s.key, s.kernel_default, page_size),
                "current_human": self._human(s.key, s.current, page_size),
            }
        return {
            "plan": plan,
            "sections": sections,
            "extra": extra,
            "command": command,
            "version": __version__,
            "memory_human": human_bytes(plan.host.memory_total),
            "lowmem_human": human_bytes(plan.host.lowmem) if plan.host.lowmem else None,
            "page_human": human_bytes(page_size),
        }
