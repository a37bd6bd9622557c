#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""failload.py SECONDS DIR NAME NKEYS [PEER...]: a checked load through a
master failover (selftests/cluster/failover.sh).

Puts NAME0..NAME<NKEYS-1> round robin, each value "KEY:VERSION:" padded to
4 KiB, and after every acknowledged put writes DIR/acked.NAME (JSON: key ->
last acknowledged version, rewritten atomically).  Between puts it gets one
of its own keys and one of each PEER's (the PEER's acked file read at that
moment).  A get may miss or fail while no master is serving; it must never
return the wrong bytes, a version below the last one acknowledged before
the get started (own keys, and the peers' from their acked file), nor a
version below one this reader already saw.

Prints one line:
  puts=N acked=N put_errors=N gets=N ok=N miss=N miss_acked=N errors=N
  wrong=N back=N
  put_gap_ms=N get_gap_ms=N
(the gaps: the longest time without a successful put / get, i.e. the
outage this node saw) and exits 1 on any wrong or backwards value.

failload.py verify DIR NAME...: get every key in DIR/acked.NAME; exit 0
only if each reads back at its acknowledged version or a later one."""
import json
import os
import sys
import time

import fluxonkv

SIZE = 4096


def value(key, version):
    head = f"{key}:{version}:".encode()
    return (head * (SIZE // len(head) + 1))[:SIZE]


def parse(key, data):
    """The version in DATA if it is a well-formed value of KEY, else None."""
    parts = bytes(data[:64]).split(b":")
    if len(parts) < 3 or parts[0] != key.encode():
        return None
    try:
        v = int(parts[1])
    except ValueError:
        return None
    return v if bytes(data) == value(key, v) else None


def read_acked(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def verify(vdir, names):
    """Every acknowledged put of NAMES reads back at its version or later."""
    c = dict(keys=0, ok=0, miss=0, errors=0, wrong=0, back=0)
    with fluxonkv.Store() as kv:
        for n in names:
            for k, want in sorted(read_acked(os.path.join(vdir, f"acked.{n}")).items()):
                c["keys"] += 1
                try:
                    h = kv.get(k)
                except OSError as e:
                    c["errors"] += 1
                    print(f"get {k}: {e}", file=sys.stderr)
                    continue
                if h is None:
                    c["miss"] += 1
                    print(f"get {k}: miss (acknowledged version {want})", file=sys.stderr)
                    continue
                with h:
                    v = parse(k, h.view())
                if v is None:
                    c["wrong"] += 1
                elif v < want:
                    c["back"] += 1
                    print(f"{k}: version {v} below the acknowledged {want}", file=sys.stderr)
                else:
                    c["ok"] += 1
    print(" ".join(f"{k}={v}" for k, v in c.items()))
    return 0 if c["ok"] == c["keys"] and c["keys"] else 1


def main():
    if sys.argv[1] == "verify":
        return verify(sys.argv[2], sys.argv[3:])
    seconds, vdir, name, nkeys = float(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    peers = sys.argv[5:]
    acked = {}
    seen = {}
    version = int(time.time() * 1000) % 1000000 * 1000
    c = dict(puts=0, acked=0, put_errors=0, gets=0, ok=0, miss=0, miss_acked=0,
             errors=0, wrong=0, back=0)
    last_put = last_get = start = time.monotonic()
    put_gap = get_gap = 0.0
    end = start + seconds
    i = 0
    with fluxonkv.Store() as kv:
        while time.monotonic() < end:
            key = f"{name}{i % nkeys}"
            i += 1
            version += 1
            c["puts"] += 1
            try:
                kv.put(key, value(key, version))
                acked[key] = version
                c["acked"] += 1
                tmp = os.path.join(vdir, f".acked.{name}.tmp")
                with open(tmp, "w") as f:
                    json.dump(acked, f)
                os.rename(tmp, os.path.join(vdir, f"acked.{name}"))
                now = time.monotonic()
                put_gap = max(put_gap, now - last_put)
                last_put = now
            except OSError:
                c["put_errors"] += 1
            targets = [(f"{name}{(i * 7) % nkeys}", acked)]
            for p in peers:
                pa = read_acked(os.path.join(vdir, f"acked.{p}"))
                if pa:
                    k = sorted(pa)[i % len(pa)]
                    targets.append((k, pa))
            for k, floor in targets:
                want = floor.get(k, 0)
                c["gets"] += 1
                try:
                    h = kv.get(k)
                except OSError:
                    c["errors"] += 1
                    continue
                if h is None:
                    c["miss"] += 1
                    if want:
                        # acknowledged, but its holder has not reported
                        # it to the new master yet (or is gone)
                        c["miss_acked"] += 1
                    continue
                with h:
                    v = parse(k, h.view())
                if v is None:
                    c["wrong"] += 1
                    print(f"wrong bytes for {k}", file=sys.stderr)
                    continue
                if v < want or v < seen.get(k, 0):
                    c["back"] += 1
                    print(f"{k}: version {v} after {max(want, seen.get(k, 0))}",
                          file=sys.stderr)
                seen[k] = max(seen.get(k, 0), v)
                c["ok"] += 1
                now = time.monotonic()
                get_gap = max(get_gap, now - last_get)
                last_get = now
            time.sleep(0.05)
    now = time.monotonic()
    put_gap = max(put_gap, now - last_put)
    get_gap = max(get_gap, now - last_get)
    print(" ".join(f"{k}={v}" for k, v in c.items()) +
          f" put_gap_ms={int(put_gap * 1000)} get_gap_ms={int(get_gap * 1000)}")
    return 1 if c["wrong"] or c["back"] else 0


if __name__ == "__main__":
    sys.exit(main())
