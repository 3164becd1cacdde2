"""The console entry point: Ctrl-C while the CLI's libraries are still loading is the same
one line and exit 130 as Ctrl-C later (the CLI itself handles everything after that)."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from advisor.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("sysctl-advisor: interrupted\n")
        raise SystemExit(130) from None
    run()
