"""The comment block above a sysctl.conf line, kept with the line for check rules to read
(bounded), and `sizes`, the filter that reads the sizes such a comment names."""

from __future__ import annotations

import pytest

from sysctl_advisor.knowledge.expression_functions import MAX_SIZES, _sizes
from sysctl_advisor.model.sysctl_conf import COMMENT_CHARS, parse_conf_lines


def test_a_line_keeps_the_comment_block_right_above_it() -> None:
    text = (
        "# shared memory\n# 256MB\nkernel.shmall = 65536\n\n# other\n\nkernel.shmmax = 1\nx.y = 2\n"
    )
    assignments, _, _ = parse_conf_lines(text)
    assert [a.comment for a in assignments] == ["shared memory 256MB", "", ""]


def test_a_long_comment_is_kept_only_up_to_its_bound() -> None:
    text = "#" + "x" * 1_000_000 + "\n# 1GB\nkernel.shmall = 1\n"
    (assignment,), _, _ = parse_conf_lines(text)
    assert len(assignment.comment) <= COMMENT_CHARS and assignment.comment.endswith("1GB")


def test_a_comment_cut_at_its_bound_keeps_whole_words() -> None:
    """A size straddling the cut is dropped, never read as a smaller one (1024 GiB as 4 GiB)."""
    tail = " " + "y" * (COMMENT_CHARS - 9)
    text = "# shmmax: 1024 GiB," + tail + "\nkernel.shmmax = 1099511627776\n"
    (assignment,), _, _ = parse_conf_lines(text)
    assert not assignment.comment.startswith(("4", "24", "024")), assignment.comment
    assert _sizes(assignment.comment) in ([], [1024 * 2**30])


def test_sizes_names_what_a_comment_says_and_stops_at_its_bound() -> None:
    assert _sizes("256MB, or 1 GiB; 2G here; 64k there; x86_64 4096 bytes") == [
        256 * 2**20,
        2**30,
        2 * 2**30,
        64 * 2**10,
    ]
    assert len(_sizes("1G " * 10_000)) == MAX_SIZES
    with pytest.raises(ValueError):
        _sizes(5)
