# SPDX-License-Identifier: GPL-2.0
"""The Mooncake-compatible adapter against the real module and daemon.

Besides each call's contract, the replay_* tests run the call sequences
the AI stacks make on MooncakeDistributedStore (argument orders and the
return values they test), as read in their Mooncake backends: SGLang's
HiCache storage backend, LMCache's Mooncake backend, vLLM's Mooncake
store connector.
"""
import ctypes
import errno
import threading

import pytest

from conftest import pattern
from fluxonkv import mooncake
from fluxonkv.mooncake import (INTERNAL_ERROR, INVALID_PARAMS,
                               OBJECT_NOT_FOUND, UNAVAILABLE_IN_CURRENT_MODE,
                               MooncakeDistributedStore, ReplicateConfig)


@pytest.fixture
def mc(fluxon_env):
    store = MooncakeDistributedStore()
    assert store.setup("node0", "http://127.0.0.1:8080/metadata",
                       3200 * 1024 * 1024, 512 * 1024 * 1024, "tcp", "",
                       "127.0.0.1:50051") == 0
    yield store
    assert store.close() == 0


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
    assert mc.put("k" * 300, b"v") == INVALID_PARAMS
    assert mc.last_error.errno == 7  # E2BIG
    assert mc.put("k", b"") == INVALID_PARAMS
    assert mc.put("k", memoryview(b"abcd")[::2]) == INVALID_PARAMS
    assert mc.batch_put_from(["a", "b"], [1], [1, 2]) == [INVALID_PARAMS] * 2


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


def test_remove_all_and_remove_by_regex_say_they_cannot(mc, key):
    """fluxonkv cannot list the store's keys (master support not built):
    both return UNAVAILABLE_IN_CURRENT_MODE and remove nothing, rather
    than clear only the keys this object happened to put."""
    p = key()
    names = [p + s for s in ("/sess1/a", "/sess1/b", "/sess2/a")]
    for n in names:
        assert mc.put(n, b"x") == 0
    assert mc.remove_by_regex("/sess1/") == UNAVAILABLE_IN_CURRENT_MODE
    assert mc.last_error.errno == errno.EOPNOTSUPP
    assert mc.last_error.op == "remove_by_regex"
    assert mc.remove_by_regex("(") == INVALID_PARAMS
    assert mc.remove_all() == UNAVAILABLE_IN_CURRENT_MODE
    assert mc.last_error.errno == errno.EOPNOTSUPP
    assert "master" in str(mc.last_error)
    assert mc.batch_is_exist(names) == [1, 1, 1]
    assert mc.batch_remove(names) == [0, 0, 0]


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
    assert mc.batch_put_from_multi_buffers([k1], [[]], [[]]) == [INVALID_PARAMS]
    assert mc.batch_put_from_multi_buffers([k1], [[a[1][0]]], [[0]]) == [INVALID_PARAMS]
    assert mc.batch_get_into_multi_buffers([k2], [[]], [[]]) == [INVALID_PARAMS]
    assert mc.batch_get_into_multi_buffers(
        [k2, k2], [["x"], a[1]], [[3], a[2]]) == [INVALID_PARAMS, 6]
    assert mc.batch_put_from_multi_buffers([], [], []) == []
    assert mc.batch_get_into_multi_buffers([], [], []) == []
    unset = MooncakeDistributedStore()
    assert unset.batch_put_from_multi_buffers([k1], [a[1]], [a[2]]) == [INTERNAL_ERROR]
    assert unset.batch_get_into_multi_buffers([k1], [a[1]], [a[2]]) == [INTERNAL_ERROR]
    assert mc.remove(k2) == 0


@pytest.mark.skipif(mooncake._vm_rw is None,
                    reason="process_vm_readv/writev refused here: the copies "
                           "fall back to memmove, which trusts addresses")
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


# ---- the stacks' call sequences --------------------------------------------

def test_replay_sglang_hicache(fluxon_env, key):
    """SGLang HiCache's Mooncake backend: setup with a transfer engine and
    keyword options, a warmup put / is_exist / get, register_buffer of the
    host pool, then per batch: batch_is_exist, batch_put_from of the
    missing pages (0 per key), batch_get_into (bytes read > 0 per key),
    the prefix of existing pages, and clear() through remove_all() (which
    says it cannot: no key listing yet)."""
    store = MooncakeDistributedStore()
    ret = store.setup("node0", "P2PHANDSHAKE", 4 << 30, 16 << 20, "rdma", "",
                      "10.0.0.1:50051", None, enable_ssd_offload=True,
                      ssd_offload_path="/tmp/none")
    assert ret == 0
    warm = key() + "_warmup"
    assert store.put(warm, bytes(4 * 1024)) == 0
    assert store.is_exist(warm) == 1
    assert store.get(warm) == bytes(4 * 1024)

    pages = [pattern(64 * 1024, 50 + i) for i in range(6)]
    pool, ptrs = buffers(pages)
    assert store.register_buffer(ptrs[0], sum(len(p) for p in pages)) == 0
    keys = [f"{key()}_{i}_k" for i in range(6)]
    store.put(keys[0], pages[0])                       # one page is there
    exist = store.batch_is_exist(keys)
    assert exist == [1, 0, 0, 0, 0, 0]
    missing = [i for i, e in enumerate(exist) if e != 1]
    res = store.batch_put_from([keys[i] for i in missing],
                               [ptrs[i] for i in missing],
                               [len(pages[i]) for i in missing],
                               ReplicateConfig())
    assert res == [0] * len(missing)
    dst, dptrs = buffers([bytes(len(p)) for p in pages])
    got = store.batch_get_into(keys, dptrs, [len(p) for p in pages])
    assert got == [len(p) for p in pages] and all(r > 0 for r in got)
    assert [d.raw for d in dst] == pages
    store.remove(keys[3])
    exist = store.batch_is_exist(keys)
    prefix = next((i for i, e in enumerate(exist) if e != 1), len(keys))
    assert prefix == 3
    # clear(): no key listing yet, a negative code and nothing removed
    assert store.remove_all() == UNAVAILABLE_IN_CURRENT_MODE
    assert store.batch_is_exist(keys + [warm]) == [1, 1, 1, 0, 1, 1, 1]
    assert store.batch_remove(keys + [warm]) == [0, 0, 0, OBJECT_NOT_FOUND,
                                                 0, 0, 0]
    assert store.close() == 0


def test_replay_lmcache(mc, key):
    """LMCache's Mooncake backend: put_from of a chunk's memory,
    is_exist / batch_is_exist lookups, get_size to size the destination,
    get_buffer read through memoryview (the 3.11 TypeError of the issue),
    batch_get_buffer, then remove."""
    chunks = [pattern(256 * 1024, 60 + i) for i in range(3)]
    arrs, ptrs = buffers(chunks)
    keys = [f"{key()}@chunk{i}" for i in range(3)]
    for k, p, c in zip(keys, ptrs, chunks):
        assert mc.put_from(k, p, len(c)) == 0
    assert mc.is_exist(keys[0]) == 1
    assert mc.batch_is_exist(keys) == [1, 1, 1]
    assert [mc.get_size(k) for k in keys] == [len(c) for c in chunks]
    buf = mc.get_buffer(keys[1])
    assert buf is not None
    view = memoryview(buf).cast("B")
    assert view == chunks[1]
    del view
    buf.release()
    handles = mc.batch_get_buffer(keys)
    assert [memoryview(h).tobytes() for h in handles] == chunks
    del handles
    assert all(mc.remove(k) == 0 for k in keys)
    assert mc.batch_is_exist(keys) == [0, 0, 0]


def test_replay_vllm_store_connector(mc, key):
    """vLLM's Mooncake store connector (kv lookup buffer): put of the
    serialized tensor bytes with a ReplicateConfig, is_exist polling,
    get of the bytes, get of a key never put (b"") and remove."""
    cfg = ReplicateConfig()
    cfg.replica_num = 1
    k = key() + "/kv"
    payload = pattern(1 << 20, 70)
    assert mc.put(k, payload, cfg) == 0
    assert mc.is_exist(k) == 1
    assert mc.get(k) == payload
    assert mc.get(k + "/never") == b""
    assert mc.remove(k) == 0
    assert mc.is_exist(k) == 0
