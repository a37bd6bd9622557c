#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The measuring half of tools/bench/cluster.sh (stdlib only).

In a guest (PYTHONPATH=userspace/python):
  cluster.py put      node2: put COUNT values of SIZE, write a manifest
  cluster.py fill     node2: put fillers until KEYS left this node's DRAM
  cluster.py get      node1: get every manifest key once, timed, checked
  cluster.py diskread node2: O_DIRECT reads of the raw disk, timed
  cluster.py tcpserve node2: answer size requests with that many bytes
  cluster.py tcpget   node1: request SIZE bytes COUNT times, timed
  cluster.py cpuserve node2: answer CPU samples (the get loop's node2 side)
  cluster.py cpuidle  node1: both guests' CPU over a quiet window
On the host:
  cluster.py summary DIR   summary.txt + results.json from the node files

Every value is os.urandom() bytes with a 32-byte stamp "KEY@OFFSET" at
each MiB and at its last 32 bytes.  The timed get loop checks, per get:
the length, the source, the first and last KiB against the manifest and
every stamp (a chunk landed at the wrong offset or from another value
shows).  After the loop each value is read again (from node1's own copy
now) and its SHA-256 compared with the manifest: the full content check,
outside the timing.
"""
import argparse
import hashlib
import json
import mmap
import os
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

MiB = 1 << 20
SYSFS = "/sys/kernel/fluxonkv"
DEBUGFS = "/sys/kernel/debug/fluxonkv"
STAMP = 32
EDGE = 1024


def size_arg(s):
    s = s.strip().upper()
    for suf, mul in (("K", 1 << 10), ("M", MiB), ("G", 1 << 30)):
        if s.endswith(suf):
            return int(float(s[:-1]) * mul)
    return int(s)


def stamp(key, off):
    return f"{key}@{off:x}".encode().ljust(STAMP, b".")[:STAMP]


def stamp_offsets(size):
    offs = list(range(0, max(size - STAMP, 0) + 1, MiB))
    if size >= STAMP and size - STAMP not in offs:
        offs.append(size - STAMP)
    return offs


def make_value(key, size):
    v = bytearray(os.urandom(size))
    for off in stamp_offsets(size):
        v[off:off + STAMP] = stamp(key, off)
    return v


def human(n):
    for unit, mul in (("MiB", MiB), ("KiB", 1 << 10)):
        if n >= mul and n % mul == 0:
            return f"{n // mul} {unit}"
    return f"{n} B"


def pct(xs, p):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def dist(xs):
    if not xs:
        return None
    return {"n": len(xs), "min": min(xs), "median": statistics.median(xs),
            "p95": pct(xs, 95), "max": max(xs), "mean": statistics.mean(xs)}


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


# ---- snapshots of the module and the daemon ----

def read_latency():
    out = {}
    try:
        with open(os.path.join(DEBUGFS, "latency")) as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    if not lines:
        return out
    head = lines[0].split("\t")
    bounds = [h[3:] for h in head[3:]]
    for ln in lines[1:]:
        p = ln.split("\t")
        out[p[0]] = {"count": int(p[1]), "sum_ns": int(p[2]),
                     "buckets": [int(x) for x in p[3:]]}
    out["_bounds_ns"] = bounds
    return out


# The link's losses: what eth0's qdisc dropped and what Soft-RoCE counted
# (a dropped READ response shows as the requester's completer_retry_err and
# the responder's duplicate_request when the READ is sent again).
LINK_LOSS = ("qdisc_drops", "tx_dropped", "duplicate_request", "completer_retry_err",
             "retry_exceeded_err", "rcvd_seq_err", "out_of_seq_request", "send_err",
             "send_rnr_err")


def link_counters(dev="eth0", rxe="rxe0/1"):
    out = {}
    for cmd, pick in ((["tc", "-s", "-j", "qdisc", "show", "dev", dev],
                       lambda x: {"qdisc_drops": sum(q.get("drops", 0) for q in x)}),
                      (["ip", "-s", "-j", "link", "show", dev],
                       lambda x: {"tx_dropped": x[0]["stats64"]["tx"]["dropped"]}),
                      (["rdma", "-j", "statistic", "show", "link", rxe],
                       lambda x: {k: v for k, v in x[0].items() if isinstance(v, int)})):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            if r.returncode == 0:
                out.update(pick(json.loads(r.stdout)))
        except (OSError, ValueError, LookupError, subprocess.TimeoutExpired):
            pass
    return out


def link_loss(before, after):
    """The loss counters that grew between two link_counters()."""
    if not before or not after:
        return None
    return {k: after[k] - before.get(k, 0) for k in LINK_LOSS
            if k in after and after[k] - before.get(k, 0)}


def snapshot(ctl=None):
    snap = {"t": time.time(), "sysfs": {}, "latency": read_latency(),
            "link": link_counters()}
    try:
        for name in sorted(os.listdir(SYSFS)):
            try:
                with open(os.path.join(SYSFS, name)) as f:
                    v = f.read().strip()
                snap["sysfs"][name] = int(v) if v.isdigit() else v
            except OSError:
                pass
    except OSError:
        pass
    if ctl:
        try:
            r = subprocess.run([ctl, "cluster", "--json"], capture_output=True,
                               text=True, timeout=20)
            snap["cluster"] = json.loads(r.stdout) if r.returncode == 0 else \
                {"error": r.stderr.strip()}
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            snap["cluster"] = {"error": str(e)}
    return snap


def dram_keys():
    """The keys this node's module holds a DRAM replica of."""
    keys = set()
    with open(os.path.join(DEBUGFS, "replicas")) as f:
        lines = f.read().splitlines()
    if not lines:
        return keys
    col = lines[0].split("\t").index("key")
    for ln in lines[1:]:
        p = ln.split("\t")
        if len(p) > col:
            keys.add(p[col])
    return keys


# ---- CPU: what a phase costs each guest ----

HZ = os.sysconf("SC_CLK_TCK")
CPU_PORT = 7601
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq",
               "steal")


def cpu_now():
    """This guest's CPU counters now: /proc/stat's cpu line, fluxond's
    utime + stime (every thread: /proc/PID/stat), in USER_HZ ticks."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    out = {"t": time.monotonic(), "stat": v, "fluxond": None}
    try:
        with open(os.path.join(SYSFS, "daemon_pid")) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        rest = st[st.rindex(")") + 2:].split()
        out["fluxond"] = int(rest[11]) + int(rest[12])
        out["fluxond_pid"] = pid
    except (OSError, ValueError):
        pass
    return out


def cpu_delta(a, b):
    """Seconds between two cpu_now() samples: wall, each /proc/stat field,
    nonidle (user + nice + system + irq + softirq: idle, iowait and steal
    left out) and fluxond's (None if it changed or is unknown)."""
    if not a or not b:
        return None
    d = {k: (y - x) / HZ for k, x, y in zip(STAT_FIELDS, a["stat"], b["stat"])}
    d["wall_s"] = b["t"] - a["t"]
    d["nonidle_s"] = d["user"] + d["nice"] + d["system"] + d["irq"] + d["softirq"]
    d["fluxond_s"] = None
    if a.get("fluxond") is not None and b.get("fluxond") is not None and \
            a.get("fluxond_pid") == b.get("fluxond_pid"):
        d["fluxond_s"] = (b["fluxond"] - a["fluxond"]) / HZ
    return d


def cpu_add(acc, d):
    if d is None:
        return acc
    if acc is None:
        return dict(d)
    return {k: (None if acc[k] is None or d[k] is None else acc[k] + d[k])
            for k in acc}


class CpuPeer:
    """node1's view of node2's CPU counters (cluster.py cpuserve)."""

    def __init__(self, host, port=CPU_PORT):
        self.f = None
        try:
            c = socket.create_connection((host, port), timeout=20)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.c, self.f = c, c.makefile("rb")
        except OSError as e:
            print(f"cpu peer {host}:{port}: {e}", file=sys.stderr)

    def sample(self):
        if not self.f:
            return None
        try:
            self.c.sendall(b"?")
            return json.loads(self.f.readline())
        except (OSError, ValueError) as e:
            print(f"cpu peer: {e}", file=sys.stderr)
            self.f = None
            return None

    def close(self):
        if self.f:
            self.f.close()
            self.c.close()


class CpuWindow:
    """Both guests' CPU (and this process's) over the windows between
    start() and stop(), summed."""

    def __init__(self, peer):
        self.peer = peer
        self.acc = {"node1": None, "node2": None, "reader": None, "windows": 0}

    def start(self):
        self.t0 = (os.times(), cpu_now(), self.peer.sample() if self.peer else None)

    def stop(self):
        t1 = (os.times(), cpu_now(), self.peer.sample() if self.peer else None)
        (p0, a0, b0), (p1, a1, b1) = self.t0, t1
        self.acc["node1"] = cpu_add(self.acc["node1"], cpu_delta(a0, a1))
        self.acc["node2"] = cpu_add(self.acc["node2"], cpu_delta(b0, b1))
        self.acc["reader"] = (self.acc["reader"] or 0) + \
            (p1.user + p1.system) - (p0.user + p0.system)
        self.acc["windows"] += 1


def cmd_cpuserve(a):
    """Until killed: per connection, answer each byte with a cpu_now()
    JSON line (node1 samples node2 right around its timed loops)."""
    srv = socket.create_server(("0.0.0.0", a.port))
    if a.ready:
        open(a.ready + ".tmp", "w").close()
        os.replace(a.ready + ".tmp", a.ready)
    while True:
        c, _ = srv.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while c.recv(1):
                c.sendall(json.dumps(cpu_now()).encode() + b"\n")
        except OSError:
            pass
        c.close()


def cmd_cpuidle(a):
    """Both guests' CPU over a quiet window: the background (kernel,
    fluxond's heartbeats, the scripts' marker polls) a phase pays too."""
    peer = CpuPeer(a.host)
    w = CpuWindow(peer)
    w.start()
    time.sleep(a.seconds)
    w.stop()
    peer.close()
    write_json(a.out, w.acc)
    n1, n2 = w.acc["node1"], w.acc["node2"]
    print(f"idle {a.seconds} s: node1 {n1['nonidle_s']:.2f} CPU-s, node2 "
          + (f"{n2['nonidle_s']:.2f} CPU-s" if n2 else "?"))


# ---- node2: values ----

def cmd_put(a):
    import fluxonkv
    man = {"prefix": a.prefix, "size": a.size, "count": a.count, "keys": []}
    times = []
    with fluxonkv.Store() as kv:
        for i in range(a.count):
            key = f"{a.prefix}{i:03d}"
            v = make_value(key, a.size)
            t0 = time.perf_counter()
            kv.put(key, v)
            times.append(time.perf_counter() - t0)
            man["keys"].append({
                "key": key, "len": len(v),
                "sha256": hashlib.sha256(v).hexdigest(),
                "head": bytes(v[:EDGE]).hex(), "tail": bytes(v[-EDGE:]).hex()})
    man["put_s"] = dist(times)
    write_json(a.manifest, man)
    print(f"put {a.count} x {a.size} B under {a.prefix}*: "
          f"median {statistics.median(times) * 1e3:.1f} ms")


def cmd_fill(a):
    """Fillers until none of the manifest's keys has a DRAM copy here."""
    import fluxonkv
    want = {k["key"] for m in a.manifest for k in json.load(open(m))["keys"]}
    buf = bytearray(os.urandom(a.size))
    n = 0
    left = want & dram_keys()
    with fluxonkv.Store() as kv:
        while left and n < a.max:
            kv.put(f"{a.prefix}{n:03d}", buf)
            n += 1
            left = want & dram_keys()
    res = {"fillers": n, "filler_size": a.size, "still_in_dram": sorted(left),
           "keys": [f"{a.prefix}{i:03d}" for i in range(n)]}
    write_json(a.out, res)
    print(f"{n} fillers of {a.size} B; still in DRAM: {sorted(left) or 'none'}")
    return 1 if left else 0


def cmd_delete(a):
    """Delete the keys a manifest (or a fill result) names."""
    import fluxonkv
    keys = [k["key"] if isinstance(k, dict) else k
            for k in json.load(open(a.source))["keys"]]
    gone = 0
    with fluxonkv.Store() as kv:
        for k in keys:
            gone += bool(kv.delete(k))
    print(f"deleted {gone} of {len(keys)} keys")


# ---- node1: the timed gets ----

def check_value(v, ent):
    """The cheap per-get check: first/last KiB and every stamp."""
    n = ent["len"]
    if len(v) != n:
        return f"len {len(v)} != {n}"
    if bytes(v[:EDGE]).hex() != ent["head"]:
        return "first KiB differs"
    if bytes(v[n - EDGE:]).hex() != ent["tail"]:
        return "last KiB differs"
    for off in stamp_offsets(n):
        if bytes(v[off:off + STAMP]) != stamp(ent["key"], off):
            return f"stamp at {off} differs"
    return None


def cmd_get(a):
    import fluxonkv
    man = json.load(open(a.manifest))
    ents = man["keys"]
    res = {"phase": a.phase, "size": man["size"], "count": len(ents),
           "want_source": a.want_source, "gets": []}
    res["before"] = snapshot(a.ctl)
    res["threads"] = a.threads
    with fluxonkv.Store() as kv:
        def one(ent):
            t0 = time.perf_counter()
            h = kv.get(ent["key"])
            t1 = time.perf_counter()
            g = {"key": ent["key"], "get_s": t1 - t0, "start_s": t0 - t_loop}
            if h is None:
                g.update(source="miss", error="miss")
            else:
                g["source"] = h.source
                v = h.view()
                err = check_value(v, ent)
                del v
                h.release()
                if err:
                    g["error"] = err
            g["total_s"] = time.perf_counter() - t0
            return g

        link = None
        if a.pair_host:
            link = Link(a.pair_host, a.pair_port, man["size"])
            doffs = [int(x) * MiB for x in a.pair_disk_offsets_mb.split(",")]

        # CPU: both guests' around the whole loop; with paired baselines
        # around each get alone (the baselines' transfers left out)
        peer = CpuPeer(a.cpu_host) if a.cpu_host else None
        cpu = CpuWindow(peer)

        def worker(mine, out):
            start.wait()
            for i, ent in enumerate(mine):
                if link:
                    cpu.start()
                g = one(ent)
                if link:
                    cpu.stop()
                    # paired, right after the get: the same size read from
                    # node2's disk then sent, and sent from memory
                    g["read_then_send_s"] = link.one(ent["len"], doffs[i % len(doffs)])
                    g["send_s"] = link.one(ent["len"])
                out.append(g)

        # a.threads readers, key i to reader i % threads, all started at once
        outs = [[] for _ in range(a.threads)]
        start = threading.Barrier(a.threads + 1)
        ths = [threading.Thread(target=worker, args=(ents[t::a.threads], outs[t]))
               for t in range(a.threads)]
        for t in ths:
            t.start()
        if not link:
            cpu.start()
        t_loop = time.perf_counter()
        start.wait()
        for t in ths:
            t.join()
        res["loop_s"] = time.perf_counter() - t_loop
        if not link:
            cpu.stop()
        if peer:
            peer.close()
        res["cpu"] = dict(cpu.acc, mode="per get" if link else "loop")
        res["gets"] = sorted((g for o in outs for g in o), key=lambda g: g["key"])
        if link:
            link.close()
            res["paired"] = True
        res["after"] = snapshot(a.ctl)
        # The full check, untimed: every byte of node1's copy by SHA-256.
        full = []
        for ent in ents:
            h = kv.get(ent["key"])
            if h is None:
                full.append({"key": ent["key"], "source": "miss", "ok": False})
                continue
            with h:
                ok = hashlib.sha256(h.view()).hexdigest() == ent["sha256"]
                full.append({"key": ent["key"], "source": h.source, "ok": ok})
        res["full_check"] = full
    gets = res["gets"]
    nbytes = sum(e["len"] for e in ents)
    res["bytes"] = nbytes
    res["mb_s_loop"] = nbytes / 1e6 / res["loop_s"]
    res["get_s"] = dist([g["get_s"] for g in gets])
    res["wrong_source"] = sum(1 for g in gets if g["source"] != a.want_source)
    res["content_errors"] = sum(1 for g in gets if "error" in g and
                                g["error"] != "miss")
    res["misses"] = sum(1 for g in gets if g["source"] == "miss")
    res["full_check_errors"] = sum(1 for f in full if not f["ok"])
    write_json(a.out, res)
    d = res["get_s"]
    print(f"{a.phase}: {len(gets)} gets of {man['size']} B in "
          f"{res['loop_s']:.3f} s = {res['mb_s_loop']:.1f} MB/s; per get "
          f"median {d['median'] * 1e3:.1f} ms p95 {d['p95'] * 1e3:.1f} ms; "
          f"sources {sorted({g['source'] for g in gets})}; "
          f"wrong source {res['wrong_source']}, content errors "
          f"{res['content_errors']}, misses {res['misses']}, full-check "
          f"errors {res['full_check_errors']}")
    return 0 if not (res["wrong_source"] or res["content_errors"] or
                     res["full_check_errors"]) else 1


# ---- node2: the disk ----

def cmd_diskread(a):
    fd = os.open(a.dev, os.O_RDONLY | os.O_DIRECT)
    size = a.size
    offs = [int(x) * MiB for x in a.offsets_mb.split(",")]
    res = {"dev": a.dev, "size": size, "offsets": offs, "t0": time.time()}
    try:
        buf = mmap.mmap(-1, size)
        # warm-up read (not counted): the first IO pays the queue's setup
        os.preadv(fd, [buf], offs[0])
        single = []
        for off in offs:
            t0 = time.perf_counter()
            n = os.preadv(fd, [buf], off)
            single.append(time.perf_counter() - t0)
            if n != size:
                raise OSError(f"short read {n} at {off}")
        res["single_s"] = dist(single)
        # The same bytes as fluxond's push reads them: CHUNK-sized reads,
        # JOBS at once (FKV_PUSH_CHUNK 4 MiB, FKV_PUSH_READS 4).
        chunk, jobs = a.chunk, a.jobs
        nch = (size + chunk - 1) // chunk
        bufs = [mmap.mmap(-1, chunk) for _ in range(min(jobs, nch))]
        par = []
        for off in offs:
            nxt = [0]
            lock = threading.Lock()

            def worker(b):
                while True:
                    with lock:
                        i = nxt[0]
                        nxt[0] += 1
                    if i >= nch:
                        return
                    os.preadv(fd, [b], off + i * chunk)
            ths = [threading.Thread(target=worker, args=(b,)) for b in bufs]
            t0 = time.perf_counter()
            for t in ths:
                t.start()
            for t in ths:
                t.join()
            par.append(time.perf_counter() - t0)
        res["parallel_s"] = dist(par)
        res["parallel_chunk"] = chunk
        res["parallel_jobs"] = len(bufs)
        res["t1"] = time.time()
    finally:
        os.close(fd)
    write_json(a.out, res)
    print(f"disk O_DIRECT {size} B: one read median "
          f"{res['single_s']['median'] * 1e3:.1f} ms "
          f"({size / 1e6 / res['single_s']['median']:.0f} MB/s); "
          f"{res['parallel_jobs']} x {chunk} B at once median "
          f"{res['parallel_s']['median'] * 1e3:.1f} ms")


# ---- the link, request / response like a pull ----

MEMORY = (1 << 64) - 1	# a request's offset: from memory, not the disk


def cmd_tcpserve(a):
    """Answer {size, offset} requests: size bytes from memory, or read
    from the disk at offset (O_DIRECT, all of it) and then sent: the
    'read it all, then send it all' a push is compared with."""
    srv = socket.create_server(("0.0.0.0", a.port))
    if a.ready:
        open(a.ready + ".tmp", "w").close()
        os.replace(a.ready + ".tmp", a.ready)
    srv.settimeout(a.timeout)
    c, _ = srv.accept()
    c.settimeout(a.timeout)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytes(os.urandom(a.max_size))
    dbuf = mmap.mmap(-1, a.max_size)
    fd = os.open(a.dev, os.O_RDONLY | os.O_DIRECT) if a.dev else -1
    served = 0
    while True:
        req = c.recv(16, socket.MSG_WAITALL)
        if len(req) < 16:
            break
        n, off = struct.unpack("<QQ", req)
        if n == 0:
            break
        if off == MEMORY:
            c.sendall(memoryview(buf)[:n])
        else:
            mv = memoryview(dbuf)[:n]
            if os.preadv(fd, [mv], off) != n:
                break
            c.sendall(mv)
            mv.release()
        served += 1
    c.close()
    srv.close()
    if fd >= 0:
        os.close(fd)
    print(f"tcpserve: served {served} requests")


class Link:
    """The requesting side of tcpserve: one warm connection."""

    def __init__(self, host, port, big, timeout=120):
        self.c = socket.create_connection((host, port), timeout=timeout)
        self.c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.mv = memoryview(bytearray(big))
        self.one(big)		# warm-up (slow start), not counted

    def one(self, n, off=MEMORY):
        """Seconds from the request to the last byte of the answer."""
        mv = self.mv
        t0 = time.perf_counter()
        self.c.sendall(struct.pack("<QQ", n, off))
        got = 0
        while got < n:
            r = self.c.recv_into(mv[got:n], n - got, socket.MSG_WAITALL)
            if r == 0:
                raise OSError("connection closed")
            got += r
        return time.perf_counter() - t0

    def close(self):
        self.c.sendall(struct.pack("<QQ", 0, 0))
        self.c.close()


def parse_plan(p):
    out = []
    for spec in (p or "").split(","):
        if spec:
            sz, cnt = spec.split("x")
            out.append((size_arg(sz), int(cnt)))
    return out


def cmd_tcpget(a):
    res = {"host": a.host, "cases": [], "disk_cases": [], "t0": time.time()}
    plan, dplan = parse_plan(a.plan), parse_plan(a.disk_plan)
    doffs = [int(x) * MiB for x in a.disk_offsets_mb.split(",")] if dplan else []
    link = Link(a.host, a.port, max(sz for sz, _ in plan + dplan), a.timeout)
    for size, cnt in plan:
        ts = [link.one(size) for _ in range(cnt)]
        res["cases"].append({"size": size, "count": cnt, "s": dist(ts),
                             "mb_s_median": size / 1e6 / statistics.median(ts)})
        print(f"tcp {size} B x {cnt}: median {statistics.median(ts) * 1e3:.1f} ms "
              f"= {size / 1e6 / statistics.median(ts):.1f} MB/s")
    for size, cnt in dplan:
        ts = [link.one(size, doffs[i % len(doffs)]) for i in range(cnt)]
        res["disk_cases"].append({"size": size, "count": cnt, "s": dist(ts),
                                  "offsets": doffs,
                                  "mb_s_median": size / 1e6 / statistics.median(ts)})
        print(f"read-then-send {size} B x {cnt}: median "
              f"{statistics.median(ts) * 1e3:.1f} ms")
    link.close()
    res["t1"] = time.time()
    write_json(a.out, res)


def cmd_snap(a):
    write_json(a.out, snapshot(a.ctl))


def cmd_linkstat(a):
    write_json(a.out, link_counters())


# ---- the RDMA link: perftest ----

def parse_perftest(text, size):
    """perftest's result line for SIZE: '#bytes #iterations BW peak
    BW average MsgRate', BW in MiB/s (perftest's MB/sec is 2^20 B/s)."""
    for ln in text.splitlines():
        p = ln.split()
        if len(p) >= 5 and p[0] == str(size):
            try:
                return {"iters": int(p[1]), "peak_mib_s": float(p[2]),
                        "avg_mib_s": float(p[3]), "mpps": float(p[4])}
            except ValueError:
                continue
    return None


def cmd_perf(a):
    """Run one perftest client (CMD...), keep its output and its figure."""
    if a.argv and a.argv[0] == "--":
        a.argv = a.argv[1:]
    t0 = time.time()
    try:
        r = subprocess.run(a.argv, capture_output=True, text=True, timeout=a.timeout)
        rc, text = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = 124, (e.stdout or b"").decode(errors="replace") if \
            isinstance(e.stdout, bytes) else (e.stdout or "")
    res = {"name": a.name, "cmd": a.argv, "size": a.size, "rc": rc, "t0": t0,
           "t1": time.time(), "output": text}
    res["result"] = parse_perftest(text, a.size) if rc == 0 else None
    if res["result"]:
        res["mb_s"] = res["result"]["avg_mib_s"] * MiB / 1e6
    write_json(a.out, res)
    print(f"{a.name}: " + (f"{res['mb_s']:.1f} MB/s "
                           f"({res['result']['avg_mib_s']:.2f} MiB/s)"
                           if res["result"] else f"no result (exit {rc})"))
    return 0


# ---- the host: what else ran meanwhile ----

def cmd_hostmon(a):
    """Once a second until killed: one line 'epoch other_qemu busy ours
    capacity steal' to OUT: qemu processes that are not descendants of
    ROOT, and the host's busy CPU jiffies (steal excluded), ours (ROOT's
    descendants), the capacity (cores x elapsed) and the jiffies the
    host's own hypervisor stole, since the previous line."""
    hz = os.sysconf("SC_CLK_TCK")
    ncpu = os.cpu_count() or 1

    def procs():
        out = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    st = f.read()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")[0]
            except OSError:
                continue
            rest = st[st.rindex(")") + 2:].split()
            out[int(pid)] = (int(rest[1]), int(rest[11]) + int(rest[12]),
                             os.path.basename(cmd).startswith(b"qemu-system"))
        return out

    def busy():
        """(busy less steal, steal): user..softirq, steal of /proc/stat"""
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v[:8]) - v[3] - v[4] - v[7], v[7]

    def ours_of(ps):
        mine, total, other = set(), 0, 0
        for pid in ps:
            q, seen = pid, 0
            while q > 1 and seen < 64:
                if q == a.root:
                    mine.add(pid)
                    break
                q = ps.get(q, (0,))[0]
                seen += 1
        for pid, (_, cpu, qemu) in ps.items():
            if pid in mine:
                total += cpu
            elif qemu:
                other += 1
        return total, other

    t_prev, (b_prev, st_prev) = time.time(), busy()
    o_prev, _ = ours_of(procs())
    # exited children's time is lost to this count: ours is a lower bound
    with open(a.out, "a") as out:
        while True:
            time.sleep(1)
            t, (b, st) = time.time(), busy()
            o, other = ours_of(procs())
            cap = (t - t_prev) * hz * ncpu
            out.write(f"{t:.2f} {other} {b - b_prev} {max(o - o_prev, 0)} "
                      f"{cap:.0f} {st - st_prev}\n")
            out.flush()
            t_prev, b_prev, o_prev, st_prev = t, b, o, st


# ---- the host: summary ----

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def iperf_mbit(j):
    if not j:
        return None
    try:
        return j["end"]["sum_received"]["bits_per_second"] / 1e6
    except (KeyError, TypeError):
        return None


def lat_delta(before, after, op):
    """(count, mean ms) of one debugfs latency line between two snapshots."""
    try:
        b, e = before["latency"][op], after["latency"][op]
    except (KeyError, TypeError):
        return None
    n = e["count"] - b["count"]
    if n <= 0:
        return {"count": 0}
    return {"count": n, "mean_ms": (e["sum_ns"] - b["sum_ns"]) / n / 1e6}


def stats_delta(before, after, names):
    """fluxonctl cluster --json counters between two snapshots."""
    b = (before.get("cluster") or {}).get("stats") or {}
    e = (after.get("cluster") or {}).get("stats") or {}
    return {k: e[k] - b[k] for k in names if k in b and k in e}


def host_overlap(d, spans):
    """Per measured step: did another qemu run on the host meanwhile?
    (host-qemu.txt: one 'epoch count' sample a second; the guests' clocks
    start from the host's.)"""
    try:
        with open(os.path.join(d, "host-load.txt")) as f:
            samples = [tuple(float(x) for x in ln.split()) for ln in f
                       if len(ln.split()) == 6]
    except (OSError, ValueError):
        return None
    out = {}
    for name, (t0, t1) in spans.items():
        if t0 is None or t1 is None:
            continue
        inside = [x for x in samples if t0 - 0.5 <= x[0] <= t1 + 1.5]
        cap = sum(x[4] for x in inside)
        other_cpu = sum(max(x[2] - x[3], 0) for x in inside)
        out[name] = {"samples": len(inside),
                     "with_other_qemu": sum(1 for x in inside if x[1]),
                     "other_cpu_share": other_cpu / cap if cap else None,
                     "steal_share": sum(x[5] for x in inside) / cap if cap else None}
    return out


PHASES = ("mem4", "mem4c4", "mem1", "ssd16", "ssd4")
RDMA_STATS = ["rdma_conns", "rdma_pulls", "rdma_bytes", "rdma_errors",
              "rdma_fallbacks", "rdma_served", "remote_pulls",
              "remote_pull_errors", "served_pulls", "ssd_pushes"]


def perf_results(d):
    """perf-NAME.json (cluster.py perf) by NAME, those with a figure."""
    out = {}
    for f in sorted(os.listdir(d)):
        if f.startswith("perf-") and f.endswith(".json"):
            x = load(os.path.join(d, f))
            if x and x.get("mb_s"):
                out[f[5:-5]] = x
    return out


def rdma_link(perf, ov):
    """{read-4M: {start, end, mean, used}, ...}: MB/s of each perftest
    case; the mean is over the rounds no other qemu shared the host
    during (host_overlap), over both if neither or both were clean."""
    out = {}
    for key in ("read-4M", "read-16M", "write-4M", "write-16M", "read-4M-serial"):
        got = {}
        for rnd in ("start", "end"):
            x = (perf.get(f"{key}-{rnd}") or {}).get("mb_s")
            if x:
                got[rnd] = x
        if not got:
            continue
        clean = [r for r in got
                 if not ((ov or {}).get(f"perf-{key}-{r}") or {}).get("with_other_qemu")]
        used = clean or list(got)
        out[key] = {"start": got.get("start"), "end": got.get("end"),
                    "mean": statistics.mean(got[r] for r in used), "used": used}
    return out


def rdma_check(g, n2_before, n2_after):
    """Did the phase's bytes move by RDMA?  node1's counters over its
    timed loop (rdma_pulls and rdma_bytes grow by what it got, no
    fallback, no RDMA error), node2's over its side of the phase."""
    d1 = stats_delta(g["before"], g["after"], RDMA_STATS)
    d2 = stats_delta(n2_before, n2_after, RDMA_STATS) if n2_before and n2_after else {}
    ok = (d1.get("rdma_pulls") == g["count"] and d1.get("rdma_bytes") == g["bytes"]
          and d1.get("rdma_fallbacks") == 0 and d1.get("rdma_errors") == 0)
    return {"node1": d1, "node2": d2, "want_pulls": g["count"],
            "want_bytes": g["bytes"], "all_by_rdma": ok}


def cpu_phase(g, idle):
    """CPU per GiB moved of one phase: each guest's non-idle CPU over the
    timed window(s), fluxond's and the reader's; raw, and net of the
    quiet-window background rate (cpu-idle.json)."""
    c = g.get("cpu")
    if not c or not c.get("node1"):
        return None
    gib = g["bytes"] / (1 << 30)
    out = {"mode": c.get("mode"), "windows": c.get("windows"), "gib": gib,
           "reader_s": c.get("reader")}
    total = 0.0
    for node in ("node1", "node2"):
        x = c.get(node)
        if not x:
            out[node] = None
            total = None
            continue
        rate = ((idle or {}).get(node) or {}).get("rate")
        net = x["nonidle_s"] - rate * x["wall_s"] if rate is not None else None
        out[node] = {"wall_s": x["wall_s"], "nonidle_s": x["nonidle_s"],
                     "user_s": x["user"] + x["nice"], "system_s": x["system"],
                     "softirq_s": x["softirq"], "irq_s": x["irq"],
                     "fluxond_s": x["fluxond_s"],
                     "s_per_gib": x["nonidle_s"] / gib,
                     "net_s_per_gib": None if net is None else net / gib,
                     "fluxond_s_per_gib": None if x["fluxond_s"] is None
                     else x["fluxond_s"] / gib}
        if total is not None:
            total += x["nonidle_s"]
    out["both_s_per_gib"] = None if total is None else total / gib
    nets = [out[n]["net_s_per_gib"] for n in ("node1", "node2") if out.get(n)]
    out["both_net_s_per_gib"] = sum(nets) if len(nets) == 2 and None not in nets else None
    return out


def cmd_summary(a):
    d = a.dir
    j = lambda name: load(os.path.join(d, name))	# noqa: E731
    res = {"dir": os.path.abspath(d), "targets": []}
    lines = []
    meta1, meta2 = j("meta-node1.json") or {}, j("meta-node2.json") or {}
    res["guests"] = {"node1": meta1, "node2": meta2}

    ip1, ip2 = iperf_mbit(j("iperf-start.json")), iperf_mbit(j("iperf-end.json"))
    links = [x for x in (ip1, ip2) if x]
    link_mbit = statistics.mean(links) if links else None
    link_mb = link_mbit / 8 if link_mbit else None
    res["link"] = {"iperf_start_mbit": ip1, "iperf_end_mbit": ip2,
                   "mean_mbit": link_mbit, "mean_mb_s": link_mb}
    transport = meta1.get("transport", "tcp")
    rdma = transport == "rdma"
    res["transport"] = transport
    lines.append(f"fluxonkv cluster benchmark: node2 -> node1, transport {transport}, "
                 + (f"{meta1.get('cpus', '?')} vCPU / {meta1.get('mem_mb', '?')} MiB "
                    f"per guest, slub_debug {meta1.get('slub_debug', '?')}"))
    lines.append(f"results: {os.path.abspath(d)}")
    spans = {}
    for name in ("start", "end"):
        ij = j(f"iperf-{name}.json") or {}
        try:
            t = ij["start"]["timestamp"]["timesecs"]
            spans[f"iperf-{name}"] = (t, t + ij["end"]["sum_received"]["seconds"])
        except (KeyError, TypeError):
            pass
    for ph in PHASES:
        g = j(f"get-{ph}.json")
        if g:
            spans[ph] = (g["before"]["t"], g["after"]["t"])
    perf = perf_results(d)
    for name, x in perf.items():
        spans[f"perf-{name}"] = (x["t0"], x["t1"])
    for name, f in (("tcp", "tcp-node1.json"), ("disk", "disk-node2.json")):
        x = j(f)
        if x and "t0" in x:
            spans[name] = (x["t0"], x.get("t1"))
    ov = host_overlap(d, spans)
    res["host_overlap"] = ov
    if ov:
        hit = [f"{k} ({v['with_other_qemu']}/{v['samples']} s)"
               for k, v in ov.items() if v["with_other_qemu"]]
        lines.append("measured steps with another qemu running on the host: "
                     + (", ".join(hit) if hit else "none"))
        lines.append("host CPU used by others during each step (share of "
                     f"{os.cpu_count()} cores; ours excluded): "
                     + ", ".join(f"{k} {v['other_cpu_share'] * 100:.0f}%"
                                 + (f" (+{v['steal_share'] * 100:.0f}% stolen)"
                                    if v["steal_share"] else "")
                                 for k, v in ov.items()
                                 if v["other_cpu_share"] is not None))
    lines.append("")
    fmt = lambda x, f="{:.1f}": "n/a" if x is None else f.format(x)	# noqa: E731
    lines.append(f"link (iperf3 node2 -> node1, 5 s): start {fmt(ip1)} Mbit/s, "
                 f"end {fmt(ip2)} Mbit/s; mean {fmt(link_mbit)} Mbit/s = "
                 f"{fmt(link_mb)} MB/s")
    tcp = j("tcp-node1.json")
    tcpc = {c["size"]: c for c in (tcp or {}).get("cases", [])}
    if tcpc:
        lines.append("TCP request/response node2 -> node1 (one warm connection, "
                     "median): "
                     + "; ".join(f"{human(c['size'])} {c['s']['median'] * 1e3:.1f} ms"
                                 + (f" = {c['mb_s_median']:.1f} MB/s"
                                    if c["size"] >= MiB else "")
                                 for c in tcpc.values()))
    rl = rdma_link(perf, ov)
    if rl:
        res["rdma_link"] = rl
        lines.append("RDMA link (perftest on rxe0, data node2 -> node1: ib_read_bw client "
                     "node1 READs node2's buffer, ib_write_bw client node2 WRITEs into "
                     "node1's; MB/s = 10^6 B/s, perftest's own figure is MiB/s):")
        for key, label in (("read", "ib_read_bw"), ("write", "ib_write_bw")):
            for size in (4 * MiB, 16 * MiB):
                x = rl.get(f"{key}-{size // MiB}M")
                if x:
                    lines.append(f"  {label} {human(size)}: start {fmt(x['start'])}, end "
                                 f"{fmt(x['end'])}; used {fmt(x['mean'])} MB/s"
                                 + ("" if len(x["used"]) == 2 or len(
                                     [v for v in (x["start"], x["end"]) if v]) < 2
                                    else f" (the {x['used'][0]} alone: another qemu "
                                    "shared the host during the other)"))
        x = rl.get("read-4M-serial")
        if x:
            lines.append(f"  ib_read_bw 4 MiB one READ at a time (-o 1, as a serial "
                         f"4 MiB pull): {fmt(x['mean'])} MB/s")
    elif rdma:
        lines.append("RDMA link: no perftest result")
    lines.append("")

    def target(name, met, text):
        res["targets"].append({"target": name, "met": met, "detail": text})
        lines.append(f"[{'MET' if met else 'MISSED' if met is False else 'N/A'}] "
                     f"{name}: {text}")

    idle = {}
    ci = j("cpu-idle.json")
    for node in ("node1", "node2"):
        x = (ci or {}).get(node)
        if x and x.get("wall_s"):
            idle[node] = {"wall_s": x["wall_s"], "nonidle_s": x["nonidle_s"],
                          "rate": x["nonidle_s"] / x["wall_s"],
                          "fluxond_s": x.get("fluxond_s")}
    res["cpu_idle"] = idle
    checks, cpus = {}, {}

    def phase_extras(phase, g):
        """The phase's RDMA counters and CPU, for the sections below."""
        c = cpu_phase(g, idle)
        if c:
            cpus[phase] = res[phase]["cpu"] = c
        res[phase]["rdma_counters"] = chk = rdma_check(
            g, j(f"snap-node2-{phase}-before.json"), j(f"snap-node2-{phase}-after.json"))
        checks[phase] = chk

    def rdma_ssd_targets(phase, size, get_mb, disk_mb):
        """The issue's bound (ib_write_bw) and the READ-based one."""
        n = size // MiB
        for verb, why in (("write", "the issue's bound"),
                          ("read", "not the issue's bound: our push moves by READ")):
            bw = rl.get(f"{verb}-{n}M", {}).get("mean")
            bound = min(disk_mb, bw) if bw else None
            r = get_mb / bound if bound else None
            res[phase][f"bound_ib_{verb}_mb_s"] = bound
            res[phase][f"ratio_to_disk_ib_{verb}_bw"] = r
            target(f"remote SSD {n} MiB (RDMA) >= 0.8x min(disk, ib_{verb}_bw {n} MiB) "
                   f"({why})", None if r is None else r >= 0.8,
                   f"{get_mb:.1f} MB/s vs min(disk {disk_mb:.0f}, ib_{verb}_bw "
                   f"{fmt(bw)}) MB/s = {fmt(r, '{:.2f}')}x")

    errors = 0
    for phase, label in (("mem4", "4 MiB"), ("mem4c4", "4 MiB, 4 readers"),
                         ("mem1", "1 MiB")):
        g = j(f"get-{phase}.json")
        if not g:
            lines.append(f"remote memory {label}: no result")
            errors += 1
            continue
        errors += g["wrong_source"] + g["content_errors"] + g["full_check_errors"]
        ratio = g["mb_s_loop"] / link_mb if link_mb else None
        gs = g["get_s"]
        per_get_mb = g["size"] / 1e6 / gs["median"]
        fetch = lat_delta(g["before"], g["after"], "fetch")
        gr = lat_delta(g["before"], g["after"], "get_remote")
        res[phase] = {"size": g["size"], "count": g["count"],
                      "loop_s": g["loop_s"], "mb_s": g["mb_s_loop"],
                      "ratio_to_link": ratio,
                      "get_ms_median": gs["median"] * 1e3,
                      "get_ms_p95": gs["p95"] * 1e3,
                      "get_ms_max": gs["max"] * 1e3,
                      "per_get_mb_s_median": per_get_mb,
                      "sources": sorted({x["source"] for x in g["gets"]}),
                      "wrong_source": g["wrong_source"],
                      "content_errors": g["content_errors"],
                      "full_check_errors": g["full_check_errors"],
                      "module_fetch": fetch, "module_get_remote": gr,
                      "tcp_same_size": tcpc.get(g["size"])}
        res[phase]["threads"] = g.get("threads", 1)
        res[phase]["node1_cluster_delta"] = stats_delta(
            g["before"], g["after"], ["remote_pulls", "remote_pull_bytes",
                                      "fetches", "fetch_errors"])
        detail = (f"{g['count']} x {label} pulled in {g['loop_s']:.2f} s = "
                  f"{g['mb_s_loop']:.1f} MB/s payload = {fmt(ratio, '{:.2f}')}x "
                  f"the link; per get median {gs['median'] * 1e3:.1f} ms, p95 "
                  f"{gs['p95'] * 1e3:.1f} ms")
        if fetch and fetch.get("count"):
            detail += (f"; module: get_remote mean {gr['mean_ms']:.1f} ms, fetch "
                       f"mean {fetch['mean_ms']:.1f} ms")
        if g["size"] in tcpc:
            detail += (f"; a bare TCP {human(g['size'])} request/response: "
                       f"{tcpc[g['size']]['s']['median'] * 1e3:.1f} ms")
        phase_extras(phase, g)
        if rdma:
            rd4 = rl.get("read-4M", {}).get("mean")
            rds = rl.get("read-4M-serial", {}).get("mean")
            rratio = g["mb_s_loop"] / rd4 if rd4 else None
            sratio = g["mb_s_loop"] / rds if rds else None
            res[phase]["ratio_to_ib_read_bw_4m"] = rratio
            res[phase]["ratio_to_ib_read_bw_4m_one_read"] = sratio
            detail = detail.replace("x the link;", "x the TCP link (iperf3);", 1)
            detail = (f"{fmt(rratio, '{:.2f}')}x ib_read_bw 4 MiB ({fmt(rd4)} MB/s), "
                      f"{fmt(sratio, '{:.2f}')}x it with one READ at a time ({fmt(rds)}); "
                      + detail)
            met = None if rratio is None else rratio >= 0.8
            if phase == "mem4":
                target("remote memory get (RDMA) >= 0.8x ib_read_bw at 4 MiB (one reader)",
                       met, detail)
            elif phase == "mem4c4":
                target("... the same with 4 readers at once", met, detail)
            else:
                target("remote memory get (RDMA) at 1 MiB (no target; vs ib_read_bw 4 MiB)",
                       None, detail)
        elif phase == "mem4":
            target("remote memory get payload >= 0.8x the link at 4 MiB (one reader)",
                   None if ratio is None else ratio >= 0.8, detail)
        elif phase == "mem4c4":
            target("... the same with 4 readers at once",
                   None if ratio is None else ratio >= 0.8, detail)
        else:
            target("remote memory get payload at 1 MiB (no target; vs the link)",
                   None, detail)
    lines.append("")

    pm, pt = j("put-node2.json"), j("put-node2-trips.json") or {}
    rr = tcpc.get(4096)
    if pm and pm.get("put_s"):
        med = pm["put_s"]["median"]
        rrm = rr["s"]["median"] if rr else None
        ratio = med / rrm if rrm else None
        trips = pt.get("puts_one_trip")
        res["put4k"] = {"count": pm["count"], "put_s": pm["put_s"],
                        "tcp_rr_4k_s": rrm, "ratio_to_tcp_rr": ratio,
                        "puts_one_trip": trips}
        detail = (f"node2 put 4 KiB median {med * 1e3:.2f} ms (p95 "
                  f"{pm['put_s']['p95'] * 1e3:.2f} ms, {pm['count']} puts, Python), "
                  f"{fmt(ratio, '{:.2f}')}x a bare TCP 4 KiB request/response "
                  f"({fmt(rrm * 1e3 if rrm else None, '{:.2f}')} ms); "
                  f"{fmt(trips, '{}')} of them one PUT each (module puts_one_trip)")
        target("cluster put: at most one round trip to the master, the route "
               "published before it returns (module puts_one_trip = puts)",
               None if trips is None else trips == pm["count"], detail)
        target("cluster put 4 KiB latency vs one request/response on the link "
               "(no target: the link's round trip plus node2's netlink hop to "
               "fluxond and the master's work, each a process wake-up on a "
               "1-vCPU guest)", None,
               f"{fmt(ratio, '{:.2f}')}x")
        lines.append("")

    g, disk = j("get-ssd16.json"), j("disk-node2.json")
    if g and disk:
        errors += g["wrong_source"] + g["content_errors"] + g["full_check_errors"]
        size = g["size"]
        t_get = g["get_s"]["median"]
        t_single = disk["single_s"]["median"]
        t_par = disk["parallel_s"]["median"]
        t_read = min(t_single, t_par)
        c16 = tcpc.get(size)
        t_send = c16["s"]["median"] if c16 else None
        rts = [c for c in (tcp or {}).get("disk_cases", []) if c["size"] == size]
        t_rts = rts[0]["s"]["median"] if rts else None
        n_rts = rts[0]["count"] if rts else 0
        pairs = [x for x in g["gets"] if "read_then_send_s" in x]
        if pairs:	# measured right after each get: these win
            t_rts = statistics.median(x["read_then_send_s"] for x in pairs)
            t_send = statistics.median(x["send_s"] for x in pairs)
            n_rts = len(pairs)
            pair_ratio = statistics.median(x["get_s"] / x["read_then_send_s"]
                                           for x in pairs)
            pair_wins = sum(1 for x in pairs if x["get_s"] < x["read_then_send_s"])
        link_t = size / 1e6 / link_mb if link_mb else None
        disk_mb = size / 1e6 / t_read
        get_mb = size / 1e6 / t_get
        bound_mb = min(disk_mb, link_mb) if link_mb else None
        ratio = get_mb / bound_mb if bound_mb else None
        fetch = lat_delta(g["before"], g["after"], "fetch")
        gr = lat_delta(g["before"], g["after"], "get_remote")
        res["ssd16"] = {
            "size": size, "count": g["count"],
            "get_ms_median": t_get * 1e3, "get_ms_p95": g["get_s"]["p95"] * 1e3,
            "get_ms_all": [x["get_s"] * 1e3 for x in g["gets"]],
            "get_mb_s": get_mb,
            "disk_read_ms_single": t_single * 1e3,
            "disk_read_ms_parallel": t_par * 1e3,
            "disk_parallel": f"{disk['parallel_jobs']} x {disk['parallel_chunk']} B",
            "disk_mb_s": disk_mb,
            "tcp_send_ms": None if t_send is None else t_send * 1e3,
            "link_ms_at_iperf": None if link_t is None else link_t * 1e3,
            "read_plus_send_ms": None if t_send is None else (t_read + t_send) * 1e3,
            "read_then_send_measured_ms": None if t_rts is None else t_rts * 1e3,
            "paired": bool(pairs),
            "pair_ratio_median": pair_ratio if pairs else None,
            "pair_get_faster": pair_wins if pairs else None,
            "pairs": [{"get_ms": x["get_s"] * 1e3,
                       "read_then_send_ms": x["read_then_send_s"] * 1e3,
                       "send_ms": x["send_s"] * 1e3} for x in pairs],
            "read_then_send_iperf_ms": None if link_t is None else (t_read + link_t) * 1e3,
            "bound_mb_s": bound_mb, "ratio_to_bound": ratio,
            "sources": sorted({x["source"] for x in g["gets"]}),
            "wrong_source": g["wrong_source"], "content_errors": g["content_errors"],
            "full_check_errors": g["full_check_errors"],
            "module_fetch": fetch, "module_get_remote": gr,
            "fillers": (j("fill-node2.json") or {}).get("fillers"),
        }
        res["ssd16"]["node1_cluster_delta"] = stats_delta(
            g["before"], g["after"], ["remote_pulls", "remote_pull_bytes",
                                      "fetches", "fetch_errors"])
        lines.append(f"remote SSD {size // MiB} MiB ({g['count']} values, each only "
                     f"on node2's SSD): get median {t_get * 1e3:.1f} ms "
                     f"(p95 {g['get_s']['p95'] * 1e3:.1f}) = {get_mb:.1f} MB/s; "
                     f"sources {res['ssd16']['sources']}")
        lines.append(f"  node2 O_DIRECT read of {size // MiB} MiB: one read "
                     f"{t_single * 1e3:.1f} ms, {disk['parallel_jobs']} x "
                     f"{disk['parallel_chunk'] // MiB} MiB at once {t_par * 1e3:.1f} ms "
                     f"(best {disk_mb:.0f} MB/s)")
        if t_send is not None:
            lines.append(f"  TCP {size // MiB} MiB node2 -> node1: {t_send * 1e3:.1f} ms; "
                         f"at the iperf3 rate {fmt(link_t and link_t * 1e3)} ms")
        if t_rts is not None:
            lines.append(f"  node2 reads {size // MiB} MiB O_DIRECT, then sends it: "
                         f"{t_rts * 1e3:.1f} ms (median of {n_rts}"
                         + (", each right after a get" if pairs else "") + ")")
        if t_rts is not None:
            # paired: the median of get / read-then-send, pair by pair
            # (drift between the two cancels); else the medians
            target(f"remote SSD {size // MiB} MiB faster than 'read it all, then send it all'"
                   + (" (over TCP: no target with RDMA)" if rdma else ""),
                   None if rdma else pair_ratio < 1 if pairs else t_get < t_rts,
                   f"get {t_get * 1e3:.1f} ms vs {t_rts * 1e3:.1f} ms measured (node2 "
                   f"reads 16 MiB O_DIRECT, then sends it) = {t_get / t_rts:.2f}x; "
                   + (f"pair by pair (judged): median ratio {pair_ratio:.2f}, the get "
                      f"faster in {pair_wins} of {len(pairs)}; " if pairs else "")
                   + 
                   f"the parts measured apart: read {t_read * 1e3:.1f} + send "
                   f"{t_send * 1e3:.1f} = {(t_read + t_send) * 1e3:.1f} ms"
                   + (f", with the iperf3 rate as the send {(t_read + link_t) * 1e3:.1f} ms"
                      if link_t else "")
                   + f"; the most an overlap can save here is the read, "
                   f"{t_read * 1e3:.1f} ms")
        elif t_send is not None:	# older runs: the parts only
            rs = t_read + t_send
            target(f"remote SSD {size // MiB} MiB faster than 'read it all, then send it all'",
                   t_get < rs,
                   f"get {t_get * 1e3:.1f} ms vs read {t_read * 1e3:.1f} + send "
                   f"{t_send * 1e3:.1f} = {rs * 1e3:.1f} ms ({t_get / rs:.2f}x"
                   + (f"; with the iperf3 rate as the send: {(t_read + link_t) * 1e3:.1f} ms"
                      if link_t else "") + ")")
        else:
            target(f"remote SSD {size // MiB} MiB faster than 'read it all, then send it all'",
                   None, "no TCP baseline")
        target(f"remote SSD {size // MiB} MiB >= 0.8x min(disk, link)"
               + (" (the TCP link, iperf3: no target with RDMA)" if rdma else ""),
               None if ratio is None or rdma else ratio >= 0.8,
               f"{get_mb:.1f} MB/s vs min(disk {disk_mb:.0f}, link {fmt(link_mb)}) "
               f"MB/s = {fmt(ratio, '{:.2f}')}x"
               + (f"; module: get_remote mean {gr['mean_ms']:.1f} ms, fetch mean "
                  f"{fetch['mean_ms']:.1f} ms" if fetch and fetch.get("count") else ""))
        phase_extras("ssd16", g)
        if rdma:
            rdma_ssd_targets("ssd16", size, get_mb, disk_mb)
    else:
        lines.append("remote SSD: no result")
        errors += 1
    lines.append("")

    g, disk = j("get-ssd4.json"), j("disk4-node2.json")
    if g and disk:
        errors += g["wrong_source"] + g["content_errors"] + g["full_check_errors"]
        size = g["size"]
        t_get = g["get_s"]["median"]
        t_read = min(disk["single_s"]["median"], disk["parallel_s"]["median"])
        disk_mb = size / 1e6 / t_read
        get_mb = size / 1e6 / t_get
        bound_mb = min(disk_mb, link_mb) if link_mb else None
        ratio = get_mb / bound_mb if bound_mb else None
        fetch = lat_delta(g["before"], g["after"], "fetch")
        gr = lat_delta(g["before"], g["after"], "get_remote")
        res["ssd4"] = {
            "size": size, "count": g["count"], "loop_s": g["loop_s"],
            "mb_s_loop": g["mb_s_loop"],
            "get_ms_median": t_get * 1e3, "get_ms_p95": g["get_s"]["p95"] * 1e3,
            "get_ms_all": [x["get_s"] * 1e3 for x in g["gets"]],
            "get_mb_s": get_mb, "disk_read_ms": t_read * 1e3, "disk_mb_s": disk_mb,
            "bound_mb_s": bound_mb, "ratio_to_bound": ratio,
            "sources": sorted({x["source"] for x in g["gets"]}),
            "wrong_source": g["wrong_source"], "content_errors": g["content_errors"],
            "full_check_errors": g["full_check_errors"],
            "module_fetch": fetch, "module_get_remote": gr}
        lines.append(f"remote SSD {size // MiB} MiB ({g['count']} values, each only on "
                     f"node2's SSD, one reader, no paired baseline): get median "
                     f"{t_get * 1e3:.1f} ms (p95 {g['get_s']['p95'] * 1e3:.1f}) = "
                     f"{get_mb:.1f} MB/s (the loop: {g['mb_s_loop']:.1f} MB/s); sources "
                     f"{res['ssd4']['sources']}")
        lines.append(f"  node2 O_DIRECT read of {size // MiB} MiB: {t_read * 1e3:.1f} ms "
                     f"({disk_mb:.0f} MB/s)")
        target(f"remote SSD {size // MiB} MiB vs min(disk, "
               + ("the TCP link, iperf3" if rdma else "link") + ") (no target)", None,
               f"{get_mb:.1f} MB/s vs min(disk {disk_mb:.0f}, link {fmt(link_mb)}) "
               f"MB/s = {fmt(ratio, '{:.2f}')}x"
               + (f"; module: get_remote mean {gr['mean_ms']:.1f} ms, fetch mean "
                  f"{fetch['mean_ms']:.1f} ms" if fetch and fetch.get("count") else ""))
        phase_extras("ssd4", g)
        if rdma:
            rdma_ssd_targets("ssd4", size, get_mb, disk_mb)
        lines.append("")
    elif meta1.get("n4s"):
        lines.append("remote SSD 4 MiB: no result")
        errors += 1
        lines.append("")

    if rdma:
        lines.append("bytes moved by RDMA (fluxonctl cluster --json: node1's counters "
                     "over each timed loop, node2's over its side of the phase):")
        for phase, c in checks.items():
            d1, d2 = c["node1"], c["node2"]
            lines.append(
                f"  {phase}: {'OK' if c['all_by_rdma'] else 'NOT ALL BY RDMA'}: node1 "
                f"rdma_pulls +{d1.get('rdma_pulls', '?')} (of {c['want_pulls']} gets), "
                f"rdma_bytes +{d1.get('rdma_bytes', '?')} (of {c['want_bytes']}), "
                f"rdma_fallbacks +{d1.get('rdma_fallbacks', '?')}, rdma_errors "
                f"+{d1.get('rdma_errors', '?')}, rdma_conns +{d1.get('rdma_conns', '?')}"
                f"; node2 rdma_served +{d2.get('rdma_served', '?')}")
        res["all_by_rdma"] = bool(checks) and all(c["all_by_rdma"] for c in checks.values())
        lines.append("")
        # Losses on the sender of the data (node2's snapshots around each
        # phase, each perftest server's around its case): every one costs an
        # RC retransmission timeout, so a figure with losses is the link's.
        losses = {}
        for phase in checks:
            b = j(f"snap-node2-{phase}-before.json")
            a = j(f"snap-node2-{phase}-after.json")
            losses[phase] = link_loss((b or {}).get("link"), (a or {}).get("link"))
        for name in sorted(perf):
            losses[f"perftest {name}"] = link_loss(j(f"perf-{name}-server-link-before.json"),
                                                   j(f"perf-{name}-server-link-after.json"))
        res["link_losses"] = losses
        lines.append("link losses on the data's sender (eth0 qdisc drops, Soft-RoCE "
                     "retry counters; none = no packet lost):")
        for name, x in losses.items():
            lines.append(f"  {name}: " + ("?" if x is None else ", ".join(
                f"{k} +{v}" for k, v in x.items()) or "none"))
        lines.append("")

    if cpus:
        lines.append("CPU per GiB moved (each guest's non-idle CPU from /proc/stat, user + "
                     "nice + system + irq + softirq, over the timed loop, or the gets "
                     "alone where paired; fluxond's utime + stime; 'reader' is node1's "
                     "timed Python process, its per-get checks included; net = less the "
                     "quiet-window background rate):")
        for node in ("node1", "node2"):
            x = idle.get(node)
            if x:
                lines.append(f"  background ({node}, {x['wall_s']:.1f} s quiet): "
                             f"{x['rate']:.3f} CPU-s/s")
        for phase, c in cpus.items():
            parts = []
            for node in ("node1", "node2"):
                x = c.get(node)
                if not x:
                    parts.append(f"{node} ?")
                    continue
                parts.append(
                    f"{node} {x['nonidle_s']:.2f} s = {x['s_per_gib']:.1f} s/GiB (net "
                    f"{fmt(x['net_s_per_gib'])}; fluxond {fmt(x['fluxond_s'], '{:.2f}')} s"
                    f" = {fmt(x['fluxond_s_per_gib'])} s/GiB; sys {x['system_s']:.2f} "
                    f"softirq {x['softirq_s']:.2f} user {x['user_s']:.2f})")
            n1w = (c.get("node1") or {}).get("wall_s")
            lines.append(f"  {phase} ({c['gib']:.3f} GiB, {fmt(n1w, '{:.1f}')} s"
                         + (f" in {c['windows']} windows" if c["windows"] > 1 else "")
                         + f"): both {fmt(c['both_s_per_gib'])} s/GiB (net "
                         f"{fmt(c['both_net_s_per_gib'])}); " + "; ".join(parts)
                         + (f"; reader {c['reader_s']:.2f} s" if c.get("reader_s")
                            is not None else ""))
        lines.append("")
    lines.append(f"content / source errors: {errors} (per get: length, source, first "
                 f"and last KiB, a stamp at every MiB; then SHA-256 of every value)")
    res["errors"] = errors
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write(text)
    write_json(os.path.join(d, "results.json"), res)
    sys.stdout.write(text)
    return 1 if errors else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("put")
    s.add_argument("--prefix", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--size", type=size_arg, required=True)
    s.add_argument("--manifest", required=True)
    s = sub.add_parser("fill")
    s.add_argument("--manifest", required=True, action="append")
    s.add_argument("--prefix", default="fill")
    s.add_argument("--size", type=size_arg, default=8 * MiB)
    s.add_argument("--max", type=int, default=64)
    s.add_argument("--out", required=True)
    s = sub.add_parser("delete")
    s.add_argument("source", help="a manifest or a fill result")
    s = sub.add_parser("get")
    s.add_argument("--manifest", required=True)
    s.add_argument("--phase", required=True)
    s.add_argument("--want-source", required=True)
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--pair-host", help="tcpserve to time after each get")
    s.add_argument("--pair-port", type=int, default=7600)
    s.add_argument("--pair-disk-offsets-mb", default="0")
    s.add_argument("--cpu-host", help="cpuserve to sample around the timed gets")
    s.add_argument("--ctl")
    s.add_argument("--out", required=True)
    s = sub.add_parser("diskread")
    s.add_argument("--dev", required=True)
    s.add_argument("--size", type=size_arg, default=16 * MiB)
    s.add_argument("--offsets-mb", required=True)
    s.add_argument("--chunk", type=size_arg, default=4 * MiB)
    s.add_argument("--jobs", type=int, default=4)
    s.add_argument("--out", required=True)
    s = sub.add_parser("tcpserve")
    s.add_argument("--port", type=int, default=7599)
    s.add_argument("--max-size", type=size_arg, default=16 * MiB)
    s.add_argument("--ready")
    s.add_argument("--dev", help="the raw disk, for read-then-send requests")
    s.add_argument("--timeout", type=float, default=300)
    s = sub.add_parser("tcpget")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, default=7599)
    s.add_argument("--plan", required=True, help="SIZExCOUNT,... from memory")
    s.add_argument("--disk-plan", help="SIZExCOUNT,... read from the disk, then sent")
    s.add_argument("--disk-offsets-mb", default="0")
    s.add_argument("--timeout", type=float, default=120)
    s.add_argument("--out", required=True)
    s = sub.add_parser("cpuserve")
    s.add_argument("--port", type=int, default=CPU_PORT)
    s.add_argument("--ready")
    s = sub.add_parser("cpuidle")
    s.add_argument("--host", required=True)
    s.add_argument("--seconds", type=float, default=3)
    s.add_argument("--out", required=True)
    s = sub.add_parser("perf")
    s.add_argument("--name", required=True)
    s.add_argument("--size", type=size_arg, required=True)
    s.add_argument("--timeout", type=float, default=90)
    s.add_argument("--out", required=True)
    s.add_argument("argv", nargs=argparse.REMAINDER, help="-- the perftest client")
    s = sub.add_parser("snap")
    s.add_argument("--ctl")
    s.add_argument("--out", required=True)
    s = sub.add_parser("linkstat")
    s.add_argument("--out", required=True)
    s = sub.add_parser("hostmon")
    s.add_argument("--root", type=int, required=True)
    s.add_argument("--out", required=True)
    s = sub.add_parser("summary")
    s.add_argument("dir")
    a = p.parse_args()
    return globals()["cmd_" + a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
