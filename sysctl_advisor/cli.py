"""The command line: typer options and help, and one call into `sysctl_advisor.commands` per
command. Everything a command does lives there (callable without typer); the options live in
cli_options."""

from __future__ import annotations

from pathlib import Path

import typer

from sysctl_advisor import cli_options as opt
from sysctl_advisor.commands.common import Quiet, guarded, run_cli

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


@app.callback()
def _root(
    version: opt.Version = False,
    quiet: opt.QuietFlag = False,
) -> None:
    """sysctl-advisor."""
    Quiet.on = quiet


@app.command()
def recommend(
    profile: opt.Profile,
    facts: opt.Facts = None,
    set_: opt.Settings = None,
    fmt: opt.RecommendFormatOption = opt.RecommendFormat.conf,
    output: opt.Output = None,
    nginx_conf: opt.NginxConf = None,
    rules_dir: opt.RulesDir = None,
    profiles_dir: opt.ProfilesDir = None,
    kubernetes_version: opt.KubernetesRelease = None,
) -> None:
    """Recommend sysctl values for a host and workload, each with its reasons."""
    from sysctl_advisor.commands.recommend import recommend as run

    args = (profile, facts, set_, fmt.value, output, nginx_conf, rules_dir, profiles_dir)
    raise typer.Exit(guarded(lambda: run(*args, kubernetes_version)))


@app.command()
def diff(
    profile: opt.Profile,
    facts: opt.Facts = None,
    current: opt.Current = None,
    set_: opt.Settings = None,
    fmt: opt.DiffFormatOption = opt.DiffFormat.text,
    output: opt.Output = None,
    nginx_conf: opt.NginxConf = None,
    rules_dir: opt.RulesDir = None,
    profiles_dir: opt.ProfilesDir = None,
) -> None:
    """Compare the values in force with the recommendation. Exit 0: no drift; 1: drift."""
    from sysctl_advisor.commands.diff import diff as run

    args = (profile, facts, current, set_, fmt.value, output, nginx_conf, rules_dir, profiles_dir)
    raise typer.Exit(guarded(lambda: run(*args)))


@app.command("facts")
def facts_command(
    root: opt.Root = Path("/"),
    fmt: opt.FactsFormatOption = opt.FactsFormat.yaml,
    output: opt.Output = None,
    prometheus: opt.Prometheus = None,
    instance: opt.Instance = None,
    since: opt.Since = "14d",
    kernel_log: opt.KernelLogFile = None,
    query_timeout: opt.QueryTimeout = 10.0,
) -> None:
    """Read this host (or a copied tree) into a facts file; peaks over time from --prometheus."""
    from sysctl_advisor.commands.facts import HistoryOptions, facts as run  # noqa: I001

    history = HistoryOptions(prometheus, instance, since, kernel_log, query_timeout)
    raise typer.Exit(guarded(lambda: run(root, fmt.value, output, history)))


@app.command()
def check(
    paths: opt.CheckPaths,
    facts: opt.CheckFacts = None,
    kernel: opt.Kernel = None,
    profile: opt.CheckProfile = None,
    fmt: opt.CheckFormatOption = opt.CheckFormat.text,
    fail_on: opt.FailOn = opt.Severity.error,
    whole_directory: opt.WholeDirectory = False,
    output: opt.Output = None,
) -> None:
    """Lint sysctl.conf / sysctl.d files. Exit 0 clean, 1 findings at --fail-on or worse."""
    from sysctl_advisor.commands.check import check as run

    args = (paths, facts, kernel, profile, fmt.value, fail_on.value, whole_directory, output)
    raise typer.Exit(guarded(lambda: run(*args)))


@app.command()
def fleet(
    ansible_facts: opt.AnsibleFacts,
    out: opt.OutDir,
    profile: opt.FallbackProfile = None,
    profile_map: opt.ProfileMap = None,
    inventory: opt.Inventory = None,
    jobs: opt.Jobs = 0,
    rules_dir: opt.RulesDir = None,
    profiles_dir: opt.ProfilesDir = None,
    prometheus: opt.Prometheus = None,
    instance: opt.InstanceTemplate = None,
    since: opt.Since = "14d",
    query_timeout: opt.QueryTimeout = 10.0,
) -> None:
    """Advise every host of an Ansible fleet: a file per host and a playbook to install them.

    Exit 0: every host written; 1: some hosts skipped; 2: nothing could be done."""
    from sysctl_advisor.commands.fleet import FleetHistory, fleet as run  # noqa: I001

    history = FleetHistory(prometheus, instance, since, query_timeout) if prometheus else None
    args = (ansible_facts, out, profile, profile_map, inventory, jobs, rules_dir, profiles_dir)
    raise typer.Exit(guarded(lambda: run(*args, history=history)))


@app.command()
def calibrate(
    pairs: opt.Pairs = 10_000, timeout: opt.Timeout = 60.0, write: opt.WriteCalibration = None
) -> None:
    """Measure per-socket memory on this kernel (root; in a private network namespace).
    The c1m-server rules use the figures from a facts file's `calibration:` section."""
    from sysctl_advisor.commands.calibrate import calibrate as run

    raise typer.Exit(guarded(lambda: run(pairs, timeout, write)))


@app.command()
def explain(
    key: opt.Key,
    facts: opt.Facts = None,
    profile: opt.ExplainProfile = None,
    set_: opt.Settings = None,
    nginx_conf: opt.NginxConf = None,
    rules_dir: opt.RulesDir = None,
    profiles_dir: opt.ProfilesDir = None,
) -> None:
    """Explain a key: unit, scope, kernel defaults by version, and the rules that set it."""
    from sysctl_advisor.commands.explain import explain as run

    args = (key, facts, profile, set_, nginx_conf, rules_dir, profiles_dir)
    raise typer.Exit(guarded(lambda: run(*args)))


@app.command("profiles")
def list_profiles(rules_dir: opt.RulesDir = None, profiles_dir: opt.ProfilesDir = None) -> None:
    """List workload profiles with their parameters."""
    from sysctl_advisor.commands.explain import profiles as run

    raise typer.Exit(guarded(lambda: run(rules_dir, profiles_dir)))


@app.command("rules")
def list_rules(
    rule_id: opt.RuleId = None, rules_dir: opt.RulesDir = None, profiles_dir: opt.ProfilesDir = None
) -> None:
    """List rules (or show one): what each checks, and its references."""
    from sysctl_advisor.commands.explain import rules as run

    raise typer.Exit(guarded(lambda: run(rule_id, rules_dir, profiles_dir)))


def main() -> None:
    run_cli(app)
