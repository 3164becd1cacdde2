"""Command line: parse options, call the library, print. No knowledge lives here."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperArgument

from advisor import __version__
from advisor.errors import InputError

if TYPE_CHECKING:  # imported lazily at run time, so `--help` and `--version` stay fast
    from advisor.facts import HostFacts
    from advisor.knowledge import KnowledgeBase
    from advisor.sysctl_sources import CurrentConfig

T = TypeVar("T")


# Closed choices as Enums: help and shell completion list them (tests/test_cli.py keeps them
# equal to the renderers' own lists).
class RecommendFormat(str, Enum):
    conf = "conf"
    json = "json"
    markdown = "markdown"
    tuned = "tuned"
    ansible = "ansible"


class DiffFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


class FactsFormat(str, Enum):
    yaml = "yaml"
    json = "json"


class CheckFormat(str, Enum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


class Severity(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"


app = typer.Typer(
    name="sysctl-advisor",
    help="Compute Linux network and memory sysctls from host facts and a workload profile, "
    "with the arithmetic and the sources behind every value.",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _argument_type(argument: TyperArgument, ctx: Any) -> str | None:
    """Help names an argument by its metavar (PATH..., KEY, RULE_ID); typer would add the Python
    type after it (`<list[Path]>`, `<str>`), which tells an operator nothing."""
    return None if argument.metavar else argument.display_type(ctx)


TyperArgument.display_type_rich = _argument_type  # type: ignore[method-assign, assignment]

FactsOption = Annotated[
    Path | None,
    typer.Option("--facts", help="Host facts file (YAML or JSON). Default: read this host."),
]
ProfileOption = Annotated[
    str, typer.Option("--profile", "-p", help="Workload profile name.", metavar="NAME")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", "-s", help="Profile parameter, NAME=VALUE (repeatable).", metavar="NAME=VALUE"
    ),
]
RulesDirOption = Annotated[
    list[Path] | None,
    typer.Option("--rules-dir", help="Extra rules directory (repeatable).", metavar="DIR"),
]
ProfilesDirOption = Annotated[
    list[Path] | None,
    typer.Option("--profiles-dir", help="Extra profiles directory (repeatable).", metavar="DIR"),
]
OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Write here (atomically; a symlink or device is refused) instead of stdout, "
        "which `-` also names.",
    ),
]
NginxConfOption = Annotated[
    Path | None,
    typer.Option(
        "--nginx-conf",
        help="nginx's main config (includes are followed); its listen backlogs are checked.",
    ),
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


class _Quiet:
    """--quiet: results and errors only."""

    on = False


def _emit(text: str, output: Path | None) -> None:
    """Write to --output atomically, or to stdout (no --output, or `-o -`)."""
    if output is not None and str(output) != "-":
        from advisor.yamlio import write_atomic

        write_atomic(output, text)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        _discard_stdout()
        raise InputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def _note(message: str) -> None:
    _say(f"note: {message}")


def _say(message: str) -> None:
    """A line for the operator on stderr that is not an error: silent with --quiet."""
    if not _Quiet.on:
        typer.echo(f"sysctl-advisor: {message}", err=True)


def _discard_stdout() -> None:
    """After a failed write (a full disk, /dev/full, a closed pipe), point stdout at /dev/null
    so the interpreter's final flush cannot print a second, multi-line error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


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


def _facts(path: Path | None, keys: list[str], nginx_conf: Path | None = None) -> HostFacts:
    """The facts file (or this host), with service configs such as nginx.conf parsed."""
    from advisor.service_configs import with_service_configs

    if path is not None:
        from advisor.facts import load_facts

        return with_service_configs(load_facts(path), path.parent, nginx_conf)
    from advisor.local_host import collect

    return with_service_configs(collect(keys), None, nginx_conf)


def _current(
    current: Path | None, facts_path: Path | None, host: HostFacts, keys: list[str]
) -> CurrentConfig:
    """--current PATH, else the facts file's `sysctl:` values, else the live /proc/sys."""
    from advisor.sysctl_sources import from_values, read_current

    if current is not None:
        return read_current(current, keys)
    if facts_path is not None:
        if not host.sysctl:
            raise InputError(
                "nothing to compare with: no `sysctl:` values here; pass --current PATH",
                path=facts_path,
            )
        return from_values(
            host.sysctl, "facts", str(facts_path), f"{facts_path}: sysctl", host.sysctl_files
        )
    return from_values(host.sysctl, "live", "/proc/sys", "{path}", host.sysctl_files)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sysctl-advisor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version."
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Print only results and errors: no notes, skips or progress."
        ),
    ] = False,
) -> None:
    """sysctl-advisor."""
    _Quiet.on = quiet


@app.command()
def recommend(
    profile: ProfileOption,
    facts: FactsOption = None,
    set_: SetOption = None,
    fmt: Annotated[
        RecommendFormat, typer.Option("--format", "-f", help="Output format.")
    ] = RecommendFormat.conf,
    output: OutputOption = None,
    nginx_conf: NginxConfOption = None,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """Recommend sysctl values for a host and workload, each with its reasons."""

    def run() -> None:
        from advisor.engine import build_plan
        from advisor.render import Renderer, rebuild_command

        overrides = _overrides(set_)
        kb = _knowledge(rules_dir, profiles_dir)
        host = _facts(facts, list(kb.catalog.keys), nginx_conf)
        plan = build_plan(kb, host, profile, overrides)
        command = rebuild_command(profile, facts, overrides, fmt.value)
        text = Renderer(kb.catalog).render(plan, fmt.value, command)
        _emit(text, output)

    _guard(run)


@app.command()
def diff(
    profile: ProfileOption,
    facts: FactsOption = None,
    current: Annotated[
        Path | None,
        typer.Option(
            "--current",
            help="What is in force: a `sysctl -a` dump, a sysctl.conf, or a directory tree with "
            "etc/sysctl.d, usr/lib/sysctl.d, … (resolved as systemd-sysctl does). "
            "Default: the facts file's sysctl values, else this host's /proc/sys.",
        ),
    ] = None,
    set_: SetOption = None,
    fmt: Annotated[DiffFormat, typer.Option("--format", "-f", help="Output format.")] = (
        DiffFormat.text
    ),
    output: OutputOption = None,
    nginx_conf: NginxConfOption = None,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """Compare the values in force with the recommendation. Exit 0: no drift; 1: drift."""

    def run() -> int:
        from advisor.diff import build_diff
        from advisor.diff_render import render_diff
        from advisor.engine import build_plan
        from advisor.render import Renderer

        overrides = _overrides(set_)
        kb = _knowledge(rules_dir, profiles_dir)
        keys = list(kb.catalog.keys)
        host = _facts(facts, keys, nginx_conf)
        in_force = _current(current, facts, host, keys)
        as_configured = host.model_copy(
            update={
                "sysctl": {k: v.value for k, v in in_force.values.items()},
                # Which values files set: all of them for files and trees; a dump cannot say.
                "sysctl_files": (
                    {k: v.source for k, v in in_force.values.items()}
                    if in_force.kind in ("file", "tree")
                    else None
                    if in_force.kind == "dump"
                    else host.sysctl_files
                ),
            }
        )
        plan = build_plan(kb, as_configured, profile, overrides)
        version = kb.catalog.kernel_for(host)[0]
        report = build_diff(plan, in_force, kb.catalog, version)
        terminal = output is None and sys.stdout.isatty()
        text = render_diff(report, fmt.value, Renderer(kb.catalog), terminal=terminal)
        _emit(text, output)
        return 1 if report.drift else 0

    raise typer.Exit(_guard(run))


@app.command("facts")
def facts_command(
    root: Annotated[
        Path,
        typer.Option("--root", help="Read a copied tree (proc/, sys/, etc/) instead of /."),
    ] = Path("/"),
    fmt: Annotated[FactsFormat, typer.Option("--format", "-f", help="Output format.")] = (
        FactsFormat.yaml
    ),
    output: OutputOption = None,
) -> None:
    """Read this host (or a copied tree) and print a facts file for --facts."""

    def run() -> None:
        from advisor.facts import facts_to_data
        from advisor.facts_output import render_facts
        from advisor.local_host import collect

        if not root.is_dir():
            raise InputError("not a directory", path=root, field="--root")
        kb = _knowledge(None, None)
        data = facts_to_data(collect(list(kb.catalog.keys), root))
        text = render_facts(data, fmt.value, root)
        _emit(text, output)

    _guard(run)


@app.command()
def check(
    paths: Annotated[
        list[Path],
        typer.Argument(help="sysctl.conf files, sysctl.d directories or trees.", metavar="PATH"),
    ],
    facts: Annotated[
        Path | None, typer.Option("--facts", help="Host facts: enables RAM and lowmem checks.")
    ] = None,
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel", help="Target kernel release (else the facts' kernel).", metavar="RELEASE"
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            help="With --facts: report departures from it (info).",
            metavar="NAME",
        ),
    ] = None,
    fmt: Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.")] = (
        CheckFormat.text
    ),
    fail_on: Annotated[
        Severity, typer.Option("--fail-on", help="Exit 1 at this severity or worse.")
    ] = Severity.error,
    whole_directory: Annotated[
        bool,
        typer.Option(
            "--whole-directory",
            help="Check each file in a sysctl.d directory together with the rest of that "
            "directory, so overrides between files are found when only one changed "
            "(pre-commit).",
        ),
    ] = False,
    output: OutputOption = None,
) -> None:
    """Lint sysctl.conf / sysctl.d files. Exit 0 clean, 1 findings at --fail-on or worse."""

    def run() -> int:
        from advisor.check import CheckContext, Checker
        from advisor.check_render import render_check, wants_color
        from advisor.engine import build_plan
        from advisor.kernel_version import KernelVersion
        from advisor.rules import SEVERITY_ORDER

        if profile is not None and facts is None:
            raise InputError("--profile needs --facts", field="--profile")
        kb = _knowledge(None, None)
        context = CheckContext()
        if facts is not None:
            from advisor.engine import host_variables

            host = _facts(facts, list(kb.catalog.keys))
            variables, defaults, _ = host_variables(kb, host)
            context.facts, context.host, context.defaults = host, variables["host"], defaults
            context.kernel = variables["kernel"].version
            if profile is not None:
                context.plan = build_plan(kb, host, profile)
        if kernel is not None:
            try:
                context.kernel = KernelVersion.parse(kernel)
            except ValueError as exc:
                raise InputError(str(exc), field="--kernel") from None
        report = Checker(kb, kb.check_rules, context).check_paths(paths, whole_directory)
        to_stdout = output is None or str(output) == "-"
        color = wants_color(sys.stdout) if to_stdout and fmt is CheckFormat.text else False
        text = render_check(report, fmt.value, kb.check_rules, color=color)
        _emit(text, output)
        worst = report.worst()
        return 1 if worst is not None and worst <= SEVERITY_ORDER[fail_on.value] else 0

    raise typer.Exit(_guard(run))


@app.command()
def fleet(
    ansible_facts: Annotated[
        Path,
        typer.Option(
            "--ansible-facts",
            help="Directory written by `ansible all -m setup --tree DIR` (or one host's file).",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="Output directory: host_files/, host_vars/, playbook.yml, summary.*"
        ),
    ],
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            help="Profile for hosts the --profile-map does not match.",
            metavar="NAME",
        ),
    ] = None,
    profile_map: Annotated[
        Path | None,
        typer.Option("--profile-map", help="YAML list of {hosts|group, profile, set}; first wins."),
    ] = None,
    inventory: Annotated[
        Path | None,
        typer.Option(
            "--inventory",
            help="`ansible-inventory -i INVENTORY --list` output, for `group:` entries in the map.",
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option("--jobs", "-j", min=0, help="Worker processes (0: one per CPU).", metavar="N"),
    ] = 0,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """Advise every host of an Ansible fleet: a file per host and a playbook that installs them.
    Exit 0: every host written; 1: some hosts skipped; 2: nothing could be done."""

    def run() -> int:
        from advisor.fleet import fact_files, run_fleet
        from advisor.fleet_progress import progress_reporter
        from advisor.fleet_summary import SummaryWriter
        from advisor.profile_map import load_profile_map

        kb = _knowledge(rules_dir, profiles_dir)
        pmap = load_profile_map(profile_map, profile, kb.profiles, inventory)
        paths = fact_files(ansible_facts)
        summary = SummaryWriter(ansible_facts, profile_map, profile)
        with progress_reporter(len(paths), sys.stderr.isatty() and not _Quiet.on) as on_host:
            written = run_fleet(
                kb, paths, pmap, out, jobs or os.cpu_count() or 1, on_host, summary, _note
            )
        totals = summary.totals
        for host, reason in totals.skipped:
            _say(f"skipped {host}: {reason}")
        if totals.skipped_count > len(totals.skipped):
            more = totals.skipped_count - len(totals.skipped)
            _say(f"... and {more} more skipped hosts")
        if not written:
            raise InputError(
                f"no host could be advised ({totals.skipped_count} skipped); {out} is unchanged"
            )
        _say(f"{written} of {totals.hosts} hosts written to {out} (playbook.yml, summary.md)")
        return 1 if totals.skipped_count else 0

    raise typer.Exit(_guard(run))


@app.command()
def calibrate(
    pairs: Annotated[
        int,
        typer.Option(
            "--pairs", help="Loopback connection pairs to open (100-100000).", metavar="N"
        ),
    ] = 10_000,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Stop opening connections after this many seconds.",
            metavar="SECONDS",
        ),
    ] = 60.0,
    write: Annotated[
        Path | None,
        typer.Option("--write", help="Add the figures to this facts file (`calibration:`)."),
    ] = None,
) -> None:
    """Measure per-socket memory on this kernel (root; in a private network namespace).
    The c1m-server rules use the figures from a facts file's `calibration:` section."""

    def run() -> None:
        from advisor.calibrate import calibrate as measure
        from advisor.calibrate import report, write_calibration

        if write is not None and not write.is_file():
            raise InputError("no such facts file", path=write, field="--write")
        result = measure(pairs, timeout)
        _emit(report(result), None)
        if write is not None:
            write_calibration(write, result.calibration)
            _say(f"calibration written to {write}")

    _guard(run)


@app.command()
def explain(
    key: Annotated[
        str, typer.Argument(help="A sysctl key, e.g. net.ipv4.tcp_mem (or tcp_mem).", metavar="KEY")
    ],
    facts: FactsOption = None,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile", "-p", help="Also show this profile's recommendation.", metavar="NAME"
        ),
    ] = None,
    set_: SetOption = None,
    nginx_conf: NginxConfOption = None,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """Explain a key: unit, scope, kernel defaults by version, and the rules that set it."""

    def run() -> None:
        from advisor.explain import explain_key

        if set_ and profile is None:
            raise InputError("needs --profile (parameters belong to a profile)", field="--set")
        kb = _knowledge(rules_dir, profiles_dir)
        keys = list(kb.catalog.keys)
        host = _facts(facts, keys, nginx_conf) if (facts or profile) else None
        _emit(explain_key(kb, key, host, profile, _overrides(set_)), None)

    _guard(run)


@app.command("profiles")
def list_profiles(
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """List workload profiles with their parameters."""

    def run() -> None:
        from advisor.explain import describe_profiles

        _emit(describe_profiles(_knowledge(rules_dir, profiles_dir)), None)

    _guard(run)


@app.command("rules")
def list_rules(
    rule_id: Annotated[
        str | None, typer.Argument(help="Show one rule in full.", metavar="RULE_ID")
    ] = None,
    rules_dir: RulesDirOption = None,
    profiles_dir: ProfilesDirOption = None,
) -> None:
    """List rules (or show one): what each checks, and its references."""

    def run() -> None:
        from advisor.explain import describe_rules

        _emit(describe_rules(_knowledge(rules_dir, profiles_dir), rule_id), None)

    _guard(run)


def main() -> None:
    try:
        code = app(standalone_mode=False)
    except KeyboardInterrupt:
        _discard_stdout()
        typer.echo("sysctl-advisor: interrupted", err=True)
        raise SystemExit(130) from None
    except BrokenPipeError:
        _discard_stdout()
        raise SystemExit(2) from None
    except Exception as exc:
        # A usage error (click's, vendored by typer): one line, not usage text and a box.
        describe = getattr(exc, "format_message", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and callable(describe):
            typer.echo(str(describe()), err=True)  # no command: the help, as before
            raise SystemExit(2) from None
        if callable(describe) and hasattr(exc, "exit_code"):
            typer.echo(f"sysctl-advisor: error: {' '.join(str(describe()).split())}", err=True)
            raise SystemExit(2) from None
        raise
    if code == 130:  # typer turns Ctrl-C into a silent Exit(130)
        _discard_stdout()
        typer.echo("sysctl-advisor: interrupted", err=True)
    raise SystemExit(code if isinstance(code, int) else 0)
