"""The manual page: the command line's table, handed in by the CLI (cli.man_page, the only
stage that reads it), written as roff by outputs/man_page.py."""

from __future__ import annotations

from collections.abc import Sequence

from sysctl_advisor.outputs.man_page import ManCommand, ManOption, render_man_page


def man_page(
    commands: Sequence[ManCommand],
    root_options: Sequence[ManOption],
    summary: str,
    required: object,
) -> str:
    return render_man_page(commands, root_options, summary, required)
