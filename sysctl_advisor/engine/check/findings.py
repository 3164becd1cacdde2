"""What `check` finds and reports: a finding, a finding accepted (suppressed) with its reason,
the report the phases hand on, and what is known of the target host."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from sysctl_advisor.model.severity import SEVERITY_ORDER

if TYPE_CHECKING:
    from sysctl_advisor.knowledge.catalog import KernelContext
    from sysctl_advisor.model.host_facts import HostFacts
    from sysctl_advisor.model.kernel_version import KernelVersion
    from sysctl_advisor.model.plan import OwnerNote, Plan
    from sysctl_advisor.model.running_kernel import RunningKernel


class CheckFinding(NamedTuple):
    """Immutable; a tuple because a long file yields one per line (built twice as fast as a
    frozen dataclass)."""

    id: str
    severity: str
    file: str
    line: int | None
    key: str | None
    message: str


@dataclass
class CheckContext:
    """What is known about the target: all optional."""

    facts: HostFacts | None = None
    kernel: KernelVersion | None = None
    host: dict[str, Any] | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    plan: Plan | None = None
    kernel_data: KernelContext | None = None  # the facts' kernel with its era quantities
    kubernetes: dict[str, Any] | None = None  # whether the facts show a Kubernetes node
    owners: list[OwnerNote] = field(default_factory=list)  # other writers on the host
    running: RunningKernel | None = None  # the target is this host's running kernel, as seen


class Suppressed(NamedTuple):
    """A finding accepted, with the reason: by a comment in its file ("comment"), the
    configuration's per-file-ignores ("config") or the baseline ("baseline")."""

    finding: CheckFinding
    reason: str
    by: str = "comment"


@dataclass(frozen=True)
class Reach:
    """What a run judged: the rules that ran, the files it was given and read on their own
    (as given), and the rules whose findings in a file come from the other files read with it
    (a file checked without its directory cannot show them)."""

    rules: frozenset[str] = frozenset()
    alone: tuple[str, ...] = ()
    across_files: frozenset[str] = frozenset()


@dataclass
class CheckReport:
    findings: list[CheckFinding]
    files: list[str]
    # what was accepted (comments, per-file-ignores, the baseline): never printed as
    # findings, never failing a check
    suppressed: list[Suppressed] = field(default_factory=list)
    uncompared: int = 0  # keys not in the catalog past the budget, not compared for a slip
    stale: int = 0  # the baseline's entries that accepted no finding
    reach: Reach | None = None  # what the run could have found (None: all it was given)

    def worst(self) -> int | None:
        """Lowest SEVERITY_ORDER present (0 = error), None when clean."""
        return min((SEVERITY_ORDER[f.severity] for f in self.findings), default=None)


def report_order(f: CheckFinding) -> tuple[str, int, int, str]:
    """File, line, worst first, rule id."""
    return (f.file, f.line or 0, SEVERITY_ORDER[f.severity], f.id)


def suppressed_order(s: Suppressed) -> tuple[str, int, str]:
    return (s.finding.file, s.finding.line or 0, s.finding.id)
