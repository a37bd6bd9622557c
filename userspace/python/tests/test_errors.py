# SPDX-License-Identifier: GPL-2.0
"""Errors against the real module: errno and fkv_strerror text."""
import errno

import pytest

import fluxonkv
from fluxonkv import FluxonKVError


@pytest.mark.parametrize("op", ["put", "get", "delete"])
def test_oversized_key_is_e2big(kv, op):
    k = b"k" * 257
    call = {"put": lambda: kv.put(k, b"v"), "get": lambda: kv.get(k),
            "delete": lambda: kv.delete(k)}[op]
    with pytest.raises(FluxonKVError) as ei:
        call()
    e = ei.value
    assert isinstance(e, OSError)
    assert e.errno == errno.E2BIG
    assert e.op == op
    assert e.strerror == "key or value too large"
    assert "E2BIG" in str(e) and op in str(e)


def test_longest_key_is_accepted(kv):
    k = b"L" * 256
    kv.put(k, b"max key")
    with kv.get(k) as h:
        assert bytes(h) == b"max key"
    assert kv.delete(k)


def test_empty_key_and_empty_value_are_einval(kv, key):
    for call in (lambda: kv.put(b"", b"v"), lambda: kv.get(""),
                 lambda: kv.put(key(), b""), lambda: kv.put(key(), bytearray())):
        with pytest.raises(FluxonKVError) as ei:
            call()
        assert ei.value.errno == errno.EINVAL


def test_value_over_value_max_is_e2big(kv, key):
    too_big = bytearray(kv.info().value_max + 1)
    with pytest.raises(FluxonKVError) as ei:
        kv.put(key(), too_big)
    assert ei.value.errno == errno.E2BIG


def test_missing_device_is_enodev(fluxon_env):
    with pytest.raises(FluxonKVError) as ei:
        fluxonkv.Store(device="/dev/fluxonkv-does-not-exist")
    assert ei.value.errno == errno.ENODEV
    assert ei.value.op == "open"
    assert "module loaded" in ei.value.strerror


def test_put_many_failure_says_which_item(kv, key):
    good = key()
    with pytest.raises(FluxonKVError) as ei:
        kv.put_many([(good, b"stored"), (b"x" * 300, b"rejected"), (key(), b"never")])
    assert ei.value.index == 1
    assert len(ei.value.put_ids) == 1
    with kv.get(good) as h:
        assert bytes(h) == b"stored"
