# SPDX-License-Identifier: GPL-2.0
"""A drop-in for the Python store of Mooncake (``mooncake.store``).

``MooncakeDistributedStore`` keeps the method names, argument orders and
return conventions of Mooncake's class, as SGLang's HiCache backend,
vLLM's Mooncake connectors and LMCache's Mooncake backend call it, so they
run on the node-local fluxonkv cache by changing one import::

    from fluxonkv.mooncake import MooncakeDistributedStore, ReplicateConfig

    store = MooncakeDistributedStore()
    store.setup("localhost", "http://meta", 0, 0, "tcp", "", "127.0.0.1:50051")
    store.put("k", b"value")          # 0
    store.get("k")                    # b"value"  (b"" on a miss)
    buf = store.get_buffer("k")       # BufferHandle: memoryview(buf), ptr()

Conventions (Mooncake's): integer status codes, 0 for success and a
negative Mooncake ``ErrorCode`` on failure (``ERRNO_TO_MOONCAKE``);
``is_exist`` 1 / 0 / -1; batch calls return one int per key;
``get_into`` the bytes read or a negative code; ``get`` b"" and
``get_buffer`` None on a miss.  No method raises for a store failure;
``last_error`` keeps the FluxonKVError behind the most recent one.

``is_exist``, ``batch_is_exist`` and ``get_size`` never read the value:
they are Store.lookup() (FLUXONKV_IOC_LOOKUP: no holder, no SSD refill,
no access counted).  ``get_into`` / ``batch_get_into`` and
``batch_put_from`` are one call each into the extension (the GIL released
across the batch).
"""
import errno
import re
import socket
from typing import Any, List, Optional, Sequence, Union

from .errors import FluxonKVError
from ._native import MemHolder
from .store import Store

Key = Union[str, bytes]

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
    errno.ENOBUFS: INVALID_PARAMS,  # get_into: the value does not fit
    errno.ENOSPC: NO_AVAILABLE_HANDLE,
    errno.ENOTCONN: RPC_FAIL,       # no fluxond: the "master" is unreachable
    errno.ETIMEDOUT: RPC_FAIL,
}


def _code(err):
    """Mooncake code of a negative (or positive) errno."""
    return ERRNO_TO_MOONCAKE.get(abs(err), INTERNAL_ERROR)


class ReplicateConfig:
    """Mooncake's ReplicateConfig: accepted everywhere, and ignored.

    A fluxonkv value has one DRAM replica on the node the master places it
    (plus an SSD copy when the node has an SSD tier); replica counts, pins
    and preferred segments do not apply.  Any attribute may be set (newer
    Mooncake fields such as ``group_ids`` included).
    """

    def __init__(self, replica_num=1, with_soft_pin=False,
                 with_hard_pin=False, preferred_segment="",
                 preferred_segments=None, prefer_alloc_in_same_node=False):
        self.replica_num = replica_num
        self.with_soft_pin = with_soft_pin
        self.with_hard_pin = with_hard_pin
        self.preferred_segment = preferred_segment
        self.preferred_segments = list(preferred_segments or [])
        self.prefer_alloc_in_same_node = prefer_alloc_in_same_node

    def __repr__(self):
        return (f"ReplicateConfig(replica_num={self.replica_num}, "
                f"with_soft_pin={self.with_soft_pin}, "
                f"preferred_segment={self.preferred_segment!r})")


# Mooncake's BufferHandle is the MemHolder itself: a buffer on every Python
# (memoryview(buf), numpy.asarray(buf): the native buffer protocol, 3.11
# included), with ptr() (the address of the bytes in this process), size()
# and release().  The bytes stay valid until release() or until the handle
# and every view of it are garbage collected, as in Mooncake.
BufferHandle = MemHolder


class MooncakeDistributedStore:
    """Mooncake's ``MooncakeDistributedStore`` on the local fluxonkv cache.

    ``remove_by_regex`` and ``remove_all`` act on the keys put through this
    object (fluxonkv has no key listing): the keys it stored and has not
    removed are remembered for them.
    """

    def __init__(self, device: Optional[str] = None) -> None:
        self._device = device
        self._store = None
        self._hostname = ""
        self._keys = set()      # put through us, not removed: remove_by_regex
        self.last_error = None

    # ---- setup / teardown ----------------------------------------------

    def setup(self, local_hostname: str = "", metadata_server: str = "",
              global_segment_size: int = 0, local_buffer_size: int = 0,
              protocol: str = "tcp", rdma_devices: str = "",
              master_server_addr: str = "", engine: Any = None,
              **kwargs: Any) -> int:
        """Open the local cache; every cluster argument is ignored.

        fluxonkv needs no metadata server, master address, transfer engine
        or segment sizes (newer keyword options such as SGLang's
        ``enable_ssd_offload`` included): the kernel module owns the
        segment, fluxond is the master and owns the SSD tier.  Returns 0,
        or a negative code if the device cannot be opened.
        """
        self._hostname = local_hostname or socket.gethostname()
        if self._store is not None:
            return OK
        try:
            self._store = Store(self._device)
        except FluxonKVError as e:
            return self._fail(e)
        return OK

    def setup_dummy(self, mem_pool_size: int = 0, local_buffer_size: int = 0,
                    server_address: str = "") -> int:
        """Same as setup(): there is no separate dummy client."""
        return self.setup()

    def init_all(self, protocol: str = "tcp", device_name: str = "",
                 mount_segment_size: int = 0) -> int:
        return self.setup()

    def close(self) -> int:
        if self._store is not None:
            self._store.close()
            self._store = None
        return OK

    def get_hostname(self) -> str:
        return self._hostname

    def register_buffer(self, buffer_ptr: int, size: int) -> int:
        """0: fluxonkv copies from and to user memory directly, no
        registration needed."""
        return OK

    def unregister_buffer(self, buffer_ptr: int) -> int:
        return OK

    # ---- internals -------------------------------------------------------

    def _fail(self, e):
        self.last_error = e
        if isinstance(e, FluxonKVError):
            return _code(e.errno)
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
        except (FluxonKVError, TypeError, ValueError, OverflowError) as e:
            return False, self._fail(e)

    def _codes(self, results, keys, put):
        """Per-item results of a raw-address batch as Mooncake codes."""
        out = []
        for r, k in zip(results, keys):
            if r < 0:
                self.last_error = FluxonKVError(-r, f"{k!r}: errno {-r}",
                                                op="put" if put else "get")
                out.append(_code(r))
            else:
                if put:
                    self._keys.add(k)
                out.append(OK if put else r)
        return out

    # ---- writes --------------------------------------------------------

    def put(self, key: Key, value: Any,
            config: Optional[ReplicateConfig] = None) -> int:
        ok, r = self._call(Store.put, key, value)
        if ok:
            self._keys.add(key)
        return OK if ok else r

    def put_parts(self, key: Key, *parts: Any,
                  config: Optional[ReplicateConfig] = None) -> int:
        """Store the concatenation of @parts (this joins them: one copy)."""
        try:
            value = b"".join(memoryview(p).cast("B") for p in parts)
        except (TypeError, ValueError) as e:
            return self._fail(e)
        return self.put(key, value)

    def put_batch(self, keys: Sequence[Key], values: Sequence[Any],
                  config: Optional[ReplicateConfig] = None) -> int:
        """One status for the batch, as Mooncake."""
        if len(keys) != len(values):
            return INVALID_PARAMS
        ok, r = self._call(Store.put_many, list(zip(keys, values)))
        if ok:
            self._keys.update(keys)
        return OK if ok else r

    def put_from(self, key: Key, buffer_ptr: int, size: int,
                 config: Optional[ReplicateConfig] = None) -> int:
        """Store @size bytes at address @buffer_ptr (no copy in Python)."""
        ok, r = self._call(Store.put_from, key, buffer_ptr, size)
        if ok:
            self._keys.add(key)
        return OK if ok else r

    def batch_put_from(self, keys: Sequence[Key], buffer_ptrs: Sequence[int],
                       sizes: Sequence[int],
                       config: Optional[ReplicateConfig] = None) -> List[int]:
        """One code per key: 0 or negative (one call, GIL released)."""
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            return [INVALID_PARAMS] * len(keys)
        ok, r = self._call(Store.put_from_many, keys, buffer_ptrs, sizes)
        if not ok:
            return [r] * len(keys)
        return self._codes(r, keys, True)

    def remove(self, key: Key, force: bool = False) -> int:
        """0 if the key was removed, OBJECT_NOT_FOUND (-704) if missing."""
        ok, r = self._call(Store.delete, key)
        if not ok:
            return r
        self._keys.discard(key)
        return OK if r else OBJECT_NOT_FOUND

    def batch_remove(self, keys: Sequence[Key], force: bool = False) -> List[int]:
        ok, r = self._call(Store.delete_many, keys)
        if not ok:
            return [r] * len(keys)
        self._keys.difference_update(keys)
        return [OK if x else OBJECT_NOT_FOUND for x in r]

    def remove_by_regex(self, regex_pattern: str, force: bool = False) -> int:
        """Remove the keys put through this store that match
        @regex_pattern (re.search, as Mooncake's std::regex_search);
        returns how many were removed, or a negative code."""
        try:
            rx = re.compile(regex_pattern)
        except (re.error, TypeError) as e:
            return self._fail(ValueError(str(e)))
        keys = [k for k in self._keys
                if rx.search(k if isinstance(k, str) else
                             k.decode("utf-8", "replace"))]
        ok, r = self._call(Store.delete_many, keys)
        if not ok:
            return r
        self._keys.difference_update(keys)
        return sum(1 for x in r if x)

    def remove_all(self, force: bool = False) -> int:
        """Remove every key put through this store; returns the count."""
        return self.remove_by_regex("")

    # ---- reads -----------------------------------------------------------

    def get(self, key: Key) -> bytes:
        """The value as bytes (a copy), b"" on a miss or an error."""
        ok, h = self._call(Store.get, key)
        if not ok or h is None:
            return b""
        try:
            return bytes(h)
        finally:
            h.release()

    def get_batch(self, keys: Sequence[Key]) -> List[bytes]:
        ok, hs = self._call(Store.get_many, keys)
        if not ok:
            return [b""] * len(keys)
        out = [bytes(h) if h is not None else b"" for h in hs]
        self._store.release_many([h for h in hs if h is not None])
        return out

    def get_buffer(self, key: Key) -> Optional[BufferHandle]:
        """A zero-copy BufferHandle, or None on a miss or an error."""
        ok, h = self._call(Store.get, key)
        if not ok or h is None:
            return None
        return h

    def batch_get_buffer(self, keys: Sequence[Key]) -> List[Optional[BufferHandle]]:
        """BufferHandle-or-None per key (one call, GIL released)."""
        ok, hs = self._call(Store.get_many, keys)
        if not ok:
            return [None] * len(keys)
        return hs

    def get_into(self, key: Key, buffer_ptr: int, size: int) -> int:
        """Copy the value to address @buffer_ptr (capacity @size).

        Returns the length copied, or a negative code (OBJECT_NOT_FOUND on
        a miss, INVALID_PARAMS when the value does not fit).
        """
        ok, r = self._call(Store.get_into_many, [key], [buffer_ptr], [size])
        if not ok:
            return r
        return self._codes(r, [key], False)[0]

    def batch_get_into(self, keys: Sequence[Key], buffer_ptrs: Sequence[int],
                       sizes: Sequence[int]) -> List[int]:
        """Bytes read or a negative code per key (one call, GIL released)."""
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            return [INVALID_PARAMS] * len(keys)
        ok, r = self._call(Store.get_into_many, keys, buffer_ptrs, sizes)
        if not ok:
            return [r] * len(keys)
        return self._codes(r, keys, False)

    def get_size(self, key: Key) -> int:
        """The value's length, or a negative code (-704 on a miss).
        A lookup: the value is not read."""
        ok, r = self._call(Store.lookup, key)
        if not ok:
            return r
        return OBJECT_NOT_FOUND if r is None else r.len

    def is_exist(self, key: Key) -> int:
        """1 if the key has a value, 0 if not, -1 on an error (a lookup)."""
        ok, r = self._call(Store.exists, key)
        if not ok:
            return -1
        return 1 if r else 0

    def batch_is_exist(self, keys: Sequence[Key]) -> List[int]:
        """1 / 0 per key, or -1 for every key on an error."""
        ok, r = self._call(Store.exists_many, keys)
        if not ok:
            return [-1] * len(keys)
        return [1 if x else 0 for x in r]

    def __getattr__(self, name):
        if name.endswith("_tensor") or "_tensor_" in name or name.startswith("pub_"):
            raise NotImplementedError(
                f"MooncakeDistributedStore.{name}: tensor APIs are not mapped "
                "by fluxonkv (put the tensor's bytes with put()/put_from())")
        raise AttributeError(name)
