"""The knowledge base: catalog, rules, profiles and the other tables, each kind loaded and
compiled when a run first reads it.

A kind is imported, loaded (from its own spec and code cache files: cache/specs.py,
cache/code.py), cross-checked and cited against the sources when it is first read, so `check`
never defines or loads the advice rules, the profiles, the Kubernetes table or the message
families, and `recommend` loads the check rules only when its plan keeps a value in force
(engine/kept_values.py judges it as `check` would). `KnowledgeBase.load` loads every kind at
once (the reference generators and the tests: every file is checked); `KnowledgeBase.lazy` is
what the commands use.
"""

from __future__ import annotations

import functools
import marshal
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sysctl_advisor.cache.files import content_key, validating_code
from sysctl_advisor.cache.specs import SpecCache, file_key
from sysctl_advisor.knowledge.knowledge_files import (
    APP_MESSAGE_CATALOG,
    HELPERS,
    KERNEL_KEYS,
    KERNEL_MODEL,
    KUBERNETES,
    MESSAGE_CATALOG,
    NODE_PLATFORMS,
    SERVER_TABLE,
    WRITERS,
)
from sysctl_advisor.knowledge.resources import data_dir
from sysctl_advisor.model.errors import InputError

if TYPE_CHECKING:  # each kind's module is imported when the kind is first read
    from sysctl_advisor.knowledge.app_messages import AppMessageFamily
    from sysctl_advisor.knowledge.catalog import Catalog
    from sysctl_advisor.knowledge.check_rules import CheckRule
    from sysctl_advisor.knowledge.expressions import Compiler
    from sysctl_advisor.knowledge.helpers import Helpers
    from sysctl_advisor.knowledge.kernel_keys import KernelKeys
    from sysctl_advisor.knowledge.kernel_messages import MessageFamily
    from sysctl_advisor.knowledge.kubernetes import Kubernetes
    from sysctl_advisor.knowledge.node_platforms import NodePlatform
    from sysctl_advisor.knowledge.profiles import Profile
    from sysctl_advisor.knowledge.rules import Rule
    from sysctl_advisor.knowledge.servers import ServerTable
    from sysctl_advisor.knowledge.sources import Sources
    from sysctl_advisor.knowledge.workloads import Workload
    from sysctl_advisor.knowledge.writers import Writers

V = TypeVar("V")
# Where a kind's `references` lists are: (file, field, {name: entry with .references}).
Cited = list[tuple[Path, str, dict[str, Any]]]
# What a kind cites: its `references` lists, and its other citation lists (see `_cite`).
Citations = tuple[Cited, list[tuple[list[str], Path, str]]] | tuple[Cited]
_KINDS = (
    "catalog",
    "_advice",
    "check_rules",
    "servers",
    "message_families",
    "kubernetes",
    "node_platforms",
    "writers",
    "helpers",
    "kernel_keys",
)


def _cite_specs(found: dict[str, Any]) -> Citations:
    """What a kind of one spec per file (rules, check rules, node platforms) cites."""
    return ([(item.path, "", {"": item.spec}) for item in found.values()],)


def _numbered(items: Iterable[Any]) -> dict[str, Any]:
    return {str(i): item for i, item in enumerate(items)}


def _stat_line(path: Path) -> str:
    """A file's path, size, times and inode, as a .pyc is checked against its source."""
    st = path.stat()
    return f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


class OnDemand(Mapping[str, V]):
    """Knowledge by name, in the order of a whole load, each item loaded when first read."""

    def __init__(self, names: list[str], load: Callable[[str], V]) -> None:
        self._names = names
        self._known = frozenset(names)
        self._load = load
        self._loaded: dict[str, V] = {}

    def __getitem__(self, name: str) -> V:
        found = self._loaded.get(name)
        if found is None:
            if name not in self._known:
                raise KeyError(name)
            found = self._loaded[name] = self._load(name)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class KnowledgeBase:
    def __init__(self, rules_dirs: list[Path] | None, profiles_dirs: list[Path] | None) -> None:
        self.rules_dirs = [data_dir("rules"), *(rules_dirs or [])]
        self.profiles_dirs = [data_dir("profiles"), *(profiles_dirs or [])]
        self.catalog_dir = self.rules_dirs[0] / "catalog"
        self._specs: dict[str, SpecCache] = {}
        self._workloads: dict[tuple[str, ...], Workload] = {}
        # The index key of the rule and profile files as they were before a whole load read
        # them (`_index`): a file changed while it ran changes its stat, so no later run
        # takes the index for a check of files that were not the ones checked.
        self._key_before: str | None = None
        self._stats: dict[Path, str] = {}  # each rule and profile file's stat in that key

    @classmethod
    def lazy(
        cls, rules_dirs: list[Path] | None = None, profiles_dirs: list[Path] | None = None
    ) -> KnowledgeBase:
        """A knowledge base that loads each kind when it is first read (the directories are
        checked then too)."""
        return cls(rules_dirs, profiles_dirs)

    @classmethod
    def load(
        cls, rules_dirs: list[Path] | None = None, profiles_dirs: list[Path] | None = None
    ) -> KnowledgeBase:
        """Every kind loaded and checked now."""
        kb = cls(rules_dirs, profiles_dirs)
        for kind in _KINDS:
            getattr(kb, kind)
        return kb

    def _loaded(
        self,
        kind: str,
        load: Callable[[SpecCache], Any],
        cite: Callable[[Any], Citations] | None = None,
        check: Callable[[SpecCache, Any], None] | None = None,
    ) -> Any:
        """One kind through its own spec cache file, its references checked (`cite`: what it
        cites, see `_cite`) and then `check` run on it; both caches saved after that, once, so
        the entries kept are those the run used, the verdicts among them."""
        specs = self._specs.get(kind) or SpecCache(kind)
        self._specs[kind] = specs
        with self.compiler.for_kind(kind):
            found = load(specs)
        if cite is not None:
            self._cite(specs, kind, *cite(found))
        if check is not None:
            check(specs, found)
        specs.save()
        self.compiler.save(kind)
        return found

    def _cite(
        self,
        specs: SpecCache,
        kind: str,
        cited: Cited,
        lists: Iterable[tuple[list[str], Path, str]] = (),
    ) -> None:
        """Every `references` list of a kind (and every other citation list, `lists`: the
        citations, their file, their field) names a source the catalogs hold. Checked once per
        set of files: the verdict is kept in the kind's spec cache under a key over its files
        and the sources files, so a warm run does not load the sources for it."""
        key = content_key("references", kind, *specs.used(), *self._sources_keys)
        if specs.holds(key):
            return
        for path, field, entries in cited:
            for name, entry in entries.items():
                where = ".".join(str(part) for part in (field, name, "references") if part != "")
                self.sources.check(entry.references, path, where)
        for citations, path, where in lists:
            self.sources.check(citations, path, where)
        specs.remember(key)

    def _sources_files(self) -> list[Path]:
        from sysctl_advisor.knowledge.sources import Sources

        found = (d / "catalog" / Sources.FILE for d in self.rules_dirs)
        return [p for p in found if p.exists()]

    @functools.cached_property
    def _sources_keys(self) -> list[str]:
        """The sources files' spec cache keys (their texts read, not loaded)."""
        from sysctl_advisor.knowledge.sources import SourcesSpec

        return [file_key(path, SourcesSpec) for path in self._sources_files()]

    @functools.cached_property
    def compiler(self) -> Compiler:
        from sysctl_advisor.knowledge.expressions import Compiler

        return Compiler()

    @functools.cached_property
    def sources(self) -> Sources:
        """Every document the rest cites, by id."""
        from sysctl_advisor.knowledge.sources import Sources

        sources: Sources = self._loaded(
            "sources", lambda specs: Sources(self._sources_files(), specs)
        )
        return sources

    @functools.cached_property
    def catalog(self) -> Catalog:
        from sysctl_advisor.knowledge.catalog import Catalog

        def cite(catalog: Catalog) -> Citations:
            bounds = (
                (catalog.path, f"{part}.{name}.bounds", _numbered(k.bounds))
                for part, entries in (("keys", catalog.keys), ("known", catalog.known))
                for name, k in entries.items()
                if k.bounds
            )
            floors = {f"{n}.floor": k.floor for n, k in catalog.keys.items() if k.floor}
            shown = {
                f"{n}.netns_reads_init": k.netns_reads_init
                for n, k in catalog.keys.items()
                if k.netns_reads_init
            }
            cited: Cited = [
                (catalog.path, "keys", catalog.keys),
                (catalog.path, "keys", floors),
                (catalog.path, "keys", shown),
                (catalog.path, "readable", catalog.readable),
                (catalog.path, "tuning_daemons", catalog.tuning_daemons),
                (catalog.path, "known", catalog.known),
                *bounds,
            ]
            return (cited,)

        catalog: Catalog = self._loaded(
            "catalog", lambda specs: Catalog(self.catalog_dir, self.compiler, specs), cite
        )
        return catalog

    @property
    def rules(self) -> Mapping[str, Rule]:
        """Every advice rule by id (see `_advice`)."""
        return self._advice[0]

    @property
    def profiles(self) -> Mapping[str, Profile]:
        """Every profile by name (see `_advice`)."""
        return self._advice[1]

    @functools.cached_property
    def _advice(self) -> tuple[Mapping[str, Rule], Mapping[str, Profile]]:
        """The advice rules and the profiles, loaded and checked together (the parameters a
        rule reads are declared by the profiles that run it). When the files are those a whole
        load checked (`_index`), each rule and profile is loaded when first read instead: a
        run loads the rules its profiles run."""
        from sysctl_advisor.knowledge.profiles import load_profiles, profile_specs, resolve
        from sysctl_advisor.knowledge.rules import load_rule, load_rules

        index = self._index
        if index is not None:
            paths = {rule_id: Path(path) for rule_id, path in index[0]}
            found = self._loaded("profiles", lambda s: profile_specs(self.profiles_dirs, s))
            self._unchanged(*(path for _, path in found.values()))
            selected: dict[str, list[str]] = {}

            def rule(rule_id: str) -> Rule:
                path = paths[rule_id]
                loaded: Rule = self._part(
                    "rules", lambda s: load_rule(path, self.compiler, self.catalog, s)
                )
                self._unchanged(path)
                return loaded

            return OnDemand(list(paths), rule), OnDemand(
                index[1],
                lambda name: self._part(
                    "profiles",
                    lambda _: resolve(name, found, self.rules, self.compiler, selected),
                ),
            )
        rules: dict[str, Rule] = self._loaded(
            "rules",
            lambda specs: load_rules(self.rules_dirs, self.compiler, self.catalog, specs),
            _cite_specs,
        )
        profiles: dict[str, Profile] = self._loaded(
            "profiles",
            lambda specs: load_profiles(self.profiles_dirs, rules, self.compiler, specs),
        )
        self._check_servers(profiles)
        key = self._key_before
        if key is not None:  # rules and profiles checked whole: the next run may load parts
            kept = ([(i, str(r.path)) for i, r in rules.items()], list(profiles))
            self._specs["rules"].remember(key, marshal.dumps(kept))
            self._specs["rules"].save()
        return rules, profiles

    def _check_servers(self, profiles: dict[str, Profile]) -> None:
        """The profiles the server table names exist, and so do the servers profiles name."""
        for i, server in enumerate(self.servers.servers):
            if server.profile is not None and server.profile not in profiles:
                raise InputError(
                    f"unknown profile {server.profile!r}",
                    path=self.catalog_dir / SERVER_TABLE,
                    field=f"servers[{i}].profile",
                )
        server_ids = {server.id for server in self.servers.servers}
        for profile in profiles.values():
            for i, name in enumerate(profile.own_servers):
                if name not in server_ids:
                    raise InputError(
                        f"unknown server {name!r} (the server table has "
                        f"{', '.join(sorted(server_ids))})",
                        path=profile.path,
                        field=f"servers[{i}]",
                    )

    def _index_key(self) -> str | None:
        """A key over every rule and profile file (path, size, times, inode: as Python's .pyc
        files are checked against their source, without reading them), the code that validates
        them, and the catalog, server table and sources they were checked against; None when a
        directory is missing (the whole load says so)."""
        from sysctl_advisor.knowledge.knowledge_files import profile_files, rule_files
        from sysctl_advisor.knowledge.servers import ServerTableSpec

        if not all(d.is_dir() for d in (*self.rules_dirs, *self.profiles_dirs)):
            return None
        files = [
            *(p for d in self.rules_dirs for p in rule_files(d)),
            *(p for d in self.profiles_dirs for p in profile_files(d)),
        ]
        self._stats = {path: _stat_line(path) for path in files}
        return content_key(
            "index",
            validating_code(),
            *self._stats.values(),
            *self._specs["catalog"].used(),
            file_key(self.catalog_dir / SERVER_TABLE, ServerTableSpec),
            *self._sources_keys,
        )

    @functools.cached_property
    def _index(self) -> tuple[list[tuple[str, str]], list[str]] | None:
        """The rule ids (with their files) and profile names of the last whole load of these
        same files, which passed every check across them (duplicate ids, the parameters rules
        read, the servers profiles name, the sources rules cite); None if there is none."""
        if not self.catalog.keys:  # loaded first: the index covers the catalog the rules read
            return None
        specs = self._specs["rules"] = SpecCache("rules")
        key = self._key_before = self._index_key()
        raw = specs.recall(key) if key is not None else None
        if not raw:
            return None
        try:
            rules, profiles = marshal.loads(raw)
            return [(str(i), str(p)) for i, p in rules], [str(n) for n in profiles]
        except (ValueError, EOFError, TypeError):
            return None

    def _unchanged(self, *paths: Path) -> None:
        """Files read on the index's word are those it was taken over: a file whose stat
        changed since (edited while this run read it) was not checked against the others."""
        for path in paths:
            if _stat_line(path) != self._stats.get(path):
                raise InputError(
                    "changed while this run read it (it was not checked against the other "
                    "rule and profile files): run again",
                    path=path,
                )

    def _part(self, kind: str, load: Callable[[SpecCache], Any]) -> Any:
        """One item of a kind loaded in part: the caches keep the entries this run did not
        use (another run's profile reads them)."""
        specs = self._specs[kind]
        with self.compiler.for_kind(kind):
            found = load(specs)
        specs.save(prune=False)
        self.compiler.save(kind, keep_unused=True)
        return found

    @functools.cached_property
    def check_rules(self) -> dict[str, CheckRule]:
        from sysctl_advisor.knowledge.check_rules import load_check_rules

        dirs = [d / "check" for d in self.rules_dirs]
        dirs = [dirs[0], *(d for d in dirs[1:] if d.is_dir())]
        rules: dict[str, CheckRule] = self._loaded(
            "check_rules",
            lambda specs: load_check_rules(dirs, self.compiler, specs),
            _cite_specs,
            self._check_needs,
        )
        return rules

    def _check_needs(self, specs: SpecCache, rules: dict[str, CheckRule]) -> None:
        """Each check rule reads only what its `needs` make known (check_rules.check_needs):
        checked once per set of rule files and kernel model, the verdict kept in the spec
        cache as the references' is."""
        from sysctl_advisor.knowledge.catalog import KernelContext, KernelModelFile
        from sysctl_advisor.knowledge.check_rules import check_needs

        model = file_key(self.catalog_dir / KERNEL_MODEL, KernelModelFile)
        key = content_key("needs", *specs.used(), model)
        if specs.holds(key):
            return
        needs = self.catalog.quantity_needs
        check_needs(rules, self.compiler, needs, KernelContext.BASE_FIELDS)
        specs.remember(key)

    @functools.cached_property
    def servers(self) -> ServerTable:
        from sysctl_advisor.knowledge.servers import ServerTable

        path = self.catalog_dir / SERVER_TABLE
        servers: ServerTable = self._loaded(
            "servers",
            lambda specs: ServerTable.load(path, specs),
            lambda servers: (
                [
                    (path, "servers", _numbered(servers.servers)),
                    (path, "node_agents", _numbered(servers.node_agents)),
                ],
            ),
        )
        return servers

    @functools.cached_property
    def _families(self) -> tuple[list[MessageFamily], list[AppMessageFamily]]:
        """The kernel's and the applications' message families (rules see both in one
        `message_families` mapping, so no id is both)."""
        from sysctl_advisor.knowledge.app_messages import load_app_families
        from sysctl_advisor.knowledge.kernel_messages import load_message_families

        kernel_path = self.catalog_dir / MESSAGE_CATALOG
        app_path = self.catalog_dir / APP_MESSAGE_CATALOG

        def load(specs: SpecCache) -> tuple[list[MessageFamily], list[AppMessageFamily]]:
            families = load_message_families(kernel_path, specs)
            app_families = load_app_families(app_path, specs)
            shared = {f.id for f in families} & {a.id for a in app_families}
            if shared:
                raise InputError(
                    f"message family id {sorted(shared)[0]!r} is both a kernel and an "
                    "application family",
                    path=app_path,
                )
            return families, app_families

        def cite(found: tuple[list[MessageFamily], list[AppMessageFamily]]) -> Citations:
            return (
                [
                    (kernel_path, "families", _numbered(found[0])),
                    (app_path, "families", _numbered(found[1])),
                ],
            )

        families, app_families = self._loaded("message_families", load, cite)
        return families, app_families

    @property
    def message_families(self) -> list[MessageFamily]:
        return self._families[0]

    @property
    def app_families(self) -> list[AppMessageFamily]:
        """Applications' start-up warnings."""
        return self._families[1]

    @functools.cached_property
    def kubernetes(self) -> Kubernetes:
        """What Kubernetes lets a pod set, by release."""
        from sysctl_advisor.knowledge.kubernetes import Kubernetes

        path = self.catalog_dir / KUBERNETES

        def cite(kubernetes: Kubernetes) -> Citations:
            node = kubernetes.spec.node
            return (
                [
                    (path, "", {"": kubernetes.spec}),
                    (path, "node.links", _numbered(node.links)),
                    (path, "node.files", _numbered(node.files)),
                ],
            )

        kubernetes: Kubernetes = self._loaded(
            "kubernetes", lambda specs: Kubernetes.load(path, specs), cite
        )
        return kubernetes

    @functools.cached_property
    def node_platforms(self) -> dict[str, NodePlatform]:
        """Where each platform takes a node's sysctls."""
        from sysctl_advisor.knowledge.node_platforms import load_node_platforms

        path = self.catalog_dir / NODE_PLATFORMS
        platforms: dict[str, NodePlatform] = self._loaded(
            "node_platforms", lambda specs: load_node_platforms(path, specs), _cite_specs
        )
        return platforms

    @functools.cached_property
    def writers(self) -> Writers:
        """Who else writes sysctls on a host."""
        from sysctl_advisor.knowledge.writers import Writers

        path = self.catalog_dir / WRITERS

        def cite(writers: Writers) -> Citations:
            return (
                [
                    (path, "writers", {w.id: w for w in writers.spec.writers}),
                    *(
                        (path, f"writers.{w.id}.writes", _numbered(w.writes))
                        for w in writers.spec.writers
                    ),
                ],
            )

        writers: Writers = self._loaded(
            "writers", lambda specs: Writers.load(path, specs, self.compiler), cite
        )
        return writers

    @functools.cached_property
    def helpers(self) -> Helpers:
        """The programs the kernel runs as root that a sysctl names."""
        from sysctl_advisor.knowledge.helpers import Helpers

        path = self.catalog_dir / HELPERS

        def cite(helpers: Helpers) -> Citations:
            keys = helpers.spec.keys
            return (
                [
                    (path, "keys", dict(keys)),
                    *(
                        (path, f"keys.{name}.handlers", _numbered(k.handlers))
                        for name, k in keys.items()
                    ),
                ],
                [
                    (
                        helpers.spec.system_directories_references,
                        path,
                        "system_directories_references",
                    )
                ],
            )

        helpers: Helpers = self._loaded("helpers", lambda specs: Helpers(path, specs), cite)
        return helpers

    @functools.cached_property
    def kernel_keys(self) -> KernelKeys:
        """The keys each Linux release has, read from its sysctl tables."""
        from sysctl_advisor.knowledge.kernel_keys import KernelKeys

        path = self.catalog_dir / KERNEL_KEYS

        def cite(keys: KernelKeys) -> Citations:
            releases = {f"{name}.source": r.source for name, r in keys.spec.releases.items()}
            return (
                [(path, "", {"": keys.spec})],
                [([*releases.values()], path, "releases")],
            )

        kernel_keys: KernelKeys = self._loaded(
            "kernel_keys", lambda specs: KernelKeys(path, specs), cite
        )
        return kernel_keys

    @functools.cached_property
    def message_texts(self) -> dict[str, dict[str, str | list[str]]]:
        """What rules see of each message family, kernel and application (title, what it
        means, and `match`: the lowercase substrings that identify its lines, so a rule can
        find the family in the facts' `kernel_messages` as the log reader does; for an
        application family also `application`, `asks` and `key`, "" when it names no sysctl),
        built once: the sandbox is immutable, so every host shares it."""
        from sysctl_advisor.knowledge.kernel_messages import matchers

        found = matchers(self.message_families)
        texts: dict[str, dict[str, str | list[str]]] = {
            f.id: {"title": f.title, "means": " ".join(f.means.split()), "match": list(found[f.id])}
            for f in self.message_families
        }
        apps = matchers(self.app_families)
        for a in self.app_families:
            texts[a.id] = {
                "title": a.title,
                "means": " ".join(a.means.split()),
                "match": list(apps[a.id]),
                "application": a.application,
                "asks": a.asks,
                "key": a.key or "",
            }
        return texts

    def message_matchers(self) -> dict[str, tuple[str, ...]]:
        """Message family id -> the lowercase substrings that identify its lines."""
        from sysctl_advisor.knowledge.kernel_messages import matchers

        return matchers(self.message_families)

    def app_readers(self) -> dict[str, dict[str, Any]]:
        """Application family id -> what the application log reader needs (plain data)."""
        from sysctl_advisor.knowledge.app_messages import app_readers

        return app_readers(self.app_families)

    def profile(self, name: str) -> Profile:
        try:
            return self.profiles[name]
        except KeyError:
            from sysctl_advisor.knowledge.workloads import unknown_profile

            raise unknown_profile(name, self.profiles) from None

    def workload(self, names: str | Sequence[str]) -> Workload:
        """The profiles a host runs (one name or several, each with its includes)."""
        from sysctl_advisor.knowledge.workloads import Workload, workload_names

        given = workload_names(names)
        found = self._workloads.get(given)
        if found is None:
            found = self._workloads[given] = Workload(given, self.profiles)
        return found
