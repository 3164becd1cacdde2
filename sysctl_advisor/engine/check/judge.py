"""The judge, the first phase of `check`: a configuration's files judged by the rules in
rules/check/ before they reach a host.

It sees a CurrentConfig, already read (sources.check_inputs; a directory resolved with
systemd-sysctl's precedence): every assignment is run through the assignment rules that the
selection keeps, and what the reader noticed (inline comments, unparsable lines, duplicates,
overrides, unreadable files) is reported under the structural rules' ids (engine.check.
structural). A rule's findings in one file are listed up to a bound and counted past it
(engine.check.listing).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sysctl_advisor.engine.check.findings import CheckContext, CheckFinding
from sysctl_advisor.engine.check.listing import Listing
from sysctl_advisor.engine.check.near_keys import NearKeys
from sysctl_advisor.engine.check.structural import structural
from sysctl_advisor.engine.check.values import Final, fields, numbers
from sysctl_advisor.knowledge.catalog import KernelContext
from sysctl_advisor.knowledge.check_rules import CheckRule, RulesByKey
from sysctl_advisor.knowledge.expression_budget import new_budget
from sysctl_advisor.knowledge.expressions import ExpressionError
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.values import parse_text
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_write import kernel_write
from sysctl_advisor.model.model_base import plain_data
from sysctl_advisor.model.near_names import nearest_name
from sysctl_advisor.model.sysctl_conf import Assignment
from sysctl_advisor.model.vocabulary import key_matches

if TYPE_CHECKING:
    from jinja2.runtime import Context

    from sysctl_advisor.model.current_config import CurrentConfig


# Distinct lines (and keys) whose verdicts are kept: a line recurs in many files of a tree, and
# a file of distinct lines gains nothing from more (a kept line is a few hundred bytes).
_MEMO_LINES = 20_000
# Keys not in the catalog compared with the kernel's keys for a slip, at most, in one check
# (distinct keys; a key in the memo is not compared again): the rest are not compared, are
# reported as unknown, and `uncompared` counts them.
NEAR_BUDGET = 10_000
# A '[' with no ']' after it: not a bracket expression to fnmatch(3).
_UNCLOSED_BRACKET = re.compile(r"\[[^\]]*$")
# Folded template text is joined at these; other characters (a \x1f in a value) stay visible.
_PROSE_SPACE = re.compile(r"[ \t\n\r]+")
# A field a reader takes at face value: no leading zero (octal), no 0x (hex).
_PLAIN_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")
# What a rule reads of a line's value (Checker._scope): a template's line whose value Jinja
# makes is judged only by the rules that read none of it.
_FROM_VALUE = frozenset(
    {"value", "numbers", "text", "write", "decimal", "writers", "helper", "final"}
)


def _glob_reaches(pattern: str, name: str) -> bool:
    """Whether a glob line's pattern matches the key `name`, or, for a name with `*` for one
    interface, the key of some interface: of `all`, `default`, `lo`, or one the pattern's own
    component in that place spells (its wildcards filled in)."""
    if "*" not in name:
        return fnmatch.fnmatchcase(name, pattern)
    places = name.split(".")
    parts = pattern.split(".")
    candidates = ["all", "default", "lo", "*"]
    if len(parts) == len(places):
        candidates += [_an_instance(parts[i]) for i, p in enumerate(places) if p == "*"]
    return any(fnmatch.fnmatchcase(name.replace("*", c), pattern) for c in candidates if c)


# A bracket expression of fnmatch, negated or not.
_BRACKET = re.compile(r"\[(!?)([^\]]+)\]")


def _an_instance(glob: str) -> str:
    """A name the glob `glob` matches, as far as one is easily had: a bracket gives its first
    character (a negated one a letter it leaves out), `?` a letter, `*` nothing."""

    def bracket(match: re.Match[str]) -> str:
        if not match.group(1):
            return match.group(2)[0]
        return next((c for c in "xyz0" if c not in match.group(2)), "")

    return _BRACKET.sub(bracket, glob).replace("?", "x").replace("*", "")


class _LineError(Exception):
    """A check rule could not judge a line (its value made it exceed its work budget)."""


class Checker:
    def __init__(
        self, kb: KnowledgeBase, rules: dict[str, CheckRule], context: CheckContext
    ) -> None:
        self.kb = kb
        self.rules = rules
        self.context = context
        self.assignment_rules = [r for r in rules.values() if r.spec.kind == "assignment"]
        self._once = frozenset(r.id for r in rules.values() if r.spec.once)
        # What check rules see, as plain data (no model objects reach an expression).
        self._facts = context.facts.expression_data() if context.facts is not None else None
        running = context.running
        self._running = (
            {"offered": list(running.offered), "modules": running.modules}
            if running is not None
            else None
        )
        self._kernel = self._kernel_context(kb, context)
        # the numbers each key holds once the config is applied (check_config sets them)
        self._final_values: Mapping[str, list[int] | list[list[int]] | None] = {}
        self._specs = {name: plain_data(key) for name, key in kb.catalog.keys.items()}
        # a distribution's kernel (the catalog's distro_kernels): a key upstream lacks is only
        # "not verified" there
        self._distro = context.kernel is not None and (
            kb.catalog._distro(context.kernel.release) is not None
        )
        # the programs on the host that write a key after the files are applied (boot files
        # are the tree's own business: check.overridden), as plain data, by key
        self._writers = [dataclasses.asdict(n) for n in context.owners if n.file is None]
        self._writers_by_key: dict[str, list[dict[str, Any]]] = {}
        self._boot_writers = [n for n in context.owners if n.file is not None]
        self._recommended = (
            {s.key: dataclasses.asdict(s) for s in context.plan.settings}
            if context.plan is not None
            else {}
        )
        self._rules_by_key: dict[tuple[str, bool, bool], list[CheckRule]] = {}
        self._near: dict[str, str | None] = {}  # a key not in the catalog: the one meant
        self.uncompared = 0  # keys past NEAR_BUDGET, not compared for a slip
        # rules whose `keys` the advisor knows by them alone (`knows_keys`)
        self._naming = [r for r in kb.check_rules.values() if r.spec.knows_keys]
        self._named: dict[str, bool] = {}
        self._near_keys: NearKeys | None = None
        self._usable: RulesByKey | None = None
        # the rules for a key no rule names, by whether the catalog has it and a dump's
        self._rules_by_kind: dict[tuple[bool, bool], list[CheckRule]] = {}
        self._key_rules: dict[str, bool] = {}  # rule id: whether it reads only the key
        self._globs: dict[str, dict[str, Any]] = {}  # what each glob pattern reaches, once
        self._bounds: dict[str, dict[str, Any] | None] = {}  # the range each key takes here
        # each line's verdicts, with the rules among them whose messages were not rendered
        self._memo: dict[
            tuple[str, str, bool, bool, bool, int, bool, str],
            tuple[list[tuple[CheckRule, str]], frozenset[str]],
        ] = {}
        self._final_epoch = 1  # which `final` the memo's verdicts that read it were made with
        # What the file reader noticed, by kind, and the structural rule that reports it.
        self.reported_by: dict[str, CheckRule] = {
            str(code): r for r in rules.values() for code in r.spec.reports
        }

    @staticmethod
    def _kernel_context(kb: KnowledgeBase, context: CheckContext) -> KernelContext | None:
        """The target kernel as rules see it: the facts' (every era quantity, the host's
        too); a release named otherwise (--kernel, the configuration's, the running one) with
        the quantities its release alone decides, and on the facts' host with all of them."""
        data, kernel = context.kernel_data, context.kernel
        if kernel is None:
            return None
        if data is not None and data.version == kernel:
            return data
        if context.facts is not None:  # the facts' host, on another kernel
            return kb.catalog.evaluate_host(context.facts, kernel, None, known=True)[1]
        return kb.catalog.release_context(kernel)

    def _needs_met(self, rule: CheckRule) -> bool:
        needs = rule.spec.needs
        if "facts" in needs and self.context.facts is None:
            return False
        if "kernel" in needs and self.context.kernel is None:
            return False
        return not ("profile" in needs and self.context.plan is None)

    def _near_key(self, key: str) -> str | None:
        """For a key neither modelled nor listed as known: the key of the target kernel it is
        one slip away from, or None (also when the facts show the host has the key itself)."""
        found = self._near.get(key, "")
        if found == "":
            in_force = self.context.facts.sysctl if self.context.facts is not None else {}
            if self._near_keys is None:
                kernel = self.context.kernel
                names = self.kb.catalog.kernel_keys(kernel)
                if kernel is not None:  # and every key the release's sysctl tables have
                    names = list(dict.fromkeys([*names, *self.kb.kernel_keys.keys_of(kernel)]))
                self._near_keys = NearKeys(names)
            if key in in_force:
                found = None
            elif self._near_keys.compared < NEAR_BUDGET:
                found = self._near_keys.nearest(key)
                found = None if found == key else found  # the key itself is no suggestion
            else:
                found = None
                self.uncompared += 1
            if len(self._near) < _MEMO_LINES:
                self._near[key] = found
        return found

    def _is_named(self, key: str) -> bool:
        """Whether a `knows_keys` rule names the key by its `keys` (check.ip-conntrack-name's
        old names): the advisor knows it by that rule. Every loaded rule counts, whatever
        --select keeps, so a verdict never depends on the selection."""
        found = self._named.get(key)
        if found is None:
            found = any(rule.looks_at(key) for rule in self._naming)
            if len(self._named) < _MEMO_LINES:
                self._named[key] = found
        return found

    def _scope(
        self, key: str, value: str, ignore_failure: bool, dump: bool = False, comment: str = ""
    ) -> dict[str, Any]:
        catalog = self.kb.catalog
        spec = catalog.keys.get(key)
        listed = spec is None and catalog.is_known(key)
        named = spec is None and not listed and self._is_named(key)
        unknown = spec is None and not listed and not named
        kernel = self.context.kernel
        release_key = (
            self.kb.kernel_keys.verdict(key, kernel, self._distro) if kernel and not dump else None
        )
        running = self.context.running
        seen = running.verdict(key, release_key) if running is not None and not dump else None
        if seen is not None:  # the running kernel's /proc/sys, where it can tell
            release_key = seen
        # What the kernel does with the text of a key it knows: what it stores, refuses, drops.
        text_key = spec is not None and spec.is_text
        write = kernel_write(value, spec.length) if spec is not None and not text_key else None
        if text_key:  # a name or a port set: no numbers to read
            held, read = None, []
        elif write is None:
            held, read = numbers(value), fields(value)
        else:  # the numbers the key ends up holding, when the write sets all of them
            held = list(write.stored) if write.complete else None
            read = fields(value)[: len(write.stored)]
        return {
            "key": key,
            "value": value,
            "numbers": held,
            # a text key's value as the kernel holds it, None when it refuses the text
            "text": parse_text(value, spec) if spec is not None and text_key else None,
            "write": write.as_data() if write is not None else None,
            "decimal": all(_PLAIN_DECIMAL.fullmatch(part) for part in read),
            "spec": self._specs.get(key),
            # the range the target kernel accepts (its word size and era), None where unknown
            "bounds": self._bounds_of(key),
            "known": spec is not None,
            # a key the kernel has that the catalog lists without modelling it
            "listed": listed,
            # a key neither modelled nor listed that a `knows_keys` rule names by its `keys`
            "named": named,
            # for any other key of a file: the kernel's key it was probably meant to be
            "near_key": (
                self._near_key(key)
                if unknown and not dump and not (release_key and release_key["exists"])
                else None
            ),
            # True/False where the target release is verified to have the key or not, else None
            "exists": (
                seen["exists"]
                if seen is not None
                else catalog.exists(key, kernel)
                if spec and kernel
                else release_key["exists"]
                if release_key is not None
                else None
            ),
            # the target release's word on the key from its sysctl tables (kernel_keys.py)
            "kernel_key": release_key,
            # whether the facts show the key on the host (its module, if any, is loaded there)
            "in_force": self.context.facts is not None and key in self.context.facts.sysctl,
            "kernel": self._kernel,
            # the running kernel's congestion controls and modules on disk, when it is the target
            "running": self._running,
            "facts": self._facts,
            "host": self.context.host,
            "page_size": self.context.facts.page_size if self.context.facts else 4096,
            "default": self.context.defaults,
            "recommended": self._recommended.get(key),
            "final": self._final_values,
            "kubernetes": self.context.kubernetes,
            "writers": self._writers_of(key, held, value),
            # for a key that names a program the kernel runs as root: that program, judged
            "helper": self.kb.helpers.judge(key, value),
            "ignore_failure": ignore_failure,
            # the comment lines right above the line, their text joined ("" where none)
            "comment": comment,
        }

    def _bounds_of(self, key: str) -> dict[str, Any] | None:
        found = self._bounds.get(key, False)
        if found is False:
            facts = self.context.facts
            found = self.kb.catalog.bounds(
                key, self.context.kernel, facts.bits if facts is not None else None
            )
            if len(self._bounds) < _MEMO_LINES:
                self._bounds[key] = found
        return found  # type: ignore[return-value]

    def _writers_of(self, key: str, numbers: list[int] | None, value: str) -> list[dict[str, Any]]:
        """The programs on the host that write `key` after the files, each with the line for
        its own configuration that would keep this value (`fix`; None where it has none)."""
        notes = self._writers_by_key.get(key)
        if notes is None:  # once per key: a long file repeats a few keys many times
            notes = [n for n in self._writers if key_matches(n["key"], key)]
            if len(self._writers_by_key) < _MEMO_LINES:
                self._writers_by_key[key] = notes
        if not notes:  # the owners' module only where the host has writers of the key
            return []
        from sysctl_advisor.engine.owners import fix_line

        found = []
        for note in notes:
            plain = (numbers[0] if len(numbers) == 1 else numbers) if numbers else value
            fix = fix_line(self.kb, note["writer"], note["index"], key, plain)
            found.append({**note, "fix": fix})
        return found

    def _glob(self, pattern: str) -> dict[str, Any]:
        """What a glob line reaches: the catalog's keys it matches on the target kernel, the
        kinds of value they hold, and whether it matches every key there is (worked out once
        per pattern: a file may repeat one with many values)."""
        known = self._globs.get(pattern)
        if known is not None:
            return known
        catalog, kernel = self.kb.catalog, self.context.kernel
        # the catalog's keys on the target kernel, modelled or listed (a per-interface key
        # listed with `*` for the interface: net.ipv4.conf.*.rp_filter)
        matches = [name for name in catalog.kernel_keys(kernel) if _glob_reaches(pattern, name)]
        specs = [catalog.keys[name] for name in matches if name in catalog.keys]
        found = self._globs[pattern] = {
            "matches": matches,
            "kinds": sorted({f"{spec.unit}/{spec.length}" for spec in specs}),
            # Nothing but wildcards and separators: every key of the kernel, whatever it is.
            "everything": not pattern.strip("*?./"),
            # fnmatch(3), as procps and systemd call it, matches an unclosed '[' literally.
            "unclosed": _UNCLOSED_BRACKET.search(pattern) is not None,
        }
        return found

    def _rules_for(self, key: str, is_glob: bool, dump: bool) -> list[CheckRule]:
        """The assignment rules that look at a key (or a glob line) of a file or of a dump (the
        kernel's own values: no rule about how a file is written), worked out once per key,
        and once for all the keys no rule names; the rules whose needs this check cannot meet
        are set aside once for all keys."""
        cached = self._rules_by_key.get((key, is_glob, dump))
        if cached is not None:
            return cached
        if self._usable is None:
            self._usable = RulesByKey([r for r in self.assignment_rules if self._needs_met(r)])
        known = self.kb.catalog.bounded(key)  # modelled, or listed with its range
        looking = self._usable.rules if is_glob else self._usable.looking_at(key)
        generic = looking is self._usable.every and not is_glob
        cached = self._rules_by_kind.get((known, dump)) if generic else None
        if cached is None:
            cached = [
                rule
                for rule in looking
                if rule.spec.globs == is_glob
                and (rule.spec.in_dumps or not dump)
                and (is_glob or known or not rule.spec.catalog_keys)
            ]
            if generic:
                self._rules_by_kind[(known, dump)] = cached
        if len(self._rules_by_key) < _MEMO_LINES:
            self._rules_by_key[(key, is_glob, dump)] = cached
        return cached

    def _reads_only_key(self, rule: CheckRule) -> bool:
        """Whether a rule decides without the line's value (its `when`, lets and suggestion
        read none of _FROM_VALUE), worked out once per rule, for templates only."""
        found = self._key_rules.get(rule.id)
        if found is None:
            spec = rule.spec
            sources = [spec.when or "", spec.suggest or "", *spec.let.values()]
            compiler = self.kb.compiler
            found = not any(compiler.reads(s, "")[0] & _FROM_VALUE for s in sources if s)
            self._key_rules[rule.id] = found
        return found

    def _verdicts(
        self,
        key: str,
        value: str,
        ignore_failure: bool,
        is_glob: bool,
        dump: bool,
        unsaid: frozenset[str] = frozenset(),
        templated: bool = False,
        comment: str = "",
    ) -> list[tuple[CheckRule, str]]:
        """The rules a line breaks, with their messages; none for the rules in `unsaid`, whose
        findings are only counted. What a rule sees of a line is its key, value and prefix,
        never where it is: a line that recurs (the same setting in a thousand files) is judged
        once. A `templated` line (a template's, its value Jinja's) is judged by its key alone."""
        rules = self._rules_for(key, is_glob, dump)
        if templated:
            rules = [rule for rule in rules if self._reads_only_key(rule)]
        # a line whose rules read other lines (`final`) is judged again for another config
        epoch = self._final_epoch if any(r.reads_final for r in rules) else 0
        if comment and not any(r.reads_comment for r in rules):
            comment = ""  # a line's comment matters only to the rules that read it
        memo_key = (key, value, ignore_failure, is_glob, dump, epoch, templated, comment)
        cached = self._memo.get(memo_key)
        if cached is not None and cached[1] <= unsaid:
            return cached[0]
        verdicts: list[tuple[CheckRule, str]] = []
        silent: set[str] = set()  # the rules that broke the line and were not said
        if rules:
            new_budget()  # the work the rules may do for one line: the whole, linear in lines
            scope = self._scope(key, value, ignore_failure, dump, comment)
            if is_glob:
                scope["glob"] = self._glob(key)
        compiler = self.kb.compiler
        shared: Context | None = None  # the `when` of rules without lets, read-only
        for rule in rules:
            # A rule with lets gets a context of its own for them, its `when` and its message;
            # the others share one for their `when` (building a context copies the variables,
            # which costs more than most expressions) and render a message, rarely, in a fresh
            # one, so nothing a rule does is seen by another.
            try:
                if rule.let:
                    ctx = compiler.context(scope)
                    for name, expr in rule.let:
                        ctx.vars[name] = expr.run(ctx)
                else:
                    ctx = shared = shared or compiler.context(scope)
                assert rule.when is not None
                if not rule.when.run(ctx):
                    continue
                if rule.id in unsaid:
                    silent.add(rule.id)
                    verdicts.append((rule, ""))
                    continue
                if not rule.let:
                    ctx = compiler.context(scope)
                if rule.suggest is not None:  # the names the value may have meant
                    names = rule.suggest.run(ctx)
                    said = scope["text"] if scope["text"] is not None else value
                    ctx.vars["suggestion"] = (
                        nearest_name(said, list(names)) if isinstance(names, list) else None
                    )
                message = _PROSE_SPACE.sub(" ", rule.message.render_in(ctx)).strip(" ")
            except (ExpressionError, ValueError, TypeError) as exc:
                raise _LineError(f"{rule.id}: {exc}") from None
            verdicts.append((rule, message))
        if len(self._memo) < _MEMO_LINES or memo_key in self._memo:
            self._memo[memo_key] = (verdicts, frozenset(silent))
        return verdicts

    def _assignments(
        self, display: str, assignments: list[Assignment], dump: bool, found: Listing
    ) -> None:
        for item in assignments:
            unsaid = found.unsaid(display)
            if unsaid and (display, item.line) in found.addressed:
                unsaid = frozenset()
            try:
                verdicts = self._verdicts(
                    item.key,
                    item.value,
                    item.ignore_failure,
                    item.is_glob,
                    dump,
                    unsaid,
                    item.templated,
                    item.comment,
                )
            except _LineError as exc:  # the line drove a rule past what one line may cost
                raise InputError(str(exc), path=display, line=item.line) from None
            for rule, message in verdicts:
                found.add(
                    CheckFinding(rule.id, rule.spec.severity, display, item.line, item.key, message)
                )

    def rules_in_force(self) -> set[str]:
        """The rules that ran: selected, and with their needs met."""
        return {r.id for r in self.rules.values() if self._needs_met(r)}

    def check_config(
        self, config: CurrentConfig, addressed: frozenset[tuple[str, int]] = frozenset()
    ) -> list[CheckFinding]:
        """The findings of a configuration's files; a finding on a line `addressed` (by a
        suppression comment) is always listed."""
        # A rule about two keys (tcp_rmem with tcp_wmem) reads the other as this config leaves
        # it: its last assignment here, else the value in force the facts show.
        in_force = self.context.facts.sysctl if self.context.facts is not None else {}
        self._final_values = Final(self.kb.catalog, config, in_force)
        self._final_epoch += 1
        dump = config.kind == "dump"
        listing = Listing(addressed, self._once)
        facts = self.context.facts
        target = (self.context.kernel, facts.bits if facts is not None else None)
        structural(config, self.reported_by, self._boot_writers, self.kb.catalog, listing, target)
        for display, assignments in config.documents:
            self._assignments(display, assignments, dump, listing)
        found = listing.findings()
        if dump:  # the kernel's own values: nothing about how a file is written
            judged = {rule.id for rule in self.rules.values() if rule.spec.in_dumps}
            found = [f for f in found if f.id in judged]
        return found
