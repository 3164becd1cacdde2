"""A progress bar on stderr for fleet runs, shown only when stderr is a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sysctl_advisor.outputs.fleet_summary import HostOutcome

if TYPE_CHECKING:
    from rich.console import Console


@contextmanager
def progress_reporter(
    total: int, terminal: bool, console: Console | None = None
) -> Iterator[Callable[[HostOutcome], None]]:
    """A callback to call once per host; it draws nothing unless `terminal`."""
    if not terminal:
        yield lambda outcome: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("hosts"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[skipped]} skipped"),
        TimeRemainingColumn(),
    )
    console = console or Console(stderr=True)
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("hosts", total=total, skipped=0)
        skipped = 0

        def advance(outcome: HostOutcome) -> None:
            nonlocal skipped
            skipped += 0 if outcome.written else 1
            progress.update(task, advance=1, skipped=skipped)

        yield advance
