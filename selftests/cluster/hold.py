#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""hold.py FLAG KEY...: get every KEY and keep the holders (their bytes stay
pinned in the segment) until the file FLAG exists; prints "held N" once
they are all held.  Exit 0, or 3 if a key missed."""
import os
import sys
import time

import fluxonkv


def main():
    flag, keys = sys.argv[1], sys.argv[2:]
    with fluxonkv.Store() as kv:
        held = []
        for k in keys:
            h = kv.get(k)
            if h is None:
                print(f"miss {k}", flush=True)
                return 3
            held.append(h)
        print(f"held {len(held)}", flush=True)
        while not os.path.exists(flag):
            time.sleep(0.05)
        for h in held:
            h.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
