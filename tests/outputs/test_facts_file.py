"""The facts file's header says what its sockstat figures are: a snapshot (and when), or, with
--prometheus, peaks over a window."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.outputs.facts_file import render_facts


def _header(period: dict[str, object]) -> str:
    data = {"memory": {"total": 1}, "observed": {"period": period}}
    text = render_facts(data, "yaml", Path("/nonexistent-tree"))
    return " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))


def test_a_snapshot_is_called_a_snapshot() -> None:
    header = _header({"kind": "snapshot", "at": "2026-11-27T06:00:00Z"})
    assert "a snapshot at observed.period.at" in header
    assert "Replace the snapshot with peak figures" in header


def test_peaks_from_prometheus_are_not_called_a_snapshot() -> None:
    header = _header({"kind": "history", "at": "2026-11-27T06:00:00Z", "window_seconds": 86400})
    assert "peaks over observed.period.window_seconds, from Prometheus" in header
    assert "snapshot" not in header
