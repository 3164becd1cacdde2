"""`check` on a Jinja template of a sysctl file (an Ansible role's `sysctl.conf.j2`).

A value Jinja makes is not judged (the kernel never sees `{{ somaxconn }}`), its key still is;
statement and comment lines are not sysctl lines; the same key in two branches of an `if` is
no duplicate; a template Jinja cannot read is one finding, not a finding a line.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Cli

ROLE = """\
# {{ ansible_managed }}
net.core.somaxconn = {{ somaxconn }}
vm.swappiness = {{ swappiness | default(10) }}
net.ipv4.tcp_rmem = 4096 {{ rmem_default }} {{ rmem_max }}
{# a comment
   over two lines #}
{% if forwarding %}
net.ipv4.ip_forward = 1
{% else %}
net.ipv4.ip_forward = 0
{% endif %}
{% for key, value in extra.items() %}
{{ key }} = {{ value }}
{% endfor %}
vm.swapinness = {{ typo_in_the_key }}
net.core.netdev_max_backlog = 4k
vm.dirty_ratio = 10
vm.dirty_ratio = {{ dirty }}
"""


def _findings(cli: Cli, *paths: Path) -> tuple[int, list[tuple[str, int, str]]]:
    result = cli("check", *paths, "-f", "json")
    assert result.exit_code in (0, 1), result.output
    found = json.loads(result.stdout)["findings"]
    return result.exit_code, [(Path(f["file"]).name, f["line"], f["id"]) for f in found]


def test_a_template_is_judged_by_what_it_renders(cli: Cli, tmp_path: Path) -> None:
    template = tmp_path / "sysctl.conf.j2"
    template.write_text(ROLE)
    _, found = _findings(cli, template)
    assert sorted(found) == [
        ("sysctl.conf.j2", 15, "check.misspelt-key"),  # the key of a templated value
        ("sysctl.conf.j2", 16, "check.not-a-number"),  # a literal value is judged as ever
        ("sysctl.conf.j2", 17, "check.duplicate-key"),  # set twice outside any branch
    ], found


def test_the_same_text_outside_a_template_is_judged_whole(cli: Cli, tmp_path: Path) -> None:
    plain = tmp_path / "sysctl.conf"
    plain.write_text(ROLE)
    _, found = _findings(cli, plain)
    ids = {(line, rule) for _, line, rule in found}
    assert (2, "check.not-a-number") in ids and (7, "check.syntax") in ids, found


def test_a_clean_template_passes(cli: Cli, tmp_path: Path) -> None:
    template = tmp_path / "99-sysctl.conf.j2"
    template.write_text(
        "net.core.somaxconn = {{ somaxconn }}\n{% if a %}\nvm.swappiness = 10\n{% endif %}\n"
    )
    code, found = _findings(cli, template)
    assert code == 0 and found == [], found


def test_a_template_jinja_cannot_read_is_one_finding(cli: Cli, tmp_path: Path) -> None:
    template = tmp_path / "sysctl.conf.j2"
    template.write_text("vm.swappiness = 10\n{% if a %}\nnet.core.somaxconn = {{ b\n")
    code, found = _findings(cli, template)
    assert code == 1 and found == [("sysctl.conf.j2", 3, "check.syntax")], found


def test_a_hostile_template_is_one_finding_not_a_crash_or_a_hang(cli: Cli, tmp_path: Path) -> None:
    """Brackets or blocks nested thousands deep overflow Jinja's recursive parser; millions of
    tags would take it minutes: each is one finding, at once."""
    from sysctl_advisor.sources.sysctl_templates import MAX_TAGS

    deep = tmp_path / "deep.conf.j2"
    deep.write_text("vm.swappiness = {{ " + "(" * 5000 + "1" + ")" * 5000 + " }}\n")
    nested = tmp_path / "nested.conf.j2"
    nested.write_text("{% if a %}\n" * 3000 + "vm.swappiness = 1\n" + "{% endif %}\n" * 3000)
    many = tmp_path / "many.conf.j2"
    many.write_text("{{x}}" * (MAX_TAGS + 1) + "\n")
    for template in (deep, nested, many):
        code, found = _findings(cli, template)
        assert code == 1 and found == [(template.name, 1, "check.syntax")], found


def test_a_template_of_one_endless_tag_is_one_finding(cli: Cli, tmp_path: Path) -> None:
    """One tag of hundreds of thousands of tokens costs Jinja's parser as much as as many
    tags: it is refused by its tokens, lexed lazily, before it is parsed."""
    from sysctl_advisor.sources.sysctl_templates import MAX_TOKENS

    long = tmp_path / "long.conf.j2"
    long.write_text("net.core.somaxconn = {{ x" + " ~ x" * (MAX_TOKENS // 4 + 1) + " }}\n")
    chained = tmp_path / "chained.conf.j2"
    chained.write_text("vm.swappiness = {{ x" + ".a" * (MAX_TOKENS // 2 + 1) + " }}\n")
    for template in (long, chained):
        code, found = _findings(cli, template)
        assert code == 1 and found == [(template.name, 1, "check.syntax")], found


def test_a_block_set_closes_only_itself(cli: Cli, tmp_path: Path) -> None:
    """`{% set x %}...{% endset %}` inside an `if` opens and closes a block of its own: the
    `if`'s branches stay branches (no duplicate), and --fix removes neither; an assignment
    `{% set y = 1 %}` opens none, so a key set twice after it is still a duplicate."""
    text = (
        "{% if a %}\n{% set x %}v{% endset %}\nnet.core.somaxconn = 4096\n"
        "{% else %}\nnet.core.somaxconn = 8192\n{% endif %}\n"
        "{% set y = 1 %}\nvm.swappiness = 10\nvm.swappiness = 20\n"
    )
    template = tmp_path / "sysctl.conf.j2"
    template.write_text(text)
    _, found = _findings(cli, template)
    assert found == [("sysctl.conf.j2", 8, "check.duplicate-key")], found
    cli("check", template, "--fix")
    assert template.read_text() == text.replace("vm.swappiness = 10\n", ""), template.read_text()


def test_a_branch_a_later_line_always_replaces_is_a_duplicate(cli: Cli, tmp_path: Path) -> None:
    """A line in an `if` that a later line outside it always replaces never takes effect; a
    later line in a branch may not run, so it overrides nothing for sure."""
    template = tmp_path / "sysctl.conf.j2"
    template.write_text(
        "{% if big %}\nnet.core.somaxconn = 8192\n{% endif %}\nnet.core.somaxconn = 4096\n"
        "vm.swappiness = 10\n{% if db %}\nvm.swappiness = 1\n{% endif %}\n"
    )
    _, found = _findings(cli, template)
    assert found == [("sysctl.conf.j2", 2, "check.duplicate-key")], found
