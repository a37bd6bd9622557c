# SPDX-License-Identifier: GPL-2.0
"""Tenants (issue 30) against the real module and fluxond: key spaces of
their own, one binding per store, only the tenant's users, CLEAR of one
tenant, key_max 250 and the adapter's long keys.

fluxond runs with conftest.TENANTS_YAML: alpha (id 1: uids 0 and 65534)
and beta (id 2: uid 0).  Every test skips, with the reason, on a module
without FLUXONKV_INFO_TENANTS or a fluxond that does not resolve tenants
(the ``tenants`` fixture).
"""
import errno

import pytest

import fluxonkv
from conftest import NOBODY, in_child_as, pattern
from fluxonkv import FluxonKVError
from fluxonkv.mooncake import (INVALID_PARAMS, OBJECT_NOT_FOUND,
                               TENANT_KEY_MAX, MooncakeDistributedStore,
                               native_key)

ALPHA, BETA = 1, 2


@pytest.fixture
def stores(tenants):
    """(alpha, beta, default): one Store in each key space."""
    made = [fluxonkv.Store(tenant="alpha"), fluxonkv.Store(tenant="beta"),
            fluxonkv.Store()]
    yield made
    for s in made:
        s.close()


@pytest.fixture
def adapter(tenants):
    """adapter(tenant_id) -> a set-up MooncakeDistributedStore."""
    made = []

    def make(tenant_id=None):
        s = MooncakeDistributedStore()
        kw = {} if tenant_id is None else {"tenant_id": tenant_id}
        assert s.setup("node0", "P2PHANDSHAKE", 1 << 30, 1 << 20, "tcp", "",
                       "127.0.0.1:50051", None, **kw) == 0, s.last_error
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def test_stores_are_bound_as_asked(stores):
    alpha, beta, default = stores
    assert (alpha.tenant_id, beta.tenant_id, default.tenant_id) == (1, 2, 0)
    with fluxonkv.Store(tenant=ALPHA) as s:
        assert s.tenant_id == ALPHA
    with fluxonkv.Store(tenant="default") as s:
        assert s.tenant_id == 0 and s.key_max == 256
    info = alpha.info()
    assert info.tenants and info.isolated


def test_two_tenants_put_the_same_key_and_each_reads_its_own(stores, key):
    alpha, beta, default = stores
    k = key()
    values = [pattern(5000 + 100 * i, i) for i in range(3)]
    for s, v in zip(stores, values):
        s.put(k, v)
    for s, v in zip(stores, values):
        with s.get(k) as h:
            assert bytes(h) == v
        assert s.lookup(k).len == len(v)
        buf = bytearray(len(v))
        assert s.get_into(k, buf) == len(v) and buf == v
    # a delete in one key space leaves the others
    assert alpha.delete(k) is True
    assert alpha.get(k) is None
    assert bytes(beta.get(k)) == values[1]
    assert bytes(default.get(k)) == values[2]


def test_a_tenant_cannot_see_or_delete_other_tenants_keys(stores, key):
    alpha, beta, default = stores
    kb, k0 = key(), key()
    beta.put(kb, b"beta's")
    default.put(k0, b"tenant 0's")
    for k in (kb, k0):
        assert alpha.get(k) is None
        assert alpha.lookup(k) is None
        assert alpha.exists(k) is False
        assert alpha.get_into(k, bytearray(64)) is None
        assert alpha.delete(k) is False
        assert alpha.get_many([k]) == [None]
    # nor by spelling another tenant's internal prefix: refused (an
    # unprivileged description) or a key of alpha's own (a miss)
    for k in (b"\x00T\x00\x00\x00\x02" + kb.encode(), b"\x00T"):
        try:
            assert alpha.get(k) is None
        except FluxonKVError as e:
            assert e.errno == errno.EINVAL
    # the default tenant sees none of beta's either
    assert default.get(kb) is None and default.delete(kb) is False
    assert bytes(beta.get(kb)) == b"beta's"
    assert bytes(default.get(k0)) == b"tenant 0's"


def test_remove_all_as_alpha_leaves_beta_and_tenant_0(adapter, stores, key):
    alpha_mc = adapter("alpha")
    alpha, beta, default = stores
    ka, kb, k0 = key(), key(), key()
    assert alpha_mc.put(ka, b"a") == 0
    beta.put(kb, b"b")
    default.put(k0, b"0")
    beta.put(ka, b"b's copy of ka")
    assert alpha_mc.remove_all() >= 1
    assert alpha_mc.is_exist(ka) == 0 and alpha.get(ka) is None
    assert bytes(beta.get(kb)) == b"b" and bytes(beta.get(ka)) == b"b's copy of ka"
    assert bytes(default.get(k0)) == b"0"
    # by regex too: only alpha's keys that match
    assert alpha_mc.put(ka, b"again") == 0
    assert alpha_mc.remove_by_regex("^" + ka + "$") == 1
    assert alpha_mc.is_exist(ka) == 0
    assert bytes(beta.get(ka)) == b"b's copy of ka"
    # and the default tenant's remove_all keeps beta's
    default_mc = adapter()
    assert default_mc.remove_all() >= 1
    assert default.get(k0) is None and bytes(beta.get(kb)) == b"b"


def test_fluxonkv_clear_of_one_tenant(stores, key):
    alpha, beta, default = stores
    k = key()
    for s in stores:
        s.put(k, b"v")
    # a barrier: the module's batched notes of these local puts reach the
    # master before a DELETE's upcall (the adapter's remove_all does it)
    assert not default.delete(k + "-barrier")
    assert fluxonkv.clear("^" + k + "$", tenant="beta") == 1
    assert beta.get(k) is None
    assert alpha.exists(k) and default.exists(k)
    assert fluxonkv.clear("^" + k + "$", tenant=ALPHA) == 1
    assert fluxonkv.clear("^" + k + "$") == 1        # tenant 0
    assert not alpha.exists(k) and not default.exists(k)


def test_key_max_is_250_in_a_tenant_and_the_adapter_hashes_longer(
        stores, adapter):
    alpha, beta, default = stores
    assert alpha.key_max == TENANT_KEY_MAX == 250
    assert alpha.info().key_max == 250
    assert default.key_max == 256 and default.info().key_max == 256
    k250, k251 = "x" * 250, "y" * 251
    alpha.put(k250, b"fits")
    assert bytes(alpha.get(k250)) == b"fits"
    with pytest.raises(FluxonKVError) as e:
        alpha.put(k251, b"too long")
    assert e.value.errno == errno.E2BIG
    default.put(k251, b"fits in tenant 0")      # 256 there
    mc = adapter("alpha")
    for n in (251, 256, 1000):
        k = "L" * n
        assert mc.put(k, b"long %d" % n) == 0
        assert mc.get(k) == b"long %d" % n
        # stored under its hashed name, in alpha's key space
        assert bytes(alpha.get(native_key(k, 250))) == b"long %d" % n
        assert beta.get(native_key(k, 250)) is None
        assert mc.remove(k) == 0
    alpha.delete(k250)
    default.delete(k251)


def test_binding_twice_is_ebusy(tenants, key):
    with fluxonkv.Store(tenant="alpha") as s:
        for t in (ALPHA, BETA):
            with pytest.raises(FluxonKVError) as e:
                s._bind_tenant(t)
            assert e.value.errno == errno.EBUSY and e.value.op == "tenant"
        assert s.tenant_id == ALPHA and s.key_max == 250
    # a store that holds a value cannot change key spaces under it
    with fluxonkv.Store() as s:
        k = key()
        s.put(k, b"held")
        h = s.get(k)
        with pytest.raises(FluxonKVError) as e:
            s._bind_tenant(ALPHA)
        assert e.value.errno == errno.EBUSY
        assert s.tenant_id == 0 and s.key_max == 256
        h.release()
        s.delete(k)
    # the adapter: a second setup() in another tenant is refused
    mc = MooncakeDistributedStore()
    try:
        assert mc.setup("h", tenant_id="alpha") == 0
        assert mc.setup("h", tenant_id="alpha") == 0
        assert mc.setup("h", tenant_id="beta") == INVALID_PARAMS
    finally:
        mc.close()


def test_an_unknown_tenant_fails_clearly(tenants):
    with pytest.raises(FluxonKVError) as e:
        fluxonkv.Store(tenant="gamma")
    assert e.value.errno == errno.ENOENT and e.value.op == "tenant"
    assert "gamma" in str(e.value)
    with pytest.raises(FluxonKVError) as e:
        fluxonkv.Store(tenant=99)                # not in the module's table
    assert e.value.errno == errno.ENOENT and e.value.op == "tenant"
    with pytest.raises(FluxonKVError) as e:
        fluxonkv.tenant_id("gamma")
    assert e.value.errno == errno.ENOENT
    # the adapter: a code, as SGLang checks (not a TypeError, which SGLang
    # reads as "this Mooncake has no tenants")
    mc = MooncakeDistributedStore()
    assert mc.setup("h", tenant_id="gamma") == INVALID_PARAMS
    assert mc.last_error.errno == errno.ENOENT
    assert mc.close() == 0


def test_an_unprivileged_process_binds_only_to_its_own_tenants(tenants, key):
    def child():
        with pytest.raises(FluxonKVError) as e:
            fluxonkv.Store(tenant=BETA)
        assert e.value.errno == errno.EPERM and e.value.op == "tenant"
        with fluxonkv.Store(tenant=ALPHA) as s:
            assert s.tenant_id == ALPHA and s.key_max == 250
        # unbound, it may not name a tenant's internal keys either
        with fluxonkv.Store() as s:
            with pytest.raises(FluxonKVError) as e:
                s.put(b"\x00T\x00\x00\x00\x01k", b"v")
            assert e.value.errno == errno.EINVAL

    in_child_as(NOBODY, child)


def test_an_unprivileged_tenant_reads_its_own_values_through_holders(
        stores, key):
    alpha, beta, default = stores
    k, kb = key(), key()
    beta.put(kb, b"not for nobody")
    value = pattern(256 << 10, 7)

    def child():
        with fluxonkv.Store(tenant=ALPHA) as s:
            s.put(k, value)
            with s.get(k) as h:                  # zero-copy, its mapping
                mv = memoryview(h)
                assert mv[:4096] == value[:4096] and bytes(mv) == value
                del mv
            got = s.get_many([k, kb])
            assert bytes(got[0]) == value and got[1] is None
            s.release_many([got[0]])
            assert s.get(kb) is None and s.delete(kb) is False

    in_child_as(NOBODY, child)
    assert bytes(alpha.get(k)) == value          # root's alpha sees it
    assert bytes(beta.get(kb)) == b"not for nobody"
    assert default.get(k) is None
    alpha.delete(k)


def test_an_unprivileged_stack_sets_up_its_tenant_by_name(stores, key):
    """What SGLang does as a tenant's user: setup(tenant_id=name) resolves
    the name over fluxond's control socket, which its users must reach."""
    k, kb = key(), key()
    stores[1].put(kb, b"beta's")

    def child():
        mc = MooncakeDistributedStore()
        assert mc.setup("h", "P2PHANDSHAKE", 1 << 30, 1 << 20, "tcp", "",
                        "m:1", None, tenant_id="alpha") == 0, mc.last_error
        assert mc.put(k, b"sglang page") == 0
        assert mc.get(k) == b"sglang page"
        buf = mc.get_buffer(k)                  # zero-copy, its mapping
        assert buf is not None and bytes(memoryview(buf)) == b"sglang page"
        del buf
        assert mc.get(kb) == b"" and mc.is_exist(kb) == 0
        assert mc.remove(kb) == OBJECT_NOT_FOUND
        assert mc.remove_all() >= 1
        assert mc.is_exist(k) == 0
        assert mc.close() == 0
        mc = MooncakeDistributedStore()
        assert mc.setup("h", tenant_id="beta") != 0     # not its tenant
        assert mc.last_error.errno == errno.EPERM
        mc.close()

    in_child_as(NOBODY, child)
    assert bytes(stores[1].get(kb)) == b"beta's"     # alpha's clear kept it
