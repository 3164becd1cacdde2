"""Command line: parse options, call the library, print. No knowledge lives here."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer

from advisor import __version__
from advisor.errors import InputError

if TYPE_CHECKING:  # imported lazily at run time, so `--help` and `--version` stay fast
    from advisor.facts import HostFacts
    from advisor.knowledge import KnowledgeBase

T = TypeVar("T")

app = typer.Typer(
    name="sysctl-advisor",
    help="Compute Linux network and memory sysctls from host facts and a workload profile, "
    "with the arithmetic and the sources behind every value.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

FactsOption = Annotated[
    Path | None,
    typer.Option("--facts", help="Host facts file (YAML or JSON). Default: read this host."),
]
ProfileOption = Annotated[str, typer.Option("--profile", "-p", help="Workload profile name.")]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", "-s", help="Profile parameter, NAME=VALUE (repeatable).", metavar="NAME=VALUE"
    ),
]
RulesDirOption = Annotated[
    list[Path] | None, typer.Option("--rules-dir", help="Extra rules directory (repeatable).")
]
ProfilesDirOption = Annotated[
    list[Path] | None, typer.Option("--profiles-dir", help="Extra profiles directory (repeatable).")
]


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"sysctl-advisor: {message}", err=True)
    raise typer.Exit(code)


def _guard(fn: Callable[[], T]) -> T:
    """Bad input -> one line on stderr, exit 2. Anything else -> one line, exit 3."""
    try:
        return fn()
    except InputError as exc:
        _fail(f"error: {exc}")
    except typer.Exit:
        raise
    except Exception as exc:
        if os.environ.get("SYSCTL_ADVISOR_DEBUG"):
            raise
        _fail(
            f"internal error: {type(exc).__name__}: {exc} "
            "(set SYSCTL_ADVISOR_DEBUG=1 for a traceback)",
            3,
        )


def _overrides(pairs: list[str] | None) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InputError(f"expected NAME=VALUE, got {pair!r}", field="--set")
        result[name.strip()] = value.strip()
    return result


def _knowledge(rules_dir: list[Path] | None, profiles_dir: list[Path] | None) -> KnowledgeBase:
    from advisor.knowledge import KnowledgeBase

    return KnowledgeBase.load(rules_dir, profiles_dir)


def _facts(path: Path | None, keys: list[str]) -> HostFacts:
    if path is not None:
        from advisor.facts import load_facts

        return load_facts(path)
    from advisor.local_host import collect

    return collect(keys)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sysctl-advisor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """sysctl-advisor."""


@app.command()
def recommend(
    profile: ProfileOption,
    facts: FactsOption = None,
    set_: SetOption = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="conf, json or markdown.")] = "conf",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here (atomically) instead of stdout."),
    ] = None,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """Recommend sysctl values for a host and workload, each with its reasons."""

    def run() -> None:
        from advisor.engine import build_plan
        from advisor.render import FORMATS, Renderer
        from advisor.yamlio import write_atomic

        if fmt not in FORMATS:
            raise InputError(
                f"unknown format {fmt!r} (choose {', '.join(FORMATS)})", field="--format"
            )
        overrides = _overrides(set_)
        kb = _knowledge(rules_dir, profiles_dir)
        host = _facts(facts, list(kb.catalog.keys))
        plan = build_plan(kb, host, profile, overrides)
        command = _command(profile, facts, overrides, fmt)
        text = Renderer(kb.catalog).render(plan, fmt, command)
        if output is not None:
            write_atomic(output, text)
        else:
            sys.stdout.write(text)

    _guard(run)


def _command(profile: str, facts: Path | None, overrides: dict[str, str], fmt: str) -> str:
    parts = ["sysctl-advisor", "recommend"]
    if facts is not None:
        parts += ["--facts", str(facts)]
    parts += ["--profile", profile]
    for name in sorted(overrides):
        parts += ["--set", f"{name}={overrides[name]}"]
    if fmt != "conf":
        parts += ["--format", fmt]
    return shlex.join(parts)


@app.command()
def explain(
    key: Annotated[str, typer.Argument(help="A sysctl key, e.g. net.ipv4.tcp_mem (or tcp_mem).")],
    facts: FactsOption = None,
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", help="Also show this profile's recommendation.")
    ] = None,
    set_: SetOption = None,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """Explain a key: unit, scope, kernel defaults by version, and the rules that set it."""

    def run() -> None:
        from advisor.explain import explain_key

        kb = _knowledge(rules_dir, profiles_dir)
        host = _facts(facts, list(kb.catalog.keys)) if (facts or profile) else None
        sys.stdout.write(explain_key(kb, key, host, profile, _overrides(set_)))

    _guard(run)


@app.command("profiles")
def list_profiles(
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """List workload profiles with their parameters."""

    def run() -> None:
        from advisor.explain import describe_profiles

        sys.stdout.write(describe_profiles(_knowledge(rules_dir, profiles_dir)))

    _guard(run)


@app.command("rules")
def list_rules(
    rule_id: Annotated[str | None, typer.Argument(help="Show one rule in full.")] = None,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """List rules (or show one): what each checks, and its references."""

    def run() -> None:
        from advisor.explain import describe_rules

        sys.stdout.write(describe_rules(_knowledge(rules_dir, profiles_dir), rule_id))

    _guard(run)


def main() -> None:
    app()
