# SPDX-License-Identifier: GPL-2.0
"""The extension's own calls against the real module: lookups that read
nothing, copies without a holder, batches in one call, the buffer
protocol of a real holder, and the GIL released while the kernel waits."""
import ctypes
import errno
import os
import signal
import threading

import pytest

from conftest import pattern
from fluxonkv import FluxonKVError, Lookup, Store


def counters(env):
    return {n: env.sysfs(n) for n in ("gets", "hits_memory", "misses", "holders")}


def test_lookup_says_what_a_get_would_without_reading(kv, key, fluxon_env):
    k = key()
    value = pattern(300_000, 31)
    put_id = kv.put(k, value)
    before = counters(fluxon_env)
    r = kv.lookup(k)
    assert isinstance(r, Lookup)
    assert (r.len, r.put_id, r.source) == (len(value), put_id, "memory")
    assert kv.lookup(key()) is None
    assert kv.exists(k) is True and kv.exists(key()) is False
    assert kv.lookup_many([k, key(), k]) == [r, None, r]
    assert kv.exists_many([key(), k]) == [False, True]
    # no get, hit, miss or holder was counted for any of that
    assert counters(fluxon_env) == before


def test_get_into_copies_without_a_holder(kv, key, fluxon_env):
    k = key()
    value = pattern(200_001, 32)
    kv.put(k, value)
    holders = fluxon_env.sysfs("holders")
    dst = bytearray(250_000)
    assert kv.get_into(k, dst) == len(value)
    assert dst[:len(value)] == value and not any(dst[len(value):])
    raw = (ctypes.c_char * len(value))()
    assert kv.get_into(k, ctypes.addressof(raw), len(raw)) == len(value)
    assert raw.raw == value
    assert kv.get_into(key(), dst) is None
    with pytest.raises(FluxonKVError) as ei:
        kv.get_into(k, bytearray(10))
    assert ei.value.errno == errno.ENOBUFS and "does not fit" in ei.value.strerror
    with pytest.raises(TypeError):
        kv.get_into(k, b"read-only destination")
    with pytest.raises(TypeError):
        kv.get_into(k, ctypes.addressof(raw))  # an address needs its size
    assert fluxon_env.sysfs("holders") == holders


def test_raw_address_batches_report_per_item(kv, key):
    keys = [key() for _ in range(3)]
    values = [pattern(10_000 * (i + 1), 40 + i) for i in range(3)]
    srcs = [(ctypes.c_char * len(v)).from_buffer_copy(v) for v in values]
    res = kv.put_from_many(keys + [b"x" * 300], [ctypes.addressof(s) for s in srcs]
                           + [ctypes.addressof(srcs[0])],
                           [len(v) for v in values] + [10])
    assert all(r > 0 for r in res[:3]) and res[3] == -errno.E2BIG
    dsts = [(ctypes.c_char * 30_000)() for _ in range(4)]
    res = kv.get_into_many(keys[:2] + [key(), keys[2]],
                           [ctypes.addressof(d) for d in dsts],
                           [30_000, 30_000, 30_000, 100])
    assert res == [len(values[0]), len(values[1]), -errno.ENOENT, -errno.ENOBUFS]
    assert dsts[0].raw[:len(values[0])] == values[0]
    assert dsts[1].raw[:len(values[1])] == values[1]
    with pytest.raises(ValueError, match="differ in length"):
        kv.get_into_many(keys, [0], [1, 2, 3])


def test_delete_many_keeps_order(kv, key):
    keys = [key() for _ in range(3)]
    kv.put_many({k: b"v" for k in keys[:2]})
    assert kv.delete_many([keys[0], keys[2], keys[1]]) == [True, False, True]
    assert kv.exists_many(keys) == [False, False, False]


def test_release_many_releases_them_all_or_none(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    keys = [key() for _ in range(4)]
    kv.put_many({k: pattern(5000, i) for i, k in enumerate(keys)})
    hs = kv.get_many(keys)
    assert fluxon_env.sysfs("holders") == base + 4
    m = memoryview(hs[2])
    with pytest.raises(BufferError):
        kv.release_many(hs)
    assert fluxon_env.sysfs("holders") == base + 4 and not any(h.released for h in hs)
    del m
    with Store() as other:
        kv.put(keys[0], b"other")
        foreign = other.get(keys[0])
        with pytest.raises(ValueError, match="another Store"):
            kv.release_many(hs + [foreign])
        assert fluxon_env.sysfs("holders") == base + 5
    kv.release_many(hs + [hs[0]])  # duplicates and released ones are skipped
    assert all(h.released for h in hs)
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert kv._holders == 0


def test_get_many_failure_keeps_no_holder(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    kv.put(k, b"taken then given back")
    with pytest.raises(FluxonKVError) as ei:
        kv.get_many([k, k, b"y" * 300, k])
    assert ei.value.errno == errno.E2BIG
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_put_many_checks_every_value_before_storing(kv, key):
    good = key()
    with pytest.raises(TypeError, match="buffer protocol"):
        kv.put_many([(good, b"fine"), (key(), 42)])
    assert kv.lookup(good) is None


def test_real_holder_is_a_buffer(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    value = pattern(1 << 20, 33)
    kv.put(k, value)
    h = kv.get(k)
    m = memoryview(h)
    assert m.readonly and m.nbytes == len(value) and m == value
    assert kv.segment_base <= h.address < kv.segment_base + kv.segment_size
    with pytest.raises(BufferError):
        h.release()
    del m
    h.release()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_closed_store_refuses_the_native_calls(fluxon_env, key):
    kv = Store()
    kv.close()
    for op in (lambda: kv.lookup(key()), lambda: kv.get_into(key(), bytearray(4)),
               lambda: kv.lookup_many([key()]), lambda: kv.release_many([]),
               lambda: kv.put_from_many([key()], [0], [1])):
        with pytest.raises(ValueError, match="closed"):
            op()


def test_holder_outlives_a_dropped_store(fluxon_env, key):
    base = fluxon_env.sysfs("holders")
    kv = Store()
    k = key()
    kv.put(k, b"still mapped")
    h = kv.get(k)
    del kv  # no close(): the holder keeps the device and mapping
    assert bytes(h) == b"still mapped"
    h.release()
    assert fluxon_env.wait_sysfs("holders", base) == base


@pytest.mark.parametrize("op", ["put", "delete", "put_many", "put_from_many",
                                "delete_many"])
def test_blocking_calls_release_the_gil(kv, key, fluxon_env, puts_via_master,
                                       op):
    """With fluxond stopped each of these waits in the kernel for it (a put
    or delete needs the master; a local get or lookup does not, and a get
    that would block -- an SSD refill -- takes the same code path); other
    Python threads must keep running meanwhile."""
    k = key()
    src = ctypes.create_string_buffer(b"v", 1)
    call = {"put": lambda: kv.put(k, b"v"), "delete": lambda: kv.delete(k),
            "put_many": lambda: kv.put_many({k: b"v"}),
            "put_from_many": lambda: kv.put_from_many(
                [k], [ctypes.addressof(src)], [1]),
            "delete_many": lambda: kv.delete_many([k])}[op]
    fluxon_env.call_with_daemon_stopped(call)


def test_a_put_needs_no_running_daemon_by_default(kv, key, fluxon_env):
    """fluxond's default on one node: the module publishes a put itself,
    so it completes (and reads back) while the daemon is stopped; the
    daemon learns of it afterwards and deletes it."""
    k = key()
    local = fluxon_env.sysfs("puts_local")
    os.kill(fluxon_env.daemon.pid, signal.SIGSTOP)
    try:
        put_id = kv.put(k, b"no round trip")
        with kv.get(k) as h:
            assert bytes(h) == b"no round trip" and h.put_id == put_id
    finally:
        os.kill(fluxon_env.daemon.pid, signal.SIGCONT)
    assert fluxon_env.sysfs("puts_local") == local + 1
    kv.delete(k)
    assert not kv.exists(k)


def test_close_while_a_call_waits_in_the_kernel(fluxon_env, puts_via_master,
                                               key):
    """close() from another thread while a put waits for the (stopped)
    daemon: the device stays open under the call, which completes; the
    store is closed for everything after."""
    kv = Store()
    k = key()
    closed = []

    def close_during():
        kv.close()
        closed.append(kv.closed)

    t = threading.Timer(0.1, close_during)
    t.start()
    put_id = fluxon_env.call_with_daemon_stopped(
        lambda: kv.put(k, b"finished after close"), spin=0.4)
    t.join()
    assert closed == [True] and put_id > 0
    with pytest.raises(ValueError, match="closed"):
        kv.get(k)
    with Store() as other, other.get(k) as h:
        assert bytes(h) == b"finished after close"
