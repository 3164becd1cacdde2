"""The table of servers (rules/catalog/servers.yaml): how to recognise the process behind a
listening socket, the backlog it asks listen() for by default, and the setting that changes it;
and the node's own agents (the kubelet, kube-proxy, the container runtime...), which a
Kubernetes node runs for itself, with the setting that gives a pod's containers their
RLIMIT_NOFILE where the agent is a container runtime.

Rules never see this module: `annotate` adds to each listener of the facts plain mappings
`server` and `node_agent` (or none), and `container_runtimes` lists the runtimes for rules, which
read them like any other fact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import Field, SpecModel, model

# A server's id: what a profile's `servers:` names (knowledge/profiles.py).
SERVER_ID = r"^[a-z0-9][a-z0-9-]{0,63}$"
# Listeners the rules see. A host with more distinct ones (after merging SO_REUSEPORT groups)
# is judged on those whose accept queues are fullest and backlogs shortest: the rest cannot
# change what the rules say, and walking them all would exhaust a host's expression budget.
MAX_RULE_LISTENERS = 1000


@model
class Recognise(SpecModel):
    """Any one of these identifies the server; the first entry of the table that matches wins,
    so entries for programs run by a generic runtime (Tomcat on java) come before the runtime."""

    commands: list[str] = Field(default_factory=list, description="/proc/PID/comm, exact")
    executables: list[str] = Field(default_factory=list, description="file name of the binary")
    java_main: list[str] = Field(
        default_factory=list, description="main class or jar file name of a java process"
    )
    go: bool = Field(default=False, description="any Go program")


@model
class ServerSpec(SpecModel):
    id: str = Field(pattern=SERVER_ID)
    name: str = Field(max_length=80)
    recognise: Recognise
    default_backlog: int | None = Field(
        default=None, ge=1, le=2**31 - 1, description="what it passes to listen() unless configured"
    )
    follows_somaxconn: bool = Field(
        default=False,
        description="asks for somaxconn itself (read once at start): its backlog equals "
        "somaxconn by design, and a raised somaxconn reaches it only after a restart",
    )
    backlog_fixed: bool = Field(
        default=False,
        description="always passes default_backlog to listen(), which no setting changes: a "
        "listener at a somaxconn of at least that got what it asked for",
    )
    default_note: str = Field(default="", max_length=400, description="how the default is computed")
    setting: str = Field(
        max_length=200, description="the setting to write; {backlog} and {port} are filled in"
    )
    where: str = Field(max_length=400, description="where the setting goes")
    applies: Literal["reload", "restart", "stop-start"] = Field(
        description="what makes an open listening socket take the new backlog"
    )
    references: list[str] = Field(min_length=1)
    profile: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9-]*$",
        description="the profile for this application (a plan without it says so)",
    )


@model
class FileLimit(SpecModel):
    """How a container runtime gives the containers it starts their RLIMIT_NOFILE."""

    setting: str = Field(max_length=200, description="the setting; {nofile} is filled in")
    where: str = Field(max_length=800, description="where it goes and when it takes effect")


@model
class NodeAgentSpec(SpecModel):
    """A program a Kubernetes node runs for itself, not for the workload: its listening ports
    are the node's (health, metrics, the kubelet's API), and rules ask no restart of it to
    chase a backlog on a node."""

    id: str = Field(pattern=SERVER_ID)
    name: str = Field(max_length=80)
    recognise: Recognise
    file_limit: FileLimit | None = Field(
        default=None, description="a container runtime: the setting for its containers' limit"
    )
    references: list[str] = Field(min_length=1)


# What rules see of a recognised server (scalar fields, in declaration order).
_SHOWN = (
    "id",
    "name",
    "default_backlog",
    "follows_somaxconn",
    "backlog_fixed",
    "setting",
    "where",
    "applies",
    "profile",
)


@model
class ServerTableSpec(SpecModel):
    servers: list[ServerSpec] = Field(max_length=256)
    node_agents: list[NodeAgentSpec] = Field(default_factory=list, max_length=64)


def rule_listens(listens: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A server's listen directives (one per socket) as rules see them: at most
    MAX_RULE_LISTENERS, those with the shortest backlogs (nginx's default, 511, for none)
    when there are more, in the order of the configuration."""
    if len(listens) <= MAX_RULE_LISTENERS:
        return listens
    ranked = sorted(
        range(len(listens)),
        key=lambda i: (b if (b := listens[i].get("backlog")) is not None else 511, i),
    )
    return [listens[i] for i in sorted(ranked[:MAX_RULE_LISTENERS])]


def _matches(match: Recognise, process: dict[str, Any]) -> bool:
    command = process.get("command")
    executable = process.get("executable")
    main = process.get("java_main")
    return bool(
        (command and command in match.commands)
        or (executable and executable in match.executables)
        or (main and main in match.java_main)
        or (match.go and process.get("go"))
    )


class ServerTable:
    def __init__(self, servers: list[ServerSpec], node_agents: list[NodeAgentSpec]) -> None:
        self.servers = servers
        self.node_agents = node_agents

    @classmethod
    def load(cls, path: Path, specs: SpecCache) -> ServerTable:
        table = specs.load(path, ServerTableSpec, "a server table")
        ids = (
            ("servers", [s.id for s in table.servers]),
            ("node_agents", [a.id for a in table.node_agents]),
        )
        for field, listed in ids:
            seen: set[str] = set()
            for i, entry_id in enumerate(listed):
                if entry_id in seen:
                    raise InputError(
                        f"duplicate id {entry_id!r}", path=path, field=f"{field}[{i}].id"
                    )
                seen.add(entry_id)
        return cls(table.servers, table.node_agents)

    def recognise(self, process: dict[str, Any] | None) -> ServerSpec | None:
        if not process:
            return None
        return next((s for s in self.servers if _matches(s.recognise, process)), None)

    def node_agent(self, process: dict[str, Any] | None) -> NodeAgentSpec | None:
        """The node agent a listener's process is (by its command or executable), if any."""
        if not process:
            return None
        return next((a for a in self.node_agents if _matches(a.recognise, process)), None)

    def container_runtimes(self, listeners: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        """The container runtimes of the table, as rules see them: each with the setting that
        gives a pod's containers their RLIMIT_NOFILE, where it goes, and `seen`, whether a
        listener of the facts belongs to it (each runtime's streaming server listens on
        loopback, so a node's facts usually show which it runs)."""
        running = {
            agent.id
            for listener in listeners or []
            if (agent := self.node_agent(listener.get("process"))) is not None
        }
        return [
            {
                "id": agent.id,
                "name": agent.name,
                "setting": agent.file_limit.setting,
                "where": agent.file_limit.where,
                "seen": agent.id in running,
            }
            for agent in self.node_agents
            if agent.file_limit is not None
        ]

    def annotate(
        self, listeners: list[dict[str, Any]] | None
    ) -> tuple[list[dict[str, Any]] | None, int]:
        """The facts' listeners as rules see them: sockets that share address, port, backlog
        and owner (SO_REUSEPORT gives each worker its own) become one entry with `sockets`,
        the fullest queue and `queue_share` (how full it is, 0 to 1); each with `server`, the
        table's entry for its process (what rules need of it), or None when the process is
        unknown or was not readable, and `index`, its position in the list. Also how many
        distinct entries there were before the list was cut to MAX_RULE_LISTENERS."""
        if listeners is None:
            return None, 0
        merged: dict[tuple[Any, ...], dict[str, Any]] = {}
        known: dict[str, dict[str, Any]] = {}
        agents: dict[str, dict[str, Any]] = {}
        for listener in listeners:
            process = listener.get("process")
            server = self.recognise(process)
            agent = self.node_agent(process)
            if agent is not None and agent.id not in agents:
                agents[agent.id] = {"id": agent.id, "name": agent.name}
            backlog, queue = listener.get("backlog") or 0, listener.get("queue") or 0
            share = min(queue / backlog, 1.0) if backlog else 1.0
            key = (
                listener.get("address"),
                listener.get("port"),
                backlog,
                process.get("command") if process else None,
                server.id if server else None,
            )
            entry = merged.get(key)
            if entry is not None:
                entry["sockets"] += 1
                entry["queue"] = max(entry["queue"], queue)
                entry["queue_share"] = max(entry["queue_share"], share)
                continue
            if server is not None and server.id not in known:
                known[server.id] = {name: getattr(server, name) for name in _SHOWN}
            merged[key] = {
                **listener,
                "queue": queue,
                "sockets": 1,
                "queue_share": share,
                "server": known[server.id] if server else None,
                "node_agent": agents[agent.id] if agent else None,
            }
        entries = list(merged.values())
        distinct = len(entries)
        if distinct > MAX_RULE_LISTENERS:
            entries.sort(key=lambda e: (-e["queue_share"], e["backlog"], e["port"]))
            entries = entries[:MAX_RULE_LISTENERS]
            entries.sort(key=lambda e: (e["port"], str(e["address"])))
        for index, entry in enumerate(entries):
            # what a rule tests membership by (`rejectattr('index', 'in', ids)`): comparing
            # whole entries walks each one's server entry, n x m times over
            entry["index"] = index
        return entries, distinct
