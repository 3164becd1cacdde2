"""The catalog's range of each key agrees with the running kernel's handler.

For every key whose range the catalog states (its own min..max, or its `bounds:` for the
release the suite runs on) and that a fresh network namespace has and lets root write, the
edges are written into such a namespace: min and max must be taken, one below min and one
above max refused with EINVAL (where the catalog says the handler refuses). Only a private
namespace is written, so the host's own values never change; keys outside one (vm.*, kernel.*,
the init namespace's net.core buffers) are not written here. Measured first on 6.18.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
from sysctl_advisor.model.kernel_version import KernelVersion
from tests.namespaces import needs_netns

pytestmark = needs_netns

# Writes in the namespace before a key's edges: from 4.11 ip_local_port_range refuses a first
# port below ip_unprivileged_port_start (1024 in a fresh namespace), and that one a value above
# the first port of the local range (32768).
PRELUDE = {
    "net.ipv4.ip_local_port_range": [("net.ipv4.ip_unprivileged_port_start", "0")],
    "net.ipv4.ip_unprivileged_port_start": [("net.ipv4.ip_local_port_range", "65535 65535")],
}

# A vendor kernel measured apart from upstream, with what upstream has (the catalog's word).
VENDOR_BUILDS = {
    ("net.ipv4.tcp_rmem", "min"): (
        re.compile(r"-fc-"),
        "this vendor 6.18.44 build refuses any field below 4096; upstream's extra1 is 1 "
        "(SYSCTL_ONE, net/ipv4/sysctl_net_ipv4.c, mainline through 6.18)",
    ),
}

WRITER = """
import errno, json, os, sys

def write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)

out = {}
for key, prelude, texts in json.load(sys.stdin):
    path = "/proc/sys/" + key.replace(".", "/")
    for other, value in prelude:
        write("/proc/sys/" + other.replace(".", "/"), value)
    try:
        with open(path) as handle:
            original = handle.read()
    except OSError as exc:
        out[key] = errno.errorcode.get(exc.errno, "?")
        continue
    found = {}
    for edge, text in texts.items():
        try:
            write(path, text)
            found[edge] = "ok"
        except OSError as exc:
            found[edge] = errno.errorcode.get(exc.errno, "?")
        try:
            write(path, original)
        except OSError:
            pass
    out[key] = found
json.dump(out, sys.stdout)
"""


def _hz() -> int | None:
    """CONFIG_HZ of the running kernel, where /proc/config.gz tells."""
    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode()
    except OSError:
        return None
    found = re.search(r"^CONFIG_HZ=(\d+)$", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def _cases() -> list[tuple[str, dict[str, Any]]]:
    """Each net.* key with a stated range the running kernel has, and that range here."""
    catalog = KnowledgeBase.lazy().catalog
    version = KernelVersion.parse(os.uname().release)
    hz = _hz()
    cases = []
    names = [k for k, spec in catalog.keys.items() if not spec.is_text]
    names += [k for k in catalog.known if "*" not in k and catalog.bounded(k)]
    for key in names:
        if not key.startswith("net.") or (key in catalog.keys and not catalog.exists(key, version)):
            continue
        bounds = catalog.bounds(key, version, 64, hz)
        if bounds is None or bounds["min"] is None or bounds["max"] is None:
            continue
        if hz is None and catalog.bounds(key, version, 64, 1000) != bounds:
            continue  # the range is the build's HZ's, which this kernel does not tell
        cases.append((key, bounds))
    return cases


CASES = _cases() if sys.platform == "linux" else []


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """What a fresh namespace did with each edge of each key, one `unshare -n` for all."""
    work = []
    for key, bounds in CASES:
        low, high, n = bounds["min"], bounds["max"], bounds["length"]
        edges = {"min": low, "max": high}
        if bounds["outside"] is None:  # the handler refuses beyond its range
            edges |= {"below": low - 1, "above": high + 1}
        texts = {edge: " ".join([str(value)] * n) for edge, value in edges.items()}
        work.append([key, PRELUDE.get(key, []), texts])
    run = subprocess.run(
        ["unshare", "-n", "--", sys.executable, "-c", WRITER],
        input=json.dumps(work),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize(("key", "bounds"), CASES, ids=[key for key, _ in CASES])
def test_the_catalogs_range_is_the_running_kernels(
    measured: dict[str, Any], key: str, bounds: dict[str, Any]
) -> None:
    found = measured[key]
    if isinstance(found, str):
        pytest.skip(f"a fresh network namespace has no {key} to read ({found})")
    if found["min"] in ("EACCES", "EPERM") and found["max"] in ("EACCES", "EPERM"):
        pytest.skip(f"{key} is not written in a network namespace other than the first")
    expected = {"min": "ok", "max": "ok", "below": "EINVAL", "above": "EINVAL"}
    wrong = {edge: got for edge, got in found.items() if got != expected[edge]}
    release = os.uname().release
    for edge in list(wrong):
        vendor = VENDOR_BUILDS.get((key, edge))
        if vendor is not None and vendor[0].search(release):
            wrong.pop(edge)
            if not wrong:
                pytest.xfail(vendor[1])
    assert not wrong, (
        f"{key}: the catalog says {bounds['min']}..{bounds['max']} on {release}; "
        f"the kernel did {wrong}"
    )
