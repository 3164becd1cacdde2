"""One run of `sysctl-advisor calibrate`: the figures for a facts file's `calibration:` section
and what the probe saw on the way."""

from __future__ import annotations

from dataclasses import dataclass

from sysctl_advisor.model.host_facts import Calibration


@dataclass(frozen=True)
class Measurement:
    calibration: Calibration
    pairs: int
    requested_pairs: int
    fd_limited: bool
    timed_out: bool
    slab_caches: list[tuple[str, float]]  # the caches that grew most, bytes per socket
    queued_slab_bytes_per_socket: int
