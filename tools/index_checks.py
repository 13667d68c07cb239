"""Write conformance/judging/checks/index.json (what ``transformer-conformance list`` prints, from a real collection)
and conformance/judging/checks/homes.json (the check that reads each published fact, from a run on the reference).

    python tools/index_checks.py           # collect and certify the reference, write both
    python tools/index_checks.py --check   # exit 1 (and say what differs) if either is stale

Run it after adding, renaming or parametrising a check, or moving a published fact to another check;
tests/test_cli_startup.py and tests/test_published_homes.py fail until you do.
"""

from __future__ import annotations

import argparse
import json
import sys

from conformance.cli import checks_certifying
from conformance.run import coverage, listing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing them")
    args = parser.parse_args(argv)
    index = listing.parse(listing.collect(listing.INDEXED_IMPL))
    homes = coverage.homes_of(checks_certifying(listing.INDEXED_IMPL))
    if args.check:
        return max(_compare_index(index), _compare_homes(homes))
    written = ((listing.INDEX, json.dumps(index, indent=1) + "\n"), (coverage.HOMES, coverage.homes_text(homes)))
    for path, text in written:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    print(f"wrote {listing.INDEX}: {len(index['checks'])} of {index['collected']} checks"
          f" ({index['deselected']} deselected)")
    print(f"wrote {coverage.HOMES}: {len(homes['homes'])} published facts, each with the check that reads it")
    return 0


def _compare_index(index: dict) -> int:
    shipped = listing.read_index()
    if shipped == index:
        print(f"{listing.INDEX}: up to date ({len(index['checks'])} checks)")
        return 0
    added, gone = set(index["checks"]) - set(shipped["checks"]), set(shipped["checks"]) - set(index["checks"])
    print(f"{listing.INDEX} is stale: new {sorted(added)}, gone {sorted(gone)}; run python tools/index_checks.py")
    return 1


def _compare_homes(homes: dict) -> int:
    with open(coverage.HOMES, encoding="utf-8") as file:
        shipped = json.load(file)["homes"]
    moved = sorted(f for f in set(shipped) | set(homes["homes"]) if shipped.get(f) != homes["homes"].get(f))
    if not moved:
        print(f"{coverage.HOMES}: up to date ({len(shipped)} facts)")
        return 0
    print(f"{coverage.HOMES} is stale for {moved}; run python tools/index_checks.py")
    return 1


if __name__ == "__main__":
    sys.exit(main())
