"""The times a facts file gives (ISO 8601 text, the `Timestamp` of the vocabulary), read as
instants in UTC. Read by its parts, not by `datetime.fromisoformat`, which before Python 3.11
takes neither `Z`, `+0100` nor more than six digits of a second: an instant reads the same on
every Python the project supports."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sysctl_advisor.model.vocabulary import TIMESTAMP


def moment(text: str | None) -> datetime | None:
    """An ISO 8601 time of the facts (UTC where it names no zone), in UTC, or None (also
    where it is no time in UTC: 0001-01-01T00:00:00+01:00 is in year 0)."""
    match = TIMESTAMP.fullmatch(text) if text else None
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    offset = timedelta(0)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        offset = -offset if zone[0] == "-" else offset
    try:
        parsed = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=timezone(offset),
        )
        return parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError):  # a month 13, an hour 25, an offset of a day, year 0
        return None
