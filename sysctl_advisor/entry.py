"""The console entry point. The common one-shot invocations go straight to their command
(sysctl_advisor.fast_path, no typer); everything else through the typer CLI. Ctrl-C while the CLI's
libraries are still loading is the same one line and exit 130 as Ctrl-C later."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from sysctl_advisor.fast_path import parse

        parsed = parse(sys.argv[1:])
        if parsed is not None:
            from sysctl_advisor.commands.common import Quiet, run_direct

            command, quiet, options = parsed
            Quiet.on = quiet
            run_direct(lambda: command.run(options))
        from sysctl_advisor.cli import main as run_typer
    except KeyboardInterrupt:
        sys.stderr.write("sysctl-advisor: interrupted\n")
        raise SystemExit(130) from None
    run_typer()
