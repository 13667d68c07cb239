"""python -m conformance.diagnosis.neighbourhood --write | --check: regenerate neighbours.json, or compare."""

from __future__ import annotations

import argparse
import json
import sys

from conformance.diagnosis.neighbourhood.generate import PATH, generate, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.diagnosis.neighbourhood", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"regenerate {PATH.name} from the oracle")
    action.add_argument("--check", action="store_true", help=f"exit 1 when {PATH.name} differs from a regeneration")
    args = parser.parse_args(argv)
    if args.write:
        data = write(progress=lambda line: print(line, file=sys.stderr))
        print(f"{len(data['neighbours'])} neighbours of {data['tried']} mutations -> {PATH}")
        return 0
    fresh = generate()
    stored = json.loads(PATH.read_text(encoding="utf-8")) if PATH.exists() else None
    if stored != json.loads(json.dumps(fresh, ensure_ascii=False)):
        print(f"{PATH.name} differs from what the oracle generates: run --write", file=sys.stderr)
        return 1
    print(f"{PATH.name}: {len(fresh['neighbours'])} neighbours, as the oracle generates them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
