"""The table of servers (rules/catalog/servers.yaml): how to recognise the process behind a
listening socket, the backlog it asks listen() for by default, and the setting that changes it.

Rules never see this module: `annotate` adds to each listener of the facts a plain mapping
`server` (or none) that rule expressions read like any other fact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.knowledge.spec_cache import SpecCache
from advisor.model.errors import InputError

_ID = r"^[a-z0-9][a-z0-9-]{0,63}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Recognise(_Model):
    """Any one of these identifies the server; the first entry of the table that matches wins,
    so entries for programs run by a generic runtime (Tomcat on java) come before the runtime."""

    commands: list[str] = Field(default_factory=list, description="/proc/PID/comm, exact")
    executables: list[str] = Field(default_factory=list, description="file name of the binary")
    java_main: list[str] = Field(
        default_factory=list, description="main class or jar file name of a java process"
    )
    go: bool = Field(False, description="any Go program")


class ServerSpec(_Model):
    id: str = Field(pattern=_ID)
    name: str = Field(max_length=80)
    recognise: Recognise
    default_backlog: int | None = Field(
        None, ge=1, le=2**31 - 1, description="what it passes to listen() unless configured"
    )
    follows_somaxconn: bool = Field(
        False,
        description="asks for somaxconn itself (read once at start): its backlog equals "
        "somaxconn by design, and a raised somaxconn reaches it only after a restart",
    )
    default_note: str = Field("", max_length=400, description="how the default is computed")
    setting: str = Field(
        max_length=200, description="the setting to write; {backlog} and {port} are filled in"
    )
    where: str = Field(max_length=400, description="where the setting goes")
    applies: Literal["reload", "restart", "stop-start"] = Field(
        description="what makes an open listening socket take the new backlog"
    )
    references: list[str] = Field(min_length=1)


class ServerTableSpec(_Model):
    servers: list[ServerSpec] = Field(max_length=256)


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

    def annotate(self, listeners: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """The facts' listeners, each with `server`: the table's entry for its process as a
        plain mapping, or None when the process is unknown or was not readable; and
        `queue_share`: how full its accept queue is now (0 to 1)."""
        if listeners is None:
            return None
        annotated = []
        for listener in listeners:
            server = self.recognise(listener.get("process"))
            backlog, queue = listener.get("backlog") or 0, listener.get("queue") or 0
            annotated.append(
                {
                    **listener,
                    "server": server.model_dump(exclude={"recognise"}) if server else None,
                    "queue_share": min(queue / backlog, 1.0) if backlog else 1.0,
                }
            )
        return annotated
