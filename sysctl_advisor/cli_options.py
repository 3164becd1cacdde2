"""The command line, declared once: every command, the function it calls, and each option's
names, short form, help, type, default and closed choices.

Two readers build themselves from this table and from nothing else: the typer CLI (`cli.py`:
help, completion, errors, every command) and the fast path (`fast_path.py`: the common
one-shot command lines of the commands marked `fast`, parsed without importing typer). Closed
choices come from the outputs' format registry and the severities the rules use. Importing
this module imports neither typer nor any command: each command's function is imported by
its loader below, an import statement in a small function, when a run calls it (start-up
time: a run loads only the command it runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sysctl_advisor.model.severity import FAIL_ON
from sysctl_advisor.outputs import formats


@dataclass(frozen=True)
class Option:
    """One option (or positional argument) of the command line."""

    names: tuple[str, ...]  # long name first, then the short form; () for an argument
    help: str
    type: type[Any] = str  # str, Path, int, float or bool (a flag)
    default: Any = None  # None: absent unless given; REQUIRED: must be given
    metavar: str | None = None
    choices: tuple[str, ...] = ()  # a closed choice
    many: bool = False  # repeatable option, or an argument taking several values
    min: float | None = None
    max: float | None = None
    # shell completion's candidates for what is typed so far (commands/completion.py)
    complete: Callable[[str], list[str]] | None = None

    @property
    def argument(self) -> bool:
        return not self.names


REQUIRED = object()  # an option's default when it must be given


@dataclass(frozen=True)
class Command:
    """A command: its help, the loader of the function it calls (in commands/, called with
    every option by keyword) and its options, by the function's parameter names."""

    name: str
    help: str
    function: Callable[[], Callable[..., int]]
    options: dict[str, Option] = field(default_factory=dict)
    fast: bool = False  # its common command lines skip typer (fast_path)

    def run(self, options: dict[str, Any]) -> int:
        """Call the command's function with every option by keyword; bad input is one line
        and exit 2 (commands.common.guarded)."""
        from sysctl_advisor.commands.common import guarded

        function = self.function()
        return guarded(lambda: int(function(**options)))


# Each command's function, imported only when a run calls it.
def _recommend() -> Callable[..., int]:
    from sysctl_advisor.commands.recommend import recommend

    return recommend


def _diff() -> Callable[..., int]:
    from sysctl_advisor.commands.diff import diff

    return diff


def _facts() -> Callable[..., int]:
    from sysctl_advisor.commands.facts import facts

    return facts


def _check() -> Callable[..., int]:
    from sysctl_advisor.commands.check import check

    return check


def _fleet() -> Callable[..., int]:
    from sysctl_advisor.commands.fleet import fleet

    return fleet


def _calibrate() -> Callable[..., int]:
    from sysctl_advisor.commands.calibrate import calibrate

    return calibrate


def _cache() -> Callable[..., int]:
    from sysctl_advisor.commands.cache import cache

    return cache


def _explain() -> Callable[..., int]:
    from sysctl_advisor.commands.explain import explain

    return explain


def _profiles() -> Callable[..., int]:
    from sysctl_advisor.commands.explain import profiles

    return profiles


def _rules() -> Callable[..., int]:
    from sysctl_advisor.commands.explain import rules

    return rules


# Shell completion's candidates, each imported only when the shell asks.
def _profile_names(incomplete: str) -> list[str]:
    from sysctl_advisor.commands.completion import profile_names

    return profile_names(incomplete)


def _check_rule_ids(incomplete: str) -> list[str]:
    from sysctl_advisor.commands.completion import check_rule_ids

    return check_rule_ids(incomplete)


def _catalog_keys(incomplete: str) -> list[str]:
    from sysctl_advisor.commands.completion import catalog_keys

    return catalog_keys(incomplete)


def _format(choices: tuple[str, ...], default: str) -> Option:
    return Option(("--format", "-f"), "Output format.", default=default, choices=choices)


PROFILE = Option(
    ("--profile", "-p"),
    "Workload profile (repeatable: -p frontend-proxy -p redis for a host running both).",
    default=REQUIRED,
    metavar="NAME",
    many=True,
    complete=_profile_names,
)
FACTS = Option(("--facts",), "Host facts file (YAML or JSON). Default: read this host.", type=Path)
SETTINGS = Option(
    ("--set", "-s"),
    "Profile parameter, NAME=VALUE (repeatable).",
    metavar="NAME=VALUE",
    many=True,
)
RULES_DIR = Option(
    ("--rules-dir",), "Extra rules directory (repeatable).", type=Path, metavar="DIR", many=True
)
PROFILES_DIR = Option(
    ("--profiles-dir",),
    "Extra profiles directory (repeatable).",
    type=Path,
    metavar="DIR",
    many=True,
)
OUTPUT = Option(
    ("--output", "-o"),
    "Write here (atomically; a symlink or device is refused) instead of stdout, which `-` "
    "also names.",
    type=Path,
)
NGINX_CONF = Option(
    ("--nginx-conf",),
    "nginx's main config (includes are followed); its listen backlogs are checked.",
    type=Path,
)
PROMETHEUS = Option(
    ("--prometheus",),
    "Take peaks over --since from this Prometheus (node_exporter metrics).",
    metavar="URL",
)
SINCE = Option(
    ("--since",),
    "How far back peaks and kernel messages are taken, e.g. 14d, 36h.",
    default="14d",
    metavar="DURATION",
)
QUERY_TIMEOUT = Option(
    ("--query-timeout",),
    "Give up on a Prometheus query after this many seconds.",
    type=float,
    default=10.0,
    metavar="SECONDS",
    min=0.1,
    max=600,
)
KNOWLEDGE_DIRS = {"rules_dir": RULES_DIR, "profiles_dir": PROFILES_DIR}

DETAIL = Option(
    ("--detail",),
    "How much each value of a conf or tuned file explains: normal (the arithmetic, the "
    "default it replaces, what is in force, why), brief (one line per key) or none (the "
    "settings alone). `explain KEY` shows everything.",
    default="normal",
    choices=formats.DETAIL,
)
INSTANCE = Option(
    ("--instance",),
    "The host's `instance` label in Prometheus (default: its hostname, any port).",
    metavar="NAME",
)
FAST = True

COMMANDS: tuple[Command, ...] = (
    Command(
        "recommend",
        "Recommend sysctl values for a host and workload, each with its reasons.",
        _recommend,
        {
            "profile": PROFILE,
            "facts": FACTS,
            "settings": SETTINGS,
            "fmt": _format(formats.RECOMMEND, "conf"),
            "detail": DETAIL,
            "output": OUTPUT,
            "nginx_conf": NGINX_CONF,
            **KNOWLEDGE_DIRS,
            "kubernetes_version": Option(
                ("--kubernetes-version",),
                "With --format kubernetes: the cluster's release, whose kubelet safe sysctls "
                "and Pod Security baseline decide which pod sysctls are safe (default: the "
                "newest known).",
                metavar="1.XX",
            ),
            "workload_network": Option(
                ("--workload-network",),
                "With --format kubernetes or a node platform's: where the workload's pods run. "
                "pod: each in its own network namespace (per-namespace keys in the pod); host: "
                "hostNetwork, in the node's (every key on the node); auto: host when one of the "
                "profiles' servers listens in the facts' (the node's) namespace.",
                default="auto",
                choices=formats.WORKLOAD_NETWORK,
            ),
            "undo": Option(
                ("--undo",),
                "Write the inverse of the plan instead: each key it changes back to the value in "
                "force in the facts (or, not shown there, the kernel default); keys that cannot "
                "be restored exactly are named, never guessed. Not with --format kubernetes.",
                type=bool,
                default=False,
            ),
        },
        fast=FAST,
    ),
    Command(
        "diff",
        "Compare the values in force with the recommendation. Exit 0: no drift; 1: drift.",
        _diff,
        {
            "profile": PROFILE,
            "facts": FACTS,
            "current": Option(
                ("--current",),
                "What is in force: a `sysctl -a` dump, a sysctl.conf, or a directory tree with "
                "etc/sysctl.d, usr/lib/sysctl.d, … (resolved as systemd-sysctl does). Default: "
                "the facts file's sysctl values, else this host's /proc/sys.",
                type=Path,
            ),
            "settings": SETTINGS,
            "fmt": _format(formats.DIFF, "text"),
            "output": OUTPUT,
            "nginx_conf": NGINX_CONF,
            **KNOWLEDGE_DIRS,
            "undo": Option(
                ("--undo",),
                "Show what `recommend --undo` would do once the plan is applied: each key's "
                "plan value and the value the undo restores. Exit 1: the undo changes keys.",
                type=bool,
                default=False,
            ),
        },
        fast=FAST,
    ),
    Command(
        "facts",
        "Read this host (or a copied tree) into a facts file; peaks over time from --prometheus.",
        _facts,
        {
            "root": Option(
                ("--root",),
                "Read a copied tree (proc/, sys/, etc/) instead of /.",
                type=Path,
                default=Path("/"),
            ),
            "fmt": _format(formats.FACTS, "yaml"),
            "output": OUTPUT,
            "prometheus": PROMETHEUS,
            "instance": INSTANCE,
            "since": SINCE,
            "kernel_log": Option(
                ("--kernel-log",),
                "Count kernel messages in this saved log (dmesg, kern.log or journal JSON).",
                type=Path,
                metavar="FILE",
            ),
            "query_timeout": QUERY_TIMEOUT,
            "watch": Option(
                ("--watch",),
                "Record every sysctl write for this long first (root, cgroup v2, Linux 5.2+): "
                "who wrote each key, where, and whether it took, in `writers:`; e.g. 30s, 5m.",
                metavar="DURATION",
            ),
            "cgroup": Option(
                ("--cgroup",),
                "With --watch: only the tasks under this cgroup v2 directory (default: all).",
                type=Path,
                metavar="DIR",
            ),
            "install": Option(
                ("--install",),
                "Show the persistent record of sysctl writers (a pinned program and a unit "
                "before systemd-sysctl) and, with --yes, install it.",
                type=bool,
                default=False,
            ),
            "uninstall": Option(
                ("--uninstall",),
                "Show every trace of the persistent record and, with --yes, remove it.",
                type=bool,
                default=False,
            ),
            "yes": Option(
                ("--yes",),
                "Do what --install or --uninstall shows.",
                type=bool,
                default=False,
            ),
        },
    ),
    Command(
        "check",
        "Lint sysctl.conf / sysctl.d files. Exit 0 clean, 1 findings at --fail-on or worse.",
        _check,
        {
            "paths": Option(
                (),
                "sysctl.conf files, sysctl.d directories or trees; - reads standard input.",
                type=Path,
                metavar="PATH",
                many=True,
            ),
            "facts": Option(("--facts",), "Host facts: enables RAM and lowmem checks.", type=Path),
            "kernel": Option(
                ("--kernel",), "Target kernel release (else the facts' kernel).", metavar="RELEASE"
            ),
            "profile": Option(
                ("--profile", "-p"),
                "With --facts: report departures from it (info); repeatable.",
                metavar="NAME",
                many=True,
                complete=_profile_names,
            ),
            "settings": SETTINGS,
            "fmt": _format(formats.CHECK, "text"),
            "fail_on": Option(
                ("--fail-on",),
                "Exit 1 at this severity or worse (default: error, or the configuration's); "
                "never: exit 0 whatever is found (ruff's and flake8's --exit-zero).",
                choices=FAIL_ON,
            ),
            "whole_directory": Option(
                ("--whole-directory",),
                "Check each file in a sysctl.d directory together with the rest of that "
                "directory, so overrides between files are found when only one changed "
                "(pre-commit).",
                type=bool,
                default=False,
            ),
            "output": OUTPUT,
            "also": Option(
                ("--also",),
                "Also write the report in FORMAT to FILE (repeatable): one check, several formats.",
                metavar="FORMAT=FILE",
                many=True,
            ),
            "select": Option(
                ("--select",),
                "Run only these rules: ids or prefixes (check.glob is check.glob and "
                "check.glob-*; check.* every rule), comma-separated or repeated.",
                metavar="RULES",
                many=True,
                complete=_check_rule_ids,
            ),
            "ignore": Option(
                ("--ignore",),
                "Do not run these rules (ids or prefixes, as --select); applied after --select.",
                metavar="RULES",
                many=True,
                complete=_check_rule_ids,
            ),
            "warn": Option(
                ("--warn",),
                "Report these rules (ids or prefixes) as warnings, before --fail-on applies.",
                metavar="RULES",
                many=True,
                complete=_check_rule_ids,
            ),
            "error": Option(
                ("--error",),
                "Report these rules (ids or prefixes) as errors, before --fail-on applies.",
                metavar="RULES",
                many=True,
                complete=_check_rule_ids,
            ),
            "config": Option(
                ("--config",),
                "Read the settings from this file (.sysctl-advisor.toml, or a pyproject.toml's "
                "[tool.sysctl-advisor]) instead of the one found upward from the paths.",
                type=Path,
                metavar="FILE",
            ),
            "isolated": Option(
                ("--isolated",),
                "Read no configuration file: the command line and the defaults only.",
                type=bool,
                default=False,
            ),
            "show_config": Option(
                ("--show-config",),
                "Print the settings in force, each with where it came from, and exit.",
                type=bool,
                default=False,
            ),
            "baseline": Option(
                ("--baseline",),
                "Report only findings this baseline (from --write-baseline) does not hold.",
                type=Path,
                metavar="FILE",
            ),
            "settings_from": Option(
                ("--settings-from",),
                "Search for the configuration in DIR, a copy of the working directory's "
                "settings files (the GitHub Action's base commit), not beside the files; names "
                "in its per-file-ignores and baseline stand for the working directory's.",
                type=Path,
                metavar="DIR",
            ),
            "write_baseline": Option(
                ("--write-baseline",),
                "Record today's findings in FILE (atomically) instead of reporting them: a "
                "later --baseline FILE reports only new ones.",
                type=Path,
                metavar="FILE",
            ),
            "fix": Option(
                ("--fix",),
                "Rewrite the files given (atomically) where a finding's fix is certain: a "
                "comment after a value the kernel drops moves to its own line, an octal or hex "
                "number is written in decimal, the earlier line of a key set twice in a file "
                "goes; then report what is left. Files only: not standard input, a directory "
                "or a link.",
                type=bool,
                default=False,
            ),
            "statistics": Option(
                ("--statistics",),
                "Print how many findings each rule has (text or json) instead of the findings.",
                type=bool,
                default=False,
            ),
            **KNOWLEDGE_DIRS,  # a rules directory's check/ folder adds check rules
        },
        fast=FAST,
    ),
    Command(
        "fleet",
        "Advise every host of an Ansible fleet: a file per host and a playbook to install "
        "them.\n\nExit 0: every host written; 1: some hosts skipped; 2: nothing could be done.",
        _fleet,
        {
            "ansible_facts": Option(
                ("--ansible-facts",),
                "Directory written by `ansible all -m setup --tree DIR` (or one host's file).",
                type=Path,
                default=REQUIRED,
            ),
            "out": Option(
                ("--out",),
                "Output directory: host_files/, host_vars/, host_undo/ (--undo), playbook.yml, "
                "summary.*",
                type=Path,
                default=REQUIRED,
            ),
            "profile": Option(
                ("--profile", "-p"),
                "Profile for hosts the --profile-map does not match.",
                metavar="NAME",
                complete=_profile_names,
            ),
            "profile_map": Option(
                ("--profile-map",),
                "YAML list of {hosts|group, profile, set}; first wins.",
                type=Path,
            ),
            "inventory": Option(
                ("--inventory",),
                "`ansible-inventory -i INVENTORY --list` output, for `group:` entries in the map.",
                type=Path,
            ),
            "jobs": Option(
                ("--jobs", "-j"),
                "Worker processes (0: one per CPU).",
                type=int,
                default=0,
                metavar="N",
                min=0,
            ),
            **KNOWLEDGE_DIRS,
            "prometheus": PROMETHEUS,
            "instance": Option(
                ("--instance",),
                "Each host's `instance` label: {host} is its inventory name (e.g. {host}:9100); "
                "default: the inventory name, any port.",
                metavar="TEMPLATE",
            ),
            "since": SINCE,
            "query_timeout": QUERY_TIMEOUT,
            "detail": DETAIL,
            "undo": Option(
                ("--undo",),
                "Also write each host's undo file, host_undo/HOST.conf (as `recommend --undo`): "
                "each key the plan changes back to the value in force in the facts, else the "
                "kernel default.",
                type=bool,
                default=False,
            ),
            "node_pools": Option(
                ("--node-pools",),
                "Inventory groups that are Kubernetes node pools (a pattern, e.g. 'pool_*'; "
                "needs --inventory): one --node-format file per pool, node_pools/POOL.EXT, "
                "with the node plan most of its hosts share; each host whose own differs is "
                "listed in summary.*.",
                metavar="PATTERN",
            ),
            "node_format": Option(
                ("--node-format",),
                "With --node-pools: the node platform of each pool's file (as recommend --format).",
                default="daemonset",
                choices=formats.NODE,
            ),
        },
    ),
    Command(
        "calibrate",
        "Measure per-socket memory on this kernel (root; in a private network namespace).\n"
        "The c1m-server rules use the figures from a facts file's `calibration:` section.",
        _calibrate,
        {
            "pairs": Option(
                ("--pairs",),
                "Loopback connection pairs to open (2000-100000).",
                type=int,
                default=10_000,
                metavar="N",
            ),
            "timeout": Option(
                ("--timeout",),
                "Stop opening connections after this many seconds.",
                type=float,
                default=60.0,
                metavar="SECONDS",
            ),
            "write": Option(
                ("--write",), "Add the figures to this facts file (`calibration:`).", type=Path
            ),
        },
    ),
    Command(
        "cache",
        "Show where the caches are, what they hold and how big; --clear removes them.",
        _cache,
        {
            "clear": Option(
                ("--clear",),
                "Remove the advisor's cache files (only its own names, only yours).",
                type=bool,
                default=False,
            )
        },
    ),
    Command(
        "explain",
        "Explain a key: unit, scope, kernel defaults by version, and the rules that set it.",
        _explain,
        {
            "key": Option(
                (),
                "A sysctl key, e.g. net.ipv4.tcp_mem (or tcp_mem).",
                default=REQUIRED,
                metavar="KEY",
                complete=_catalog_keys,
            ),
            "facts": FACTS,
            "profile": Option(
                ("--profile", "-p"),
                "Also show this profile's recommendation; repeatable.",
                metavar="NAME",
                many=True,
                complete=_profile_names,
            ),
            "settings": SETTINGS,
            "nginx_conf": NGINX_CONF,
            **KNOWLEDGE_DIRS,
        },
    ),
    Command(
        "profiles",
        "List workload profiles with their parameters.",
        _profiles,
        dict(KNOWLEDGE_DIRS),
    ),
    Command(
        "rules",
        "List rules (or show one): what each checks, and its references.",
        _rules,
        {"rule_id": Option((), "Show one rule in full.", metavar="RULE_ID"), **KNOWLEDGE_DIRS},
    ),
)

# Before the command: the root's options. -q is also taken after the command's name (both
# readers offer it there), and never silences an error.
VERSION = Option(("--version", "-V"), "Print the version.", type=bool, default=False)
QUIET = Option(
    ("--quiet", "-q"),
    "Print only results and errors: no notes, skips or progress.",
    type=bool,
    default=False,
)
SUMMARY = (
    "Compute Linux network and memory sysctls from host facts and a workload profile, with the "
    "arithmetic and the sources behind every value."
)


def command(name: str) -> Command | None:
    return next((c for c in COMMANDS if c.name == name), None)
