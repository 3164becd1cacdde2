"""The knowledge base: catalog, rules and profiles, loaded and compiled once per run."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.app_messages import AppMessageFamily, app_readers, load_app_families
from sysctl_advisor.knowledge.catalog import Catalog
from sysctl_advisor.knowledge.check_rules import CheckRule, load_check_rules
from sysctl_advisor.knowledge.expressions import Compiler
from sysctl_advisor.knowledge.helpers import Helpers
from sysctl_advisor.knowledge.kernel_messages import MessageFamily, load_message_families, matchers
from sysctl_advisor.knowledge.knowledge_files import (
    APP_MESSAGE_CATALOG,
    HELPERS,
    KUBERNETES,
    MESSAGE_CATALOG,
    NODE_PLATFORMS,
    SERVER_TABLE,
    WRITERS,
)
from sysctl_advisor.knowledge.kubernetes import Kubernetes
from sysctl_advisor.knowledge.node_platforms import NodePlatform, load_node_platforms
from sysctl_advisor.knowledge.profiles import Profile, load_profiles
from sysctl_advisor.knowledge.resources import data_dir
from sysctl_advisor.knowledge.rules import Rule, load_rules
from sysctl_advisor.knowledge.servers import ServerTable
from sysctl_advisor.knowledge.sources import Sources
from sysctl_advisor.knowledge.workloads import Workload, workload_names
from sysctl_advisor.knowledge.writers import Writers
from sysctl_advisor.model.errors import InputError


@dataclass
class KnowledgeBase:
    compiler: Compiler
    catalog: Catalog
    rules: dict[str, Rule]
    profiles: dict[str, Profile]
    check_rules: dict[str, CheckRule]
    servers: ServerTable
    message_families: list[MessageFamily]
    kubernetes: Kubernetes  # what Kubernetes lets a pod set, by release
    sources: Sources  # every document the rest cites, by id
    node_platforms: dict[str, NodePlatform]  # where each platform takes a node's sysctls
    app_families: list[AppMessageFamily]  # applications' start-up warnings
    writers: Writers  # who else writes sysctls on a host
    helpers: Helpers  # the programs the kernel runs as root that a sysctl names
    _workloads: dict[tuple[str, ...], Workload] = dataclasses.field(
        default_factory=dict, repr=False
    )

    @classmethod
    def load(
        cls, rules_dirs: list[Path] | None = None, profiles_dirs: list[Path] | None = None
    ) -> KnowledgeBase:
        compiler = Compiler()
        specs = SpecCache()
        shipped_rules = data_dir("rules")
        catalog = Catalog(shipped_rules / "catalog", compiler, specs)
        rules = load_rules([shipped_rules, *(rules_dirs or [])], compiler, catalog, specs)
        profiles = load_profiles(
            [data_dir("profiles"), *(profiles_dirs or [])], rules, compiler, specs
        )
        check_dirs = [d / "check" for d in [shipped_rules, *(rules_dirs or [])]]
        check_rules = load_check_rules(
            [check_dirs[0], *(d for d in check_dirs[1:] if d.is_dir())], compiler, specs
        )
        servers = ServerTable.load(shipped_rules / "catalog" / SERVER_TABLE, specs)
        families = load_message_families(shipped_rules / "catalog" / MESSAGE_CATALOG, specs)
        app_families = load_app_families(shipped_rules / "catalog" / APP_MESSAGE_CATALOG, specs)
        shared = {f.id for f in families} & {a.id for a in app_families}
        if shared:  # rules see both in one `message_families` mapping
            raise InputError(
                f"message family id {sorted(shared)[0]!r} is both a kernel and an application "
                "family",
                path=shipped_rules / "catalog" / APP_MESSAGE_CATALOG,
            )
        # loaded on every run, though only the Kubernetes output reads it: the spec cache
        # keeps the entries the last run used, and this one must stay warm too
        kubernetes = Kubernetes.load(shipped_rules / "catalog" / KUBERNETES, specs)
        node_platforms = load_node_platforms(shipped_rules / "catalog" / NODE_PLATFORMS, specs)
        writers = Writers.load(shipped_rules / "catalog" / WRITERS, specs, compiler)
        helpers = Helpers(shipped_rules / "catalog" / HELPERS, specs)
        catalogs = [shipped_rules, *(rules_dirs or [])]
        sources = Sources(
            [p for d in catalogs if (p := d / "catalog" / Sources.FILE).exists()], specs
        )
        catalog_dir = shipped_rules / "catalog"
        cited: list[tuple[Path, str, dict[str, Any]]] = [
            (catalog.path, "keys", catalog.keys),
            (
                catalog.path,
                "keys",
                {f"{n}.floor": k.floor for n, k in catalog.keys.items() if k.floor},
            ),
            (catalog.path, "readable", catalog.readable),
            (catalog.path, "tuning_daemons", catalog.tuning_daemons),
            (catalog.path, "known", catalog.known),
            *(
                (catalog.path, f"{part}.{name}.bounds", {str(i): b for i, b in enumerate(k.bounds)})
                for part, entries in (("keys", catalog.keys), ("known", catalog.known))
                for name, k in entries.items()
                if k.bounds
            ),
            (
                catalog_dir / SERVER_TABLE,
                "servers",
                {str(i): s for i, s in enumerate(servers.servers)},
            ),
            (
                catalog_dir / SERVER_TABLE,
                "node_agents",
                {str(i): a for i, a in enumerate(servers.node_agents)},
            ),
            (
                catalog_dir / MESSAGE_CATALOG,
                "families",
                {str(i): f for i, f in enumerate(families)},
            ),
            (
                catalog_dir / APP_MESSAGE_CATALOG,
                "families",
                {str(i): f for i, f in enumerate(app_families)},
            ),
            (catalog_dir / KUBERNETES, "", {"": kubernetes.spec}),
            (
                catalog_dir / KUBERNETES,
                "node.links",
                {str(i): s for i, s in enumerate(kubernetes.spec.node.links)},
            ),
            (
                catalog_dir / KUBERNETES,
                "node.files",
                {str(i): s for i, s in enumerate(kubernetes.spec.node.files)},
            ),
            (catalog_dir / HELPERS, "keys", dict(helpers.spec.keys)),
            *(
                (
                    catalog_dir / HELPERS,
                    f"keys.{name}.handlers",
                    {str(i): h for i, h in enumerate(key.handlers)},
                )
                for name, key in helpers.spec.keys.items()
            ),
            (catalog_dir / WRITERS, "writers", {w.id: w for w in writers.spec.writers}),
            *(
                (
                    catalog_dir / WRITERS,
                    f"writers.{w.id}.writes",
                    {str(i): x for i, x in enumerate(w.writes)},
                )
                for w in writers.spec.writers
            ),
            *((p.path, "", {"": p.spec}) for p in node_platforms.values()),
            *((rule.path, "", {"": rule.spec}) for rule in rules.values()),
            *((rule.path, "", {"": rule.spec}) for rule in check_rules.values()),
        ]
        for i, server in enumerate(servers.servers):
            if server.profile is not None and server.profile not in profiles:
                raise InputError(
                    f"unknown profile {server.profile!r}",
                    path=catalog_dir / SERVER_TABLE,
                    field=f"servers[{i}].profile",
                )
        server_ids = {server.id for server in servers.servers}
        for profile in profiles.values():
            for i, name in enumerate(profile.own_servers):
                if name not in server_ids:
                    raise InputError(
                        f"unknown server {name!r} (the server table has "
                        f"{', '.join(sorted(server_ids))})",
                        path=profile.path,
                        field=f"servers[{i}]",
                    )
        for path, field, entries in cited:  # every `references` list a knowledge file holds
            for name, entry in entries.items():
                where = ".".join(str(part) for part in (field, name, "references") if part != "")
                sources.check(entry.references, path, where)
        sources.check(
            helpers.spec.system_directories_references,
            catalog_dir / HELPERS,
            "system_directories_references",
        )
        compiler.save()
        specs.save()
        return cls(
            compiler,
            catalog,
            rules,
            profiles,
            check_rules,
            servers,
            families,
            kubernetes,
            sources,
            node_platforms,
            app_families,
            writers,
            helpers,
        )

    @functools.cached_property
    def message_texts(self) -> dict[str, dict[str, str | list[str]]]:
        """What rules see of each message family, kernel and application (title, what it
        means, and `match`: the lowercase substrings that identify its lines, so a rule can
        find the family in the facts' `kernel_messages` as the log reader does; for an
        application family also `application`, `asks` and `key`, "" when it names no sysctl),
        built once: the sandbox is immutable, so every host shares it."""
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
        return matchers(self.message_families)

    def app_readers(self) -> dict[str, dict[str, Any]]:
        """Application family id -> what the application log reader needs (plain data)."""
        return app_readers(self.app_families)

    def profile(self, name: str) -> Profile:
        try:
            return self.profiles[name]
        except KeyError:
            known = ", ".join(sorted(self.profiles))
            raise InputError(
                f"unknown profile {name!r} (profiles: {known})", field="--profile"
            ) from None

    def workload(self, names: str | Sequence[str]) -> Workload:
        """The profiles a host runs (one name or several, each with its includes)."""
        given = workload_names(names)
        found = self._workloads.get(given)
        if found is None:
            found = self._workloads[given] = Workload(given, self.profiles)
        return found
