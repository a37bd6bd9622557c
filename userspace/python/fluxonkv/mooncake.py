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

``batch_put_from_multi_buffers`` / ``batch_get_into_multi_buffers`` (vLLM's
Mooncake store connector, SGLang's MLA ``layer_first`` and hybrid pools)
take a list of (address, size) buffers per key: the value is their
concatenation.  The module takes one contiguous value per put and copies a
get into one contiguous destination, so a get scatters from a holder on
the segment (one copy, straight into each buffer) and a put gathers into
one staging buffer (one copy) unless the buffers are one single range.

The adapter keeps no per-key state: fluxonkv cannot list keys yet, so
``remove_by_regex`` and ``remove_all`` return UNAVAILABLE_IN_CURRENT_MODE
(-1011) rather than clear only part of the store (that needs a key listing
in the master, not built yet).
"""
import ctypes
import errno
import logging
import operator
import os
import re
import socket
import threading
from typing import Any, List, Optional, Sequence, Tuple, Union

from .errors import FluxonKVError
from ._native import MemHolder
from .store import Store

Key = Union[str, bytes]

log = logging.getLogger(__name__)

# Mooncake ErrorCode values (mooncake-store/include/types.h)
OK = 0
INTERNAL_ERROR = -1
NO_AVAILABLE_HANDLE = -200
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
RPC_FAIL = -900
UNAVAILABLE_IN_CURRENT_MODE = -1011

# What a fluxonkv errno becomes in a Mooncake status code.
ERRNO_TO_MOONCAKE = {
    errno.ENOENT: OBJECT_NOT_FOUND,
    errno.EINVAL: INVALID_PARAMS,
    errno.E2BIG: INVALID_PARAMS,
    errno.ENOBUFS: INVALID_PARAMS,  # get_into: the value does not fit
    errno.ENOSPC: NO_AVAILABLE_HANDLE,
    errno.ENOTCONN: RPC_FAIL,       # no fluxond: the "master" is unreachable
    errno.ETIMEDOUT: RPC_FAIL,
    errno.EOPNOTSUPP: UNAVAILABLE_IN_CURRENT_MODE,
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


# ---- copies between one contiguous range and a list of buffers -------------
#
# The multi-buffer calls copy between the caller's buffers and one range
# (a holder's bytes on the segment, or a staging buffer) with
# process_vm_readv / process_vm_writev on this very process: the kernel
# does the copy, so an address that is not mapped here (a GPU device
# pointer, a freed buffer) gives EFAULT and a negative code, as
# batch_get_into does, where a memmove would kill the process with SIGSEGV.
# Where a seccomp filter refuses those calls (ENOSYS / EPERM) the copies
# fall back to ctypes.memmove, which trusts every address.

class _IOVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_IOV_MAX = 1024     # iovecs per process_vm_* call (UIO_MAXIOV)


def _vm_functions():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fns = (libc.process_vm_readv, libc.process_vm_writev)
    except (OSError, AttributeError):
        return None
    for f in fns:
        f.argtypes = [ctypes.c_int, ctypes.POINTER(_IOVec), ctypes.c_ulong,
                      ctypes.POINTER(_IOVec), ctypes.c_ulong, ctypes.c_ulong]
        f.restype = ctypes.c_ssize_t
    return fns


_vm_rw = _vm_functions()


def _vm_copy(local, pieces, write):
    """process_vm_* between @local and @pieces: 0, an errno, or None when
    the calls are refused in this process (nothing was copied)."""
    global _vm_rw
    fn = _vm_rw[1] if write else _vm_rw[0]
    pid = os.getpid()
    off = 0
    for s in range(0, len(pieces), _IOV_MAX):
        part = pieces[s:s + _IOV_MAX]
        n = sum(length for _, length in part)
        liov = _IOVec(local + off, n)
        riov = (_IOVec * len(part))(*part)
        r = fn(pid, ctypes.byref(liov), 1, riov, len(part), 0)
        if r < 0:
            err = ctypes.get_errno()
            if s == 0 and err in (errno.ENOSYS, errno.EPERM):
                _vm_rw = None
                log.warning("process_vm_readv/writev refused (%s): the "
                            "multi-buffer calls copy with memmove, which does "
                            "not check addresses", errno.errorcode.get(err, err))
                return None
            return err or errno.EFAULT
        if r != n:          # stopped at an address that is not mapped
            return errno.EFAULT
        off += n
    return 0


def _copy_pieces(local: int, pieces: List[Tuple[int, int]], write: bool) -> int:
    """Copy between the contiguous bytes at address @local and @pieces,
    (address, length) pairs in order: @write scatters @local into the
    pieces, otherwise the pieces are gathered into @local.  Returns 0 or a
    positive errno (EFAULT: an address not mapped in this process)."""
    if _vm_rw is not None:
        r = _vm_copy(local, pieces, write)
        if r is not None:
            return r
    off = 0
    for addr, length in pieces:
        if write:
            ctypes.memmove(addr, local + off, length)
        else:
            ctypes.memmove(local + off, addr, length)
        off += length
    return 0


def _pieces(ptrs, sizes):
    """The (address, length) pairs of one key's buffers, adjacent ones
    merged and empty ones dropped; ValueError / TypeError if malformed."""
    ptrs = list(ptrs)
    sizes = list(sizes)
    if len(ptrs) != len(sizes):
        raise ValueError("a key's buffer addresses and sizes differ in length")
    out = []
    for p, n in zip(ptrs, sizes):
        p = operator.index(p)   # ints (numpy's too), never floats or str
        n = operator.index(n)
        if p < 0 or n < 0:
            raise ValueError("negative buffer address or size")
        if n == 0:
            continue
        if out and out[-1][0] + out[-1][1] == p:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((p, n))
    return out


# Keys per get_many / staging round of the multi-buffer calls (one
# FLUXONKV_IOC_BATCH), and the staging bytes one put round may gather.
_MULTI_KEYS = 64
_STAGING_MAX = 64 << 20


class MooncakeDistributedStore:
    """Mooncake's ``MooncakeDistributedStore`` on the local fluxonkv cache.

    It keeps no state per key (nothing grows with the keys put), so
    ``remove_by_regex`` and ``remove_all``, which need a listing of the
    store's keys that fluxonkv does not offer yet, return
    UNAVAILABLE_IN_CURRENT_MODE.
    """

    def __init__(self, device: Optional[str] = None) -> None:
        self._device = device
        self._store = None
        self._hostname = ""
        self._tls = threading.local()   # per thread: the gather staging buffer
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
        self._tls = threading.local()   # drops the staging buffers
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
                out.append(OK if put else r)
        return out

    # ---- writes --------------------------------------------------------

    def put(self, key: Key, value: Any,
            config: Optional[ReplicateConfig] = None) -> int:
        ok, r = self._call(Store.put, key, value)
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
        return OK if ok else r

    def put_from(self, key: Key, buffer_ptr: int, size: int,
                 config: Optional[ReplicateConfig] = None) -> int:
        """Store @size bytes at address @buffer_ptr (no copy in Python)."""
        ok, r = self._call(Store.put_from, key, buffer_ptr, size)
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
        return OK if r else OBJECT_NOT_FOUND

    def batch_remove(self, keys: Sequence[Key], force: bool = False) -> List[int]:
        ok, r = self._call(Store.delete_many, keys)
        if not ok:
            return [r] * len(keys)
        return [OK if x else OBJECT_NOT_FOUND for x in r]

    def remove_by_regex(self, regex_pattern: str, force: bool = False) -> int:
        """Mooncake removes every key of the store matching @regex_pattern
        and returns the count.  fluxonkv cannot list its keys yet (that
        needs support in the master, not built), so this removes nothing
        and returns UNAVAILABLE_IN_CURRENT_MODE (-1011; INVALID_PARAMS for
        a malformed pattern); ``last_error`` says why.  Remove known keys
        with remove() / batch_remove()."""
        try:
            re.compile(regex_pattern)
        except (re.error, TypeError) as e:
            return self._fail(ValueError(str(e)))
        return self._no_listing("remove_by_regex")

    def remove_all(self, force: bool = False) -> int:
        """Mooncake clears the whole store.  fluxonkv cannot list its keys
        yet (that needs support in the master, not built), so this removes
        nothing and returns UNAVAILABLE_IN_CURRENT_MODE (-1011) rather
        than clear only part of the store; ``last_error`` says why."""
        return self._no_listing("remove_all")

    def _no_listing(self, op):
        e = FluxonKVError(errno.EOPNOTSUPP,
                          "fluxonkv cannot list the store's keys yet (needs "
                          "master support, not built); nothing removed",
                          op=op)
        log.warning("%s", e)
        return self._fail(e)

    # ---- multi-buffer batches (vLLM store connector, SGLang MLA pools) ----

    def batch_put_from_multi_buffers(self, keys: Sequence[Key],
                                     all_buffer_ptrs: Sequence[Sequence[int]],
                                     all_sizes: Sequence[Sequence[int]],
                                     config: Optional[ReplicateConfig] = None
                                     ) -> List[int]:
        """Store for each key the concatenation of its buffers
        (all_buffer_ptrs[i][j], all_sizes[i][j] bytes).  One code per key:
        0 or negative (INVALID_PARAMS for that key's malformed buffers or
        a total of 0 bytes, -1 for an address not mapped here).

        The module stores one contiguous range per put: a key whose
        buffers are one range (a single buffer, or adjacent ones) is put
        from it directly, the others are gathered into a staging buffer
        first (one copy; at most _STAGING_MAX bytes staged at a time).
        """
        n = len(keys)
        if not n == len(all_buffer_ptrs) == len(all_sizes):
            return [INVALID_PARAMS] * n
        if self._kv() is None:
            return [INTERNAL_ERROR] * n
        out = [INVALID_PARAMS] * n
        plan = []       # (index, pieces) of the keys with valid buffers
        for i in range(n):
            try:
                plan.append((i, _pieces(all_buffer_ptrs[i], all_sizes[i])))
            except (TypeError, ValueError, OverflowError) as e:
                self._fail(e)
        start = 0
        while start < len(plan):
            # a round: up to _MULTI_KEYS keys and _STAGING_MAX staged bytes
            end, staged = start, 0
            while end < len(plan) and end - start < _MULTI_KEYS:
                pieces = plan[end][1]
                need = sum(length for _, length in pieces) if len(pieces) > 1 else 0
                if end > start and staged + need > _STAGING_MAX:
                    break
                staged += need
                end += 1
            self._put_round(plan[start:end], keys, out)
            start = end
        return out

    def _staging(self, size):
        """Address of @size writable bytes for this thread's gathers: a
        buffer kept per thread and reused (no allocation or zeroing per
        call), up to _STAGING_MAX bytes; beyond, a one-off buffer.
        Returns (address, the object that owns the bytes)."""
        buf = getattr(self._tls, "staging", None)
        if buf is None or len(buf) < size:
            buf = (ctypes.c_char * size)()
            if size <= _STAGING_MAX:
                self._tls.staging = buf
        return ctypes.addressof(buf), buf

    def _put_round(self, plan, keys, out):
        """Put one round of batch_put_from_multi_buffers: one
        put_from_many for its keys, those with several ranges gathered
        one after the other into this thread's staging buffer."""
        need = sum(sum(length for _, length in pieces)
                   for _, pieces in plan if len(pieces) > 1)
        base, owner = self._staging(need) if need else (0, None)
        off = 0
        idx, rkeys, addrs, sizes = [], [], [], []
        for i, pieces in plan:
            if not pieces:
                out[i] = self._fail(FluxonKVError(
                    errno.EINVAL, f"{keys[i]!r}: a value of 0 bytes", op="put"))
                continue
            if len(pieces) == 1:
                addr, size = pieces[0]      # one range: put from it directly
            else:
                addr = base + off
                size = sum(length for _, length in pieces)
                err = _copy_pieces(addr, pieces, write=False)
                if err:
                    out[i] = self._fail(FluxonKVError(
                        err, f"{keys[i]!r}: reading its buffers: errno {err}",
                        op="put"))
                    continue
                off += size
            idx.append(i)
            rkeys.append(keys[i])
            addrs.append(addr)
            sizes.append(size)
        if idx:
            ok, r = self._call(Store.put_from_many, rkeys, addrs, sizes)
            codes = self._codes(r, rkeys, True) if ok else [r] * len(idx)
            for i, c in zip(idx, codes):
                out[i] = c
        del owner   # the puts copied the values out of the staging buffer

    def batch_get_into_multi_buffers(self, keys: Sequence[Key],
                                     all_buffer_ptrs: Sequence[Sequence[int]],
                                     all_sizes: Sequence[Sequence[int]],
                                     prefer_alloc_in_same_node: bool = False
                                     ) -> List[int]:
        """Scatter each key's value over its buffers in order.  Per key:
        the bytes read (a value shorter than the buffers fills a prefix of
        them, the rest is untouched), or a negative code: OBJECT_NOT_FOUND
        on a miss, INVALID_PARAMS when the value is longer than its
        buffers together (nothing copied) or the buffers are malformed, -1
        for an address not mapped here.

        A key with one buffer is a GET_INTO (the module copies into it, as
        batch_get_into); the others take a holder on the segment and copy
        from it straight into each buffer (one copy, no intermediate).
        """
        n = len(keys)
        if not n == len(all_buffer_ptrs) == len(all_sizes):
            return [INVALID_PARAMS] * n
        if self._kv() is None:
            return [INTERNAL_ERROR] * n
        out = [INVALID_PARAMS] * n
        single, multi = [], []
        for i in range(n):
            try:
                pieces = _pieces(all_buffer_ptrs[i], all_sizes[i])
            except (TypeError, ValueError, OverflowError) as e:
                self._fail(e)
                continue
            if len(pieces) == 1:
                single.append((i, pieces[0]))
            elif pieces:
                multi.append((i, pieces))
            else:
                out[i] = self._fail(FluxonKVError(
                    errno.ENOBUFS, f"{keys[i]!r}: no buffer room", op="get"))
        if single:
            rkeys = [keys[i] for i, _ in single]
            ok, r = self._call(Store.get_into_many, rkeys,
                               [p for _, (p, _) in single],
                               [s for _, (_, s) in single])
            codes = self._codes(r, rkeys, False) if ok else [r] * len(single)
            for (i, _), c in zip(single, codes):
                out[i] = c
        for s in range(0, len(multi), _MULTI_KEYS):
            self._get_round(multi[s:s + _MULTI_KEYS], keys, out)
        return out

    def _get_round(self, plan, keys, out):
        rkeys = [keys[i] for i, _ in plan]
        ok, hs = self._call(Store.get_many, rkeys)
        if not ok:
            for i, _ in plan:
                out[i] = hs
            return
        try:
            for (i, pieces), h in zip(plan, hs):
                out[i] = self._scatter(keys[i], h, pieces)
        finally:
            try:
                self._store.release_many([h for h in hs if h is not None])
            except (FluxonKVError, ValueError, AttributeError):
                pass    # closed meanwhile: close() released them

    def _scatter(self, key, h, pieces):
        """Copy holder @h (None: a miss) over @pieces in order: the bytes
        copied, or a Mooncake code."""
        if h is None:
            self.last_error = FluxonKVError(errno.ENOENT, f"{key!r}: no value",
                                            op="get")
            return OBJECT_NOT_FOUND
        try:
            vlen = h.size()
            src = h.ptr()
        except ValueError as e:     # released: the store was closed meanwhile
            return self._fail(e)
        room = sum(length for _, length in pieces)
        if vlen > room:
            return self._fail(FluxonKVError(
                errno.ENOBUFS, f"{key!r}: value of {vlen} bytes does not fit "
                f"in {room}", op="get"))
        if vlen < room:     # a prefix of the buffers
            left, fill = vlen, []
            for addr, length in pieces:
                if left == 0:
                    break
                fill.append((addr, min(length, left)))
                left -= fill[-1][1]
            pieces = fill
        err = _copy_pieces(src, pieces, write=True)
        if err:
            return self._fail(FluxonKVError(
                err, f"{key!r}: writing its buffers: errno {err}", op="get"))
        return vlen

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
