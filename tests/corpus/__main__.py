"""Print what `check` finds on the corpus, per rule and severity (`--json FILE` writes it too).

python -m tests.corpus [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.corpus import count, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the counts as JSON to this file")
    args = parser.parse_args()
    counts = count()
    print(table(counts))
    if args.json is not None:
        args.json.write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
