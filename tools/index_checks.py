"""Write conformance/judging/checks/index.json: what ``transformer-conformance list`` prints, from a real collection.

    python tools/index_checks.py           # collect the checks for the reference and write the index
    python tools/index_checks.py --check   # exit 1 (and say what differs) if the index is stale

Run it after adding, renaming or parametrising a check; tests/test_cli_startup.py fails until you do.
"""

from __future__ import annotations

import argparse
import json
import sys

from conformance.run import listing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped index instead of writing it")
    args = parser.parse_args(argv)
    index = listing.parse(listing.collect(listing.INDEXED_IMPL))
    if args.check:
        shipped = listing.read_index()
        if shipped == index:
            print(f"{listing.INDEX}: up to date ({len(index['checks'])} checks)")
            return 0
        added, gone = set(index["checks"]) - set(shipped["checks"]), set(shipped["checks"]) - set(index["checks"])
        print(f"{listing.INDEX} is stale: new {sorted(added)}, gone {sorted(gone)}; run python tools/index_checks.py")
        return 1
    with open(listing.INDEX, "w", encoding="utf-8") as file:
        file.write(json.dumps(index, indent=1) + "\n")
    print(f"wrote {listing.INDEX}: {len(index['checks'])} of {index['collected']} checks"
          f" ({index['deselected']} deselected)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
