"""A facts time reads as the same instant on every Python the project supports (3.10's
fromisoformat takes neither `Z`, `+0100` nor nine digits of a second)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from sysctl_advisor.model.timestamps import moment

UTC = timezone.utc


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2026-12-07T10:00:35Z", datetime(2026, 12, 7, 10, 0, 35, tzinfo=UTC)),
        ("2026-12-07T11:00:35+0100", datetime(2026, 12, 7, 10, 0, 35, tzinfo=UTC)),
        ("2026-12-07T11:00:35+01:00", datetime(2026, 12, 7, 10, 0, 35, tzinfo=UTC)),
        ("2026-12-07T05:30:35-04:30", datetime(2026, 12, 7, 10, 0, 35, tzinfo=UTC)),
        ("2026-12-07T10:00:35.123456789Z", datetime(2026, 12, 7, 10, 0, 35, 123456, tzinfo=UTC)),
        ("2026-12-07 10:00", datetime(2026, 12, 7, 10, 0, tzinfo=UTC)),  # no zone: UTC
        ("2026-12-07", datetime(2026, 12, 7, tzinfo=UTC)),
    ],
)
def test_a_time_reads_as_its_instant_in_utc(text: str, instant: datetime) -> None:
    assert moment(text) == instant


@pytest.mark.parametrize(
    "text",
    [None, "", "yesterday", "2026-13-01", "2026-12-07T25:00Z", "0001-01-01T00:00:00+01:00"],
)
def test_what_is_no_instant_is_none(text: str | None) -> None:
    assert moment(text) is None
