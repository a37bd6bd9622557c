#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""getcheck.py KEY FILE: get KEY once, print its source, exit 0 if the value
equals FILE's bytes, 3 on a miss, 1 if it differs."""
import sys

import fluxonkv


def main():
    key, path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        want = f.read()
    with fluxonkv.Store() as kv:
        h = kv.get(key)
        if h is None:
            print("miss")
            return 3
        with h:
            print(h.source)
            same = bytes(h.view()) == want
    if not same:
        print(f"{key}: {len(h)} bytes differ from {path} ({len(want)} bytes)",
              file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
