# SPDX-License-Identifier: GPL-2.0
"""The Mooncake-compatible adapter against the real module and daemon.

Besides each call's contract, the replay_* tests run the call sequences
the AI stacks make on MooncakeDistributedStore (argument orders and the
return values they test), as read in their Mooncake backends: SGLang's
HiCache storage backend, LMCache's Mooncake backend, vLLM's Mooncake
store connector.
"""
import ctypes

import pytest

from conftest import pattern
from fluxonkv.mooncake import (INVALID_PARAMS, OBJECT_NOT_FOUND,
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


def test_remove_by_regex_and_remove_all_on_the_keys_put_here(mc, key, fluxon_env):
    p = key()
    names = [p + s for s in ("/sess1/a", "/sess1/b", "/sess2/a")]
    for n in names:
        assert mc.put(n, b"x") == 0
    assert mc.remove_by_regex("/sess1/") == 2
    assert mc.batch_is_exist(names) == [0, 0, 1]
    assert mc.remove_by_regex("(") == INVALID_PARAMS
    assert mc.remove_all() >= 1
    assert mc.is_exist(names[2]) == 0


def test_unmapped_calls_say_so(mc):
    with pytest.raises(NotImplementedError):
        mc.put_tensor("k", None)
    with pytest.raises(AttributeError):
        mc.no_such_method()


# ---- the stacks' call sequences --------------------------------------------

def test_replay_sglang_hicache(fluxon_env, key):
    """SGLang HiCache's Mooncake backend: setup with a transfer engine and
    keyword options, a warmup put / is_exist / get, register_buffer of the
    host pool, then per batch: batch_is_exist, batch_put_from of the
    missing pages (0 per key), batch_get_into (bytes read > 0 per key),
    the prefix of existing pages, and clear() through remove_all()."""
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
    assert store.remove_all() == 6  # five pages left and the warmup key
    assert store.batch_is_exist(keys + [warm]) == [0] * 7
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
