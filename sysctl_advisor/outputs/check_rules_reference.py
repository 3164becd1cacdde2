"""The `check` rules reference (docs/rules.md), generated from rules/check/*.yaml.

    python -m tests.regenerate  # docs/rules.md, with every other generated file

A test keeps the committed file in step with the rule files.
"""

from __future__ import annotations

from sysctl_advisor.knowledge.check_rules import CheckRule
from sysctl_advisor.knowledge.sources import Sources
from sysctl_advisor.outputs.check_report import _anchor  # the anchors help links point to
from sysctl_advisor.outputs.markdown_text import md_text


def _block(text: str) -> str:
    shown = "".join(c if c.isprintable() or c == "\n" else f"\\x{ord(c):02x}" for c in text)
    return "```\n" + shown.rstrip("\n") + "\n```"


# How a team turns these rules on and off: each way with an example (docs/check.md in full).
_TUNING = [
    "## Choosing the rules",
    "",
    "Every rule runs unless a team says otherwise ([check.md](check.md#selecting-and-suppressing)"
    " has each way in full):",
    "",
    "* **On the command line**: `--select`/`--ignore` by id or prefix (`check.glob` names the "
    "`check.glob-*` family), `--warn`/`--error` to change a rule's severity:",
    "",
    "      sysctl-advisor check tests/fixtures/check/annotated.conf --ignore check.unknown-key,"
    "check.duplicate-key  # exit 1: the errors remain",
    "",
    "* **In the file**, for one line or the whole file, with the reason (a comment line: the "
    "kernel never reads it):",
    "",
    "      # sysctl-advisor: ignore[check.tw-recycle-enabled] kept until the 2027 migration",
    "      # sysctl-advisor: ignore-file[check.glob] the vendor's file, as shipped",
    "",
    "* **For the repository**, in `.sysctl-advisor.toml` or `[tool.sysctl-advisor]` of "
    "`pyproject.toml` (keys `select`, `ignore`, `warn`, `error`, `per-file-ignores`, `fail-on`,"
    " `kernel`, `facts`, `profile`, `set`, `baseline`; [check.md](check.md#a-repositorys-"
    "configuration)):",
    "",
    "      sysctl-advisor check --show-config tests/fixtures/check/team/sysctl.d",
    "",
    "* **With a baseline**, to adopt the linter on files that already have findings: only "
    "findings it does not hold are reported ([check.md](check.md#adopting-the-linter-a-"
    "baseline)):",
    "",
    "      sysctl-advisor check tests/fixtures/check/team/sysctl.d --write-baseline base.json",
    "      sysctl-advisor check tests/fixtures/check/team/sysctl.d --baseline base.json",
    "",
    "## The rules",
    "",
]


def render_reference(rules: dict[str, CheckRule], sources: Sources | None = None) -> str:
    out = [
        "# sysctl-advisor check: rules reference",
        "",
        "Generated from `rules/check/*.yaml` by `python -m tests.regenerate`; do not edit.",
        "",
        *_TUNING,
        "| rule | severity | checks |",
        "|---|---|---|",
    ]
    for rule_id, rule in sorted(rules.items()):
        out.append(
            f"| [`{rule_id}`](#{_anchor(rule_id)}) | {rule.spec.severity} | {rule.spec.title} |"
        )
    for rule_id, rule in sorted(rules.items()):
        spec = rule.spec
        examples = spec.examples
        out += ["", f"## {rule_id}", "", f"**{spec.severity}** — {spec.title}.", ""]
        out += [" ".join(spec.rationale.split()), ""]
        needs = ", ".join(f"`--{n}`" for n in spec.needs)
        if needs:
            out += [f"Runs only with {needs}.", ""]
        if spec.keys != ["*"]:
            out += ["Keys: " + ", ".join(f"`{k}`" for k in spec.keys) + ".", ""]
        assumed = []
        if examples.kernel:
            assumed.append(f"kernel {examples.kernel}")
        if examples.facts:
            assumed.append("facts " + ", ".join(f"{k}={v}" for k, v in examples.facts.items()))
        suffix = f" ({'; '.join(assumed)})" if assumed else ""
        out += [f"Fires{suffix}:", "", _block(examples.fires), ""]
        out += ["Does not fire:", "", _block(examples.quiet), ""]
        if sources is None:
            out += ["References: " + "; ".join(spec.references)]
        else:
            out += ["References:", ""]
            out += [f"- {sources.describe(c, md_text)}" for c in spec.references]
    return "\n".join(out) + "\n"
