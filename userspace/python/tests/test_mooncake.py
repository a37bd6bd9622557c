# SPDX-License-Identifier: GPL-2.0
"""The Mooncake-compatible adapter against the real module and daemon.

Besides each call's contract, the stack_* tests transcribe the call
sequences the AI stacks make on MooncakeDistributedStore (argument
orders, pointer layouts, key shapes, threads and the return values they
test), as read in these versions of their sources:

* vLLM ``vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/
  worker.py`` at 003df2961dd8 (and ``store/data.py`` at 6d6eb50d7926);
* SGLang ``python/sglang/srt/mem_cache/storage/mooncake_store/
  mooncake_store.py`` at 00fe477f32b3;
* LMCache ``lmcache/v1/storage_backend/connector/mooncakestore_connector.py``
  at 01aed921caf3.

The functions and calls each test follows are named in its docstring.
"""
import ctypes
import errno
import os
import re
import subprocess
import sys
import threading

import pytest

from conftest import pattern
from fluxonkv import _native, mooncake
from fluxonkv.mooncake import (INTERNAL_ERROR, INVALID_PARAMS,
                               NO_AVAILABLE_HANDLE, OBJECT_NOT_FOUND,
                               MooncakeDistributedStore,
                               MooncakeHostMemAllocator, ReplicateConfig,
                               SoftPinAction)


@pytest.fixture
def mc(fluxon_env):
    store = MooncakeDistributedStore()
    assert store.setup("node0", "http://127.0.0.1:8080/metadata",
                       3200 * 1024 * 1024, 512 * 1024 * 1024, "tcp", "",
                       "127.0.0.1:50051") == 0
    yield store
    assert store.close() == 0


@pytest.fixture
def new_store(fluxon_env):
    """new_store() -> a MooncakeDistributedStore not set up yet, closed
    after the test whatever happens (a store left open would keep the
    module loaded)."""
    made = []

    def make():
        made.append(MooncakeDistributedStore())
        return made[-1]
    yield make
    for s in made:
        s.close()


def buffers(values, spare=0):
    """ctypes arrays holding @values (plus @spare bytes each) and their
    addresses, as a connector's registered host pool would give."""
    arrs = [(ctypes.c_char * (len(v) + spare)).from_buffer_copy(v + bytes(spare))
            for v in values]
    return arrs, [ctypes.addressof(a) for a in arrs]


def test_unset_store_fails_softly():
    store = MooncakeDistributedStore()
    assert store.put("k", b"v") < 0
    assert store.get("k") == b""
    assert store.get_buffer("k") is None
    assert store.is_exist("k") == -1
    assert store.batch_is_exist(["a", "b"]) == [-1, -1]
    assert store.last_error is not None


def test_replicate_config_is_importable_and_accepted(mc, key):
    cfg = ReplicateConfig()
    cfg.replica_num = 2
    cfg.with_soft_pin = True
    cfg.preferred_segment = mc.get_hostname()
    cfg.group_ids = ["g"]  # newer Mooncake fields are just attributes
    k = key()
    assert mc.put(k, b"configured", cfg) == 0
    assert mc.put(k, b"configured", config=cfg) == 0
    assert mc.get(k) == b"configured"


def test_put_get_remove_with_mooncake_codes(mc, key):
    k = key()
    value = pattern(123_457, 5)
    assert mc.is_exist(k) == 0
    assert mc.get(k) == b""
    assert mc.get_size(k) == OBJECT_NOT_FOUND
    assert mc.put(k, value) == 0
    assert mc.is_exist(k) == 1
    assert mc.get(k) == value
    assert mc.get_size(k) == len(value)
    assert mc.remove(k) == 0
    assert mc.remove(k) == OBJECT_NOT_FOUND
    assert mc.is_exist(k) == 0


def test_existence_and_size_never_read_the_value(mc, key, fluxon_env):
    k = key()
    mc.put(k, pattern(1 << 20, 6))
    before = [fluxon_env.sysfs(n) for n in ("gets", "hits_memory", "holders")]
    assert mc.is_exist(k) == 1
    assert mc.batch_is_exist([k, key(), k]) == [1, 0, 1]
    assert mc.get_size(k) == 1 << 20
    assert mc.get_size(key()) == OBJECT_NOT_FOUND
    assert [fluxon_env.sysfs(n) for n in ("gets", "hits_memory", "holders")] == before


def test_bad_arguments_are_invalid_params(mc):
    assert mc.put("k", memoryview(b"abcd")[::2]) == INVALID_PARAMS
    assert mc.put(42, b"v") == INVALID_PARAMS
    assert isinstance(mc.last_error, TypeError)
    assert mc.put("", b"v") == INVALID_PARAMS
    assert mc.batch_put_from(["a", "b"], [1], [1, 2]) == [INVALID_PARAMS] * 2
    assert mc.is_exist(None) == -1


def test_get_buffer_is_a_zero_copy_buffer(mc, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    value = pattern(70_000, 6)
    mc.put(k, value)
    buf = mc.get_buffer(k)
    assert buf.size() == len(buf) == len(value)
    assert ctypes.string_at(buf.ptr(), buf.size()) == value
    seg = mc._store
    assert seg.segment_base <= buf.ptr() < seg.segment_base + seg.segment_size
    # the failure on 3.11: memoryview() of get_buffer's result
    m = memoryview(buf)
    assert m.readonly and m == value and bytes(buf) == value
    assert m.obj is buf
    with pytest.raises(BufferError):
        buf.release()  # refused while the memoryview is alive
    del m
    assert fluxon_env.sysfs("holders") == base + 1
    buf.release()
    with pytest.raises(ValueError):
        buf.ptr()
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.get_buffer(key()) is None


def test_buffer_handle_feeds_numpy_without_a_copy(mc, key):
    np = pytest.importorskip("numpy")
    k = key()
    value = pattern(8192, 8)
    mc.put(k, value)
    buf = mc.get_buffer(k)
    arr = np.asarray(buf)  # what LMCache / the Mooncake docs do with it
    assert arr.dtype == np.uint8 and arr.tobytes() == value
    assert arr.ctypes.data == buf.ptr() and not arr.flags.writeable
    del arr
    buf.release()


def test_dropped_buffer_handle_is_released(mc, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    mc.put(k, b"dropped")
    bufs = mc.batch_get_buffer([k, key(), k])
    assert bufs[1] is None and fluxon_env.sysfs("holders") == base + 2
    del bufs
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_batches(mc, key):
    keys = [key() for _ in range(4)]
    values = [pattern(5000 + i, 20 + i) for i in range(4)]
    assert mc.put_batch(keys, values) == 0
    assert mc.get_batch(keys + [key()]) == values + [b""]
    assert mc.batch_is_exist(keys[:2] + [key()]) == [1, 1, 0]
    bufs = mc.batch_get_buffer(keys)
    assert [bytes(b) for b in bufs] == values
    for b in bufs:
        b.release()
    assert mc.batch_remove(keys[:2] + [key()]) == [0, 0, OBJECT_NOT_FOUND]


def test_put_from_and_get_into_use_raw_addresses(mc, key):
    k = key()
    src = bytearray(pattern(40_000, 9))
    src_arr = (ctypes.c_char * len(src)).from_buffer(src)
    assert mc.put_from(k, ctypes.addressof(src_arr), len(src)) == 0
    dst = (ctypes.c_char * 50_000)()
    assert mc.get_into(k, ctypes.addressof(dst), len(dst)) == len(src)
    assert dst.raw[:len(src)] == bytes(src)
    small = (ctypes.c_char * 10)()
    assert mc.get_into(k, ctypes.addressof(small), 10) == INVALID_PARAMS
    assert mc.get_into(key(), ctypes.addressof(dst), len(dst)) == OBJECT_NOT_FOUND
    del src_arr


def test_put_parts_stores_the_concatenation(mc, key):
    k = key()
    assert mc.put_parts(k, b"head-", bytearray(b"body-"), memoryview(b"tail")) == 0
    assert mc.get(k) == b"head-body-tail"


def put_from_another_process(keys, value):
    """Put @keys in a separate process (another worker of the stack)."""
    code = ("import sys, fluxonkv\n"
            "with fluxonkv.Store() as kv:\n"
            "    for k in sys.argv[2:]:\n"
            "        kv.put(k, sys.argv[1].encode())\n")
    pkg_dir = os.path.dirname(os.path.dirname(mooncake.__file__))
    env = dict(os.environ, PYTHONPATH=pkg_dir)
    r = subprocess.run([sys.executable, "-c", code, value] + list(keys),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stdout


def test_remove_by_regex_removes_every_processs_matching_keys(mc, key):
    """Mooncake's remove_by_regex: the master removes every key the
    pattern finds a match in (any process's: fluxond's CLEAR) and the
    count comes back; the others stay."""
    p = key()
    mine = [p + s for s in ("/sess1/a", "/sess1/b", "/sess2/a")]
    theirs = [p + s for s in ("/sess1/c", "/sess3/a")]
    for n in mine:
        assert mc.put(n, b"x") == 0
    put_from_another_process(theirs, "y")
    assert mc.batch_is_exist(mine + theirs) == [1] * 5
    assert mc.remove_by_regex("^" + re.escape(p) + "/sess1/") == 3
    assert mc.batch_is_exist(mine + theirs) == [0, 0, 1, 0, 1]
    assert mc.remove_by_regex("^" + re.escape(p) + "/sess1/") == 0
    assert mc.remove_by_regex(re.escape(p) + "/sess[0-9]") == 2
    assert mc.batch_is_exist([mine[2], theirs[1]]) == [0, 0]
    # a pattern POSIX regcomp refuses: nothing removed
    assert mc.put(mine[0], b"x") == 0
    assert mc.remove_by_regex("(") == INVALID_PARAMS
    assert mc.last_error.errno == errno.EINVAL
    assert mc.last_error.op == "remove_by_regex"
    assert mc.remove_by_regex(None) == INVALID_PARAMS
    assert mc.is_exist(mine[0]) == 1
    assert mc.remove(mine[0]) == 0


def test_remove_all_clears_the_store(mc, key, fluxon_env):
    """Mooncake's remove_all (SGLang's clear(), vLLM's reset after a
    weight update): every key goes, whoever put it, long ones too; a
    value held by get_buffer stays readable until released."""
    ks = [key() for _ in range(20)]
    assert mc.put_batch(ks, [pattern(64 << 10, 50 + i) for i in range(20)]) == 0
    long_key = lmcache_key(LONG_MODEL, 0x77, [("t", key())])
    assert mc.put(long_key, b"long") == 0
    other = [key() for _ in range(5)]
    put_from_another_process(other, "from elsewhere")
    held = mc.get_buffer(ks[0])
    n = mc.remove_all(force=True)
    assert n >= 26
    assert mc.batch_is_exist(ks + other + [long_key]) == [0] * 26
    assert mc.get_size(ks[1]) == OBJECT_NOT_FOUND
    with fluxonkv_store() as kv:
        assert not kv.exists(other[0])
    assert bytes(held) == pattern(64 << 10, 50)
    held.release()
    # the store works on: new puts, and a clear of an empty store is 0
    assert mc.put(ks[0], b"again") == 0 and mc.get(ks[0]) == b"again"
    assert mc.remove_all() == 1
    assert mc.remove_all() == 0


def test_remove_all_without_a_daemon_socket_is_rpc_fail(mc, key, monkeypatch,
                                                       tmp_path):
    k = key()
    assert mc.put(k, b"kept") == 0
    monkeypatch.setenv("FLUXOND_CONTROL", str(tmp_path / "nobody.sock"))
    assert mc.remove_all() == mooncake.RPC_FAIL
    assert mc.last_error.errno == errno.ENOTCONN
    assert mc.remove_by_regex(".") == mooncake.RPC_FAIL
    assert mc.is_exist(k) == 1
    assert mc.remove(k) == 0


def test_adapter_keeps_no_state_per_key(mc, key):
    """Issue 30: the adapter remembered every key put (unbounded)."""
    before = {k: (type(v), len(v) if hasattr(v, "__len__") else None)
              for k, v in vars(mc).items() if k != "last_error"}
    keys = [key() for _ in range(200)]
    assert mc.put_batch(keys[:100], [b"v"] * 100) == 0
    for k in keys[100:]:
        assert mc.put(k, b"v") == 0
    after = {k: (type(v), len(v) if hasattr(v, "__len__") else None)
             for k, v in vars(mc).items() if k != "last_error"}
    assert after == before and not hasattr(mc, "_keys")
    assert mc.batch_remove(keys) == [0] * 200


def test_unmapped_calls_say_so(mc):
    with pytest.raises(NotImplementedError):
        mc.put_tensor("k", None)
    with pytest.raises(AttributeError):
        mc.no_such_method()


# ---- multi-buffer batches ----------------------------------------------------

def layout(parts, spare=0):
    """One ctypes array per part (its bytes, plus @spare zero bytes) as
    (arrays, addresses, sizes): one key's buffers."""
    arrs, ptrs = buffers(parts, spare)
    return arrs, ptrs, [len(p) + spare for p in parts]


def empty_like(parts):
    """Zeroed buffers of the sizes of @parts."""
    return layout([bytes(len(p)) for p in parts])


def put_multi(mc, keys, per_key, config=None):
    lays = [layout(parts) for parts in per_key]
    res = mc.batch_put_from_multi_buffers(keys, [l[1] for l in lays],
                                          [l[2] for l in lays], config)
    return res, lays


UNEVEN = [
    [1000, 1, 65537],           # three buffers, one of a single byte
    [4096],                     # one buffer: a GET_INTO
    [7, 300_000],
    [10, 10, 10, 10, 10],
    [4096 * 3 + 5, 1, 2, 3],
]


def test_multi_buffers_round_trip_byte_exact(mc, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    keys = [key() for _ in UNEVEN]
    per_key = [[pattern(n, 10 * i + j) for j, n in enumerate(sizes)]
               for i, sizes in enumerate(UNEVEN)]
    res, lays = put_multi(mc, keys, per_key, ReplicateConfig())
    assert res == [0] * len(keys)
    values = [b"".join(parts) for parts in per_key]
    # the value is the concatenation, whatever reads it
    assert [mc.get(k) for k in keys] == values
    assert [mc.get_size(k) for k in keys] == [len(v) for v in values]
    dst = [empty_like(parts) for parts in per_key]
    got = mc.batch_get_into_multi_buffers(keys, [d[1] for d in dst],
                                          [d[2] for d in dst])
    assert got == [len(v) for v in values]
    for d, parts in zip(dst, per_key):
        assert [a.raw for a in d[0]] == parts
    # scattered differently from how it was gathered
    k = keys[2]
    v = values[2]
    cut = [3, 100_000, len(v) - 100_003]
    d = layout([bytes(n) for n in cut])
    assert mc.batch_get_into_multi_buffers([k], [d[1]], [d[2]]) == [len(v)]
    assert b"".join(a.raw for a in d[0]) == v
    del lays
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.batch_remove(keys) == [0] * len(keys)


def test_multi_buffers_missing_key_and_short_value(mc, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k, gone = key(), key()
    value = pattern(10_000, 31)
    assert mc.put(k, value) == 0
    # buffers larger than the value: a prefix is filled, the rest untouched
    d = layout([b"\xee" * 4000, b"\xee" * 8000, b"\xee" * 100])
    miss = layout([b"\xee" * 10, b"\xee" * 10])
    got = mc.batch_get_into_multi_buffers([k, gone, k + "/x"],
                                          [d[1], miss[1], miss[1]],
                                          [d[2], miss[2], miss[2]])
    assert got == [len(value), OBJECT_NOT_FOUND, OBJECT_NOT_FOUND]
    assert mc.last_error.errno == errno.ENOENT
    assert d[0][0].raw == value[:4000]
    assert d[0][1].raw == value[4000:] + b"\xee" * 2000
    assert d[0][2].raw == b"\xee" * 100
    assert [a.raw for a in miss[0]] == [b"\xee" * 10] * 2
    # one buffer (GET_INTO) larger than the value: the same convention
    one = layout([b"\xee" * 12_000])
    assert mc.batch_get_into_multi_buffers([k, gone], [one[1], one[1]],
                                           [one[2], one[2]]) == \
        [len(value), OBJECT_NOT_FOUND]
    assert one[0][0].raw == value + b"\xee" * 2000
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.remove(k) == 0


def test_multi_buffers_too_small_is_invalid_params(mc, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k, ok = key(), key()
    value = pattern(20_000, 32)
    assert mc.put(k, value) == 0
    assert mc.put(ok, b"fits") == 0
    small = layout([bytes(9_999), bytes(10_000)])       # one byte short
    single = layout([bytes(19_999)])
    fits = layout([bytes(2), bytes(2)])
    got = mc.batch_get_into_multi_buffers([k, k, ok], [small[1], single[1], fits[1]],
                                          [small[2], single[2], fits[2]])
    assert got == [INVALID_PARAMS, INVALID_PARAMS, 4]
    # nothing copied into the buffers of a value that does not fit
    assert all(a.raw == bytes(len(a.raw)) for a in small[0] + single[0])
    assert [a.raw for a in fits[0]] == [b"fi", b"ts"]
    got = mc.batch_get_into_multi_buffers([k], [small[1]], [small[2]])
    assert got == [INVALID_PARAMS] and mc.last_error.errno == errno.ENOBUFS
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.batch_remove([k, ok]) == [0, 0]


def test_multi_buffers_bad_arguments(mc, key):
    k1, k2 = key(), key()
    a = layout([b"abc", b"def"])
    # lists of different lengths: every key
    assert mc.batch_put_from_multi_buffers([k1, k2], [a[1]], [a[2], a[2]]) == \
        [INVALID_PARAMS] * 2
    assert mc.batch_get_into_multi_buffers([k1, k2], [a[1]], [a[2], a[2]]) == \
        [INVALID_PARAMS] * 2
    # one key's buffers malformed: that key only
    assert mc.batch_put_from_multi_buffers(
        [k1, k2], [a[1][:1], a[1]], [a[2], a[2]]) == [INVALID_PARAMS, 0]
    assert mc.is_exist(k1) == 0 and mc.get(k2) == b"abcdef"
    assert mc.batch_put_from_multi_buffers([k1], [[1.5]], [[3]]) == [INVALID_PARAMS]
    assert mc.batch_put_from_multi_buffers([k1], [[a[1][0]]], [[-1]]) == [INVALID_PARAMS]
    # 0 bytes: nothing stored and 0, as Mooncake
    assert mc.batch_put_from_multi_buffers([k1], [[]], [[]]) == [0]
    assert mc.batch_put_from_multi_buffers([k1], [[a[1][0]]], [[0]]) == [0]
    assert mc.is_exist(k1) == 0
    assert mc.batch_get_into_multi_buffers([k2], [[]], [[]]) == [INVALID_PARAMS]
    assert mc.batch_get_into_multi_buffers(
        [k2, k2], [["x"], a[1]], [[3], a[2]]) == [INVALID_PARAMS, 6]
    assert mc.batch_put_from_multi_buffers([], [], []) == []
    assert mc.batch_get_into_multi_buffers([], [], []) == []
    unset = MooncakeDistributedStore()
    assert unset.batch_put_from_multi_buffers([k1], [a[1]], [a[2]]) == [INTERNAL_ERROR]
    assert unset.batch_get_into_multi_buffers([k1], [a[1]], [a[2]]) == [INTERNAL_ERROR]
    assert mc.remove(k2) == 0


@pytest.mark.skipif(not _native._checked_copies(),
                    reason="process_vm_readv/writev refused here: the copies "
                           "fall back to memcpy, which trusts addresses")
def test_multi_buffers_unmapped_address_is_a_code_not_a_crash(mc, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k, ok = key(), key()
    a = layout([pattern(5000, 40), pattern(3000, 41)])
    bad = 4096          # never mapped (mmap_min_addr)
    res = mc.batch_put_from_multi_buffers(
        [k, ok], [[a[1][0], bad], a[1]], [[5000, 100], a[2]])
    assert res == [INTERNAL_ERROR, 0]
    assert mc.last_error.errno == errno.EFAULT
    assert mc.is_exist(k) == 0
    d = layout([bytes(5000), bytes(3000)])
    got = mc.batch_get_into_multi_buffers([ok, ok], [[d[1][0], bad], d[1]],
                                          [[5000, 3000], d[2]])
    assert got == [INTERNAL_ERROR, 8000]
    assert [x.raw for x in d[0]] == [pattern(5000, 40), pattern(3000, 41)]
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.remove(ok) == 0


def test_multi_buffers_many_keys_and_adjacent_buffers(mc, key, fluxon_env):
    """More keys than one round (64) and buffers that are one range
    (adjacent slices of one array: put and read with no staging)."""
    base = fluxon_env.sysfs("holders")
    n = 150
    keys = [key() for _ in range(n)]
    per_key = [[pattern(100 + i, i), pattern(37, 500 + i)] for i in range(n)]
    res, lays = put_multi(mc, keys, per_key)
    assert res == [0] * n
    dst = [empty_like(parts) for parts in per_key]
    got = mc.batch_get_into_multi_buffers(keys, [d[1] for d in dst],
                                          [d[2] for d in dst])
    assert got == [137 + i for i in range(n)]
    assert all([a.raw for a in d[0]] == parts for d, parts in zip(dst, per_key))
    blob = (ctypes.c_char * 30_000).from_buffer_copy(pattern(30_000, 77))
    at = ctypes.addressof(blob)
    k = key()
    assert mc.batch_put_from_multi_buffers(
        [k], [[at, at + 10_000, at + 25_000]], [[10_000, 15_000, 5_000]]) == [0]
    assert mc.get(k) == blob.raw
    out = (ctypes.c_char * 30_000)()
    o = ctypes.addressof(out)
    assert mc.batch_get_into_multi_buffers(
        [k], [[o, o + 1, o + 29_999]], [[1, 29_998, 1]]) == [30_000]
    assert out.raw == blob.raw
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.batch_remove(keys + [k]) == [0] * (n + 1)


def test_multi_buffers_vllm_block_layout(mc, key, fluxon_env):
    """The layout of a KV-cache block as vLLM's store connector passes it:
    one buffer per layer (and K / V) at the block's offset in that layer's
    cache, 64 per key, 32 KiB each (2 MiB a key); batch_is_exist first,
    then the put with a ReplicateConfig, then a load into a fresh cache
    that treats any result < 0 as a failed block."""
    layers, blocks, block = 32, 6, 32 * 1024
    caches = [(ctypes.c_char * (blocks * block)).from_buffer_copy(
        pattern(blocks * block, 200 + c)) for c in range(2 * layers)]
    bases = [ctypes.addressof(c) for c in caches]
    ids = [1, 4, 2, 5]
    keys = [f"{key()}@vllm@tp0@{b:016x}" for b in ids]

    def block_bufs(bs, b):
        return [p + b * block for p in bs], [block] * len(bs)

    assert mc.batch_is_exist(keys) == [0] * 4
    ptrs, sizes = zip(*(block_bufs(bases, b) for b in ids))
    cfg = ReplicateConfig()
    cfg.replica_num = 1
    assert mc.batch_put_from_multi_buffers(keys, list(ptrs), list(sizes), cfg) == [0] * 4
    assert mc.batch_is_exist(keys) == [1] * 4
    fresh = [(ctypes.c_char * (blocks * block))() for _ in range(2 * layers)]
    fbases = [ctypes.addressof(c) for c in fresh]
    dst = [0, 3, 1, 2]          # loaded into other block ids
    ptrs, sizes = zip(*(block_bufs(fbases, b) for b in dst))
    got = mc.batch_get_into_multi_buffers(keys, list(ptrs), list(sizes))
    assert not any(r < 0 for r in got) and got == [2 * layers * block] * 4
    for src, d in zip(ids, dst):
        for c in range(2 * layers):
            assert fresh[c].raw[d * block:(d + 1) * block] == \
                caches[c].raw[src * block:(src + 1) * block]
    assert mc.batch_remove(keys) == [0] * 4


def test_multi_buffers_from_threads(mc, key):
    """Several threads on one store: each gathers into its own staging."""
    errors = []
    start = threading.Barrier(4)

    def worker(t):
        try:
            start.wait()
            for r in range(8):
                ks = [f"{key()}/t{t}/{r}/{i}" for i in range(4)]
                parts = [[pattern(3000 + 100 * i, t * 100 + r),
                          pattern(50 + i, t * 100 + r + 1),
                          pattern(9000, t)] for i in range(4)]
                res, lays = put_multi(mc, ks, parts)
                assert res == [0] * 4
                dst = [empty_like(p) for p in parts]
                got = mc.batch_get_into_multi_buffers(
                    ks, [d[1] for d in dst], [d[2] for d in dst])
                assert got == [sum(map(len, p)) for p in parts]
                assert all([a.raw for a in d[0]] == p for d, p in zip(dst, parts))
                assert mc.batch_remove(ks) == [0] * 4
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert errors == []


# ---- Mooncake's semantics the stacks rely on ---------------------------------

def test_put_keeps_the_first_value_and_upsert_replaces_it(mc, key):
    """Mooncake's PutStart answers OBJECT_ALREADY_EXISTS for a key that
    has a value and its client returns 0: the first value stays.  Its
    upsert* calls replace it."""
    k, k2 = key(), key()
    first, second = pattern(9000, 1), pattern(7000, 2)
    assert mc.put(k, first) == 0
    assert mc.put(k, second) == 0
    assert mc.get(k) == first
    arr = (ctypes.c_char * len(second)).from_buffer_copy(second)
    at = ctypes.addressof(arr)
    assert mc.put_from(k, at, len(second)) == 0
    assert mc.batch_put_from([k, k2], [at, at], [len(second)] * 2) == [0, 0]
    assert mc.batch_put_from_multi_buffers([k], [[at]], [[len(second)]]) == [0]
    assert mc.put_batch([k], [second]) == 0
    assert mc.get(k) == first and mc.get(k2) == second
    assert mc.upsert(k, second) == 0
    assert mc.get(k) == second
    assert mc.upsert_from(k, at, 100) == 0
    assert mc.get(k) == second[:100]
    assert mc.batch_upsert_from([k, k2], [at, at], [10, 20]) == [0, 0]
    assert [mc.get(k), mc.get(k2)] == [second[:10], second[:20]]
    assert mc.upsert_parts(k, b"a", b"b") == 0 and mc.get(k) == b"ab"
    assert mc.batch_remove([k, k2]) == [0, 0]


def test_empty_puts_store_nothing_and_return_0(mc, key):
    """Mooncake's put_from / put with 0 bytes logs a warning and returns
    0 without storing (real_client.cpp); SGLang's Mamba pool drops its
    0-byte objects for that reason."""
    k = key()
    buf = (ctypes.c_char * 8)()
    assert mc.put_from(k, ctypes.addressof(buf), 0) == 0
    assert mc.put(k, b"") == 0
    assert mc.batch_put_from([k, k], [ctypes.addressof(buf)] * 2, [0, 0]) == [0, 0]
    assert mc.is_exist(k) == 0 and mc.get_size(k) == OBJECT_NOT_FOUND


LONG_MODEL = "meta-llama/" + "Llama-3.1-70B-Instruct-" + "x" * 120


def lmcache_key(model, chunk_hash, tags=()):
    """The shape of LMCache's CacheEngineKey.to_string(): fmt@model@
    world_size@worker_id@hash:x@dtype, then @k%v per tag."""
    s = f"vllm@{model}@8@3@{chunk_hash:x}@bfloat16"
    if tags:
        s += "@" + "@".join(f"{k}%{v}" for k, v in tags)
    return s


def test_long_keys_are_hashed_transparently(mc, key, fluxon_env):
    """Keys past the module's 256 bytes are stored under a reserved
    SHA-256 name: every call takes them, two long keys that share their
    first 256 bytes stay apart, and a caller cannot forge a hashed name."""
    tags = [("lora", "adapter-" + "q" * 60), ("req", key())]
    k1 = lmcache_key(LONG_MODEL, 0x1234abcd5678ef90 << 64, tags)
    k2 = k1 + "@tail%2"
    assert len(k1.encode()) > 256 and k2.startswith(k1)
    v1, v2 = pattern(3 << 20, 11), pattern(2 << 20, 12)
    assert mc.put(k1, v1) == 0
    arr = (ctypes.c_char * len(v2)).from_buffer_copy(v2)
    assert mc.batch_put_from([k2], [ctypes.addressof(arr)], [len(v2)]) == [0]
    assert mc.batch_is_exist([k1, k2, k1 + "@no"]) == [1, 1, 0]
    assert mc.get_size(k1) == len(v1) and mc.get_size(k2) == len(v2)
    assert mc.get(k1) == v1 and mc.get(k2) == v2
    h = mc.get_buffer(k2)
    assert memoryview(h) == v2
    h.release()
    dst = (ctypes.c_char * len(v1))()
    assert mc.batch_get_into([k1], [ctypes.addressof(dst)], [len(v1)]) == [len(v1)]
    assert dst.raw == v1
    half = len(v1) // 2
    a, b = (ctypes.c_char * half)(), (ctypes.c_char * half)()
    assert mc.batch_get_into_multi_buffers(
        [k1], [[ctypes.addressof(a), ctypes.addressof(b)]], [[half, half]]) == [len(v1)]
    assert a.raw + b.raw == v1
    # the module holds them under 81-byte names in the reserved namespace
    hashed = mooncake.native_key(k1)
    assert len(hashed) == 81 and hashed.startswith(mooncake.HASHED_PREFIX)
    with fluxonkv_store() as kv:
        assert kv.lookup(hashed).len == len(v1)
    # no caller key can land in that namespace
    for forged in (hashed, hashed.decode()):
        assert mc.put(forged, b"x") == INVALID_PARAMS
        assert mc.is_exist(forged) == -1
        assert mc.get(forged) == b""
    assert mc.get(k1) == v1
    assert mc.batch_remove([k1, k2, k1]) == [0, 0, OBJECT_NOT_FOUND]
    assert mc.batch_is_exist([k1, k2]) == [0, 0]


def fluxonkv_store():
    import fluxonkv
    return fluxonkv.Store()


def test_a_batch_failure_gives_each_key_its_own_code(mc, key):
    """A batch that fails as a whole (one key's address not an int, one
    bad key) is redone key by key: the good keys are stored and read,
    only the bad ones get a negative code."""
    keys = [key() for _ in range(4)]
    vals = [pattern(5000 + i, 40 + i) for i in range(4)]
    arrs, ptrs = buffers(vals)
    sizes = [len(v) for v in vals]
    res = mc.batch_put_from(keys[:2] + [42] + keys[3:],
                            ptrs[:1] + ["not an address"] + ptrs[2:], sizes)
    assert res == [0, INVALID_PARAMS, INVALID_PARAMS, 0]
    assert mc.batch_is_exist(keys) == [1, 0, 0, 1]
    dst, dptrs = buffers([bytes(n) for n in sizes])
    got = mc.batch_get_into(keys, dptrs[:2] + [None] + dptrs[3:], sizes)
    assert got == [sizes[0], OBJECT_NOT_FOUND, INVALID_PARAMS, sizes[3]]
    assert dst[0].raw == vals[0] and dst[3].raw == vals[3]
    assert mc.batch_is_exist([keys[0], None, keys[3]]) == [1, -1, 1]
    hs = mc.batch_get_buffer([keys[0], 3.5, keys[3]])
    assert hs[1] is None and bytes(hs[0]) == vals[0] and bytes(hs[2]) == vals[3]
    for h in (hs[0], hs[2]):
        h.release()
    assert mc.batch_remove([keys[0], 3.5, keys[3]]) == [0, INVALID_PARAMS, 0]


def test_replica_descriptors_say_where_a_get_reads(mc, key, fluxon_env):
    """batch_get_replica_desc (vLLM's tier log, _get_replica_tiers_by_key /
    _classify_replica_tier): a dict with .get(key), the first descriptor's
    is_memory_replica() / is_disk_replica(); a miss is left out.  It is a
    lookup: nothing read."""
    k, miss = key(), key()
    assert mc.put(k, pattern(4096, 3)) == 0
    before = fluxon_env.sysfs("gets")
    d = mc.batch_get_replica_desc([k, miss])
    assert list(d) == [k] and d.get(miss) is None
    (r,) = d.get(k)
    assert r.is_memory_replica() and not r.is_disk_replica()
    assert not r.is_local_disk_replica() and r.size == 4096
    assert r.status == mooncake.ReplicaStatus.COMPLETE
    assert [x.size for x in mc.get_replica_desc(k)] == [4096]
    assert mc.get_replica_desc(miss) == []
    assert fluxon_env.sysfs("gets") == before
    assert mc.remove(k) == 0


def test_host_mem_allocator_feeds_puts_and_gets(mc, key):
    """SGLang's standalone host pool (MooncakeHostTensorAllocator) takes
    its memory from MooncakeHostMemAllocator.alloc / free."""
    alloc = MooncakeHostMemAllocator()
    size = 4 << 20
    ptr = alloc.alloc(size)
    assert ptr and ptr % 4096 == 0
    assert ctypes.string_at(ptr, 16) == bytes(16)     # zeroed
    data = pattern(size // 2, 5)
    ctypes.memmove(ptr, data, len(data))
    k = key()
    assert mc.setup_dummy(size, 16 << 20, "127.0.0.1:50052") == 0
    assert mc.batch_put_from([k], [ptr], [len(data)]) == [0]
    assert mc.batch_get_into([k], [ptr + len(data)], [len(data)]) == [len(data)]
    assert ctypes.string_at(ptr + len(data), len(data)) == data
    assert alloc.free(ptr) == 0 and alloc.free(ptr) == -1
    assert alloc.alloc(0) == 0
    assert mc.remove(k) == 0


def test_replicate_config_has_mooncakes_fields(mc, key):
    """Mooncake's own test imports SoftPinAction and sets
    ReplicateConfig.soft_pin_action; every field is accepted and ignored."""
    cfg = ReplicateConfig()
    assert cfg.soft_pin_action == SoftPinAction.PRESERVE
    assert ReplicateConfig(with_soft_pin=True).soft_pin_action == SoftPinAction.ENABLE
    cfg.soft_pin_action = SoftPinAction.DISABLE
    cfg.soft_pin_ttl_ms = 5000
    cfg.preferred_segments = [mc.get_hostname()]
    cfg.group_ids = ["sglang-hicache:x"]
    k = key()
    assert mc.put(k, b"pinned?", cfg) == 0 and mc.get(k) == b"pinned?"
    assert mc.remove(k) == 0


def test_get_hostname_names_a_port(new_store):
    """Mooncake's get_hostname() is "host:port" (a port it binds, or the
    one the caller gave); LMCache uses it as preferred_segment."""
    a, b, c = (new_store() for _ in range(3))
    try:
        assert a.setup("10.1.2.3") == 0 and b.setup("10.1.2.3") == 0
        assert c.setup("node7:17000") == 0
        ha, hb = a.get_hostname(), b.get_hostname()
        assert ha.startswith("10.1.2.3:") and hb.startswith("10.1.2.3:")
        assert ha != hb and 12300 <= int(ha.rsplit(":", 1)[1]) <= 14300
        assert c.get_hostname() == "node7:17000"
    finally:
        for s in (a, b, c):
            assert s.close() == 0
    assert a.get_hostname() == ""


def test_an_unknown_tenant_fails_setup_with_a_code_not_a_typeerror(new_store):
    """SGLang passes tenant_id only when it is not the default; a TypeError
    would read as "Mooncake without tenants", a nonzero code as "Failed to
    setup Mooncake store" (mooncake_store.py).  This session's fluxond has
    no ``tenants:`` (test_tenants.py has the tenants): any name is unknown,
    INVALID_PARAMS, and the store stays unopened."""
    s = new_store()
    assert s.setup("h", "P2PHANDSHAKE", 1 << 30, 1 << 20, "tcp", "", "m:1",
                   None, tenant_id="team-b") == INVALID_PARAMS
    assert s.last_error.errno == errno.ENOENT and "team-b" in str(s.last_error)
    assert s.put("k", b"v") == INTERNAL_ERROR        # not set up
    assert s.setup("h", "P2PHANDSHAKE", 1 << 30, 1 << 20, "tcp", "", "m:1",
                   None, tenant_id="default") == 0
    assert s.close() == 0


def test_gets_copy_once_from_the_segment_into_the_callers_buffers(mc, key,
                                                                  monkeypatch):
    """A registered (pinned host) buffer is written straight from the
    segment: the multi-buffer get copies from the holder's bytes in the
    segment mapping into the caller's buffers, one copy, no staging; a
    one-buffer get is the module's GET_INTO into the caller's address.
    The extension's trace names the source and the pieces of each copy."""
    k = key()
    value = pattern(3 << 20, 9)
    assert mc.put(k, value) == 0
    copies = []
    seg = mc._store
    real = type(seg).get_into_multi

    def spy(store, keys, ptrs, sizes):
        return real(store, keys, ptrs, sizes, trace=copies)

    monkeypatch.setattr(type(seg), "get_into_multi", spy)
    reg = (ctypes.c_char * (4 << 20))()     # the "registered" host buffer
    base = ctypes.addressof(reg)
    assert mc.register_buffer(base, len(reg)) == 0
    parts = [(base + 4096, 1 << 20), (base + (2 << 20), 2 << 20)]
    got = mc.batch_get_into_multi_buffers([k], [[p for p, _ in parts]],
                                          [[n for _, n in parts]])
    assert got == [len(value)]
    ((what, src, pieces),) = copies
    assert what == "scatter" and pieces == parts
    assert seg.segment_base <= src < seg.segment_base + seg.segment_size
    assert reg.raw[4096:4096 + (1 << 20)] + reg.raw[2 << 20:] == value
    # one buffer: the module's GET_INTO, straight into the address
    copies.clear()
    got = mc.batch_get_into_multi_buffers([k], [[base]], [[len(reg)]])
    assert got == [len(value)]
    assert copies == [("get_into", 0, [(base, len(reg))])]
    assert reg.raw[:len(value)] == value
    assert mc.batch_get_into([k], [base], [len(reg)]) == [len(value)]
    assert mc.unregister_buffer(base) == 0
    assert mc.remove(k) == 0


def test_multi_buffer_puts_gather_in_the_module(mc, key, monkeypatch):
    """A put of separate buffers is one gather put (FLUXONKV_PUT_F_IOV):
    the module reads each buffer, nothing is staged; a key of one range
    is a plain put; more than 1,024 separate buffers are staged."""
    if not mc._store.gather_puts():
        pytest.skip("the module has no gather puts")
    sent = []
    seg = mc._store
    real = type(seg).put_from_multi

    def spy(store, keys, ptrs, sizes):
        return real(store, keys, ptrs, sizes, trace=sent)

    monkeypatch.setattr(type(seg), "put_from_multi", spy)
    k1, k2, k3 = key(), key(), key()
    a = layout([pattern(70_000, 1), pattern(1, 2), pattern(300_001, 3)])
    blob = (ctypes.c_char * 20_000).from_buffer_copy(pattern(20_000, 4))
    at = ctypes.addressof(blob)
    many = [(ctypes.c_char * 3).from_buffer_copy(pattern(3, 5 + i))
            for i in range(1100)]
    res = mc.batch_put_from_multi_buffers(
        [k1, k2, k3], [a[1], [at, at + 5_000], [ctypes.addressof(m) for m in many]],
        [a[2], [5_000, 15_000], [3] * len(many)])
    assert res == [0, 0, 0]
    assert [w for w, _, _ in sent] == ["put_iov", "put", "staged"]
    assert sent[0][1] == 0 and sent[0][2] == list(zip(a[1], a[2]))
    assert sent[1][1] == at and sent[1][2] == [(at, 20_000)]
    assert mc.get(k1) == b"".join(x.raw for x in a[0])
    assert mc.get(k2) == blob.raw
    assert mc.get(k3) == b"".join(m.raw for m in many)
    assert mc.batch_remove([k1, k2, k3]) == [0, 0, 0]


def test_get_buffer_bytes_live_exactly_as_long_as_the_handle(mc, key, fluxon_env):
    """get_buffer's pointer stays valid and unchanged while the handle
    lives, even when the key is replaced and removed; release() ends it."""
    base = fluxon_env.sysfs("holders")
    k = key()
    old = pattern(2 << 20, 21)
    assert mc.put(k, old) == 0
    h = mc.get_buffer(k)
    ptr = h.ptr()
    assert mc.upsert(k, pattern(2 << 20, 22)) == 0
    assert mc.remove(k) == 0
    filler = [key() for _ in range(8)]
    assert mc.put_batch(filler, [pattern(1 << 20, 23)] * 8) == 0
    assert ctypes.string_at(ptr, len(old)) == old
    assert fluxon_env.sysfs("holders") == base + 1
    h.release()
    with pytest.raises(ValueError):
        h.ptr()
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.batch_remove(filler) == [0] * 8


# ---- the stacks' call sequences, transcribed ----------------------------------

class HostCache:
    """A host KV cache as the stacks lay it out: @tensors regions of
    @blocks blocks of @block_bytes each (one region per layer, or per
    layer and K / V), in one registered allocation."""

    def __init__(self, tensors, blocks, block_bytes, seed=None):
        self.tensors, self.blocks, self.block_bytes = tensors, blocks, block_bytes
        self.region = blocks * block_bytes
        size = tensors * self.region
        if seed is None:
            self.mem = (ctypes.c_char * size)()
        else:
            self.mem = (ctypes.c_char * size).from_buffer_copy(pattern(size, seed))
        self.base = ctypes.addressof(self.mem)

    def tensor_base(self, t):
        return self.base + t * self.region

    def block(self, t, b, nbytes=None):
        off = t * self.region + b * self.block_bytes
        return self.mem.raw[off:off + (nbytes or self.block_bytes)]


def test_stack_vllm_store_connector(new_store, key):
    """vLLM's MooncakeStoreConnector worker (worker.py): setup() with the
    7 positional config values, failure iff ret != 0; ReplicateConfig()
    with preferred_segment; register_kv_caches: register_buffer(base,
    len) per cache tensor, FlashAttn's K/V-first layout split in two
    segments per layer (64 for 32 layers); ChunkedTokenDatabase
    .prepare_value (data.py): per segment base + block_id * block_len,
    size block_len // block_size * (end - start) (a partial last chunk
    takes a prefix of each segment's block); keys PoolKey.to_string()
    "model@tp_rank:N@pcpN@dcpN@pp_rank:N@hash".  Sending thread
    (_handle_request): batch_is_exist, only e != 1 are put with
    batch_put_from_multi_buffers(keys, addrs, sizes, replicate_config),
    failure = v < 0.  Receiving threads (VLLM_MOONCAKE_LOAD_RECV_THREADS
    of them, one queue): batch_get_into_multi_buffers(keys, addrs, sizes)
    after batch_get_replica_desc for the tier log, failure = value < 0.
    lookup(): batch_is_exist over every rank namespace, all == 1.  The
    scale: 32 layers x 16 tokens x 8 KV heads x 128 x bf16 = 2 MiB a
    block as in Llama-3-8B; one 16 MiB chunk (block_size 128)."""
    layers, block_size, per_token = 32, 16, 8 * 128 * 2
    block_len = block_size * per_token            # 32 KiB a segment's block
    nblocks = 10
    src = HostCache(2 * layers, nblocks, block_len, seed=301)
    dst = HostCache(2 * layers, nblocks, block_len)
    store = new_store()
    assert store.setup("10.0.0.5", "P2PHANDSHAKE", 4 << 30, 4 << 30, "rdma",
                       "", "10.0.0.1:50051") == 0
    cfg = ReplicateConfig()
    cfg.preferred_segment = store.get_hostname()
    for cache in (src, dst):        # one tensor per layer: K and V halves
        for layer in range(layers):
            assert store.register_buffer(cache.tensor_base(2 * layer),
                                         2 * cache.region) == 0
    model = "Meta-Llama-3-8B-Instruct"

    def pool_key(h, tp=0):
        return f"{model}@tp_rank:{tp}@pcp0@dcp0@pp_rank:0@{h:064x}"

    def prepare_value(cache, start, end, block_id):
        addrs, sizes = [], []
        for t in range(cache.tensors):
            addrs.append(cache.tensor_base(t) + block_id * block_len)
            sizes.append(block_len // block_size * (end - start))
        return addrs, sizes

    salt = int.from_bytes(key().encode()[-8:], "little")
    hashes = [salt * 1000 + i for i in range(6)]
    token_len = 5 * block_size + 9                  # 5 full blocks + 9 tokens
    chunks = [(i * block_size, min((i + 1) * block_size, token_len))
              for i in range(6)]
    block_ids = [3, 7, 1, 8, 0, 5]
    keys = [pool_key(h) for h in hashes]
    # an earlier request stored the first two blocks
    pre = [prepare_value(src, s, e, b) for (s, e), b in zip(chunks[:2], block_ids)]
    assert store.batch_put_from_multi_buffers(
        keys[:2], [a for a, _ in pre], [z for _, z in pre], cfg) == [0, 0]

    # _handle_request: dedup, then one put of the missing blocks
    exists = store.batch_is_exist(keys)
    assert exists == [1, 1, 0, 0, 0, 0]
    missing = [i for i, e in enumerate(exists) if e != 1]
    addrs, sizes = zip(*(prepare_value(src, *chunks[i], block_ids[i])
                         for i in missing))
    assert all(len(a) == 64 for a in addrs)
    res = store.batch_put_from_multi_buffers([keys[i] for i in missing],
                                             list(addrs), list(sizes), cfg)
    failed = [i for i, v in enumerate(res) if v < 0]
    assert failed == [] and res == [0] * 4
    assert store.get_size(keys[5]) == 64 * 9 * per_token    # the partial chunk

    # lookup(): every tp namespace must hold the hash (tp 1 has none)
    cand = [pool_key(h, tp) for h in hashes for tp in (0, 1)]
    res = store.batch_is_exist(cand)
    assert [all(res[2 * i + j] == 1 for j in range(2)) for i in range(6)] == \
        [False] * 6
    assert [res[2 * i] for i in range(6)] == [1] * 6

    # receiving threads: each loads a request into other block ids
    load_ids = [[9, 2, 4], [6, 0, 8]]
    q = list(zip(([0, 1, 2], [3, 4, 5]), load_ids))
    out, errors = {}, []

    def recv(job):
        idx, ids = job
        try:
            ks = [keys[i] for i in idx]
            a, z = zip(*(prepare_value(dst, *chunks[i], b) for i, b in zip(idx, ids)))
            tiers = store.batch_get_replica_desc(ks)
            classes = ["memory" if tiers.get(k) and tiers.get(k)[0].is_memory_replica()
                       else "unknown" for k in ks]
            res = store.batch_get_into_multi_buffers(ks, list(a), list(z))
            out[tuple(idx)] = (res, classes)
        except BaseException as e:      # noqa: BLE001 - reported below
            errors.append(e)

    ths = [threading.Thread(target=recv, args=(j,)) for j in q]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    assert errors == []
    full = 64 * block_len
    assert out[(0, 1, 2)] == ([full] * 3, ["memory"] * 3)
    assert out[(3, 4, 5)] == ([full, full, 64 * 9 * per_token], ["memory"] * 3)
    for (idx, ids) in q:
        for i, b in zip(idx, ids):
            n = (chunks[i][1] - chunks[i][0]) * per_token
            for t in range(0, 64, 7):
                assert dst.block(t, b, n) == src.block(t, block_ids[i], n)
    # a block of a missing key fails with value < 0, the others load
    a, z = prepare_value(dst, 0, block_size, 9)
    res = store.batch_get_into_multi_buffers([pool_key(1), keys[0]], [a, a], [z, z])
    assert res[0] < 0 and res[1] == full

    # one 16 MiB chunk (block_size 128): 64 segments of 256 KiB
    big = HostCache(64, 1, 256 << 10, seed=302)
    bk = pool_key(salt * 1000 + 99)
    ba = [big.tensor_base(t) for t in range(64)]
    assert store.batch_put_from_multi_buffers([bk], [ba], [[256 << 10] * 64],
                                              cfg) == [0]
    back = HostCache(64, 1, 256 << 10)
    assert store.batch_get_into_multi_buffers(
        [bk], [[back.tensor_base(t) for t in range(64)]], [[256 << 10] * 64]) == [16 << 20]
    assert back.mem.raw == big.mem.raw
    # LookupKeyServer's RESET_MSG (after an RL weight update): the send
    # queue drained, then remove_all(force=True) wipes the flat key space
    assert store.remove_all(force=True) >= 7
    assert store.batch_is_exist(keys + [bk]) == [0] * 7
    res = store.batch_get_into_multi_buffers([keys[0]], [a], [z])
    assert res[0] < 0
    assert store.close() == 0


def sglang_prefix(model_name, backend_tag=None):
    """MooncakeStore.__init__'s config prefix: backend tag and model name
    ('/' -> '-') joined by '_'; _tag_keys prepends it with '_'."""
    parts = [backend_tag] if backend_tag else []
    parts.append("-".join(model_name.split("/")))
    return "_".join(parts)


def test_stack_sglang_hicache_mha_page_first(new_store, key):
    """SGLang HiCache's Mooncake backend (mooncake_store.py), MHA with the
    page_first layout: setup(hostname, metadata_server, per-rank segment,
    local buffer, protocol, device, master, transfer_engine, **kwargs)
    retried without kwargs on TypeError (enable_ssd_offload); warmup():
    put of 4 KiB, is_exist == 1, get == value; register_buffer of the
    host pool; batch_set_v1: keys tagged with the config prefix,
    _get_mha_buffer_meta -> "{key}_{rank}_k" / "_v", batch_is_exist, only
    non-existing keys put with batch_put_from (one buffer each: no
    config), result all(res == 0) per page; batch_get_v1: batch_get_into,
    all(res > 0) per page; batch_exists: the prefix of pages with both
    objects; clear() is remove_all().  Pages of 64 tokens x 8 heads x 128
    x bf16 x 32 layers: 4 MiB per K (or V) object."""
    store = new_store()
    kwargs = {"enable_ssd_offload": True, "ssd_offload_path": "/tmp/none"}
    ret = store.setup("10.0.0.5", "P2PHANDSHAKE", (64 << 30) // 8, 16 << 20,
                      "rdma", "", "10.0.0.1:50051", None, **kwargs)
    assert ret == 0
    warm = "sglang_mooncake_store_warmup_key" + key().replace("/", "")
    assert store.put(warm, bytes(4 * 1024)) == 0
    assert store.is_exist(warm) == 1
    assert store.get(warm) == bytes(4 * 1024)

    page_bytes = 64 * 8 * 128 * 2 * 32          # one page's K (or V): 4 MiB
    pool = HostCache(2, 4, page_bytes, seed=310)  # K region, V region
    assert store.register_buffer(pool.base, 2 * pool.region) == 0
    prefix = sglang_prefix("meta-llama/Llama-3.1-8B-Instruct", "hicache")
    pages = [f"{prefix}_{key().replace('/', '_')}{i:040x}" for i in range(3)]
    rank = "0"

    def meta(host_pages):
        ks, ptrs, sizes = [], [], []
        for pk, hp in zip(pages, host_pages):
            ks += [f"{pk}_{rank}_k", f"{pk}_{rank}_v"]
            ptrs += [pool.tensor_base(0) + hp * page_bytes,
                     pool.tensor_base(1) + hp * page_bytes]
            sizes += [page_bytes, page_bytes]
        return ks, ptrs, sizes

    def postprocess(results, is_set):
        groups = [results[i:i + 2] for i in range(0, len(results), 2)]
        return [all(r == 0 for r in g) if is_set else all(r > 0 for r in g)
                for g in groups]

    ks, ptrs, sizes = meta([0, 1, 2])
    assert store.put(ks[0], pool.block(0, 0)) == 0     # one object is there
    exist = store.batch_is_exist(ks)
    assert exist == [1, 0, 0, 0, 0, 0]
    set_results = [0 if e == 1 else -1 for e in exist]
    todo = [i for i, e in enumerate(exist) if e != 1]
    put = store.batch_put_from([ks[i] for i in todo], [ptrs[i] for i in todo],
                               [sizes[i] for i in todo])
    for i, r in zip(todo, put):
        set_results[i] = r
    assert postprocess(set_results, True) == [True] * 3

    # batch_exists: the prefix of complete pages
    def batch_exists():
        ex = store.batch_is_exist(ks)
        return next((i // 2 for i, e in enumerate(ex) if e != 1), len(ks) // 2)

    assert batch_exists() == 3
    out = HostCache(2, 4, page_bytes)
    got = store.batch_get_into(ks, [out.tensor_base(i % 2) + (i // 2 + 1) * page_bytes
                                    for i in range(6)], sizes)
    assert postprocess(got, False) == [True] * 3 and got == sizes
    for p in range(3):
        assert out.block(0, p + 1) == pool.block(0, p)
        assert out.block(1, p + 1) == pool.block(1, p)
    assert store.remove(ks[3]) == 0                     # page 1's V
    assert batch_exists() == 1
    # clear(): Mooncake's remove_all, the whole store
    assert store.remove_all() >= 6
    assert store.batch_is_exist(ks + [warm]) == [0] * 7
    assert store.close() == 0


def test_stack_sglang_hicache_mla_layer_first(new_store, key):
    """SGLang's MLA host pool with the layer_first layout
    (_get_mla_buffer_meta, _pack_multi_buffer_meta): one object per page,
    "{key}__k" (no PP: empty mla_suffix), whose buffers are the page's
    slice in each layer's region, one pointer per layer;
    _put_batch_zero_copy_impl sends them with batch_put_from_multi_buffers
    and a ReplicateConfig carrying group_ids (enable_group_semantics),
    _get_batch_zero_copy_impl with batch_get_into_multi_buffers.  A
    backup thread and a prefetch thread run at once, as HiCache's.
    DeepSeek-V3-like: 61 layers x 32 tokens x 576 x bf16 = 36 KiB per
    layer-page, 2.2 MiB per object (64 tokens halved for the guest)."""
    store = new_store()
    assert store.setup("10.0.0.5", "P2PHANDSHAKE", 1 << 30, 16 << 20, "tcp",
                       "", "10.0.0.1:50051", None) == 0
    layers, per_layer_page = 61, 32 * 576 * 2
    npages = 6
    pool = HostCache(layers, npages, per_layer_page, seed=320)
    back = HostCache(layers, npages, per_layer_page)
    for c in (pool, back):
        assert store.register_buffer(c.base, layers * c.region) == 0
    prefix = sglang_prefix("deepseek-ai/DeepSeek-V3")
    salt = key().replace("/", "_")

    def meta(cache, page_keys, host_pages):
        ptr_list, size_list = [], []
        for hp in host_pages:                   # get_page_buffer_meta
            for layer in range(layers):
                ptr_list.append(cache.tensor_base(layer) + hp * per_layer_page)
                size_list.append(per_layer_page)
        keys = [f"{pk}__k" for pk in page_keys]
        nbuf = len(ptr_list) // len(keys)       # _pack_multi_buffer_meta
        return (keys,
                [ptr_list[i:i + nbuf] for i in range(0, len(ptr_list), nbuf)],
                [size_list[i:i + nbuf] for i in range(0, len(size_list), nbuf)])

    page_keys = [f"{prefix}_{salt}_{i:064x}" for i in range(npages)]
    errors, results = [], {}
    first_half_stored = threading.Event()

    def backup():
        try:
            for part in (range(0, 3), range(3, 6)):
                ks, ptrs, sizes = meta(pool, [page_keys[i] for i in part], part)
                exist = store.batch_is_exist(ks)
                todo = [i for i, e in enumerate(exist) if e != 1]
                cfg = ReplicateConfig()
                cfg.group_ids = [f"sglang-hicache:{page_keys[part[i]]}" for i in todo]
                res = store.batch_put_from_multi_buffers(
                    [ks[i] for i in todo], [ptrs[i] for i in todo],
                    [sizes[i] for i in todo], cfg)
                results.setdefault("set", []).extend(res)
                first_half_stored.set()
        except BaseException as e:      # noqa: BLE001
            errors.append(e)
            first_half_stored.set()

    def prefetch():
        try:
            first_half_stored.wait(60)
            ks, ptrs, sizes = meta(back, page_keys[:3], [5, 4, 3])
            results["get"] = store.batch_get_into_multi_buffers(ks, ptrs, sizes)
        except BaseException as e:      # noqa: BLE001
            errors.append(e)

    ths = [threading.Thread(target=backup), threading.Thread(target=prefetch)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    assert errors == []
    assert results["set"] == [0] * 6
    assert results["get"] == [layers * per_layer_page] * 3
    assert all(r > 0 for r in results["get"])
    for p, hp in zip(range(3), [5, 4, 3]):
        for layer in range(layers):
            assert back.block(layer, hp) == pool.block(layer, p)
    # a re-backup finds every object: nothing is put again
    ks, _, _ = meta(pool, page_keys, range(npages))
    assert store.batch_is_exist(ks) == [1] * npages
    assert store.batch_remove(ks) == [0] * npages
    assert store.close() == 0


def test_stack_sglang_standalone_host_pool(new_store, key):
    """SGLang with standalone_storage: the host pool comes from
    MooncakeHostMemAllocator, setup_dummy(required_bytes,
    local_buffer_size, client_server_address), then the same zero-copy
    batch_put_from / batch_get_into on that memory."""
    alloc = MooncakeHostMemAllocator()
    page = 2 << 20
    ptr = alloc.alloc(4 * page)
    assert ptr
    ctypes.memmove(ptr, pattern(2 * page, 330), 2 * page)
    store = new_store()
    assert store.setup_dummy(4 * page, 16 << 20, "127.0.0.1:50052") == 0
    ks = [f"{key()}_{i}_0_k" for i in range(2)]
    assert store.batch_is_exist(ks) == [0, 0]
    assert store.batch_put_from(ks, [ptr, ptr + page], [page, page]) == [0, 0]
    got = store.batch_get_into(ks, [ptr + 2 * page, ptr + 3 * page], [page, page])
    assert got == [page, page]
    assert ctypes.string_at(ptr + 2 * page, 2 * page) == pattern(2 * page, 330)
    assert store.batch_remove(ks) == [0, 0]
    assert store.close() == 0
    assert alloc.free(ptr) == 0


def test_stack_lmcache_connector(new_store, key):
    """LMCache's MooncakestoreConnector (mooncakestore_connector.py):
    setup() with the 7 config values; ReplicateConfig() with replica_num
    1 and, with prefer_local_alloc, preferred_segment = get_hostname();
    register_buffer of the pinned allocator's buffer; puts from
    asyncio.to_thread: put_from(key, ptr, size, replica_config) (no
    chunk metadata) or put_parts(key, 28-byte metadata, kv_bytes)
    (save_chunk_meta); exists via is_exist used as a bool;
    _batch_get_into: batch_get_into(keys, ptrs, sizes), n_read <= 0 a
    failure; _batch_get_buffer: batch_get_buffer, None for a miss,
    memoryview(buffer)[:28] and len == length + 28; close():
    unregister_buffer then close().  Keys are CacheEngineKey.to_string()
    with a model name containing '/', a hex hash, the dtype and tags:
    long enough to pass 256 bytes.  Chunks of 256 tokens x 2 x 32 layers
    x 8 heads x 128 x bf16 / 4 = 8 MiB (scaled from 32 MiB)."""
    import asyncio

    store = new_store()
    store.setup("10.0.0.5", "http://10.0.0.1:8080/metadata", 3355443200,
                1073741824, "tcp", "", "10.0.0.1:50051")
    cfg = ReplicateConfig()
    cfg.replica_num = 1
    cfg.preferred_segment = store.get_hostname()
    assert ":" in cfg.preferred_segment
    chunk = 8 << 20
    pinned = HostCache(1, 6, chunk)
    assert store.register_buffer(pinned.base, pinned.region) == 0
    salt = key()
    tags = [("lora_id", "tenant-" + "a" * 80), ("cache_salt", salt)]
    keys = [lmcache_key(LONG_MODEL, (0x9e3779b97f4a7c15 + i) << 80, tags)
            for i in range(3)]
    assert all(len(k.encode()) > 256 for k in keys)
    datas = [pattern(chunk, 340 + i) for i in range(3)]
    for i, d in enumerate(datas):
        ctypes.memmove(pinned.base + i * chunk, d, chunk)
    meta = bytes(range(28))
    meta_key = lmcache_key("Qwen/Qwen2.5-7B", 0xabc, [("r", salt)])

    async def run():
        puts = [asyncio.to_thread(store.put_from, k, pinned.base + i * chunk,
                                  chunk, cfg) for i, k in enumerate(keys)]
        puts.append(asyncio.to_thread(store.put_parts, meta_key, meta,
                                      datas[0][:1 << 20]))
        assert await asyncio.gather(*puts) == [0, 0, 0, 0]
        assert all([bool(store.is_exist(k)) for k in keys])
        got = await asyncio.to_thread(
            store.batch_get_into, keys + [keys[0] + "@x"],
            [pinned.base + (3 + i) * chunk for i in range(3)] + [pinned.base],
            [chunk] * 4)
        assert got[:3] == [chunk] * 3 and got[3] <= 0
        bufs = await asyncio.to_thread(store.batch_get_buffer,
                                       [meta_key, meta_key + "@miss"])
        assert bufs[1] is None
        view = memoryview(bufs[0])
        assert view[:28] == meta and len(view) == (1 << 20) + 28
        assert view[28:] == datas[0][:1 << 20]
        del view
        bufs[0].release()

    asyncio.run(run())
    for i in range(3):
        assert pinned.block(0, 3 + i) == datas[i]
    assert store.batch_remove(keys + [meta_key]) == [0] * 4
    assert store.unregister_buffer(pinned.base) == 0
    assert store.close() == 0
