"""`calibrate`: measure per-socket memory on this kernel, optionally into a facts file."""

from __future__ import annotations

from pathlib import Path

from sysctl_advisor.commands.common import emit, say
from sysctl_advisor.model.errors import InputError


def calibrate(pairs: int = 10_000, timeout: float = 60.0, write: Path | None = None) -> int:
    from sysctl_advisor.outputs.calibration_report import report, write_calibration
    from sysctl_advisor.sources.calibration import calibrate as measure

    if write is not None and not write.is_file():
        raise InputError("no such facts file", path=write, field="--write")
    result = measure(pairs, timeout)
    emit(report(result), None)
    if write is not None:
        write_calibration(write, result.calibration)
        say(f"calibration written to {write}")
    return 0
