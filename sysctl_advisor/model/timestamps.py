"""The times a facts file gives (ISO 8601 text), read as instants in UTC."""

from __future__ import annotations

from datetime import datetime, timezone


def moment(text: str | None) -> datetime | None:
    """An ISO 8601 time of the facts (UTC where it names no zone), in UTC, or None (also
    where it is no time in UTC: 0001-01-01T00:00:00+01:00 is in year 0)."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=timezone.utc)
        return parsed.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None
