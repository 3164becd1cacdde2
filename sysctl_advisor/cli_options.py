"""The CLI's options and closed choices, declared once for every command that takes them.

Closed choices are Enums so that help and shell completion list them (tests/test_cli.py keeps
them equal to the renderers' own lists).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperArgument

from sysctl_advisor import __version__


class RecommendFormat(str, Enum):
    conf = "conf"
    json = "json"
    markdown = "markdown"
    tuned = "tuned"
    ansible = "ansible"
    kubernetes = "kubernetes"


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
    markdown = "markdown"


class Severity(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"


def _argument_type(argument: TyperArgument, ctx: Any) -> str | None:
    """Help names an argument by its metavar (PATH, KEY, RULE_ID); typer would add the Python
    type after it (`<list[Path]>`, `<str>`), which tells an operator nothing."""
    return None if argument.metavar else argument.display_type(ctx)


TyperArgument.display_type_rich = _argument_type  # type: ignore[method-assign, assignment]


RecommendFormatOption = Annotated[
    RecommendFormat, typer.Option("--format", "-f", help="Output format.")
]
DiffFormatOption = Annotated[DiffFormat, typer.Option("--format", "-f", help="Output format.")]
FactsFormatOption = Annotated[FactsFormat, typer.Option("--format", "-f", help="Output format.")]
CheckFormatOption = Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.")]
Facts = Annotated[
    Path | None,
    typer.Option("--facts", help="Host facts file (YAML or JSON). Default: read this host."),
]
Profile = Annotated[
    str, typer.Option("--profile", "-p", help="Workload profile name.", metavar="NAME")
]
Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set", "-s", help="Profile parameter, NAME=VALUE (repeatable).", metavar="NAME=VALUE"
    ),
]
RulesDir = Annotated[
    list[Path] | None,
    typer.Option("--rules-dir", help="Extra rules directory (repeatable).", metavar="DIR"),
]
ProfilesDir = Annotated[
    list[Path] | None,
    typer.Option("--profiles-dir", help="Extra profiles directory (repeatable).", metavar="DIR"),
]
Output = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Write here (atomically; a symlink or device is refused) instead of stdout, "
        "which `-` also names.",
    ),
]
KubernetesRelease = Annotated[
    str | None,
    typer.Option(
        "--kubernetes-version",
        metavar="1.XX",
        help="With --format kubernetes: the cluster's release, whose kubelet safe sysctls and "
        "Pod Security baseline decide which pod sysctls are safe (default: the newest known).",
    ),
]
NginxConf = Annotated[
    Path | None,
    typer.Option(
        "--nginx-conf",
        help="nginx's main config (includes are followed); its listen backlogs are checked.",
    ),
]
Current = Annotated[
    Path | None,
    typer.Option(
        "--current",
        help="What is in force: a `sysctl -a` dump, a sysctl.conf, or a directory tree with "
        "etc/sysctl.d, usr/lib/sysctl.d, … (resolved as systemd-sysctl does). "
        "Default: the facts file's sysctl values, else this host's /proc/sys.",
    ),
]
Root = Annotated[
    Path, typer.Option("--root", help="Read a copied tree (proc/, sys/, etc/) instead of /.")
]
Prometheus = Annotated[
    str | None,
    typer.Option(
        "--prometheus",
        help="Take peaks over --since from this Prometheus (node_exporter metrics).",
        metavar="URL",
    ),
]
Instance = Annotated[
    str | None,
    typer.Option(
        "--instance",
        help="The host's `instance` label in Prometheus (default: its hostname, any port).",
        metavar="NAME",
    ),
]
InstanceTemplate = Annotated[
    str | None,
    typer.Option(
        "--instance",
        help="Each host's `instance` label: {host} is its inventory name (e.g. {host}:9100); "
        "default: the inventory name, any port.",
        metavar="TEMPLATE",
    ),
]
Since = Annotated[
    str,
    typer.Option(
        "--since",
        help="How far back peaks and kernel messages are taken, e.g. 14d, 36h.",
        metavar="DURATION",
    ),
]
KernelLogFile = Annotated[
    Path | None,
    typer.Option(
        "--kernel-log",
        help="Count kernel messages in this saved log (dmesg, kern.log or journal JSON).",
        metavar="FILE",
    ),
]
QueryTimeout = Annotated[
    float,
    typer.Option(
        "--query-timeout",
        min=0.1,
        max=600,
        help="Give up on a Prometheus query after this many seconds.",
        metavar="SECONDS",
    ),
]
CheckPaths = Annotated[
    list[Path],
    typer.Argument(help="sysctl.conf files, sysctl.d directories or trees.", metavar="PATH"),
]
CheckFacts = Annotated[
    Path | None, typer.Option("--facts", help="Host facts: enables RAM and lowmem checks.")
]
Kernel = Annotated[
    str | None,
    typer.Option(
        "--kernel", help="Target kernel release (else the facts' kernel).", metavar="RELEASE"
    ),
]
CheckProfile = Annotated[
    str | None,
    typer.Option(
        "--profile", "-p", help="With --facts: report departures from it (info).", metavar="NAME"
    ),
]
FailOn = Annotated[Severity, typer.Option("--fail-on", help="Exit 1 at this severity or worse.")]
WholeDirectory = Annotated[
    bool,
    typer.Option(
        "--whole-directory",
        help="Check each file in a sysctl.d directory together with the rest of that "
        "directory, so overrides between files are found when only one changed (pre-commit).",
    ),
]
AnsibleFacts = Annotated[
    Path,
    typer.Option(
        "--ansible-facts",
        help="Directory written by `ansible all -m setup --tree DIR` (or one host's file).",
    ),
]
OutDir = Annotated[
    Path,
    typer.Option(
        "--out", help="Output directory: host_files/, host_vars/, playbook.yml, summary.*"
    ),
]
FallbackProfile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        "-p",
        help="Profile for hosts the --profile-map does not match.",
        metavar="NAME",
    ),
]
ProfileMap = Annotated[
    Path | None,
    typer.Option("--profile-map", help="YAML list of {hosts|group, profile, set}; first wins."),
]
Inventory = Annotated[
    Path | None,
    typer.Option(
        "--inventory",
        help="`ansible-inventory -i INVENTORY --list` output, for `group:` entries in the map.",
    ),
]
Jobs = Annotated[
    int,
    typer.Option("--jobs", "-j", min=0, help="Worker processes (0: one per CPU).", metavar="N"),
]
Pairs = Annotated[
    int,
    typer.Option("--pairs", help="Loopback connection pairs to open (2000-100000).", metavar="N"),
]
Timeout = Annotated[
    float,
    typer.Option(
        "--timeout", help="Stop opening connections after this many seconds.", metavar="SECONDS"
    ),
]
WriteCalibration = Annotated[
    Path | None,
    typer.Option("--write", help="Add the figures to this facts file (`calibration:`)."),
]
Key = Annotated[
    str, typer.Argument(help="A sysctl key, e.g. net.ipv4.tcp_mem (or tcp_mem).", metavar="KEY")
]
ExplainProfile = Annotated[
    str | None,
    typer.Option(
        "--profile", "-p", help="Also show this profile's recommendation.", metavar="NAME"
    ),
]
RuleId = Annotated[str | None, typer.Argument(help="Show one rule in full.", metavar="RULE_ID")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sysctl-advisor {__version__}")
        raise typer.Exit(0)


Version = Annotated[
    bool,
    typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version."),
]
QuietFlag = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="Print only results and errors: no notes, skips or progress."
    ),
]
