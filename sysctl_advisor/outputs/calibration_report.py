"""`calibrate`'s output: the figures as text, and the `calibration:` section added to a facts
file (read back and validated before it replaces the file)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sysctl_advisor.model.calibration_run import Measurement
from sysctl_advisor.model.documents import FACTS_FILE, parse_document, read_text
from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import Calibration, facts_from_data
from sysctl_advisor.model.model_base import plain_data
from sysctl_advisor.outputs.files import write_atomic


def report(m: Measurement) -> str:
    c = m.calibration
    lines = [
        f"calibrated on kernel {c.kernel}, in a private network namespace: "
        f"{m.pairs:,} loopback connection pairs ({c.sockets:,} sockets)",
    ]
    if m.fd_limited:
        lines.append(
            f"  (asked for {m.requested_pairs:,} pairs; the open-files limit allowed {m.pairs:,})"
        )
    elif m.timed_out:
        lines.append(f"  (asked for {m.requested_pairs:,} pairs; the time limit stopped at these)")
    lines += [
        f"  slab per socket, idle:               {c.slab_bytes_per_socket:>7,} bytes "
        "(all of /proc/meminfo Slab, outside tcp_mem)",
        f"  slab per socket, {c.queued_bytes} bytes queued:     "
        f"{c.slab_bytes_per_socket + m.queued_slab_bytes_per_socket:>7,} bytes",
        f"  tcp_mem per idle socket:             {c.tcp_mem_pages_per_idle_socket:>7.3f} pages",
        f"  tcp_mem per socket with data queued: {c.tcp_mem_pages_per_queued_socket:>7.3f} pages"
        f" ({c.queued_bytes} bytes unread in each)",
        "  largest slab caches per socket: "
        + ", ".join(f"{name} {size:,.0f}" for name, size in m.slab_caches),
    ]
    return "\n".join(lines) + "\n"


def calibration_yaml(c: Calibration) -> str:
    """The `calibration:` section, from the YAML serializer."""
    return "# measured by `sysctl-advisor calibrate`; used on this kernel only\n" + yaml.safe_dump(
        {"calibration": plain_data(c)}, sort_keys=False
    )


def write_calibration(path: Path, c: Calibration) -> None:
    """Add (or replace) the `calibration:` section of a facts file, keeping everything else,
    comments included. JSON facts files are rewritten as JSON. The file must already be a valid
    facts file, and the result is read back and validated before it replaces it."""
    text = read_text(path)
    data = parse_document(text, path, FACTS_FILE)
    if not isinstance(data, dict):
        raise InputError("a facts file must be a mapping", path=path)
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        data["calibration"] = plain_data(c)
        new_text = json.dumps(data, indent=2) + "\n"
    else:
        kept: list[str] = []
        skipping = False
        for line in text.splitlines(keepends=True):
            top_level = bool(line.strip()) and not line[0].isspace() and not line.startswith("#")
            if top_level:
                skipping = line.startswith("calibration:")
            if line.startswith("# measured by `sysctl-advisor calibrate`"):
                continue
            if not skipping:
                kept.append(line)
        body = "".join(kept).rstrip("\n")
        new_text = (body + "\n\n" if body else "") + calibration_yaml(c)
    written = parse_document(new_text, path, FACTS_FILE)
    expected = {**data, "calibration": plain_data(c)}
    if written != expected:
        raise InputError(
            "the calibration could not be added without changing the rest of the file; "
            "remove its `calibration:` section by hand and retry",
            path=path,
        )
    facts_from_data(written, path, new_text)
    write_atomic(path, new_text)
