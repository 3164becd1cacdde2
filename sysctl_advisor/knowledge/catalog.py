"""The key catalog and the kernel model: loaded from rules/catalog/, compiled once.

`HostModel.build()` turns host facts into what every expression sees: derived host quantities,
the kernel (version plus era-dependent behaviour) and the kernel's boot default of every key.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

from jinja2.runtime import Context

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.expression_sandbox import KernelData
from sysctl_advisor.knowledge.expressions import (
    Compiler,
    Expression,
    ExpressionError,
    as_input_error,
)
from sysctl_advisor.knowledge.knowledge_files import KERNEL_MODEL, KEY_CATALOG
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.kernel_version import KernelRange, KernelVersion
from sysctl_advisor.model.kernel_write import kernel_int
from sysctl_advisor.model.model_base import After, Field, SpecModel, model
from sysctl_advisor.model.vocabulary import OneLine, SysctlKey, SysctlKeyGlob

if TYPE_CHECKING:
    from sysctl_advisor.model.host_facts import HostFacts

Unit = Literal[
    "bytes", "pages", "kbytes", "count", "seconds", "boolean", "choice", "port", "name", "ports"
]
# Keys whose value is text, not numbers: a name the kernel looks up (a qdisc, a congestion
# control algorithm) or a set of ports (a bitmap the kernel prints as "8080,9000-9010").
TEXT_UNITS = frozenset({"name", "ports"})
Literal_ = int | float | bool | list[int] | None
ExprOrLiteral = str | int | float | bool | list[int] | None


_INT_MAX = 2**31 - 1


def _check_range(text: str) -> str:
    KernelRange.parse(text)
    return text


KernelRangeText = Annotated[str, After(_check_range)]


@model
class Era(SpecModel):
    kernels: KernelRangeText = ""
    when: str | None = None
    let: dict[str, str] = Field(default_factory=dict)
    value: ExprOrLiteral = None
    note: str | None = None


@model
class Bounds(SpecModel):
    """The range the kernel's handler accepts on some kernels or word sizes (its extra1/extra2
    there, or the type it stores): a write outside it is refused (EINVAL, unless `outside`
    says what the handler does instead). The first entry whose `kernels` holds the target
    kernel (an unknown one taken as the newest verified) and whose `bits` its word size
    (unknown: 64) applies; a bound it leaves out stays the key's own. Where the handler takes
    more than the key's min..max (the values the kernel gives a meaning of their own), `below`
    and `above` say what the kernel does with a value it stores beyond them."""

    kernels: KernelRangeText = ""
    bits: Literal[32, 64] | None = None
    min: int | None = None
    max: int | None = None
    jiffies: bool = Field(
        default=False,
        description="the handler stores seconds times HZ in an int (proc_dointvec_jiffies): "
        "min and max are the range at HZ=100, the widest any build takes; a kernel built "
        "with HZ=N refuses beyond INT_MAX / N either side",
    )
    note: str | None = Field(
        default=None,
        max_length=400,
        description="why the range is other there than the key's own, in a clause",
    )
    below: str | None = Field(
        default=None,
        max_length=400,
        description="what the kernel does with a value it stores below the key's min, as a "
        "clause that follows `the kernel stores it, and` (`check.stored-out-of-range`)",
    )
    above: str | None = Field(
        default=None,
        max_length=400,
        description="what the kernel does with a value it stores above the key's max, as a "
        "clause that follows `the kernel stores it, and`",
    )
    outside: str | None = Field(
        default=None,
        max_length=400,
        description="what the handler does with a value outside this range where it is not "
        "simply refused, as a sentence (`check.out-of-bounds` says so instead of EINVAL)",
    )
    references: list[str] = Field(min_length=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min is None and self.max is None:
            raise ValueError("a bounds entry gives min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is above max")


@model
class Section(SpecModel):
    id: str
    title: str


@model
class Floor(SpecModel):
    """The least a capacity may hold and the host still work: the advisor never writes less,
    an undo never restores less, and `check` reports less (check.below-floor)."""

    value: int = Field(ge=0)
    breaks: str = Field(
        max_length=140,
        description="what a value below it would do, as a clause that follows `it would` "
        "(one line: the undo and check say it in their first sentence)",
    )
    reason: str = Field(
        max_length=700,
        description="where the figure comes from (a kernel default or constant, at the releases "
        "read) and what breaks below it, in the kernel's own terms",
    )
    references: list[str] = Field(min_length=1)


@model
class InitValueShown(SpecModel):
    """From `since` on, a network namespace other than the initial one shows this global key
    read-only: the initial namespace's value in force (a write there is refused)."""

    since: str = Field(pattern=r"^[0-9]+\.[0-9]+$")
    references: list[str] = Field(min_length=1)


@model
class ActsOnlyWith(SpecModel):
    """Another key whose values alone give this one an effect (vm.overcommit_ratio counts only
    under vm.overcommit_memory = 2): where the plan ends with the other key elsewhere, the
    advisor's own file does not keep this one."""

    key: SysctlKey
    values: list[int] = Field(min_length=1, max_length=16)


@model
class Clears(SpecModel):
    """Another key this key's handler sets to 0 when this one is written (writing
    vm.dirty_bytes zeroes vm.dirty_ratio): of the two, the one written last is in force."""

    key: SysctlKey
    when: Literal["written", "changed"] = Field(
        description="`written`: every write the kernel accepts; `changed`: a write that "
        "changes the value"
    )
    both_zero: OneLine | None = Field(
        default=None,
        max_length=400,
        description="what the kernel does when both keys end at 0",
    )


@model
class CatalogKey(SpecModel):
    alias: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    section: str
    length: int = Field(default=1, ge=1, le=8)
    fields: list[str] | None = None
    unit: Unit
    choices: dict[int, str] | None = None
    ordered: bool = False
    min: int
    max: int
    # Text keys: `one` (every rule must want the same name) or `union` (a port set only grows).
    merge: Literal["max", "min", "choice", "one", "union"] | list[Literal["max", "min"]]
    # Relative difference between the value in force and the modelled default that is still
    # the kernel's own default (the model's known error, e.g. nr_free_buffer_pages()).
    default_tolerance: float = Field(default=0.0, ge=0.0, le=0.25)
    exists: KernelRangeText = ""
    module: str | None = Field(
        default=None,
        description="a kernel module that must be loaded (or built in) for the key to exist: "
        "rules set it only where the facts show it, and its presence says nothing of the era",
    )
    netns_since: str | None = None
    netns_copies_init_since: str | None = Field(
        default=None,
        description="from this kernel a new network namespace starts from the initial "
        "namespace's value in force, copied when it is created (tcp_sk_init), not from the "
        "kernel default",
    )
    netns_reads_init: InitValueShown | None = Field(
        default=None,
        description="a global key that a network namespace other than the initial one shows "
        "read-only from a release on: the initial namespace's value in force, the one value "
        "there is (before, the key is absent there)",
    )
    netns_restricted: str | None = Field(
        default=None,
        max_length=600,
        description="why a namespace other than the initial one cannot set every value (the "
        "kernel refuses some there): the key is then the node's, and pods copy it",
    )
    boot_parameter: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9_.]{2,40}$",
        description="a kernel command-line parameter that sizes the boot default (thash_entries): "
        "a value in force no file set may be the kernel's own there, and rules judge by it",
    )
    build_option: str | None = Field(
        default=None,
        pattern=r"^CONFIG_[A-Z0-9_]+$",
        description="the kernel build option that chooses the boot default (a distribution "
        "may build another default than the upstream one the era table gives)",
    )
    # The key's handler reads a write into a copy and stores it only when the whole of it is
    # valid (ipv4_local_port_range); otherwise each element is stored as it is read, and a
    # write refused part-way leaves the key half-written.
    atomic_write: bool = False
    # An unsigned int that older handlers printed signed (tcp_notsent_lowat read -1 before
    # 4.10): a negative number read from the host is the value plus 2**32.
    unsigned32: bool = False
    unlimited: int | None = Field(
        default=None,
        description="the value that means no limit (UINT_MAX for tcp_notsent_lowat): shown as "
        "`unlimited`, never as the size it would be",
    )
    summary: str
    references: list[str] = Field(min_length=1)
    default: list[Era] = Field(min_length=1)
    floor: Floor | None = Field(
        default=None,
        description="a capacity (a number key of one value that merges by `max`) below which "
        "the host breaks although the kernel takes the write",
    )
    bounds: list[Bounds] = Field(
        default_factory=list,
        description="where the kernel's handler accepts other than min..max (an older "
        "kernel, a 32-bit one, a handler that stores values the kernel gives no meaning of "
        "their own): `check` holds a value to the range of the kernel it is given, and says "
        "what the kernel does with one it stores beyond min..max",
    )
    acts_only_with: ActsOnlyWith | None = Field(
        default=None,
        description="the key has no effect unless another key holds one of these values",
    )
    clears: Clears | None = Field(
        default=None,
        description="another key the handler sets to 0 when this one is written",
    )
    netns_new_default: list[Era] = Field(
        default_factory=list,
        description="a new network namespace's own default where it is not `default`: the "
        "first era whose kernels and `when` hold, reading `node` (the creating namespace's "
        "values in force, by alias); none holds: `default`",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fields is not None and len(self.fields) != self.length:
            raise ValueError(f"fields names {len(self.fields)} values, length is {self.length}")
        if self.min > self.max:
            raise ValueError("min is above max")
        for bound in self.bounds:
            self._check_beyond(bound)
        if isinstance(self.merge, list) and len(self.merge) != self.length:
            raise ValueError(f"merge names {len(self.merge)} policies, length is {self.length}")
        if self.floor is not None and (
            self.length != 1 or self.merge != "max" or not self.min <= self.floor.value <= self.max
        ):
            raise ValueError(
                "a floor belongs to a capacity (one value, merge max), within min..max"
            )
        text_merge = self.merge in ("one", "union")
        if self.is_text != text_merge or (self.is_text and self.length != 1):
            raise ValueError(
                "a text key (unit name or ports) has length 1 and merges by `one` or `union`; "
                "number keys merge by max, min or choice"
            )

    def _check_beyond(self, bound: Bounds) -> None:
        """A range wider than min..max says what the kernel does with what it stores beyond
        them (below 0 or with no floor: the floor covers 0 up to it), and only then."""
        low = self.min if bound.min is None else bound.min
        high = self.max if bound.max is None else bound.max
        below = low < self.min and (self.floor is None or low < 0)
        if below != (bound.below is not None):
            raise ValueError(
                "bounds: `below` says what the kernel does with a value it stores below min "
                "(one not below the floor's reach, 0 up): give it exactly where the range "
                "reaches there"
            )
        if (high > self.max) != (bound.above is not None):
            raise ValueError(
                "bounds: `above` says what the kernel does with a value it stores above max: "
                "give it exactly where the range reaches above max"
            )

    @property
    def is_text(self) -> bool:
        return self.unit in TEXT_UNITS

    def policies(self) -> list[str]:
        """The merge policy of each element."""
        return list(self.merge) if isinstance(self.merge, list) else [self.merge] * self.length


@model
class EraTable(SpecModel):
    description: str
    eras: list[Era] = Field(min_length=1)


@model
class DistroKernel(SpecModel):
    pattern: str
    distro: str
    behaves_as: str
    note: str
    # keys these kernels have although the upstream release they behave as does not (a
    # distribution backport), each checked against the catalog when it loads
    backports: list[SysctlKey] = Field(default_factory=list)


@model
class KernelModelFile(SpecModel):
    newest_verified: str
    oldest_modelled: str
    distro_kernels: list[DistroKernel] = Field(default_factory=list)
    derived: dict[str, str]
    quantities: dict[str, EraTable]


@model
class ReadableKey(SpecModel):
    """A key the collector reads for the rules (a list of names), never one to set."""

    alias: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    summary: str
    references: list[str] = Field(min_length=1)


def _release(text: str) -> str:
    KernelVersion.parse(text)
    return text


@model
class KnownKey(SpecModel):
    """A key the kernel has that the advisor does not model (no unit, bounds or defaults):
    `check` does not call it unknown. The name may hold `*` for one interface name."""

    since: Annotated[str, After(_release)] | None = Field(
        default=None,
        description="the first upstream release that has the key; none: every kernel the "
        "catalog models has it",
    )
    references: list[str] = Field(min_length=1)
    bounds: list[Bounds] = Field(
        default_factory=list,
        description="the range the kernel's handler accepts (its extra1/extra2), from the "
        "release each entry's `kernels` names: a write outside it fails with EINVAL. Every "
        "entry gives min and max; a key with none is not bounded",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if any(b.min is None or b.max is None for b in self.bounds):
            raise ValueError("bounds: a key the catalog does not model gives min and max")
        if any(b.below is not None or b.above is not None for b in self.bounds):
            raise ValueError("bounds: a key the catalog does not model has no below or above")


def _directory(text: str) -> str:
    if not (text.startswith("/") and text.endswith("/")) or posixpath.normpath(text) + "/" != text:
        raise ValueError("an absolute directory written plainly, ending in /")
    return text


@model
class TuningDaemon(SpecModel):
    """A daemon that writes sysctls at run time from profiles of its own, not from sysctl.d:
    a value in force whose source (the facts' `sysctl_files`) is a file under one of its
    profile directories was set by it, and is the host's default as the daemon keeps it."""

    profile_dirs: list[Annotated[str, After(_directory)]] = Field(min_length=1)
    active_profile: str | None = Field(
        default=None,
        description="the file naming the active profiles (`facts` reads them): a profile is "
        "<dir>/<name>/tuned.conf, a later directory's winning, its [main] include= read first",
    )
    reapplies: list[str] = Field(
        default_factory=list,
        description="sysctl files the daemon applies again after its profile (a directory ends "
        "in /): a key one of them sets wins over the profile; one set elsewhere loses to it",
    )
    summary: str
    references: list[str] = Field(min_length=1)


@model
class CatalogFile(SpecModel):
    sections: list[Section]
    keys: dict[SysctlKey, CatalogKey]
    readable: dict[SysctlKey, ReadableKey] = Field(default_factory=dict)
    tuning_daemons: dict[str, TuningDaemon] = Field(default_factory=dict)
    known: dict[SysctlKeyGlob, KnownKey] = Field(
        default_factory=dict,
        description="keys the kernel has that the advisor does not model",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        ids = {s.id for s in self.sections}
        for name, key in self.keys.items():
            if key.section not in ids:
                raise ValueError(f"{name}: unknown section {key.section!r}")
            other = key.acts_only_with
            if other is not None and (other.key not in self.keys or other.key == name):
                raise ValueError(f"{name}: acts_only_with names {other.key!r}, not another key")
            twin = key.clears
            if twin is not None and (twin.key not in self.keys or twin.key == name):
                raise ValueError(f"{name}: clears names {twin.key!r}, not another key")
        aliases = [k.alias for k in self.keys.values()] + [k.alias for k in self.readable.values()]
        if len(set(aliases)) != len(aliases) or set(self.keys) & set(self.readable):
            raise ValueError("a key or alias is listed twice (keys and readable share one list)")
        modelled = [*self.keys, *self.readable]
        for name, known in self.known.items():
            if any(fnmatch.fnmatchcase(key, name) for key in modelled):
                raise ValueError(f"known: {name} is a key the catalog models (keys or readable)")
            if known.bounds and "*" in name:
                raise ValueError(f"known: {name}: bounds are given for a key's exact name")


@functools.total_ordering
class KernelContext(KernelData):
    """The target kernel as expressions see it: compares like a version (`kernel < '4.12'`),
    and exposes era-dependent behaviour as attributes (`kernel.window_fraction`). Expressions
    may read only `fields`: the release, its short form, distro, ABI, whether it was known,
    and the era quantities."""

    BASE_FIELDS = frozenset({"release", "short", "distro", "abi", "known"})

    def __init__(
        self,
        version: KernelVersion,
        *,
        distro: str | None,
        known: bool,
        quantities: dict[str, Any],
        abi: int | None = None,
    ) -> None:
        self.version = version
        self.distro = distro
        self.abi = abi  # Debian/Ubuntu package ABI number, when the distro pattern names it
        self.known = known
        self.release = version.release
        self.short = version.short
        self._quantities = quantities
        self.fields = self.BASE_FIELDS | frozenset(quantities)

    def __getattr__(self, name: str) -> Any:
        quantities = self.__dict__.get("_quantities", {})
        if name in quantities:
            return quantities[name]
        raise AttributeError(name)

    def __eq__(self, other: object) -> bool:
        return self.version == (other.version if isinstance(other, KernelContext) else other)

    def __lt__(self, other: object) -> bool:
        return self.version < (other.version if isinstance(other, KernelContext) else other)

    def __hash__(self) -> int:
        return hash(self.version)

    def __str__(self) -> str:
        return self.version.release


class _CompiledEra:
    def __init__(self, era: Era, compiler: Compiler, path: Path, field: str) -> None:
        self.era = era
        self.range = KernelRange.parse(era.kernels)
        self.note = era.note
        try:
            self.when = compiler.expression(era.when) if era.when else None
            self.let = [(k, compiler.expression(v)) for k, v in era.let.items()]
            self.value: Expression | Literal_ = (
                compiler.expression(era.value) if isinstance(era.value, str) else era.value
            )
        except ExpressionError as exc:
            raise as_input_error(exc, path, field) from None

    def applies(self, ctx: Context) -> bool:
        """The era's `when` (its kernel range already known to hold)."""
        return self.when is None or bool(self.when.run(ctx))

    def evaluate(self, ctx: Context) -> Any:
        """The era's value in a shared context; its `let` names are visible to it alone."""
        if not isinstance(self.value, Expression):
            return self.value
        try:
            for name, expr in self.let:
                ctx.vars[name] = expr.run(ctx)
            return self.value.run(ctx)
        finally:
            for name, _ in self.let:
                ctx.vars.pop(name, None)


# What the kernel model's formulas may read besides facts fields, globals and their own lets.
_HOST_NAMES = frozenset({"facts", "host", "kernel", "page_size", "default"})
# What only a host's facts give an era formula (a bare --kernel has none of it).
_HOST_ONLY = frozenset({"facts", "host", "page_size", "default"})
_KERNELS_REMEMBERED = 256  # distinct kernel versions whose eras a catalog keeps worked out


class _KernelEras(NamedTuple):
    defaults: list[tuple[str, list[tuple[int, _CompiledEra]]]]
    quantities: list[tuple[str, list[_CompiledEra]]]


class Catalog:
    """Keys and kernel model, with every formula compiled."""

    def __init__(self, directory: Path, compiler: Compiler, specs: SpecCache) -> None:
        self.directory = directory
        self.compiler = compiler
        keys_path = directory / KEY_CATALOG
        model_path = directory / KERNEL_MODEL
        keys_file = specs.load(keys_path, CatalogFile, "the key catalog")
        self.model = specs.load(model_path, KernelModelFile, "the kernel model")
        self.sections = keys_file.sections
        self.keys: dict[str, CatalogKey] = keys_file.keys
        self.readable: dict[str, ReadableKey] = keys_file.readable
        self.tuning_daemons: dict[str, TuningDaemon] = keys_file.tuning_daemons
        self.known: dict[str, KnownKey] = keys_file.known
        self._known_names = frozenset(name for name in self.known if "*" not in name)
        self._known_since = {
            name: KernelVersion.parse(k.since) for name, k in self.known.items() if k.since
        }
        self.by_alias = {k.alias: name for name, k in self.keys.items()}
        self._exists = {name: KernelRange.parse(k.exists) for name, k in self.keys.items()}
        self.newest = KernelVersion.parse(self.model.newest_verified)
        self.oldest = KernelVersion.parse(self.model.oldest_modelled)
        self.path = keys_path
        self.model_path = model_path
        try:
            self._derived = [(n, compiler.expression(e)) for n, e in self.model.derived.items()]
        except ExpressionError as exc:
            raise as_input_error(exc, model_path, "derived") from None
        self._quantities = {
            name: [_CompiledEra(e, compiler, model_path, f"quantities.{name}") for e in t.eras]
            for name, t in self.model.quantities.items()
        }
        self._defaults = {
            name: [
                _CompiledEra(e, compiler, keys_path, f"keys.{name}.default[{i}]")
                for i, e in enumerate(key.default)
            ]
            for name, key in self.keys.items()
        }
        self._netns_new = {
            name: [
                _CompiledEra(e, compiler, keys_path, f"keys.{name}.netns_new_default[{i}]")
                for i, e in enumerate(key.netns_new_default)
            ]
            for name, key in self.keys.items()
            if key.netns_new_default
        }
        for distro in self.model.distro_kernels:
            unknown = sorted(set(distro.backports) - set(self.keys))
            if unknown:
                raise InputError(
                    f"{model_path}: distro_kernels ({distro.distro}): backports: "
                    f"not in the key catalog: {', '.join(unknown)}"
                )
        eras: dict[str, list[Bounds]] = {n: k.bounds for n, k in self.keys.items() if k.bounds}
        eras.update((n, k.bounds) for n, k in self.known.items() if k.bounds)
        self._bounds = {
            name: [(KernelRange.parse(b.kernels), b) for b in entries]
            for name, entries in eras.items()
        }
        self._backports_by_release: dict[str, frozenset[str]] = {}
        self._by_kernel: dict[tuple[tuple[int, int, int, int], frozenset[str]], _KernelEras] = {}

    def tuning_daemon(self, source: str) -> str | None:
        """The tuning daemon whose profile file `source` ("path:line", as the facts'
        `sysctl_files` give it) is, or None: a sysctl file, or a setter not known."""
        path = posixpath.normpath(source.rpartition(":")[0] or source)
        for name, daemon in self.tuning_daemons.items():
            if any(path.startswith(d) for d in daemon.profile_dirs):
                return name
        return None

    def tuned_places(self) -> tuple[str, list[str], list[str]] | None:
        """Where tuned keeps its active profile and its profiles, and the sysctl files it
        applies again after the profile, for the collector."""
        tuned = self.tuning_daemons.get("tuned")
        if tuned is None or tuned.active_profile is None:
            return None
        return tuned.active_profile, [d.rstrip("/") for d in tuned.profile_dirs], tuned.reapplies

    @functools.cached_property
    def _known_globs(self) -> re.Pattern[str] | None:
        """One pattern of the `known:` globs, compiled on first use (a dump of existing keys
        never asks)."""
        globs = [name for name in self.known if "*" in name]
        if not globs:
            return None
        alternatives = "|".join("[^.]+".join(map(re.escape, g.split("*"))) for g in globs)
        return re.compile(f"(?:{alternatives})\\Z")

    def is_known(self, key: str) -> bool:
        """Whether the key is one the kernel has that the catalog lists without modelling it
        (`known:`; a `*` there is one interface name)."""
        return key in self._known_names or (
            self._known_globs is not None and self._known_globs.match(key) is not None
        )

    def bounded(self, key: str) -> bool:
        """Whether the catalog knows the range the kernel accepts for the key: a modelled
        key, or a listed one with `bounds`."""
        return key in self.keys or key in self._bounds

    def bounds(
        self, key: str, version: KernelVersion | None, bits: int | None, hz: int | None = None
    ) -> dict[str, Any] | None:
        """The range the kernel accepts for the key on the target (`min`, `max`, the values
        a line holds, `length`; `note`, why it is other there; `below` and `above`, what the
        kernel does with a value it stores beyond the key's own min..max; `outside`, what the
        handler does with one beyond the range where it does not refuse it; each None where
        not given), or None when the catalog does not know one. An unknown kernel is taken as
        the newest verified, an unknown word size as 64 bits; a handler in jiffies has the
        range of the build's `hz` where it is given, else the widest (HZ=100)."""
        spec = self.keys.get(key)
        eras = self._bounds.get(key, [])
        if spec is None and not eras:
            return None
        target, width = version or self.newest, bits or 64
        for kernels, bound in eras:
            if (bound.bits is None or bound.bits == width) and kernels.contains(target):
                low = bound.min if bound.min is not None else spec.min if spec else None
                high = bound.max if bound.max is not None else spec.max if spec else None
                if bound.jiffies and hz:
                    low, high = -(_INT_MAX // hz), _INT_MAX // hz
                return {
                    "min": low,
                    "max": high,
                    "length": spec.length if spec else 1,
                    "note": bound.note,
                    "below": bound.below,
                    "above": bound.above,
                    "outside": bound.outside,
                }
        if spec is None:
            return None
        return {
            "min": spec.min,
            "max": spec.max,
            "length": spec.length,
            "note": None,
            "below": None,
            "above": None,
            "outside": None,
        }

    def kernel_keys(self, version: KernelVersion | None = None) -> list[str]:
        """The keys a kernel has, as far as the catalog knows: the modelled ones that exist on
        it and the `known:` ones (patterns, `*` for an interface) from their release on; every
        one without a version. The names a misspelt key is compared with."""
        modelled = [k for k in self.keys if version is None or self.exists(k, version)]
        listed = [
            name
            for name in self.known
            if version is None
            or name not in self._known_since
            or version >= self._known_since[name]
        ]
        return [*modelled, *listed]

    def read_keys(self) -> list[str]:
        """Every key the collector reads from the host: the catalog's, then the readable ones."""
        return [*self.keys, *self.readable]

    def backports(self, release: str) -> frozenset[str]:
        """The keys a distribution kernel has beyond the upstream release it behaves as."""
        found = self._backports_by_release.get(release)
        if found is None:
            if len(self._backports_by_release) >= _KERNELS_REMEMBERED:
                self._backports_by_release.clear()
            distro = self._distro(release)
            found = frozenset(distro[0].backports) if distro is not None else frozenset()
            self._backports_by_release[release] = found
        return found

    def exists(self, key: str, version: KernelVersion) -> bool:
        return self._exists[key].contains(version) or key in self.backports(version.release)

    def is_per_netns(self, key: str, version: KernelVersion) -> bool:
        since = self.keys[key].netns_since
        return since is not None and version >= since and self.exists(key, version)

    def kernel_for(self, facts: HostFacts) -> tuple[KernelVersion, str | None, bool, list[str]]:
        """The version formulas use, the distro, whether the release was known, and notes."""
        notes: list[str] = []
        if not facts.kernel:
            notes.append(
                f"kernel release not given: assuming the newest kernel the catalog knows "
                f"({self.newest.short}); pass `kernel:` in the facts for exact defaults"
            )
            return self.newest, None, False, notes
        version = KernelVersion.parse(facts.kernel)
        found = self._distro(facts.kernel)
        if found is not None:
            distro = found[0]
            notes.append(distro.note)
            effective = KernelVersion.parse(distro.behaves_as)
            return KernelVersion(effective.numbers, facts.kernel), distro.distro, True, notes
        if version > self.newest and version.numbers[:2] != self.newest.numbers[:2]:
            notes.append(
                f"kernel {version.short} is newer than the newest verified ({self.newest.short}): "
                "defaults assume nothing changed since"
            )
        if version < self.oldest:
            notes.append(
                f"kernel {version.short} is older than the oldest modelled "
                f"({self.oldest.short}): its defaults are not modelled"
            )
        return version, None, True, notes

    def _distro(self, release: str) -> tuple[DistroKernel, re.Match[str]] | None:
        """The first distro_kernels entry whose pattern the release matches, with the match."""
        for distro in self.model.distro_kernels:
            match = re.search(distro.pattern, release)
            if match:
                return distro, match
        return None

    def _abi(self, release: str | None) -> int | None:
        """The package ABI number a distro pattern captures (`(?P<abi>...)`), if any."""
        found = self._distro(release or "")
        abi = found[1].groupdict().get("abi") if found is not None else None
        return int(abi) if abi is not None and abi.isdigit() else None

    def evaluate_host(
        self,
        facts: HostFacts,
        version: KernelVersion,
        distro: str | None,
        known: bool,
        data: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], KernelContext]:
        """Derived host quantities and the kernel context."""
        kernel = KernelContext(
            version, distro=distro, known=known, quantities={}, abi=self._abi(facts.kernel)
        )
        host: dict[str, Any] = {}
        variables: dict[str, Any] = {
            "facts": data if data is not None else facts.expression_data(),
            "kernel": kernel,
            "page_size": facts.page_size,
            "host": host,
        }
        ctx = self.compiler.context(variables)  # `host` fills in as the quantities are computed
        for name, expr in self._derived:
            try:
                host[name] = expr.run(ctx)
            except ExpressionError as exc:
                raise as_input_error(exc, self.model_path, f"derived.{name}") from None
        self._quantities_into(kernel, ctx, every=True)
        return host, kernel

    def release_context(self, version: KernelVersion) -> KernelContext:
        """The target kernel named by its release alone (check's --kernel): the era quantities
        that depend on nothing else, worked out; those whose formulas read the host (its
        facts, derived quantities, page size or defaults) stay absent, so a rule reading one
        declares `needs: [facts]`."""
        kernel = KernelContext(version, distro=None, known=True, quantities={})
        self._quantities_into(kernel, self.compiler.context({"kernel": kernel}), every=False)
        return kernel

    def _quantities_into(self, kernel: KernelContext, ctx: Context, every: bool) -> None:
        """Each era quantity of the kernel's release (`every`: also those that read the
        host), from the first era whose `when` holds, into `kernel`."""
        quantities: dict[str, Any] = {}
        needs = self.quantity_needs
        for name, eras in self._eras_for(kernel.version).quantities:
            if not every and needs[name] != "kernel":
                continue
            try:
                for era in eras:
                    if era.applies(ctx):
                        quantities[name] = era.evaluate(ctx)
                        break
            except ExpressionError as exc:
                raise as_input_error(exc, self.model_path, f"quantities.{name}") from None
        kernel._quantities.update(quantities)
        kernel.fields = kernel.BASE_FIELDS | frozenset(quantities)

    @functools.cached_property
    def quantity_needs(self) -> dict[str, Literal["kernel", "facts"]]:
        """What each era quantity needs to be known: `facts` where a formula of one of its
        eras (`when`, `let`, `value`) reads the host, else `kernel` (its release is enough).
        Worked out from the formulas' syntax when first asked."""
        found: dict[str, Literal["kernel", "facts"]] = {}
        for name, eras in self._quantities.items():
            sources = [
                source
                for compiled in eras
                for source in (
                    compiled.era.when or "",
                    *compiled.era.let.values(),
                    compiled.era.value if isinstance(compiled.era.value, str) else "",
                )
                if source
            ]
            reads = {n for s in sources for n in self.compiler.reads(s, "")[0]}
            found[name] = "facts" if reads & _HOST_ONLY else "kernel"
        return found

    def _eras_for(self, version: KernelVersion) -> _KernelEras:
        """The keys that exist on this kernel and the eras whose kernel range holds it, by key
        and quantity, in catalog order: worked out once per kernel version, since a fleet has
        few versions and every host would otherwise test each era's range again."""
        cache_key = (version.numbers, self.backports(version.release))
        found = self._by_kernel.get(cache_key)
        if found is None:
            if len(self._by_kernel) >= _KERNELS_REMEMBERED:
                self._by_kernel.clear()
            modelled = version >= self.oldest
            defaults = [
                (name, [(i, e) for i, e in enumerate(eras) if e.range.contains(version)])
                if modelled
                else (name, [])
                for name, eras in self._defaults.items()
                if self.exists(name, version)
            ]
            quantities = [
                (name, [e for e in eras if e.range.contains(version)])
                for name, eras in self._quantities.items()
            ]
            found = self._by_kernel[cache_key] = _KernelEras(defaults, quantities)
        return found

    @functools.cached_property
    def host_fields(self) -> frozenset[str] | None:
        """The facts fields the kernel model reads (its derived quantities, eras and default
        formulas): the only facts a host's boot defaults depend on, with the kernel release and
        the page size. None when a formula reads anything else about the host (observed
        figures, services, the whole facts mapping): then no two hosts are known to share
        their defaults. Worked out from the formulas' syntax, when a fleet first asks."""
        sources = list(self.model.derived.values())
        lets: set[str] = set()
        for eras in (*self._quantities.values(), *self._defaults.values()):
            for compiled in eras:
                era = compiled.era
                sources += [era.when or "", *era.let.values()]
                lets |= set(era.let)
                if isinstance(era.value, str):
                    sources.append(era.value)
        allowed = _HOST_NAMES | lets | set(self.compiler.env.globals)
        fields: set[str] = set()
        for source in filter(None, sources):
            names, read = self.compiler.reads(source, "facts")
            if read is None or not names <= allowed:
                return None
            fields |= read
        return frozenset(fields)

    def host_key(self, facts: HostFacts, data: dict[str, Any]) -> str | None:
        """A key two hosts share exactly when their boot defaults (and derived quantities)
        are the same by construction: the kernel release, the page size and the facts fields
        the model reads (host_fields). None when that is not known."""
        fields = self.host_fields
        if fields is None:
            return None
        read = {name: data.get(name) for name in sorted(fields)}
        return json.dumps([facts.kernel, facts.page_size, read], sort_keys=True, default=repr)

    def netns_new_defaults(
        self, variables: dict[str, Any], node: dict[str, Any]
    ) -> dict[str, tuple[Any, str | None]]:
        """The keys whose default in a network namespace created from `node` (the creating
        namespace's values in force, by alias; None where not known) is not their kernel
        default: by key, that default and the note of its era. `variables` as for defaults."""
        version: KernelVersion = variables["kernel"].version
        ctx = self.compiler.context({**variables, "node": node})
        found: dict[str, tuple[Any, str | None]] = {}
        for name, eras in self._netns_new.items():
            for i, era in enumerate(eras):
                if not era.range.contains(version):
                    continue
                field = f"keys.{name}.netns_new_default[{i}]"
                try:
                    if era.applies(ctx):
                        value = era.evaluate(ctx)
                        if value is not None:
                            found[name] = (normalise(value, self.keys[name]), era.note)
                        break
                except ExpressionError as exc:
                    raise as_input_error(exc, self.path, field) from None
                except ValueError as exc:
                    raise InputError(str(exc), path=self.path, field=field) from None
        return found

    def defaults(self, variables: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str | None]]:
        """Boot default of every key that exists on this kernel (None when unknown), by key,
        with the note of the era used. `variables` must hold facts, kernel, host, page_size;
        its `default` mapping (by alias) is filled as keys are computed."""
        version: KernelVersion = variables["kernel"].version
        values: dict[str, Any] = {}
        notes: dict[str, str | None] = {}
        by_alias: dict[str, Any] = variables.setdefault("default", {})
        ctx = self.compiler.context(variables)  # `default` fills in as keys are computed
        for name, eras in self._eras_for(version).defaults:
            value: Any = None
            note: str | None = None
            for i, era in eras:
                try:
                    if era.applies(ctx):
                        value = era.evaluate(ctx)
                        if value is not None:
                            value = normalise(value, self.keys[name])
                        note = era.note
                        break
                except ExpressionError as exc:
                    raise as_input_error(exc, self.path, f"keys.{name}.default[{i}]") from None
                except ValueError as exc:
                    raise InputError(
                        str(exc), path=self.path, field=f"keys.{name}.default[{i}]"
                    ) from None
            values[name] = value
            notes[name] = note
            by_alias[self.keys[name].alias] = values[name]
        return values, notes


def normalise(value: Any, key: CatalogKey, *, allow_none: bool = False) -> Any:
    """An expression result as the key's shape: an int, a list of `length` ints, or for a
    text key its text in the kernel's own spelling.

    With allow_none (caps), a list element may be None: no cap on that element.
    """
    if key.is_text:
        return text_value(value, key)

    def one(v: Any) -> int | None:
        return None if v is None and allow_none else _to_int(v)

    if key.length == 1:
        if isinstance(value, list | tuple):
            raise ValueError(f"expected one number, got {str(value)[:60]!r}")
        return _to_int(value)
    if not isinstance(value, list | tuple) or len(value) != key.length:
        raise ValueError(f"expected a list of {key.length} numbers, got {str(value)[:60]!r}")
    return [one(v) for v in value]


# No sysctl holds more than 64 bits; a larger number is a broken rule, not a value to clamp.
_LARGEST = 2**64


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"not a finite number: {value!r}")
        value = round(value)
    if not isinstance(value, int):
        raise ValueError(f"expected a number, got {str(value)[:60]!r}")
    if abs(value) > _LARGEST:
        raise ValueError(f"a number of {value.bit_length()} bits, larger than any kernel value")
    return value


# A name as the kernel registers it: TCP_CA_NAME_MAX and a qdisc's id are 16 bytes with the NUL.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,15}")


# procps `sysctl -p`/`-w` write a value with one write(), and the kernel takes at most a page
# of it (measured: 4,094 characters of port list apply, longer ones lose their tail while sysctl
# still exits 0), so a longer value is not one the advisor writes or accepts.
MAX_TEXT_VALUE = 4094
_ASCII_BLANKS = " \t\n\r\v\f"


def text_value(value: Any, key: CatalogKey, *, to_write: bool = True) -> str:
    """A text key's value as the kernel prints it back: a name, or a port set as its sorted,
    merged ranges ("8080,9000-9010"; "" for none). ValueError for anything else, and (unless
    reading what a host holds) for a value too long for one write."""
    if not isinstance(value, str):
        raise ValueError(f"expected text for {key.alias}, got {str(value)[:60]!r}")
    if to_write and len(value) > MAX_TEXT_VALUE:
        raise ValueError(
            f"{len(value):,} characters: `sysctl -p` writes at most {MAX_TEXT_VALUE:,} in one go"
        )
    if key.unit == "ports":
        return ports_text(parse_ports(value, key.min, key.max))
    name = value.strip(_ASCII_BLANKS)
    if not _NAME.fullmatch(name) or not key.min <= len(name) <= key.max:
        raise ValueError(f"not a kernel name: {value[:60]!r}")
    return name


def _port_number(text: str) -> int:
    """One number as proc_get_long() reads it inside a bitmap list: strtoul in base 0 (0x hex,
    a leading 0 octal), ASCII digits only, no sign and no blanks."""
    number = kernel_int(text) if text[:1] not in ("-", "+", "") else None
    if number is None:
        raise ValueError(f"not a port: {text[:20]!r}")
    return number


def parse_ports(text: str, low: int = 0, high: int = 65535) -> list[tuple[int, int]]:
    """A port list as proc_do_large_bitmap() reads it (ports and first-last ranges separated by
    commas, one trailing comma allowed, blanks only around the whole), as sorted, merged
    (first, last) ranges. ValueError for text the kernel refuses."""
    ranges: list[tuple[int, int]] = []
    body = text.strip(_ASCII_BLANKS)
    parts = body.split(",") if body else []
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()  # "8080," is accepted
    for part in parts:
        first, dash, last = part.partition("-")
        if len(part) > 24:
            raise ValueError(f"not a port or a first-last range: {part[:20]!r}")
        a = _port_number(first)
        b = _port_number(last) if dash else a
        if not low <= a <= b <= high:
            raise ValueError(f"{part!r} is not a range within {low}..{high}")
        ranges.append((a, b))
    return merge_ranges(ranges)


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Port ranges sorted, overlapping and adjacent ones joined."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def ports_text(ranges: list[tuple[int, int]]) -> str:
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
