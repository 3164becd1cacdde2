"""The `check` rules reference (docs/rules.md), generated from rules/check/*.yaml.

    python -m sysctl_advisor.outputs.check_rules_reference > docs/rules.md

A test keeps the committed file in step with the rule files.
"""

from __future__ import annotations

import sys

from sysctl_advisor.knowledge.check_rules import CheckRule
from sysctl_advisor.knowledge.sources import Sources
from sysctl_advisor.outputs.check_report import _anchor  # the anchors help links point to
from sysctl_advisor.outputs.markdown_text import md_text


def _block(text: str) -> str:
    shown = "".join(c if c.isprintable() or c == "\n" else f"\\x{ord(c):02x}" for c in text)
    return "```\n" + shown.rstrip("\n") + "\n```"


def render_reference(rules: dict[str, CheckRule], sources: Sources | None = None) -> str:
    out = [
        "# sysctl-advisor check: rules reference",
        "",
        "Generated from `rules/check/*.yaml` by "
        "`python -m sysctl_advisor.outputs.check_rules_reference`; do not edit.",
        "",
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


def main() -> None:
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.load()
    sys.stdout.write(render_reference(kb.check_rules, kb.sources))


if __name__ == "__main__":
    main()
