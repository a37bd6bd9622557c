#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""getloop.py SECONDS DIR KEY...: get the KEYs round robin for SECONDS, each
value checked against DIR/val.KEY.  Prints one line:
  gets=N ok=N miss=N wrong=N errors=N max_ms=N
and exits 1 if any value was wrong (a miss or a clean error is allowed:
the node that held it may be gone)."""
import os
import sys
import time

import fluxonkv


def main():
    seconds, vdir, keys = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
    want = {k: open(os.path.join(vdir, "val." + k), "rb").read() for k in keys}
    n = ok = miss = wrong = errors = 0
    worst = 0.0
    end = time.monotonic() + seconds
    with fluxonkv.Store() as kv:
        while time.monotonic() < end:
            k = keys[n % len(keys)]
            n += 1
            t0 = time.monotonic()
            try:
                h = kv.get(k)
                if h is None:
                    miss += 1
                else:
                    with h:
                        if bytes(h.view()) == want[k]:
                            ok += 1
                        else:
                            wrong += 1
            except OSError:
                errors += 1
            worst = max(worst, time.monotonic() - t0)
    print(f"gets={n} ok={ok} miss={miss} wrong={wrong} errors={errors} "
          f"max_ms={int(worst * 1000)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
