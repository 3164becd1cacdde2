"""The findings of one configuration as the judge lists them: at most MAX_LISTED of one rule
in one file one by one, the rest counted and said once."""

from __future__ import annotations

from sysctl_advisor.engine.check.findings import CheckFinding

# Findings of one rule in one file listed one by one, at most: the rest of that rule's in that
# file are counted and said once, as the first of them with how many more there are.
MAX_LISTED = 1_000


class Listing:
    """The findings of one configuration, at most MAX_LISTED of one rule in one file listed;
    a finding on a line a suppression comment addresses is always listed (the comment must
    find it)."""

    def __init__(
        self,
        addressed: frozenset[tuple[str, int]] = frozenset(),
        once: frozenset[str] = frozenset(),
    ) -> None:
        self.addressed = addressed
        self.once = once  # rules whose findings in a file are said as one line, counted
        self.found: list[CheckFinding] = []
        self._listed: dict[tuple[str, str], int] = {}
        self._folded: dict[tuple[str, str], tuple[CheckFinding, int]] = {}
        self._unsaid: dict[str, frozenset[str]] = {}

    def unsaid(self, file: str) -> frozenset[str]:
        """The rules whose further findings in `file` are only counted: their messages (and
        whatever a message works out, a did-you-mean) need not be rendered, except on a line
        a comment addresses."""
        return self._unsaid.get(file, frozenset())

    def add(self, finding: CheckFinding) -> None:
        where = (finding.file, finding.id)
        listed = self._listed.get(where, 0)
        limit = 0 if finding.id in self.once else MAX_LISTED
        if listed < limit or (finding.file, finding.line or 0) in self.addressed:
            self._listed[where] = listed + 1
            self.found.append(finding)
            return
        first, count = self._folded.get(where, (finding, 0))
        self._folded[where] = (first, count + 1)
        if count == 0:
            self._unsaid[finding.file] = self.unsaid(finding.file) | {finding.id}

    def findings(self) -> list[CheckFinding]:
        """The listed findings, and for each rule and file past MAX_LISTED the first finding
        not listed, saying how many like it follow."""
        said = [
            first._replace(
                message=f"{first.message} (and {count - 1:,} more lines of this file that "
                f"{first.id} finds, not listed one by one)"
            )
            if count > 1
            else first
            for first, count in self._folded.values()
        ]
        return self.found + said
