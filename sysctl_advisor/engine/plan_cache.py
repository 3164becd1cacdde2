"""Plans by host shape, for fleets: real fleets are a few kinds of machine, and hosts of one
kind (the same facts but for the name, the same profile and parameters) get the same plan.

Each shape also keeps what the renderers worked out for its plan (the parts of a file that do
not name the host: Renderer.render_for_shape), so a fleet renders a kind of machine once.

Below the shapes, hosts of different shapes often run the same kernel on the same hardware:
what the kernel model works out for them (derived quantities, boot defaults) is the same, since
it reads only the kernel release, the page size and the facts fields Catalog.host_fields names.
That is kept too (KernelDefaultsMemo), so a fleet of distinct hosts evaluates the kernel model
once per kind of machine.

In memory only, per process (nothing is written or read back), bounded, and self-disabling:
once enough hosts have been seen, a hit rate below `min_hit_rate` turns it off, so an
all-distinct fleet pays for the key of its first hosts only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sysctl_advisor.engine.plan_builder import KernelDefaults, build_plan
from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.knowledge.workloads import workload_names
from sysctl_advisor.model.host_facts import HostFacts
from sysctl_advisor.model.model_base import plain_data
from sysctl_advisor.model.plan import Plan


@dataclass
class HostShape:
    """One host's plan, and the renderers' memo shared by every host of its shape (empty and
    private to the host when the cache is off)."""

    plan: Plan
    rendered: dict[str, Any] = field(default_factory=dict)


V = TypeVar("V")


class BoundedMemo(MutableMapping[str, V]):
    """Values by key: bounded (the least recently used go first), and off for good once
    `trial` lookups have been made with a hit rate below `min_hit_rate` (then it holds and
    keeps nothing, so a fleet whose hosts share nothing stops paying for it)."""

    def __init__(self, max_entries: int = 256, min_hit_rate: float = 0.2, trial: int = 200):
        self.max_entries = max_entries
        self.min_hit_rate = min_hit_rate
        self.trial = trial
        self.entries: OrderedDict[str, V] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.enabled = True

    def __getitem__(self, key: str) -> V:
        found = self.entries.get(key)
        if found is None:
            self.misses += 1
            seen = self.hits + self.misses
            if seen >= self.trial and self.hits < self.min_hit_rate * seen:
                self.enabled = False
                self.entries.clear()
            raise KeyError(key)
        self.hits += 1
        self.entries.move_to_end(key)
        return found

    def __setitem__(self, key: str, value: V) -> None:
        if not self.enabled:
            return
        self.entries[key] = value
        if len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)

    def __delitem__(self, key: str) -> None:
        del self.entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


# The kernel model's results by Catalog.host_key.
KernelDefaultsMemo = BoundedMemo[KernelDefaults]


class PlanCache:
    def __init__(
        self,
        kb: KnowledgeBase,
        max_entries: int = 256,
        min_hit_rate: float = 0.2,
        trial: int = 200,
    ) -> None:
        self.shapes = BoundedMemo[HostShape](max_entries, min_hit_rate, trial)
        # A rule or profile that reads the host's name (a --rules-dir one may) makes the name
        # part of the shape: then every host is planned on its own.
        knowledge = [json.dumps(plain_data(r.spec)) for r in kb.rules.values()]
        knowledge += [
            str(param.default_expr) for p in kb.profiles.values() for param in p.parameters.values()
        ]
        self.reads_hostname = any("hostname" in text for text in knowledge)
        self.kernel_defaults = KernelDefaultsMemo(max_entries, min_hit_rate, trial)

    @property
    def enabled(self) -> bool:
        return not self.reads_hostname and self.shapes.enabled

    @property
    def entries(self) -> OrderedDict[str, HostShape]:
        return self.shapes.entries

    @property
    def hits(self) -> int:
        return self.shapes.hits

    @property
    def misses(self) -> int:
        return self.shapes.misses

    def _build(
        self,
        kb: KnowledgeBase,
        facts: HostFacts,
        profile: str | Sequence[str],
        overrides: dict[str, str] | None,
    ) -> Plan:
        memo = self.kernel_defaults if self.kernel_defaults.enabled else None
        return build_plan(kb, facts, profile, overrides, memo)

    @staticmethod
    def shape(
        facts: HostFacts, profile: str | Sequence[str], overrides: dict[str, str] | None
    ) -> str:
        """What a plan depends on: every fact but the host's name, the profile, the overrides."""
        data = json.dumps({**plain_data(facts), "hostname": None}, separators=(",", ":"))
        params = json.dumps(sorted((overrides or {}).items()))
        return hashlib.sha256(f"{workload_names(profile)}\0{params}\0{data}".encode()).hexdigest()

    def plan(
        self,
        kb: KnowledgeBase,
        facts: HostFacts,
        profile: str | Sequence[str],
        overrides: dict[str, str] | None = None,
    ) -> Plan:
        return self.lookup(kb, facts, profile, overrides).plan

    def lookup(
        self,
        kb: KnowledgeBase,
        facts: HostFacts,
        profile: str | Sequence[str],
        overrides: dict[str, str] | None = None,
    ) -> HostShape:
        """The host's plan (its own name in it) and its shape's render memo."""
        if not self.enabled:
            return HostShape(self._build(kb, facts, profile, overrides))
        key = self.shape(facts, profile, overrides)
        cached = self.shapes.get(key)
        if cached is not None:
            host = dataclasses.replace(cached.plan.host, hostname=facts.hostname)
            return HostShape(dataclasses.replace(cached.plan, host=host), cached.rendered)
        entry = HostShape(self._build(kb, facts, profile, overrides))
        self.shapes[key] = entry
        return entry
