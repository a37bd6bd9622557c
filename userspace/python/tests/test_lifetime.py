# SPDX-License-Identifier: GPL-2.0
"""Holder lifetime against the real module: pins, release, GC, exit, close.

Every test checks the kernel's own count of holders
(/sys/kernel/fluxonkv/holders) rather than trusting the Python side.
"""
import ctypes
import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fluxonkv
from conftest import pattern
from fluxonkv._buffer import pinned

PKG_DIR = str(Path(__file__).resolve().parents[1])


def test_holder_keeps_old_bytes_after_delete(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    old = pattern(300_000, 1)
    kv.put(k, old)
    h = kv.get(k)
    assert fluxon_env.sysfs("holders") == base + 1
    assert kv.delete(k)
    assert kv.get(k) is None
    # fill the freed room with other values: the pinned bytes must not move
    for i in range(4):
        kv.put(key(), pattern(300_000, 50 + i))
    assert bytes(h) == old and h.view() == old
    h.release()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_holder_keeps_old_bytes_after_overwrite(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    old, new = pattern(200_000, 2), pattern(250_000, 3)
    kv.put(k, old)
    h_old = kv.get(k)
    kv.put(k, new)
    with kv.get(k) as h_new:
        assert bytes(h_new) == new
        assert h_new.put_id > h_old.put_id
        assert h_new.address != h_old.address
    assert bytes(h_old) == old
    h_old.release()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_release_makes_views_and_holder_unusable(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    kv.put(k, b"abcdef")
    h = kv.get(k)
    v = h.view()
    h.release()
    assert h.released
    assert fluxon_env.wait_sysfs("holders", base) == base
    with pytest.raises(ValueError):
        v[0]
    with pytest.raises(ValueError):
        bytes(v)
    for use in (len, bytes, lambda x: x.view(), lambda x: x.address):
        with pytest.raises(ValueError):
            use(h)
    h.release()  # idempotent


def test_release_refuses_while_a_derived_view_lives(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    kv.put(k, b"0123456789")
    h = kv.get(k)
    part = h.view()[2:5]
    with pytest.raises(BufferError):
        h.release()
    assert not h.released
    assert fluxon_env.sysfs("holders") == base + 1
    assert bytes(part) == b"234"
    del part
    h.release()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_release_refuses_while_the_view_is_exported(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    kv.put(k, b"exported")
    h = kv.get(k)
    v = h.view()
    with pinned(v) as (addr, n):  # a C-level export of v, as numpy takes
        with pytest.raises(BufferError, match="exported"):
            h.release()
        assert fluxon_env.sysfs("holders") == base + 1
        assert ctypes.string_at(addr, n) == b"exported"
    del v
    h.release()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_garbage_collected_holder_is_released(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    kv.put(k, b"collect me")
    h = kv.get(k)
    assert fluxon_env.sysfs("holders") == base + 1
    del h
    gc.collect()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_view_outliving_its_holder_keeps_the_pin(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    k = key()
    value = pattern(100_000, 7)
    kv.put(k, value)
    v = kv.get(k).view()  # the MemHolder itself is dropped at once
    gc.collect()
    assert fluxon_env.sysfs("holders") == base + 1
    kv.delete(k)
    kv.put(k, pattern(100_000, 8))
    assert v == value
    del v
    gc.collect()
    assert fluxon_env.wait_sysfs("holders", base) == base


CHILD = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {pkg!r})
    import fluxonkv
    kv = fluxonkv.Store()
    held = [kv.get({key!r}) for _ in range(3)]
    assert all(h is not None for h in held)
    print("held", flush=True)
    sys.stdin.readline()
    how = {how!r}
    if how == "exit":
        sys.exit(0)
    if how == "_exit":
        os._exit(0)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize("how", ["exit", "_exit", "SIGKILL"])
def test_process_exit_releases_its_holders(kv, key, fluxon_env, how):
    base = fluxon_env.sysfs("holders")
    k = key()
    kv.put(k, b"held by a child")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(pkg=PKG_DIR, key=k, how=how)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ))
    try:
        assert child.stdout.readline().strip() == "held"
        assert fluxon_env.sysfs("holders") == base + 3
        child.stdin.write("go\n")
        child.stdin.flush()
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_close_releases_every_holder_of_the_store(fluxon_env, key):
    base = fluxon_env.sysfs("holders")
    kv = fluxonkv.Store()
    k = key()
    kv.put(k, b"closing")
    h1, h2 = kv.get(k), kv.get(k)
    v = h1.view()
    assert fluxon_env.sysfs("holders") == base + 2
    kv.close()
    assert h1.released and h2.released
    with pytest.raises(ValueError):
        v[0]
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_close_defers_while_memory_is_exported(fluxon_env, key):
    base = fluxon_env.sysfs("holders")
    kv = fluxonkv.Store()
    k = key()
    kv.put(k, b"still exported")
    h = kv.get(k)
    part = h.view()[:5]
    with pytest.warns(ResourceWarning):
        kv.close()
    # the mapping stays while part can read it
    assert bytes(part) == b"still"
    assert fluxon_env.sysfs("holders") == base + 1
    del part
    h.release()
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_closed_store_raises_value_error(fluxon_env, key):
    kv = fluxonkv.Store()
    kv.close()
    assert kv.closed
    for op in (lambda: kv.put(key(), b"x"), lambda: kv.get(key()),
               lambda: kv.delete(key()), lambda: kv.exists(key()),
               lambda: kv.info(), lambda: kv.segment_base,
               lambda: kv.put_many({key(): b"x"}), lambda: kv.get_many([key()])):
        with pytest.raises(ValueError, match="closed"):
            op()
    kv.close()  # idempotent
