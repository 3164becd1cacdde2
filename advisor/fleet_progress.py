"""A progress bar on stderr for fleet runs, shown only when stderr is a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from advisor.fleet import HostOutcome


@contextmanager
def progress_reporter(total: int, terminal: bool) -> Iterator[Callable[[HostOutcome], None]]:
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
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("hosts", total=total, skipped=0)
        skipped = 0

        def advance(outcome: HostOutcome) -> None:
            nonlocal skipped
            skipped += 0 if outcome.written else 1
            progress.update(task, advance=1, skipped=skipped)

        yield advance
