#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""putmany.py put|check PREFIX N SIZE: put N values of SIZE bytes under keys
PREFIX0..PREFIX<N-1>, each its key's bytes repeated; or get each and check
its bytes.  Prints the counts; exit 1 if any put failed or any get missed
or differed."""
import sys

import fluxonkv


def value(key, size):
    k = key.encode()
    return (k * (size // len(k) + 1))[:size]


def check(kv, prefix, n, size):
    missed = wrong = 0
    for i in range(n):
        key = f"{prefix}{i}"
        h = kv.get(key)
        if h is None:
            missed += 1
            continue
        with h:
            if bytes(h.view()) != value(key, size):
                wrong += 1
    print(f"{n - missed - wrong} right, {missed} missed, {wrong} wrong")
    return 1 if missed or wrong else 0


def main():
    mode, prefix = sys.argv[1], sys.argv[2]
    n, size = int(sys.argv[3]), int(sys.argv[4])
    failed = 0
    with fluxonkv.Store() as kv:
        if mode == "check":
            return check(kv, prefix, n, size)
        for i in range(n):
            key = f"{prefix}{i}"
            try:
                kv.put(key, value(key, size))
            except OSError as e:
                failed += 1
                if failed <= 3:
                    print(f"put {key}: {e}", file=sys.stderr)
    print(f"{n - failed} put, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
