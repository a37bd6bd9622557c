# SPDX-License-Identifier: GPL-2.0
"""A client of fluxond's local control socket (userspace/fluxond/ctlsock.c).

One request per connection, in the daemon's wire codec: a netlink message
(nlmsghdr of type FKV_WIRE_TYPE, a genl header, attributes) on a UNIX
stream socket.  Only FKV_CCMD_CLEAR is spoken here (Mooncake's
remove_all / remove_by_regex); the numbers are those of
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
_A_STATUS = 4                   # FLUXONKV_A_STATUS (u32: 0 or -errno)
_CA_MESSAGE = 70                # FKV_CA_MESSAGE
_CA_PATTERN = 89                # FKV_CA_PATTERN
_CA_COUNT = 90                  # FKV_CA_COUNT
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


def _recv_message(sock):
    data = b""
    while len(data) < 16 or len(data) < struct.unpack_from("=I", data)[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise FluxonKVError(errno.EPIPE, "fluxond closed the control "
                                "connection without an answer", op="clear")
        data += chunk
        if len(data) >= 4 and struct.unpack_from("=I", data)[0] > _WIRE_MAX:
            raise FluxonKVError(errno.EPROTO, "oversized answer", op="clear")
    n, kind = struct.unpack_from("=IH", data)
    cmd = data[16] if len(data) > 16 else None
    if kind != _WIRE_TYPE or cmd != _CCMD_CLEAR or n < 20:
        raise FluxonKVError(errno.EPROTO, "not an answer to CLEAR", op="clear")
    return _attrs(data[20:n])


def clear(pattern=None, path=None):
    """Ask fluxond's master to remove every key, or with @pattern (a POSIX
    extended regular expression, matched anywhere in a key) those it
    matches.  Returns how many it removed; FluxonKVError otherwise
    (ENOTCONN: no daemon listens at the socket)."""
    attrs = []
    if pattern is not None:
        raw = pattern.encode()
        if b"\0" in raw:
            raise FluxonKVError(errno.EINVAL, "a pattern has no NUL byte",
                                op="clear")
        attrs.append(_attr(_CA_PATTERN, raw + b"\0"))
    path = path or control_path()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(_TIMEOUT)
        try:
            sock.connect(path)
        except OSError as e:
            raise FluxonKVError(errno.ENOTCONN, f"fluxond's control socket "
                                f"{path}: {e.strerror}", op="clear") from e
        sock.sendall(_message(_CCMD_CLEAR, attrs))
        answer = _recv_message(sock)
    except socket.timeout as e:
        raise FluxonKVError(errno.ETIMEDOUT, "fluxond did not answer CLEAR",
                            op="clear") from e
    finally:
        sock.close()
    status = struct.unpack("=i", answer.get(_A_STATUS, b"\0\0\0\0")[:4])[0]
    if status:
        why = answer.get(_CA_MESSAGE, b"").rstrip(b"\0").decode(errors="replace")
        raise FluxonKVError(-status, why or os.strerror(-status), op="clear")
    return struct.unpack("=Q", answer.get(_CA_COUNT, bytes(8))[:8])[0]
