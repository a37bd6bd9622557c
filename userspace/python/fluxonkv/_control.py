# SPDX-License-Identifier: GPL-2.0
"""A client of fluxond's local control socket (userspace/fluxond/ctlsock.c).

One request per connection, in the daemon's wire codec: a netlink message
(nlmsghdr of type FKV_WIRE_TYPE, a genl header, attributes) on a UNIX
stream socket.  Two commands are spoken here: FKV_CCMD_CLEAR (Mooncake's
remove_all / remove_by_regex, one tenant's keys) and FKV_CCMD_TENANT (a
tenant's name to its id); the numbers are those of
userspace/common/cluster_msg.h and uapi/linux/fluxonkv.h.
"""
import errno
import os
import socket
import struct

from .errors import FluxonKVError

CONTROL_PATH = "/run/fluxonkv/fluxond.sock"     # FKV_CONTROL_PATH

_WIRE_TYPE = 0x4658             # FKV_WIRE_TYPE
_GENL_VERSION = 1               # FLUXONKV_GENL_VERSION
_CCMD_CLEAR = 115               # FKV_CCMD_CLEAR
_CCMD_TENANT = 116              # FKV_CCMD_TENANT
_A_STATUS = 4                   # FLUXONKV_A_STATUS (u32: 0 or -errno)
_CA_MESSAGE = 70                # FKV_CA_MESSAGE
_CA_PATTERN = 89                # FKV_CA_PATTERN
_CA_COUNT = 90                  # FKV_CA_COUNT
_CA_TENANT_NAME = 94            # FKV_CA_TENANT_NAME
_CA_TENANT_ID = 95              # FKV_CA_TENANT_ID
TENANT_ID_MAX = 65535           # FLUXONKV_TENANT_ID_MAX
DEFAULT_TENANT = "default"      # tenant 0's name (FKV_TENANT_DEFAULT)
_TENANT_NAME_MAX = 63           # FKV_TENANT_NAME_MAX
_WIRE_MAX = 64 << 10            # FKV_WIRE_MAX
_TIMEOUT = 60.0                 # a clear of millions of keys takes a while


def control_path():
    """$FLUXOND_CONTROL, or fluxond's default control socket."""
    return os.environ.get("FLUXOND_CONTROL") or CONTROL_PATH


def _attr(kind, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + bytes(-n % 4)


def _message(cmd, attrs):
    body = struct.pack("=BBH", cmd, _GENL_VERSION, 0) + b"".join(attrs)
    return struct.pack("=IHHII", 16 + len(body), _WIRE_TYPE, 0, 0, 0) + body


def _attrs(buf):
    out, off = {}, 0
    while off + 4 <= len(buf):
        n, kind = struct.unpack_from("=HH", buf, off)
        if n < 4 or off + n > len(buf):
            break
        out[kind & 0x3FFF] = buf[off + 4:off + n]
        off += (n + 3) & ~3
    return out


def _recv_message(sock, cmd, op, eof_errno=errno.EPIPE,
                  eof_why="fluxond closed the control connection without "
                          "an answer"):
    data = b""
    while len(data) < 16 or len(data) < struct.unpack_from("=I", data)[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise FluxonKVError(eof_errno, eof_why, op=op)
        data += chunk
        if len(data) >= 4 and struct.unpack_from("=I", data)[0] > _WIRE_MAX:
            raise FluxonKVError(errno.EPROTO, "oversized answer", op=op)
    n, kind = struct.unpack_from("=IH", data)
    got = data[16] if len(data) > 16 else None
    if kind != _WIRE_TYPE or got != cmd or n < 20:
        raise FluxonKVError(errno.EPROTO, f"not an answer to {op.upper()}",
                            op=op)
    return _attrs(data[20:n])


def _ask(cmd, attrs, path, op, **eof):
    """One request on a fresh connection; the answer's attributes."""
    path = path or control_path()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(_TIMEOUT)
        try:
            sock.connect(path)
        except OSError as e:
            # the socket's permissions are EACCES, as in libfluxonkv
            code = (errno.EACCES if e.errno in (errno.EACCES, errno.EPERM)
                    else errno.ENOTCONN)
            raise FluxonKVError(code, f"fluxond's control socket "
                                f"{path}: {e.strerror}", op=op) from e
        sock.sendall(_message(cmd, attrs))
        return _recv_message(sock, cmd, op, **eof)
    except socket.timeout as e:
        raise FluxonKVError(errno.ETIMEDOUT, f"fluxond did not answer "
                            f"{op.upper()}", op=op) from e
    except FluxonKVError:
        raise
    except OSError as e:
        # reset or broken mid-request: no daemon to ask (never a raw OSError)
        raise FluxonKVError(errno.ENOTCONN, f"fluxond's control socket "
                            f"{path}: {e.strerror}", op=op) from e
    finally:
        sock.close()


def _status(answer, op):
    status = struct.unpack("=i", answer.get(_A_STATUS, b"\0\0\0\0")[:4])[0]
    if status:
        why = answer.get(_CA_MESSAGE, b"").rstrip(b"\0").decode(errors="replace")
        raise FluxonKVError(-status, why or os.strerror(-status), op=op)


def tenant_id(name, path=None):
    """The id of the tenant @name in fluxond's configuration (``tenants:``):
    1..65535; "default" is tenant 0 without asking.  FluxonKVError: ENOENT
    no such tenant, ENOTCONN no daemon listens, EOPNOTSUPP a daemon that
    predates tenants (it closes without an answer), EINVAL a bad name."""
    if not isinstance(name, str):
        raise TypeError(f"a tenant name is a str, not {type(name).__name__}")
    if name == DEFAULT_TENANT:
        return 0
    raw = name.encode()
    if not raw or len(raw) > _TENANT_NAME_MAX or b"\0" in raw:
        raise FluxonKVError(errno.EINVAL, f"a tenant name is 1..{_TENANT_NAME_MAX}"
                            " bytes without NUL", op="tenant")
    answer = _ask(_CCMD_TENANT, [_attr(_CA_TENANT_NAME, raw + b"\0")], path,
                  "tenant", eof_errno=errno.EOPNOTSUPP,
                  eof_why="fluxond closed the control connection without an "
                          "answer: it predates tenants")
    status = struct.unpack("=i", answer.get(_A_STATUS, b"\0\0\0\0")[:4])[0]
    if status == -errno.ENOENT:
        raise FluxonKVError(errno.ENOENT, f"no tenant named {name!r} in "
                            "fluxond's configuration (tenants:)", op="tenant")
    _status(answer, "tenant")
    raw_id = answer.get(_CA_TENANT_ID)
    tid = struct.unpack("=I", raw_id[:4])[0] if raw_id and len(raw_id) >= 4 else 0
    if not 1 <= tid <= TENANT_ID_MAX:
        raise FluxonKVError(errno.EPROTO, "TENANT answer without a tenant id",
                            op="tenant")
    return tid


def resolve_tenant(tenant, path=None):
    """@tenant (None, a name or an id) as an id: None and "default" are 0."""
    if tenant is None:
        return 0
    if isinstance(tenant, bool) or not isinstance(tenant, (int, str)):
        raise TypeError("a tenant is a name (str) or an id (int), not "
                        f"{type(tenant).__name__}")
    if isinstance(tenant, str):
        return tenant_id(tenant, path)
    if not 0 <= tenant <= TENANT_ID_MAX:
        raise FluxonKVError(errno.EINVAL, f"a tenant id is 0..{TENANT_ID_MAX}",
                            op="tenant")
    return tenant


def clear(pattern=None, path=None, tenant=None):
    """Ask fluxond's master to remove every key of one tenant, or with
    @pattern (a POSIX extended regular expression, matched anywhere in a
    key) those it matches.  @tenant: None / "default" / 0 the default
    tenant (keys of no tenant), a name or an id another (the asker must be
    root or one of its uids / gids).  Returns how many it removed;
    FluxonKVError otherwise (ENOTCONN: no daemon listens at the socket).
    The master knows a node's local puts from notes its module batches:
    to clear puts that just returned, first delete any key through a
    Store (a DELETE sends the notes before it), as the Mooncake adapter's
    remove_all does."""
    tid = resolve_tenant(tenant, path)
    attrs = []
    if pattern is not None:
        raw = pattern.encode()
        if b"\0" in raw:
            raise FluxonKVError(errno.EINVAL, "a pattern has no NUL byte",
                                op="clear")
        attrs.append(_attr(_CA_PATTERN, raw + b"\0"))
    if tid:
        attrs.append(_attr(_CA_TENANT_ID, struct.pack("=I", tid)))
    answer = _ask(_CCMD_CLEAR, attrs, path, "clear")
    _status(answer, "clear")
    return struct.unpack("=Q", answer.get(_CA_COUNT, bytes(8))[:8])[0]
