#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""chaoswork.py NODE NODES SHARED: the chaos suite's load on one node, with a
history check across nodes (selftests/cluster/chaos.sh runs it on each).

Keys chaos-00 .. chaos-23; key i is written by node i % NODES + 1 only.
Keys 0..17 are read by every node, 18..23 only by their writer (so the
writer's module holds their only copies: nothing elsewhere masks a loss).
Values describe themselves: key, writer, sequence number, length, and
bytes derived from them, checked whole on every read.

Clock-free checks (each guest has its own clock).  After a put returns
put_id P, the writer appends "KEY P" to SHARED/acks.NODE; every worker
reads those lines before each get.  A get of KEY that starts after this
worker saw an acknowledged P must return:
  * a whole, self-consistent value (else: "torn");
  * a version >= P (else: "older" -- a version went backwards);
  * a version >= any this worker read before (else: "backwards");
  * not a miss (else: "lost"), unless the node that wrote P, or this
    node, is away -- SHARED/away.J or SHARED/away.all exist at the get's
    start or end (chaos.sh marks them around restarts and partitions).
Failures to reach the cache (ENOTCONN, ETIMEDOUT, ...) are counted, not
violations: a partition or a restart makes the cache unavailable, never
wrong.  Runs until SHARED/stop exists; writes SHARED/summary.NODE (JSON)
and exits 1 if any violation was seen.  While SHARED/nowrite.NODE exists
it only reads, its own keys (chaos.sh keeps a node's last versions from
before a partition the newest until after a master restart, and has them
read then).
"""
import errno
import hashlib
import json
import os
import random
import struct
import sys
import time

import fluxonkv

NKEYS = 24
SHARED_KEYS = 18
HDR = struct.Struct("<16sIQI")  # key, writer, seq, length
# The cache unreachable (no daemon, no master, a peer cut off): counted.
TRANSIENT = {errno.ENOTCONN, errno.ETIMEDOUT, errno.EAGAIN, errno.EIO,
             errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ECANCELED,
             errno.ECONNRESET, errno.EPIPE, errno.EINTR}


def key_name(i):
    return f"chaos-{i:02d}"


def value(key, node, seq, length):
    head = HDR.pack(key.encode(), node, seq, length)
    seed = hashlib.sha256(f"{key}/{node}/{seq}".encode()).digest()
    body = (seed * ((length - len(head)) // len(seed) + 1))
    return head + body[:length - len(head)]


def check_value(key, data):
    """None if @data is a whole value of @key, else why not."""
    if len(data) < HDR.size:
        return f"{len(data)} bytes: shorter than a header"
    k, node, seq, length = HDR.unpack_from(data)
    if k.rstrip(b"\0").decode(errors="replace") != key:
        return f"header names key {k!r}"
    if length != len(data):
        return f"header says {length} bytes, got {len(data)}"
    if bytes(data) != value(key, node, seq, length):
        return f"bytes differ from writer {node} seq {seq}"
    return None


class Worker:
    def __init__(self, node, nodes, shared):
        self.node, self.nodes, self.shared = node, nodes, shared
        self.acked = {}         # key -> (put_id, writer) highest announced
        self.seen = {}          # key -> highest put_id this node read
        self.offsets = {}       # acks file -> bytes consumed
        self.seq = 0
        self.st = {"puts": 0, "puts_failed": 0, "gets": 0, "hits": 0,
                   "misses_allowed": 0, "unavailable": 0, "violations": 0,
                   "errors": {}}
        self.violations = []
        self.acks = open(os.path.join(shared, f"acks.{node}"), "a")

    def away(self, node):
        return (os.path.exists(os.path.join(self.shared, "away.all")) or
                os.path.exists(os.path.join(self.shared, f"away.{node}")))

    def read_acks(self):
        for j in range(1, self.nodes + 1):
            path = os.path.join(self.shared, f"acks.{j}")
            try:
                with open(path) as f:
                    f.seek(self.offsets.get(path, 0))
                    data = f.read()
            except FileNotFoundError:
                continue
            done = data.rfind("\n") + 1     # whole lines only
            self.offsets[path] = self.offsets.get(path, 0) + done
            for line in data[:done].splitlines():
                key, pid = line.split()
                pid = int(pid)
                if pid > self.acked.get(key, (0, 0))[0]:
                    self.acked[key] = (pid, j)

    def violation(self, what):
        self.st["violations"] += 1
        if len(self.violations) < 20:
            self.violations.append(what)
        print(f"node{self.node}: VIOLATION {what}", file=sys.stderr,
              flush=True)

    def failed(self, op, e):
        """An error: expected ones counted; others named (chaos.sh fails)."""
        if e.errno in TRANSIENT:
            return
        name = f"{op} {errno.errorcode.get(e.errno, e.errno)}"
        self.st["errors"][name] = self.st["errors"].get(name, 0) + 1

    def put(self, kv, i):
        key = key_name(i)
        self.seq += 1
        data = value(key, self.node, self.seq,
                     random.choice((1, 4, 64, 256)) * 1024 + random.randrange(64))
        try:
            pid = kv.put(key, data)
        except OSError as e:
            self.failed("put", e)
            self.st["puts_failed"] += 1
            return
        self.st["puts"] += 1
        self.acks.write(f"{key} {pid}\n")
        self.acks.flush()

    def get(self, kv, i):
        key = key_name(i)
        self.read_acks()
        want, writer = self.acked.get(key, (0, 0))
        away0 = self.away(writer) or self.away(self.node)
        self.st["gets"] += 1
        try:
            h = kv.get(key)
        except OSError as e:
            self.failed("get", e)
            self.st["unavailable"] += 1
            return
        away = away0 or self.away(writer) or self.away(self.node)
        if h is None:
            if want and not away:
                self.violation(f"lost: {key} missed after put_id {want} "
                               f"(node{writer}) was acknowledged")
            elif want:
                self.st["misses_allowed"] += 1
            return
        with h:
            why = check_value(key, h.view())
            pid = h.put_id
        self.st["hits"] += 1
        if why:
            self.violation(f"torn: {key} put_id {pid}: {why}")
        if pid < want:
            self.violation(f"older: {key} read put_id {pid} after {want} "
                           f"(node{writer}) was acknowledged")
        if pid < self.seen.get(key, 0):
            self.violation(f"backwards: {key} read put_id {pid} after "
                           f"{self.seen[key]}")
        self.seen[key] = max(pid, self.seen.get(key, 0))

    def run(self):
        mine = [i for i in range(NKEYS) if i % self.nodes + 1 == self.node]
        readable = [i for i in range(NKEYS)
                    if i < SHARED_KEYS or i in mine]
        stop = os.path.join(self.shared, "stop")
        with fluxonkv.Store() as kv:
            nowrite = os.path.join(self.shared, f"nowrite.{self.node}")
            while not os.path.exists(stop):
                if os.path.exists(nowrite):
                    self.get(kv, random.choice(mine))
                elif random.random() < 0.3:
                    self.put(kv, random.choice(mine))
                else:
                    self.get(kv, random.choice(readable))
                time.sleep(0.01)
        self.st["violation_list"] = self.violations
        path = os.path.join(self.shared, f"summary.{self.node}")
        with open(path + ".tmp", "w") as f:
            json.dump(self.st, f)
        os.rename(path + ".tmp", path)
        print(json.dumps(self.st), flush=True)
        return 1 if self.st["violations"] else 0


def main():
    node, nodes, shared = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    random.seed(node * 7919 + os.getpid())
    return Worker(node, nodes, shared).run()


if __name__ == "__main__":
    sys.exit(main())
