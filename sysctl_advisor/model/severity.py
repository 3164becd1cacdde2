"""How serious a finding is: the three severities, most serious first."""

from __future__ import annotations

from typing import Literal, get_args

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}
# What a check may fail on (--fail-on): a severity or worse, or never (exit 0 whatever it finds).
NEVER = "never"
FailOn = Literal[Severity, "never"]
FAIL_ON: tuple[str, ...] = get_args(FailOn)
