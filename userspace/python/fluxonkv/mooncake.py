# SPDX-License-Identifier: GPL-2.0
"""A drop-in for the Python store of Mooncake (``mooncake.store``).

``MooncakeDistributedStore`` keeps the method names, arguments and return
conventions of Mooncake's pybind11 class so code written against it (vLLM's
and SGLang's Mooncake connectors, for instance) can run on a node-local
fluxonkv cache by changing one import::

    from fluxonkv.mooncake import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    store.setup("localhost", "http://meta", 0, 0, "tcp", "", "127.0.0.1:50051")
    store.put("k", b"value")          # 0
    store.get("k")                    # b"value"  (b"" on a miss)
    buf = store.get_buffer("k")       # BufferHandle: ptr(), size(), release()

Return conventions are Mooncake's: integer status codes, 0 for success and a
negative Mooncake ``ErrorCode`` on failure (see ``ERRNO_TO_MOONCAKE``), an
empty bytes object for a miss on get(), None for a miss on get_buffer().  No
method raises for a store failure; ``last_error`` keeps the FluxonKVError
behind the most recent failure for diagnostics.

Not mapped (raise NotImplementedError): remove_by_regex and remove_all
(fluxonkv has no key listing), the tensor helpers (put_tensor, get_tensor
and their batch/TP variants: they need torch), and the replication/task
APIs.  ``config`` (ReplicateConfig) arguments are accepted and ignored: a
fluxonkv value has one DRAM replica on this node.
"""
import ctypes
import errno
import socket

from .errors import FluxonKVError
from .store import Store

# Mooncake ErrorCode values (mooncake-store/include/types.h)
OK = 0
INTERNAL_ERROR = -1
NO_AVAILABLE_HANDLE = -200
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
RPC_FAIL = -900

# What a fluxonkv errno becomes in a Mooncake status code.
ERRNO_TO_MOONCAKE = {
    errno.ENOENT: OBJECT_NOT_FOUND,
    errno.EINVAL: INVALID_PARAMS,
    errno.E2BIG: INVALID_PARAMS,
    errno.ENOSPC: NO_AVAILABLE_HANDLE,
    errno.ENOTCONN: RPC_FAIL,       # no fluxond: the "master" is unreachable
    errno.ETIMEDOUT: RPC_FAIL,
}


class BufferHandle:
    """Mooncake's BufferHandle over a fluxonkv MemHolder (zero copy).

    ``ptr()`` is the address of the bytes in this process, ``size()`` (and
    ``len()``) their length.  The bytes stay valid until ``release()`` or
    until the handle is garbage collected, as in Mooncake.  ``view()`` gives
    the read-only memoryview; on Python 3.12+ the handle itself is a buffer.
    """

    __slots__ = ("_holder",)

    def __init__(self, holder):
        self._holder = holder

    def ptr(self):
        return self._holder.address

    def size(self):
        return len(self._holder)

    def __len__(self):
        return len(self._holder)

    def view(self):
        return self._holder.view()

    def __buffer__(self, flags):
        return self._holder.view()

    def __bytes__(self):
        return bytes(self._holder)

    def release(self):
        self._holder.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    @property
    def holder(self):
        """The fluxonkv MemHolder behind this handle."""
        return self._holder


class MooncakeDistributedStore:
    """Mooncake's ``MooncakeDistributedStore`` on the local fluxonkv cache."""

    def __init__(self, device=None):
        self._device = device
        self._store = None
        self._hostname = ""
        self.last_error = None

    # ---- setup / teardown ----------------------------------------------

    def setup(self, local_hostname="", metadata_server="",
              global_segment_size=0, local_buffer_size=0, protocol="tcp",
              rdma_devices="", master_server_addr="", engine=None):
        """Open the local cache; every cluster argument is ignored.

        fluxonkv needs no metadata server, master address, transfer engine
        or segment sizes: the kernel module owns the segment and fluxond is
        the master.  Returns 0, or a negative code if the device cannot be
        opened.
        """
        self._hostname = local_hostname or socket.gethostname()
        if self._store is not None:
            return OK
        try:
            self._store = Store(self._device)
        except FluxonKVError as e:
            return self._fail(e)
        return OK

    def setup_dummy(self, mem_pool_size=0, local_buffer_size=0,
                    server_address=""):
        """Same as setup(): there is no separate dummy client."""
        return self.setup()

    def init_all(self, protocol="tcp", device_name="",
                 mount_segment_size=0):
        return self.setup()

    def close(self):
        if self._store is not None:
            self._store.close()
            self._store = None
        return OK

    def get_hostname(self):
        return self._hostname

    def register_buffer(self, buffer_ptr, size):
        """No-op: fluxonkv reads and writes user memory directly."""
        return OK

    def unregister_buffer(self, buffer_ptr):
        return OK

    # ---- internals -------------------------------------------------------

    def _fail(self, e):
        self.last_error = e
        if isinstance(e, FluxonKVError):
            return ERRNO_TO_MOONCAKE.get(e.errno, INTERNAL_ERROR)
        return INVALID_PARAMS  # TypeError/ValueError: bad arguments

    def _kv(self):
        if self._store is None or self._store.closed:
            self.last_error = FluxonKVError(errno.ENOTCONN,
                                            "setup() was not called", op="setup")
            return None
        return self._store

    def _call(self, fn, *args):
        """(True, result) or (False, Mooncake code)."""
        kv = self._kv()
        if kv is None:
            return False, INTERNAL_ERROR
        try:
            return True, fn(kv, *args)
        except (FluxonKVError, TypeError, ValueError) as e:
            return False, self._fail(e)

    # ---- writes --------------------------------------------------------

    def put(self, key, value, config=None):
        ok, r = self._call(Store.put, key, value)
        return OK if ok else r

    def put_parts(self, key, *parts, config=None):
        """Store the concatenation of @parts (this joins them: one copy)."""
        try:
            value = b"".join(memoryview(p).cast("B") for p in parts)
        except (TypeError, ValueError) as e:
            return self._fail(e)
        return self.put(key, value)

    def put_batch(self, keys, values, config=None):
        if len(keys) != len(values):
            return INVALID_PARAMS
        ok, r = self._call(Store.put_many, list(zip(keys, values)))
        return OK if ok else r

    def put_from(self, key, buffer_ptr, size, config=None):
        """Store @size bytes at address @buffer_ptr (no copy in Python)."""
        ok, r = self._call(Store.put_from, key, buffer_ptr, size)
        return OK if ok else r

    def batch_put_from(self, keys, buffer_ptrs, sizes, config=None):
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            return [INVALID_PARAMS] * len(keys)
        return [self.put_from(k, p, n) for k, p, n in zip(keys, buffer_ptrs, sizes)]

    def remove(self, key, force=False):
        """0 if the key was removed, OBJECT_NOT_FOUND (-704) if missing."""
        ok, r = self._call(Store.delete, key)
        if not ok:
            return r
        return OK if r else OBJECT_NOT_FOUND

    def remove_by_regex(self, regex_pattern, force=False):
        raise NotImplementedError("fluxonkv cannot list keys")

    def remove_all(self, force=False):
        raise NotImplementedError("fluxonkv cannot list keys")

    # ---- reads -----------------------------------------------------------

    def get(self, key):
        """The value as bytes (a copy), b"" on a miss or an error."""
        ok, h = self._call(Store.get, key)
        if not ok or h is None:
            return b""
        try:
            return bytes(h)
        finally:
            h.release()

    def get_batch(self, keys):
        return [self.get(k) for k in keys]

    def get_buffer(self, key):
        """A zero-copy BufferHandle, or None on a miss or an error."""
        ok, h = self._call(Store.get, key)
        if not ok or h is None:
            return None
        return BufferHandle(h)

    def batch_get_buffer(self, keys):
        return [self.get_buffer(k) for k in keys]

    def get_into(self, key, buffer_ptr, size):
        """Copy the value to address @buffer_ptr (capacity @size).

        Returns the length copied, or a negative code (OBJECT_NOT_FOUND on
        a miss, INVALID_PARAMS when the value does not fit).
        """
        ok, h = self._call(Store.get, key)
        if not ok:
            return h
        if h is None:
            return OBJECT_NOT_FOUND
        try:
            n = len(h)
            if n > size:
                return INVALID_PARAMS
            ctypes.memmove(buffer_ptr, h.address, n)
            return n
        finally:
            h.release()

    def batch_get_into(self, keys, buffer_ptrs, sizes):
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            return [INVALID_PARAMS] * len(keys)
        return [self.get_into(k, p, n) for k, p, n in zip(keys, buffer_ptrs, sizes)]

    def get_size(self, key):
        """The value's length, or a negative code (-704 on a miss)."""
        ok, h = self._call(Store.get, key)
        if not ok:
            return h
        if h is None:
            return OBJECT_NOT_FOUND
        n = len(h)
        h.release()
        return n

    def is_exist(self, key):
        """1 if the key has a value, 0 if not, -1 on an error."""
        ok, r = self._call(Store.exists, key)
        if not ok:
            return -1
        return 1 if r else 0

    def batch_is_exist(self, keys):
        return [self.is_exist(k) for k in keys]

    def __getattr__(self, name):
        if name.endswith("_tensor") or "_tensor_" in name or name.startswith("pub_"):
            raise NotImplementedError(
                f"MooncakeDistributedStore.{name}: tensor APIs are not mapped "
                "by fluxonkv (put the tensor's bytes with put()/put_from())")
        raise AttributeError(name)
