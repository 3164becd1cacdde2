"""Where the shipped rules/, profiles/ and templates/ live.

In a wheel they are inside the package (hatch force-include); in a checkout they sit beside it.
The same lookup serves both: the package directory first, then its parent.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # sysctl_advisor/


def data_dir(name: str) -> Path:
    for base in (_PACKAGE_DIR, _PACKAGE_DIR.parent):
        candidate = base / name
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"sysctl-advisor is installed without its {name}/ directory")
