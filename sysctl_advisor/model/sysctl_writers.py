"""The facts' `writers:` section: the sysctl writes the host was seen making, each with its
writer (process, parent, systemd unit or Kubernetes pod), the network namespace it wrote in,
the value before and the value written, and whether the kernel took it.

`provenance` says in one line where the record comes from: `watch` (`facts --watch`, for a
window), `record` (the persistent record `facts --install` left, since it was attached), or
`unavailable (reason)` where neither could run; every other field is then absent. Writes
before the record began are not in it: the static tier (the writers catalog) names probable
owners for them."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from sysctl_advisor.model.model_base import After, Field, Record, model
from sysctl_advisor.model.text_escape import plain_line
from sysctl_advisor.model.vocabulary import OneLine, ProcessName, SysctlKey, Timestamp

MAX_WRITES = 100_000  # records of one facts file
MAX_COUNT = 2**32  # writes one record stands for (a record's counter is the kernel's u64)
MAX_DROPPED = 2**63  # writes not recorded, as the facts say (the kernel counts in a u64)
WRITTEN_TEXT = 512  # characters of a value as recorded (its bytes escaped: 128 bytes at most)

_PROVENANCE = re.compile(r"(?:watch|record|unavailable) \S.*")
_UNIT = re.compile(r"[A-Za-z0-9:_.@\\-]{1,255}\.(?:service|scope|slice|socket|mount|timer)")
_POD_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_DNS_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?")
_CONTAINER_ID = re.compile(r"[0-9a-f]{12,64}")
_CGROUP = re.compile(r"/[^\0]{0,4095}")


def _matching(regex: re.Pattern[str], what: str) -> After:
    def check(value: str) -> str:
        plain_line(value, what)
        if regex.fullmatch(value) is None:
            raise ValueError(f"not a valid {what}: {value[:80]!r}")
        return value

    return After(check)


Provenance = Annotated[str, _matching(_PROVENANCE, "provenance (watch, record or unavailable …)")]
Unit = Annotated[str, _matching(_UNIT, "systemd unit name")]
PodUid = Annotated[str, _matching(_POD_UID, "pod UID")]
KubernetesName = Annotated[str, _matching(_DNS_LABEL, "Kubernetes name")]
ContainerId = Annotated[str, _matching(_CONTAINER_ID, "container ID")]
CgroupPath = Annotated[str, _matching(_CGROUP, "cgroup path")]


@model
class WriterPod(Record):
    """The Kubernetes pod a writer ran in (its cgroup), or whose network namespace it wrote in."""

    uid: PodUid
    namespace: KubernetesName | None = Field(default=None, description="from /var/log/pods")
    name: KubernetesName | None = Field(default=None, description="from /var/log/pods")
    container: KubernetesName | None = Field(
        default=None, description="the container's name, from /var/log/containers"
    )
    container_id: ContainerId | None = Field(
        default=None, description="the runtime's ID (cri-containerd-, crio-, docker- scopes)"
    )


@model
class WriteNamespace(Record):
    """The network namespace a write was made in: the one `facts` read its values in (`host`),
    a pod's, or another (a namespace no process of a pod holds)."""

    kind: Literal["host", "pod", "other"]
    inode: int | None = Field(default=None, ge=1, le=2**32 - 1, description="net:[N]")
    pod: WriterPod | None = Field(default=None, description="for `pod`: whose it is")

    def __post_init__(self) -> None:
        if self.pod is not None and self.kind != "pod":
            raise ValueError(f"a namespace of kind {self.kind} names a pod: only kind pod does")


@model
class ObservedWrite(Record):
    """One write of a key (a persistent record keeps the last of `count`)."""

    key: SysctlKey
    value: OneLine = Field(
        max_length=WRITTEN_TEXT,
        description="the text written, its final newline removed and any byte that is not "
        "printable escaped as \\xNN",
    )
    old: OneLine | None = Field(
        default=None,
        max_length=WRITTEN_TEXT,
        description="the value before, as the kernel printed it",
    )
    applied: bool | None = Field(
        default=None,
        description="read back: whether the kernel took the value (false: it refused it, the "
        "value in force stayed); absent: not known",
    )
    time: Timestamp
    count: int = Field(
        default=1,
        ge=1,
        le=MAX_COUNT,
        description="writes of the key it stands for (record: since attached)",
    )
    truncated: bool = Field(
        default=False, description="the key or a value was longer than recorded"
    )
    pid: int | None = Field(default=None, ge=1, le=2**22)
    comm: ProcessName | None = None
    parent_pid: int | None = Field(default=None, ge=0, le=2**22)
    parent_comm: ProcessName | None = None
    uid: int | None = Field(default=None, ge=0, le=2**32 - 1)
    cgroup: CgroupPath | None = Field(
        default=None, description="the writer's cgroup, below the cgroup v2 root; absent: gone"
    )
    unit: Unit | None = Field(default=None, description="the systemd unit of the cgroup")
    pod: WriterPod | None = None
    netns: WriteNamespace | None = Field(default=None, description="absent: not given")


@model
class SysctlWriters(Record):
    provenance: Provenance = Field(
        description="`watch …`, `record …` or `unavailable (reason)`: where the writes come from"
    )
    since: Timestamp | None = Field(default=None, description="when the record began")
    until: Timestamp | None = Field(default=None, description="when it was read")
    dropped: int | None = Field(
        default=None,
        ge=0,
        le=MAX_DROPPED,
        description="writes seen but not recorded: the kernel's buffer was full, or the key's "
        "name holds what a key's cannot (an interface named with odd characters)",
    )
    not_given: list[OneLine] = Field(
        default_factory=list,
        max_length=16,
        description="fields of a write this kernel does not give (e.g. parent_pid, netns)",
    )
    writes: list[ObservedWrite] = Field(default_factory=list, max_length=MAX_WRITES)

    def __post_init__(self) -> None:
        if not self.available and (self.writes or self.dropped or self.since):
            raise ValueError(
                "provenance is unavailable: nothing was recorded, so no writes, dropped or since"
            )

    @property
    def available(self) -> bool:
        return not self.provenance.startswith("unavailable")
