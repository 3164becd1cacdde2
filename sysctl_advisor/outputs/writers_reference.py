"""The writers reference (docs/writers.md), generated from rules/catalog/writers.yaml.

    python -m tests.regenerate  # docs/writers.md, with every other generated file

A test keeps the committed file in step with the catalog.
"""

from __future__ import annotations

from sysctl_advisor.knowledge.sources import Sources
from sysctl_advisor.knowledge.writers import WHEN_WORDS, Writers, WriterSpec
from sysctl_advisor.outputs.markdown_text import md_code, md_code_cell, md_text

_INTRO = [
    "# Who else writes sysctls: the writers catalog",
    "",
    "Generated from `rules/catalog/writers.yaml` by `python -m tests.regenerate`; do not edit.",
    "",
    "A value set in a sysctl.d file is not always the value in force: programs write sysctls "
    "after systemd-sysctl has applied the files, and some refuse to run with another value. "
    "The advisor knows these writers, recognises each from the host's facts (a running "
    "program, an interface it makes, a sysctl.d file it installs, or the host being a "
    "Kubernetes node) and acts on what it knows:",
    "",
    "* **A writer that forbids another value wins.** Where a workload wants another value of "
    "such a key (PostgreSQL's strict overcommit on a node whose kubelet writes "
    "`vm.overcommit_memory = 1`), the key leaves the plan in every format and a "
    "`plan.contradiction` finding names the writer and what to do instead.",
    "* **A writer that would overwrite the plan's value at its start** gets the value in its own "
    "configuration: a companion setting (kube-proxy's `conntrack: {maxPerCore: 0}`, Docker's "
    '`"ip-forward"`, a TuneD profile) and a `plan.other-writer` finding.',
    "* **A value a writer sets at its start is the host's default**, not a raise: rules judge "
    "the value in force against it (kube-proxy's `maxPerCore` × CPUs for `nf_conntrack_max`).",
    "* **`diff` and `check --facts` name the probable writer** of a value in force that no "
    "file explains.",
    "* **A sysctl.d file that sorts after the plan's own** (`90-sysctl-advisor.conf`) wins over "
    "it at boot: a finding says so.",
    "* **A write the host was seen making** (the facts' `writers:` section, `facts --watch`) "
    "names its writer by its process name, its systemd unit, or its parent's name; a write from "
    "a pod's cgroup, or into a pod's network namespace, that names no other writer is the pod's "
    "own ([a pod](#pod)); any other is named by its process, unit and parent, never guessed. "
    "Such a write is also a sign the writer runs. `diff` and `explain` print each drifted key's "
    "observed owners with the fix in their configuration, and two writers taking turns on one "
    "key are a finding (below).",
    "",
    "When a writer applies: *at every start*; *at start, where the value in force differs* "
    "(or *is lower*); *on each interface as it comes up*; *at each pod's network setup*; *at "
    "boot, from its sysctl.d file*; *at any time while it runs*. Keys with `*` stand for any "
    "interface name (never `all` or `default`).",
    "",
]


def _signs(writer: WriterSpec) -> str:
    signs = writer.signs
    parts = [f"a `{p}` process" for p in signs.processes]
    parts += [f"an interface named `{p}`…" for p in signs.links]
    parts += [f"the sysctl file `{f}`" for f in signs.files]
    if signs.node:
        parts.append("any Kubernetes node")
    parts += [f"a write seen from the unit `{u}`" for u in signs.units]
    if signs.pods:
        parts.append("a write seen from a pod, or into a pod's network namespace")
    return ", ".join(parts)


def _observed(writers: Writers) -> list[str]:
    """What diff and explain say of observed writes: the fight and the fixes without one."""
    observed = writers.spec.observed
    fight = observed.fight
    return [
        "## Observed writes",
        "",
        f"`{fight.id}` ({fight.severity}): two writers or more take turns on one key within the "
        f"record ({fight.switches} changes of writer or more, with different values, among the "
        "writes the kernel took, in one network namespace). Its message: "
        f"{md_code(' '.join(fight.message.split()))}.",
        "",
        "Where a writer's entry gives no fix for the key: "
        f"{md_code(' '.join(observed.remove.split()))}. Where no writer is known: "
        f"{md_code(' '.join(observed.unknown.split()))}.",
        "",
    ]


def render_writers(writers: Writers, sources: Sources | None = None) -> str:
    out = list(_INTRO) + _observed(writers)
    out += ["| writer | recognised by | keys |", "|---|---|---|"]
    for writer in writers.spec.writers:
        out.append(
            f"| [{md_text(writer.name)}](#{writer.id}) | {_signs(writer)} | {len(writer.writes)} |"
        )
    for writer in writers.spec.writers:
        out += ["", f"## {writer.id}", ""]
        summary = md_text(" ".join(writer.summary.split()))
        out += [
            f"**{md_text(writer.name)}**: {summary}",
            "",
            f"Recognised by {_signs(writer)}.",
            "",
        ]
        if writer.writes:
            out += ["| key | value | when | another value |", "|---|---|---|---|"]
            for write in writer.writes:
                when = f"at boot, from `{write.file}`" if write.file else WHEN_WORDS[write.when]
                other = (
                    "never lasts"
                    if write.forbids_other
                    else (f"in {md_text(write.fix.target)}" if write.fix else "")
                )
                value = (  # an expression over several lines, on one
                    md_code_cell(" ".join(write.value.split()))
                    if write.value is not None
                    else "depends"
                )
                out.append(f"| {md_code_cell(write.key)} | {value} | {when} | {other} |")
            out.append("")
            for write in writer.writes:
                line = f"* {md_code(write.key)}: {md_text(' '.join(write.note.split()))}"
                if write.fix is not None:
                    line += f" Fix for {md_text(write.fix.target)}: {md_code(write.fix.setting)}."
                out.append(line)
            out.append("")
        if writer.pod_fix is not None:
            out += [
                "Fix, where Kubernetes lets a pod set the key: "
                f"{md_code(' '.join(writer.pod_fix.sysctls.split()))}; else: "
                f"{md_code(' '.join(writer.pod_fix.command.split()))}.",
                "",
            ]
        if writer.instead:
            out += [f"Instead: {md_text(' '.join(writer.instead.split()))}", ""]
        cited = [r for write in writer.writes for r in write.references] + list(writer.references)
        cited = list(dict.fromkeys(cited))
        if cited:
            out += ["References:", ""]
            out += [
                f"- {sources.describe(c, md_text) if sources is not None else md_text(c)}"
                for c in cited
            ]
    return "\n".join(out).rstrip("\n") + "\n"
