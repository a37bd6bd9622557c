# SPDX-License-Identifier: GPL-2.0
"""Find and load libfluxonkv.so, and declare its C API for ctypes.

The library is searched, first hit wins:

1. ``$FLUXONKV_LIB`` (a path to the .so);
2. ``<repo>/build/libfluxonkv.so``, where ``<repo>`` is the source tree this
   package sits in (``userspace/python/fluxonkv`` -> ``../../..``);
3. ``ctypes.util.find_library("fluxonkv")`` (an installed library).

Every function is loaded through ``ctypes.CDLL``, so each call releases the
GIL while it runs: a put or get blocked in the kernel does not stop other
Python threads.
"""
import ctypes
import ctypes.util
import errno
import os
import threading
from pathlib import Path

from .errors import FluxonKVError

LIB_ENV = "FLUXONKV_LIB"

# enum fluxonkv_source
SOURCE_NONE = 0
SOURCE_MEMORY = 1
SOURCE_SSD = 2
SOURCE_REMOTE = 3
SOURCE_REMOTE_SSD = 4
SOURCE_NAMES = {SOURCE_NONE: "none", SOURCE_MEMORY: "memory", SOURCE_SSD: "ssd",
                SOURCE_REMOTE: "remote", SOURCE_REMOTE_SSD: "remote-ssd"}


class FkvHolder(ctypes.Structure):
    """struct fkv_holder (userspace/include/fluxonkv.h)."""

    _fields_ = [
        ("id", ctypes.c_uint64),
        ("data", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
        ("put_id", ctypes.c_uint64),
        ("source", ctypes.c_uint),
    ]


class FluxonkvInfo(ctypes.Structure):
    """struct fluxonkv_info (uapi/linux/fluxonkv.h)."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("abi_version", ctypes.c_uint32),
        ("segment_size", ctypes.c_uint64),
        ("value_max", ctypes.c_uint64),
        ("key_max", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("segment_used", ctypes.c_uint64),
        ("reserved", ctypes.c_uint64 * 2),
    ]


INFO_DAEMON = 1 << 0  # FLUXONKV_INFO_DAEMON

_PROTOTYPES = {
    # name: (restype, argtypes)
    "fkv_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]),
    "fkv_close": (None, [ctypes.c_void_p]),
    "fkv_info": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(FluxonkvInfo)]),
    "fkv_segment_size": (ctypes.c_size_t, [ctypes.c_void_p]),
    "fkv_segment_base": (ctypes.c_void_p, [ctypes.c_void_p]),
    "fkv_put": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                               ctypes.c_void_p, ctypes.c_size_t,
                               ctypes.POINTER(ctypes.c_uint64)]),
    "fkv_get": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                               ctypes.POINTER(FkvHolder)]),
    "fkv_holder_release": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(FkvHolder)]),
    "fkv_delete": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
    "fkv_strerror": (ctypes.c_char_p, [ctypes.c_int]),
}

_lock = threading.Lock()
_lib = None


def candidates():
    """The paths tried, in order (None stands for find_library's answer)."""
    out = []
    env = os.environ.get(LIB_ENV)
    if env:
        out.append(env)
    repo = Path(__file__).resolve().parents[3]
    out.append(str(repo / "build" / "libfluxonkv.so"))
    out.append(ctypes.util.find_library("fluxonkv"))
    return out


def _declare(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def load():
    """The loaded library (loaded once per process)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in candidates():
            if not path:
                continue
            # An explicit FLUXONKV_LIB that does not load is an error, not a
            # reason to silently pick up another build.
            explicit = path == os.environ.get(LIB_ENV)
            if not explicit and "/" in path and not os.path.exists(path):
                tried.append(f"{path} (missing)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                if explicit:
                    raise FluxonKVError(errno.ENOENT, f"{LIB_ENV}={path}: {e}",
                                        op="load") from None
                tried.append(f"{path} ({e})")
                continue
            _lib = _declare(lib)
            return _lib
        raise FluxonKVError(errno.ENOENT,
                            "libfluxonkv.so not found; set " + LIB_ENV +
                            " (tried: " + "; ".join(tried or ["nothing"]) + ")",
                            op="load")


def strerror(err):
    """fkv_strerror(err) as str, or os.strerror if the library is absent."""
    try:
        return load().fkv_strerror(-abs(err)).decode("utf-8", "replace")
    except FluxonKVError:
        return os.strerror(abs(err))


def error(err, op):
    """A FluxonKVError for the negative errno @err returned by @op."""
    return FluxonKVError(-err if err < 0 else err, strerror(err), op=op)
