# SPDX-License-Identifier: GPL-2.0
"""Store against the real module and daemon: round trips, zero copy, batches."""
import array
import mmap

import pytest

from conftest import pattern
from fluxonkv import MemHolder
from fluxonkv._buffer import address_of

MIB = 1 << 20


@pytest.mark.parametrize("size", [1, 100, 4095, 4096, 4097, MIB + 13, 16 * MIB])
def test_value_round_trips_byte_for_byte(kv, key, size):
    k = key()
    value = pattern(size, size)
    put_id = kv.put(k, value)
    assert put_id > 0
    with kv.get(k) as h:
        assert isinstance(h, MemHolder)
        assert len(h) == size
        assert h.put_id == put_id
        assert h.source == "memory"
        assert bytes(h) == value
        assert h.view() == value
    assert kv.delete(k)


@pytest.mark.parametrize("make", [
    lambda b: b,
    bytearray,
    lambda b: memoryview(b"xx" + b + b"yy")[2:-2],
    lambda b: array.array("I", b),
], ids=["bytes", "bytearray", "memoryview-slice", "array"])
def test_put_takes_any_contiguous_buffer(kv, key, make):
    k = key()
    raw = pattern(64 * 1024, 3)
    value = make(raw)
    kv.put(k, value)
    with kv.get(k) as h:
        assert bytes(h) == bytes(memoryview(value).cast("B")) == raw


def test_put_takes_an_mmap(kv, key):
    k = key()
    raw = pattern(3 * 4096 + 5, 4)
    with mmap.mmap(-1, len(raw)) as m:
        m.write(raw)
        kv.put(k, m)
    with kv.get(k) as h:
        assert bytes(h) == raw


def test_put_rejects_non_contiguous_and_non_buffer_values(kv, key):
    with pytest.raises(ValueError, match="contiguous"):
        kv.put(key(), memoryview(b"abcdef")[::2])
    with pytest.raises(TypeError):
        kv.put(key(), "a str is not bytes")
    with pytest.raises(TypeError):
        kv.put(key(), 12345)
    with pytest.raises(TypeError):
        kv.put(12345, b"value")


def test_str_key_is_its_utf8_bytes(kv, key):
    k = key() + "/clé"
    kv.put(k, b"accented")
    with kv.get(k.encode("utf-8")) as h:
        assert bytes(h) == b"accented"
    assert kv.delete(k.encode("utf-8"))
    assert kv.get(k) is None


def test_miss_is_none_and_delete_of_missing_is_false(kv, key):
    k = key()
    assert kv.get(k) is None
    assert kv.exists(k) is False
    assert kv.delete(k) is False


def test_exists_and_delete_follow_the_key(kv, key, fluxon_env):
    k = key()
    holders = fluxon_env.sysfs("holders")
    kv.put(k, b"v")
    assert kv.exists(k) is True
    assert fluxon_env.sysfs("holders") == holders  # exists() let go
    assert kv.delete(k) is True
    assert kv.exists(k) is False
    assert kv.delete(k) is False


def test_overwrite_gets_a_newer_put_id_and_the_new_bytes(kv, key):
    k = key()
    first = kv.put(k, b"first")
    second = kv.put(k, b"second value")
    assert second > first
    with kv.get(k) as h:
        assert h.put_id == second
        assert bytes(h) == b"second value"


def test_view_points_into_the_segment_mapping(kv, key):
    k = key()
    value = pattern(2 * MIB, 9)
    kv.put(k, value)
    base, size = kv.segment_base, kv.segment_size
    assert size == kv.info().segment_size
    with kv.get(k) as h, kv.get(k) as h2:
        v = h.view()
        assert v.readonly
        assert base <= h.address and h.address + len(h) <= base + size
        # the memoryview is the mapping itself, not a copy of it
        assert address_of(v) == h.address
        # a second get of the same version is the same replica
        assert h2.address == h.address
        with pytest.raises(TypeError):
            v[0] = 1
        assert v[:16] == value[:16] and v[-16:] == value[-16:]
        del v


def test_info_reports_the_daemon_and_limits(kv):
    info = kv.info()
    assert info.daemon is True
    assert info.key_max == 256
    assert info.value_max >= 16 * MIB
    assert info.segment_size == 128 * MIB


def test_put_many_and_get_many_keep_order_and_report_misses(kv, key):
    items = {key(): pattern(1000 * (i + 1), i) for i in range(5)}
    put_ids = kv.put_many(items)
    assert len(put_ids) == 5 and put_ids == sorted(put_ids)
    keys = list(items)
    missing = key()
    holders = kv.get_many(keys[:2] + [missing] + keys[2:])
    assert holders[2] is None
    got = [h for h in holders if h is not None]
    assert [bytes(h) for h in got] == list(items.values())
    assert [h.put_id for h in got] == put_ids
    for h in got:
        h.release()
    # pairs work as well as a mapping
    assert len(kv.put_many([(keys[0], b"again")])) == 1
    with kv.get(keys[0]) as h:
        assert bytes(h) == b"again"


def test_gather_puts_round_trip_many_pieces_and_refuse_bad_ones(kv, key,
                                                               fluxon_env):
    """put_from_multi: one gather put per key (FLUXONKV_PUT_F_IOV), byte
    exact up to FLUXONKV_IOV_MAX separate pieces; a piece the module
    cannot read fails that key (-EFAULT), malformed ones -EINVAL, and
    neither stores anything; get_into_multi scatters them back."""
    import ctypes
    import errno
    assert kv.gather_puts()
    used = fluxon_env.sysfs("segment_used_bytes")
    # 1024 separate pieces of 1..97 bytes (each its own ctypes array)
    lens = [1 + (i * 37) % 97 for i in range(1024)]
    value = pattern(sum(lens), 61)
    arrs, off = [], 0
    for n in lens:
        arrs.append((ctypes.c_char * n).from_buffer_copy(value[off:off + n]))
        off += n
    ptrs = [ctypes.addressof(a) for a in arrs]
    ok, efault, kaddr, einval = key(), key(), key(), key()
    hole = mmap.mmap(-1, 4096)
    gone = address_of(hole)
    hole.close()                # unmapped: in range, faults in the copy
    trace = []
    res = kv.put_from_multi(
        [ok, efault, kaddr, einval],
        [ptrs, [ptrs[0], gone], [ptrs[0], 0xffff888000000000], [ptrs[0], -1]],
        [lens, [lens[0], 100], [lens[0], 100], [lens[0], 100]], trace=trace)
    assert res[0] > 0 and res[1:] == [-errno.EFAULT, -errno.EFAULT,
                                      -errno.EINVAL]
    # sent as gather puts (the malformed key was not sent at all)
    assert [w for w, _, _ in trace] == ["put_iov"] * 3
    with kv.get(ok) as h:
        assert bytes(h) == value
    assert not kv.exists(efault) and not kv.exists(kaddr) and \
        not kv.exists(einval)
    # back into other separate pieces, in order
    outs = [(ctypes.c_char * n)() for n in lens]
    got = kv.get_into_multi([ok], [[ctypes.addressof(o) for o in outs]],
                            [lens])
    assert got == [len(value)]
    assert b"".join(o.raw for o in outs) == value
    assert kv.delete(ok)
    assert fluxon_env.wait_sysfs("segment_used_bytes", used) == used
