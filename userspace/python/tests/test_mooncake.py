# SPDX-License-Identifier: GPL-2.0
"""The Mooncake-compatible adapter against the real module and daemon."""
import ctypes

import pytest

from conftest import pattern
from fluxonkv.mooncake import (INVALID_PARAMS, OBJECT_NOT_FOUND,
                               MooncakeDistributedStore)


@pytest.fixture
def mc(fluxon_env):
    store = MooncakeDistributedStore()
    assert store.setup("node0", "http://127.0.0.1:8080/metadata",
                       3200 * 1024 * 1024, 512 * 1024 * 1024, "tcp", "",
                       "127.0.0.1:50051") == 0
    yield store
    assert store.close() == 0


def test_unset_store_fails_softly():
    store = MooncakeDistributedStore()
    assert store.put("k", b"v") < 0
    assert store.get("k") == b""
    assert store.get_buffer("k") is None
    assert store.is_exist("k") == -1
    assert store.last_error is not None


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


def test_bad_arguments_are_invalid_params(mc):
    assert mc.put("k" * 300, b"v") == INVALID_PARAMS
    assert mc.last_error.errno == 7  # E2BIG
    assert mc.put("k", b"") == INVALID_PARAMS
    assert mc.put("k", memoryview(b"abcd")[::2]) == INVALID_PARAMS


def test_get_buffer_is_zero_copy_and_released(mc, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    value = pattern(70_000, 6)
    mc.put(k, value)
    buf = mc.get_buffer(k)
    assert buf.size() == len(buf) == len(value)
    assert ctypes.string_at(buf.ptr(), buf.size()) == value
    seg = mc._store
    assert seg.segment_base <= buf.ptr() < seg.segment_base + seg.segment_size
    assert bytes(buf) == value and buf.view() == value
    assert fluxon_env.sysfs("holders") == base + 1
    buf.release()
    with pytest.raises(ValueError):
        buf.ptr()
    assert fluxon_env.wait_sysfs("holders", base) == base
    assert mc.get_buffer(key()) is None


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


def test_unmapped_calls_say_so(mc):
    with pytest.raises(NotImplementedError):
        mc.remove_all()
    with pytest.raises(NotImplementedError):
        mc.put_tensor("k", None)
    with pytest.raises(AttributeError):
        mc.no_such_method()
