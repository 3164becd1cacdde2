"""One path `check` was given, as read (sources.check_inputs) for the judge (engine.check)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sysctl_advisor.model.current_config import CurrentConfig


@dataclass(frozen=True)
class CheckInput:
    """The path as given; its configuration (None: no such path); and how a file named in it
    (a tree's files are named from its base) is shown to a reviewer."""

    path: str
    config: CurrentConfig | None
    shown: Callable[[str], str]
