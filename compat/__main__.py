"""``python -m compat [--json]``: the installed release, its detected features, the loader, why."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    import compat

    info = compat.report()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"triton {info['triton']}")
    feats = info["features"]
    for name, value in feats.items():
        if name == "block_ptr_present":
            # a name that exists is not a feature that works: say what was tried
            tried = feats.get("block_ptr_trial", "not tried")
            print(f"  block_ptr: {'present' if value else 'absent'}; a block-pointer load "
                  f"(boundary check, zero padding) was tried: {tried}")  # fmt: skip
        elif name != "block_ptr_trial":
            print(f"  {name}: {value}")
    print(f"loader: {info['loader']} ({info['reason']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
