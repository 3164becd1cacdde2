"""The `check` linter's rules: YAML in rules/check/, one concern per file.

A rule either tests each assignment (`when`, an expression over the key, its value and what is
known about the target host) or documents a finding the file reader reports itself
(`kind: structural`: duplicates, overrides, unparsable lines, unreadable
files). Either way the rule file holds its severity, rationale, references and examples, so
the rules reference is generated from the same place the checks run from.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.expressions import (
    Compiler,
    Expression,
    ExpressionError,
    Text,
    as_input_error,
)
from sysctl_advisor.knowledge.knowledge_files import RULE_ID, check_family, check_rule_files
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import Field, SpecModel, model
from sysctl_advisor.model.severity import Severity
from sysctl_advisor.model.vocabulary import OneLine


@model
class CheckExamples(SpecModel):
    """sysctl.conf text that makes the rule fire, and text that does not. Lines
    `# file: NAME` split an example into several files of one sysctl.d directory."""

    samples: ClassVar[frozenset[str]] = frozenset({"fires", "quiet"})

    fires: str
    quiet: str
    facts: dict[str, object] | None = Field(default=None, description="facts both examples assume")
    kernel: str | None = Field(default=None, description="--kernel both examples assume")


@model
class CheckRuleSpec(SpecModel):
    id: str = Field(pattern=RULE_ID)
    severity: Severity
    kind: Literal["assignment", "structural"] = "assignment"
    title: OneLine = Field(max_length=200)
    keys: list[str] = Field(default_factory=lambda: ["*"], description="key globs it applies to")
    needs: list[Literal["facts", "kernel", "profile"]] = Field(default_factory=list)
    when: str | None = None
    reports: list[
        Literal[
            "syntax",
            "shell-command",
            "byte-order-mark",
            "broken-link",
            "outside-link",
            "unreadable",
            "duplicate",
            "duplicate-same",
            "duplicate-fallback",
            "twin-cleared",
            "override",
            "suppression-unused",
            "suppression-malformed",
            "writer-file",
        ]
    ] = Field(
        default_factory=list,
        description="structural rules: the file reader's findings this rule reports",
    )
    globs: bool = Field(
        default=False,
        description="judge glob lines (`net.core.* = 5`) instead of single keys; such rules "
        "see `glob` (what the pattern matches), the others never see a glob line",
    )
    in_dumps: bool = Field(
        default=True,
        description="also judge a `sysctl -a` dump; false for rules about how a file is "
        "written (syntax, comments, duplicates, unknown keys), which a dump of the kernel's "
        "own values never is",
    )
    catalog_keys: bool = Field(
        default=False,
        description="judge only keys in the key catalog (its `when` needs `spec`, or `bounds`, "
        "which a listed key with its kernel range has too): lines of other keys skip the "
        "rule without evaluating it (a `sysctl -a` dump is mostly such)",
    )
    knows_keys: bool = Field(
        default=False,
        description="its `keys` (names or globs, not `*`) are keys the advisor knows by this "
        "rule alone: other rules see them as `named` (check.unknown-key stays quiet on them)",
    )
    once: bool = Field(
        default=False,
        description="its findings in one file are said as one line: the first, with how many "
        "more lines of the file it finds",
    )
    let: dict[str, str] = Field(default_factory=dict)
    suggest: str | None = Field(
        default=None,
        description="an expression giving the names the value may have meant (a list of "
        "text); the message sees `suggestion`, the closest of them to the value, or none",
    )
    message: str
    rationale: str
    references: list[str] = Field(min_length=1)
    examples: CheckExamples

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind == "assignment" and not self.when:
            raise ValueError("an assignment rule needs `when`")
        if self.kind == "structural" and not self.reports:
            raise ValueError("a structural rule needs `reports` (which reader findings it names)")
        if self.knows_keys and (self.kind != "assignment" or "*" in self.keys):
            raise ValueError("`knows_keys` needs an assignment rule whose `keys` name keys")


_FINAL = re.compile(r"\bfinal\b")  # a rule that reads other lines of the config
_COMMENT = re.compile(r"\bcomment\b")  # a rule that reads the comment above a line


@dataclass
class CheckRule:
    spec: CheckRuleSpec
    path: Path
    when: Expression | None
    let: list[tuple[str, Expression]]
    message: Text
    suggest: Expression | None = None

    def __post_init__(self) -> None:
        # `keys` as exact names and globs (compiled as one pattern): a dump asks about a
        # thousand keys
        self.key_globs = [k for k in self.spec.keys if any(c in k for c in "*?[")]
        self.every_key = "*" in self.spec.keys
        self.key_names = frozenset(self.spec.keys) - set(self.key_globs)
        # whether a verdict may depend on other lines of the config (`final`): such verdicts
        # are kept for one config only
        spec = self.spec
        sources = [spec.when or "", spec.message, spec.suggest or "", *spec.let.values()]
        self.reads_final = any(_FINAL.search(source) for source in sources)
        # a line's comment is part of its verdict only for the rules that read it
        self.reads_comment = any(_COMMENT.search(source) for source in sources)

    @property
    def id(self) -> str:
        return self.spec.id

    @functools.cached_property
    def _globs(self) -> re.Pattern[str] | None:
        """The globs as one pattern, compiled when a key first reaches them (a dump's keys
        mostly do not: RulesByKey's own pattern turns them away)."""
        return _one_pattern(self.key_globs)

    def looks_at(self, key: str) -> bool:
        """Whether one of the rule's `keys` (names or fnmatch globs) covers the key."""
        return (
            self.every_key
            or key in self.key_names
            or (self._globs is not None and self._globs.match(key) is not None)
        )


def _one_pattern(globs: list[str]) -> re.Pattern[str] | None:
    """A pattern matching what any of the fnmatch globs matches."""
    return re.compile("|".join(fnmatch.translate(k) for k in globs)) if globs else None


class RulesByKey:
    """The rules (of `rules`, in their order) whose `keys` cover a key: those with `*`, and
    the others found by one lookup of the key's name and one pattern of all their globs, so
    that a key no rule names (a file of distinct keys is mostly such) costs two lookups."""

    def __init__(self, rules: list[CheckRule]) -> None:
        self.rules = rules
        self.every = [rule for rule in rules if rule.every_key]
        named = [rule for rule in rules if not rule.every_key]  # `*` names no key of its own
        self._names = frozenset(name for rule in named for name in rule.key_names)
        self._globs = _one_pattern([glob for rule in named for glob in rule.key_globs])

    def looking_at(self, key: str) -> list[CheckRule]:
        """The rules that look at `key`; `every` itself when no rule names it."""
        if key not in self._names and (self._globs is None or self._globs.match(key) is None):
            return self.every
        return [rule for rule in self.rules if rule.looks_at(key)]


def load_check_rules(
    directories: list[Path], compiler: Compiler, specs: SpecCache
) -> dict[str, CheckRule]:
    """The check rules of the shipped rules/check/ and of each --rules-dir's check/ folder,
    one schema and one sandbox for all; an id defined twice (a colleague's rule shadowing a
    shipped one) is refused."""
    rules: dict[str, CheckRule] = {}
    for directory, path in ((d, p) for d in directories for p in check_rule_files(d)):
        spec = specs.load(path, CheckRuleSpec, "a check rule file")
        check_family(spec.id, path, directory.parent)
        if spec.id in rules:
            raise InputError(f"duplicate check rule id {spec.id!r}", path=path, field="id")

        def expr(source: str, where: str, path: Path = path) -> Expression:
            try:
                return compiler.expression(source)
            except ExpressionError as exc:
                raise as_input_error(exc, path, where) from None

        try:
            message = compiler.template(spec.message)
        except ExpressionError as exc:
            raise as_input_error(exc, path, "message") from None
        rules[spec.id] = CheckRule(
            spec,
            path,
            expr(spec.when, "when") if spec.when else None,
            [(n, expr(e, f"let.{n}")) for n, e in spec.let.items()],
            message,
            expr(spec.suggest, "suggest") if spec.suggest else None,
        )
    return rules


# What a rule reads that only some contexts give: `host` (the facts' derived quantities) only
# with facts; an era quantity of `kernel` with the kernel, or with facts where it reads the host.
_NEED_FOR = {"kernel": ("kernel", "facts"), "facts": ("facts",)}


def check_needs(
    rules: Mapping[str, CheckRule],
    compiler: Compiler,
    quantities: Mapping[str, str],
    base_fields: frozenset[str],
) -> None:
    """Each rule's `needs` guarantee what it reads: `host` needs facts, `kernel.NAME` an era
    quantity (`quantities`: what each needs, the release alone or the host's facts) that
    the needs make known; `kernel.NAME` names a field the kernel has. A rule that reads more
    would be judged with the quantity absent, and is refused when the rules load."""
    for rule in rules.values():
        spec = rule.spec
        sources = [("when", spec.when or "", False), ("suggest", spec.suggest or "", False)]
        sources += [(f"let.{n}", e, False) for n, e in spec.let.items()]
        sources.append(("message", spec.message, True))
        for field, source, template in sources:
            if not source:
                continue
            read = compiler.attributes(source, template)
            wanted = [("facts", "host")] if "host" in read else []
            for name in sorted(read.get("kernel", ())):
                if name in base_fields:
                    continue
                if name not in quantities:
                    raise InputError(
                        f"kernel.{name}: the kernel has no such field (its fields: "
                        f"{', '.join(sorted(base_fields | set(quantities)))})",
                        path=rule.path,
                        field=field,
                    )
                wanted.append((quantities[name], f"kernel.{name}"))
            for need, what in wanted:
                if not set(_NEED_FOR[need]) & set(spec.needs):
                    raise InputError(
                        f"reads {what}, which is known only with {need}: "
                        f"add `{need}` to its `needs`",
                        path=rule.path,
                        field=field,
                    )
