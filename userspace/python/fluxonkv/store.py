# SPDX-License-Identifier: GPL-2.0
"""Store: one open /dev/fluxonkv and its read-only segment mapping."""
import ctypes
import errno
import os
import threading
import warnings
import weakref
from collections import namedtuple

from . import _buffer, _lib
from .errors import FluxonKVError
from .holder import MemHolder

Info = namedtuple("Info", "abi_version segment_size segment_used value_max "
                          "key_max daemon")


def _key_bytes(key):
    """A key as bytes: str is UTF-8 encoded, bytes-likes are taken as is."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"key must be str or bytes, not {type(key).__name__}")


class _Handle:
    """The struct fkv * of a Store.

    fkv_close() runs when the last reference goes: the Store drops its own
    in close(), and every pinned holder (through its finalizer) and every
    call in flight keeps one, so the mapping is never unmapped under memory
    that someone can still read.
    """

    __slots__ = ("lib", "ptr", "base", "size", "__weakref__")

    def __init__(self, lib, ptr):
        self.lib = lib
        self.ptr = ptr
        self.base = lib.fkv_segment_base(ptr) or 0
        self.size = lib.fkv_segment_size(ptr)
        weakref.finalize(self, lib.fkv_close, ptr).atexit = False

    def release_holder(self, hstruct):
        return self.lib.fkv_holder_release(self.ptr, ctypes.byref(hstruct))


class Store:
    """A client of the node-local fluxonkv cache.

    ``Store()`` opens /dev/fluxonkv (``Store(device=path)`` another node) and
    maps its segment read-only.  Use it as a context manager or call
    close().  One Store may be used by any number of threads at once; every
    call into libfluxonkv releases the GIL while the kernel works.
    """

    def __init__(self, device=None):
        lib = _lib.load()
        dev = os.fsencode(device) if device is not None else None
        ptr = ctypes.c_void_p()
        rc = lib.fkv_open(dev, ctypes.byref(ptr))
        if rc:
            raise _lib.error(rc, "open")
        self._h = _Handle(lib, ptr.value)
        self._lock = threading.Lock()
        self._holders = weakref.WeakSet()
        self.device = os.fsdecode(dev) if dev is not None else "/dev/fluxonkv"

    # ---- state ---------------------------------------------------------

    def _handle(self):
        h = self._h
        if h is None:
            raise ValueError("operation on a closed fluxonkv Store")
        return h

    @property
    def closed(self):
        return self._h is None

    @property
    def segment_base(self):
        """Address of the read-only segment mapping in this process."""
        return self._handle().base

    @property
    def segment_size(self):
        return self._handle().size

    def info(self):
        """Live FLUXONKV_IOC_INFO values as an Info namedtuple."""
        h = self._handle()
        info = _lib.FluxonkvInfo()
        rc = h.lib.fkv_info(h.ptr, ctypes.byref(info))
        if rc:
            raise _lib.error(rc, "info")
        return Info(info.abi_version, info.segment_size, info.segment_used,
                    info.value_max, info.key_max,
                    bool(info.flags & _lib.INFO_DAEMON))

    # ---- operations ----------------------------------------------------

    def _put(self, h, key, value):
        k = _key_bytes(key)
        put_id = ctypes.c_uint64()
        with _buffer.pinned(value) as (addr, n):
            rc = h.lib.fkv_put(h.ptr, k, len(k), addr, n, ctypes.byref(put_id))
        if rc:
            raise _lib.error(rc, "put")
        return put_id.value

    def put(self, key, value):
        """Store @value under @key; returns the put_id (version) assigned.

        @key: str (UTF-8) or bytes.  @value: any C-contiguous buffer (bytes,
        bytearray, memoryview, array.array, numpy array...), passed to the
        kernel by address without a copy in Python.  Returns once any later
        get sees the value.
        """
        return self._put(self._handle(), key, value)

    def put_from(self, key, address, size):
        """Store @size bytes at raw @address (an int) under @key.

        For callers that manage memory themselves (a tensor's data_ptr()):
        the bytes must stay valid for the duration of the call.
        """
        h = self._handle()
        k = _key_bytes(key)
        put_id = ctypes.c_uint64()
        rc = h.lib.fkv_put(h.ptr, k, len(k), address, size,
                           ctypes.byref(put_id))
        if rc:
            raise _lib.error(rc, "put")
        return put_id.value

    def _get(self, h, key):
        k = _key_bytes(key)
        hs = _lib.FkvHolder()
        rc = h.lib.fkv_get(h.ptr, k, len(k), ctypes.byref(hs))
        if rc == -errno.ENOENT:
            return None
        if rc:
            raise _lib.error(rc, "get")
        try:
            holder = MemHolder._from_fkv(h, hs)
        except BaseException:
            h.release_holder(hs)
            raise
        with self._lock:
            self._holders.add(holder)
        return holder

    def get(self, key):
        """Pin the current value of @key: a MemHolder, or None on a miss."""
        return self._get(self._handle(), key)

    def delete(self, key):
        """Remove @key: True if it had a value, False if it had none.

        Values already pinned by holders stay readable until released.
        """
        h = self._handle()
        k = _key_bytes(key)
        rc = h.lib.fkv_delete(h.ptr, k, len(k))
        if rc == -errno.ENOENT:
            return False
        if rc:
            raise _lib.error(rc, "delete")
        return True

    def exists(self, key):
        """True if @key has a value now (a get and an immediate release)."""
        holder = self.get(key)
        if holder is None:
            return False
        holder.release()
        return True

    # ---- batches -------------------------------------------------------

    def put_many(self, items):
        """Put every (key, value) of @items (a mapping or pairs), in order.

        Returns the list of put_ids.  Each item is one C call that releases
        the GIL.  Not atomic: on an error the items before it stay stored
        and the FluxonKVError carries ``.index`` (the failed item) and
        ``.put_ids`` (those done).
        """
        h = self._handle()
        if hasattr(items, "items"):
            items = items.items()
        done = []
        for i, (key, value) in enumerate(items):
            try:
                done.append(self._put(h, key, value))
            except FluxonKVError as e:
                e.index, e.put_ids = i, done
                raise
        return done

    def get_many(self, keys):
        """Pin every key of @keys: a list of MemHolder-or-None, in order.

        On an error the holders already taken are released before the
        exception propagates.
        """
        h = self._handle()
        out = []
        try:
            for key in keys:
                out.append(self._get(h, key))
        except BaseException:
            for holder in out:
                if holder is not None:
                    try:
                        holder.release()
                    except (BufferError, FluxonKVError):
                        pass
            raise
        return out

    # ---- lifetime ------------------------------------------------------

    def close(self):
        """Close the store; idempotent.

        Releases every holder taken through it (their views become
        unusable).  A holder whose memory is still exported (see
        MemHolder.release) stays pinned, and the device stays open and
        mapped until that memory is no longer referenced; a ResourceWarning
        says so.  Every other call on a closed Store raises ValueError.
        """
        with self._lock:
            if self._h is None:
                return
            holders = list(self._holders)
            self._holders = weakref.WeakSet()
            self._h = None
        busy = 0
        for holder in holders:
            try:
                holder.release()
            except BufferError:
                busy += 1
        if busy:
            warnings.warn(f"fluxonkv Store closed with {busy} holder(s) still "
                          "exported; the device stays open until they go",
                          ResourceWarning, stacklevel=2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._h is None else f"segment={self._h.size}"
        return f"<fluxonkv.Store {self.device} {state}>"
