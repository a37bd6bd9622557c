# SPDX-License-Identifier: GPL-2.0
"""The control-socket client (fluxonkv._control) against a fake fluxond:
tenant names to ids (FKV_CCMD_TENANT) and CLEAR of one tenant.  Needs no
device or daemon: runs anywhere (host, CI, VM).  The real daemon is
test_tenants.py's.
"""
import errno
import socket
import struct
import threading
import time

import pytest

import fluxonkv
from fluxonkv import FluxonKVError, _control
from fluxonkv.mooncake import KEY_MAX, TENANT_KEY_MAX, native_key


class FakeDaemon:
    """A UNIX socket that answers each request with what @answer(cmd,
    attrs) returns: (cmd, {attr: payload}), or None to close silently."""

    def __init__(self, path, answer, read=True):
        self.path = str(path)
        self.answer = answer
        self.read = read
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if not self.read:
                    # closed with the request unread: the peer's ECONNRESET
                    time.sleep(0.2)
                    continue
                data = conn.recv(65536)
                n, kind = struct.unpack_from("=IH", data)
                cmd = data[16]
                attrs = _control._attrs(data[20:n])
                self.requests.append((kind, cmd, attrs))
                out = self.answer(cmd, attrs)
                if out is not None:
                    acmd, aattrs = out
                    conn.sendall(_control._message(
                        acmd, [_control._attr(k, v) for k, v in aattrs.items()]))

    def close(self):
        self.sock.close()


def _status(err):
    return struct.pack("=i", err)


TENANTS = {b"alpha\0": 1, b"beta\0": 2}


def _tenants(cmd, attrs):
    if cmd == _control._CCMD_TENANT:
        tid = TENANTS.get(attrs.get(_control._CA_TENANT_NAME))
        if tid is None:
            return cmd, {_control._A_STATUS: _status(-errno.ENOENT)}
        return cmd, {_control._A_STATUS: _status(0),
                     _control._CA_TENANT_ID: struct.pack("=I", tid)}
    return cmd, {_control._A_STATUS: _status(0),
                 _control._CA_COUNT: struct.pack("=Q", 3)}


@pytest.fixture
def daemon(tmp_path, monkeypatch):
    d = FakeDaemon(tmp_path / "fluxond.sock", _tenants)
    monkeypatch.setenv("FLUXOND_CONTROL", d.path)
    yield d
    d.close()


def test_tenant_id_asks_fluxond_by_name(daemon):
    assert fluxonkv.tenant_id("alpha") == 1
    assert _control.tenant_id("beta", path=daemon.path) == 2
    kind, cmd, attrs = daemon.requests[0]
    assert kind == _control._WIRE_TYPE and cmd == _control._CCMD_TENANT
    assert attrs == {_control._CA_TENANT_NAME: b"alpha\0"}
    # "default" is tenant 0 without asking
    assert fluxonkv.tenant_id("default") == 0
    assert len(daemon.requests) == 2


def test_an_unknown_tenant_name_is_enoent_naming_it(daemon):
    with pytest.raises(FluxonKVError) as e:
        fluxonkv.tenant_id("gamma")
    assert e.value.errno == errno.ENOENT and e.value.op == "tenant"
    assert "gamma" in str(e.value) and "tenants:" in str(e.value)


def test_a_daemon_that_predates_tenants_is_eopnotsupp(tmp_path, monkeypatch):
    d = FakeDaemon(tmp_path / "old.sock", lambda cmd, attrs: None)
    try:
        with pytest.raises(FluxonKVError) as e:
            _control.tenant_id("alpha", path=d.path)
        assert e.value.errno == errno.EOPNOTSUPP
        assert "predates tenants" in str(e.value)
    finally:
        d.close()


def test_an_answer_without_an_id_is_eproto(tmp_path):
    d = FakeDaemon(tmp_path / "bad.sock",
                   lambda cmd, attrs: (cmd, {_control._A_STATUS: _status(0)}))
    try:
        with pytest.raises(FluxonKVError) as e:
            _control.tenant_id("alpha", path=d.path)
        assert e.value.errno == errno.EPROTO
    finally:
        d.close()


def test_no_daemon_is_enotconn(tmp_path):
    with pytest.raises(FluxonKVError) as e:
        _control.tenant_id("alpha", path=str(tmp_path / "nobody.sock"))
    assert e.value.errno == errno.ENOTCONN


@pytest.mark.parametrize("name", ["", "a" * 256, "a\0b"])
def test_bad_names_are_refused_before_asking(name, daemon):
    with pytest.raises(FluxonKVError) as e:
        fluxonkv.tenant_id(name)
    assert e.value.errno == errno.EINVAL
    assert daemon.requests == []


@pytest.mark.parametrize("tenant", [True, 1.0, b"alpha", ["alpha"]])
def test_a_tenant_is_a_name_or_an_id(tenant):
    with pytest.raises(TypeError):
        _control.resolve_tenant(tenant)
    # refused before the device is opened (none here)
    with pytest.raises(TypeError):
        fluxonkv.Store(device="/nonexistent/fluxonkv", tenant=tenant)


def test_tenant_ids_out_of_range_are_einval():
    for tid in (-1, 65536):
        with pytest.raises(FluxonKVError) as e:
            _control.resolve_tenant(tid)
        assert e.value.errno == errno.EINVAL
    assert _control.resolve_tenant(None) == 0
    assert _control.resolve_tenant(0) == 0
    assert _control.resolve_tenant(65535) == 65535


def test_clear_names_the_tenant_it_clears(daemon):
    assert fluxonkv.clear("^a", tenant="beta") == 3
    assert fluxonkv.clear(tenant=7) == 3
    # the default tenant: no TENANT_ID at all (an older daemon's CLEAR)
    assert fluxonkv.clear() == 3
    assert fluxonkv.clear(tenant="default") == 3
    clears = [a for _, cmd, a in daemon.requests if cmd == _control._CCMD_CLEAR]
    assert clears[0] == {_control._CA_PATTERN: b"^a\0",
                         _control._CA_TENANT_ID: struct.pack("=I", 2)}
    assert clears[1] == {_control._CA_TENANT_ID: struct.pack("=I", 7)}
    assert clears[2] == {} and clears[3] == {}


def test_clear_of_an_unknown_tenant_clears_nothing(daemon):
    with pytest.raises(FluxonKVError) as e:
        fluxonkv.clear(tenant="gamma")
    assert e.value.errno == errno.ENOENT
    assert [cmd for _, cmd, _ in daemon.requests] == [_control._CCMD_TENANT]


def test_long_keys_hash_at_the_stores_key_max():
    """A tenant's keys are at most 250 bytes: 251..256 are hashed there,
    kept as they are in the default tenant."""
    k250, k251, k256 = ("k" * n for n in (250, 251, 256))
    assert native_key(k250, TENANT_KEY_MAX) == k250
    assert native_key(k256, KEY_MAX) == k256
    for k in (k251, k256, k251.encode()):
        h = native_key(k, TENANT_KEY_MAX)
        assert isinstance(h, bytes) and len(h) <= TENANT_KEY_MAX
        assert h == native_key(k.encode() if isinstance(k, str) else k, 250)
    # multi-byte characters: the byte length counts
    wide = "é" * 126                    # 252 bytes
    assert native_key(wide, KEY_MAX) == wide
    assert isinstance(native_key(wide, TENANT_KEY_MAX), bytes)


def test_a_connection_reset_is_enotconn_never_a_raw_oserror(tmp_path):
    """A daemon that drops the connection with the request unread: the
    client says ENOTCONN (a FluxonKVError), as for no daemon at all."""
    d = FakeDaemon(tmp_path / "s", lambda cmd, attrs: None, read=False)
    try:
        with pytest.raises(FluxonKVError) as e:
            fluxonkv.tenant_id("alpha", path=d.path)
        assert e.value.errno == errno.ENOTCONN, e.value
    finally:
        d.close()
