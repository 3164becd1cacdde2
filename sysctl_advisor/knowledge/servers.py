"""The table of servers (rules/catalog/servers.yaml): how to recognise the process behind a
listening socket, the backlog it asks listen() for by default, and the setting that changes it.

Rules never see this module: `annotate` adds to each listener of the facts a plain mapping
`server` (or none) that rule expressions read like any other fact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from sysctl_advisor.cache.specs import SpecCache
from sysctl_advisor.knowledge.rules import SpecModel
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.model_base import Field, model

_ID = r"^[a-z0-9][a-z0-9-]{0,63}$"
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
    id: str = Field(pattern=_ID)
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


# What rules see of a recognised server (scalar fields, in declaration order).
_SHOWN = (
    "id",
    "name",
    "default_backlog",
    "follows_somaxconn",
    "setting",
    "where",
    "applies",
    "profile",
)


@model
class ServerTableSpec(SpecModel):
    servers: list[ServerSpec] = Field(max_length=256)


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


class ServerTable:
    def __init__(self, servers: list[ServerSpec]) -> None:
        self.servers = servers

    @classmethod
    def load(cls, path: Path, specs: SpecCache) -> ServerTable:
        table = specs.load(path, ServerTableSpec, "a server table")
        seen: set[str] = set()
        for server in table.servers:
            if server.id in seen:
                raise InputError(f"duplicate server id {server.id!r}", path=path, field="id")
            seen.add(server.id)
        return cls(table.servers)

    def recognise(self, process: dict[str, Any] | None) -> ServerSpec | None:
        if not process:
            return None
        command = process.get("command")
        executable = process.get("executable")
        main = process.get("java_main")
        for server in self.servers:
            match = server.recognise
            if (
                (command and command in match.commands)
                or (executable and executable in match.executables)
                or (main and main in match.java_main)
                or (match.go and process.get("go"))
            ):
                return server
        return None

    def annotate(
        self, listeners: list[dict[str, Any]] | None
    ) -> tuple[list[dict[str, Any]] | None, int]:
        """The facts' listeners as rules see them: sockets that share address, port, backlog
        and owner (SO_REUSEPORT gives each worker its own) become one entry with `sockets`,
        the fullest queue and `queue_share` (how full it is, 0 to 1); each with `server`, the
        table's entry for its process (what rules need of it), or None when the process is
        unknown or was not readable. Also how many distinct entries there were before the
        list was cut to MAX_RULE_LISTENERS."""
        if listeners is None:
            return None, 0
        merged: dict[tuple[Any, ...], dict[str, Any]] = {}
        known: dict[str, dict[str, Any]] = {}
        for listener in listeners:
            process = listener.get("process")
            server = self.recognise(process)
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
            }
        entries = list(merged.values())
        distinct = len(entries)
        if distinct > MAX_RULE_LISTENERS:
            entries.sort(key=lambda e: (-e["queue_share"], e["backlog"], e["port"]))
            entries = entries[:MAX_RULE_LISTENERS]
            entries.sort(key=lambda e: (e["port"], str(e["address"])))
        return entries, distinct
