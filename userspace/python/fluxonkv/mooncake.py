# SPDX-License-Identifier: GPL-2.0
"""A drop-in for the Python store of Mooncake (``mooncake.store``).

``MooncakeDistributedStore`` keeps the method names, argument orders and
return conventions of Mooncake's class, as SGLang's HiCache backend,
vLLM's Mooncake store connector and LMCache's Mooncake connector call it.
The opt-in distribution ``fluxonkv-mooncake`` (userspace/python/
mooncake-shim) installs it as ``mooncake.store``, so they run unmodified;
or import it from here::

    from fluxonkv.mooncake import MooncakeDistributedStore, ReplicateConfig

    store = MooncakeDistributedStore()
    store.setup("localhost", "http://meta", 0, 0, "tcp", "", "127.0.0.1:50051")
    store.put("k", b"value")          # 0
    store.get("k")                    # b"value"  (b"" on a miss)
    buf = store.get_buffer("k")       # BufferHandle: memoryview(buf), ptr()

Conventions (Mooncake's): integer status codes, 0 for success and a
negative Mooncake ``ErrorCode`` on failure (``ERRNO_TO_MOONCAKE``);
``is_exist`` 1 / 0 / -1; batch calls return one int per key, each key its
own (a batch that fails as a whole is redone key by key); ``get_into``
the bytes read or a negative code; ``get`` b"" and ``get_buffer`` None on
a miss.  No method raises for a store failure; ``last_error`` keeps the
error behind the most recent one.  ``put*`` keep the first value of a key
(0, nothing stored, if it has one), ``upsert*`` replace it; a put of 0
bytes stores nothing and returns 0.  Keys past the store's key_max (256
bytes, 250 in a tenant) are stored under a reserved SHA-256 name
(``native_key``).

``is_exist``, ``batch_is_exist``, ``get_size`` and
``batch_get_replica_desc`` never read the value: they are lookups
(FLUXONKV_IOC_LOOKUP: no holder, no SSD refill, no access counted).
``get_into`` / ``batch_get_into`` and ``batch_put_from`` are one call each
into the extension (the GIL released across the batch).

``batch_put_from_multi_buffers`` / ``batch_get_into_multi_buffers`` (vLLM's
Mooncake store connector, SGLang's MLA ``layer_first`` and hybrid pools)
take a list of (address, size) buffers per key: the value is their
concatenation.  Each is one call into the extension for the whole batch
(``Store.put_from_multi`` / ``get_into_multi``: the buffers parsed, one
FLUXONKV_IOC_BATCH, the copies, the GIL released): a put is a gather put
(FLUXONKV_PUT_F_IOV: the module copies each buffer straight into the
segment, no staging), a get scatters from a holder on the segment (one
copy, straight into each buffer; a key with one buffer is a GET_INTO).

``remove_all`` / ``remove_by_regex`` are the master's: fluxond's control
socket (``_control``, CLEAR) removes every process's keys of the adapter's
tenant.  The adapter keeps no state per key.

Tenants: ``setup(..., tenant_id="name")`` (SGLang's ``tenant_id``) binds
the store to that tenant of fluxond's ``tenants:`` configuration, a key
space of its own; "default" (or none) is tenant 0, the key space of
every store without one.  An unknown name makes setup() return
INVALID_PARAMS (SGLang: "Failed to setup Mooncake store"); a module or
daemon without tenants raises the TypeError an old Mooncake raises for
``tenant_id`` (SGLang: "does not support tenant_id"), so a tenant is never
served from the default key space.
"""
import ctypes
import enum
import errno
import hashlib
import logging
import mmap
import operator
import os
import re
import socket
import threading
from typing import Any, List, Optional, Sequence, Union

from . import _control
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


# ---- keys longer than the module takes ---------------------------------------
#
# The module takes keys of 1..key_max bytes: KEY_MAX, TENANT_KEY_MAX for a
# store bound to a tenant (Store.key_max).  A longer key (LMCache's carry
# model names and hashes) is stored under HASHED_PREFIX + the hex SHA-256 of
# its UTF-8 bytes: 81 bytes.  No key a caller passes is ever stored under
# such a name: keys that start with RESERVED_PREFIX are refused
# (INVALID_PARAMS), so a hashed name means "the key whose SHA-256 this is",
# and two long keys share a value only through a SHA-256 collision.

KEY_MAX = 256                       # FLUXONKV_KEY_MAX
TENANT_KEY_MAX = 250                # FLUXONKV_KEY_MAX - FLUXONKV_TENANT_PREFIX_LEN
RESERVED_PREFIX = b"\x00fluxonkv/"  # the adapter's own names
HASHED_PREFIX = RESERVED_PREFIX + b"sha256/"
_RESERVED_STR = RESERVED_PREFIX.decode()
_BARRIER_KEY = RESERVED_PREFIX + b"barrier"    # never stored


def native_key(key: "Key", key_max: int = KEY_MAX) -> "Key":
    """The key the module stores for Mooncake key @key (str or bytes):
    @key itself up to @key_max bytes (the store's: KEY_MAX, TENANT_KEY_MAX
    in a tenant), beyond that its hashed name.
    ValueError for a key in the reserved namespace, TypeError for a key
    that is neither str nor bytes."""
    if isinstance(key, str):
        if len(key) <= key_max // 4 and not key.startswith("\x00"):
            return key              # UTF-8: at most 4 bytes a character
        if key.startswith(_RESERVED_STR):
            raise ValueError("keys starting with \\x00fluxonkv/ are "
                             "reserved (hashed long keys)")
        raw = key.encode()
    elif isinstance(key, (bytes, bytearray)):
        raw = bytes(key)
        if raw.startswith(RESERVED_PREFIX):
            raise ValueError("keys starting with \\x00fluxonkv/ are "
                             "reserved (hashed long keys)")
    else:
        raise TypeError(f"a key is str or bytes, not {type(key).__name__}")
    if len(raw) <= key_max:
        return key
    return HASHED_PREFIX + hashlib.sha256(raw).hexdigest().encode()


class SoftPinAction(enum.IntEnum):
    """Mooncake's SoftPinAction (ReplicateConfig.soft_pin_action).

    Accepted and ignored: fluxonkv's eviction is the master's policy, by
    weight, with no pins a client can set."""
    PRESERVE = 0
    ENABLE = 1
    DISABLE = 2


class ReplicateConfig:
    """Mooncake's ReplicateConfig: accepted everywhere, and ignored.

    A fluxonkv value has one DRAM replica on the node the master places it
    (plus an SSD copy when the node has an SSD tier); replica counts, pins
    and preferred segments do not apply.  It has Mooncake's fields with
    their defaults, and any other attribute may be set (SGLang's
    ``group_ids`` for instance).
    """

    def __init__(self, replica_num=1, with_soft_pin=False,
                 with_hard_pin=False, preferred_segment="",
                 preferred_segments=None, prefer_alloc_in_same_node=False):
        self.replica_num = replica_num
        self.nof_replica_num = 0
        self.dfs_replica_num = 0
        self.with_soft_pin = with_soft_pin
        self.soft_pin_action = (SoftPinAction.ENABLE if with_soft_pin
                                else SoftPinAction.PRESERVE)
        self.soft_pin_ttl_ms = 0
        self.with_hard_pin = with_hard_pin
        self.preferred_segment = preferred_segment
        self.preferred_segments = list(preferred_segments or [])
        self.preferred_nof_segments = []
        self.prefer_alloc_in_same_node = prefer_alloc_in_same_node
        self.group_ids = []

    def __repr__(self):
        return (f"ReplicateConfig(replica_num={self.replica_num}, "
                f"soft_pin_action={self.soft_pin_action!r}, "
                f"preferred_segment={self.preferred_segment!r})")


class ReplicaStatus(enum.IntEnum):
    """Mooncake's ReplicaStatus; a fluxonkv replica a lookup finds is
    COMPLETE (readable)."""
    UNDEFINED = 0
    INITIALIZED = 1
    PROCESSING = 2
    COMPLETE = 3
    REMOVED = 4
    FAILED = 5


class ReplicaDescriptor:
    """One replica of a key as batch_get_replica_desc reports it (the
    predicates vLLM's tier log calls).  ``tier`` is where fluxonkv's
    lookup found the value: "memory" (a DRAM replica, this node's or a
    peer's) or "ssd" (only an SSD copy: a get refills DRAM from it)."""

    __slots__ = ("tier", "size", "put_id", "status")

    def __init__(self, tier, size, put_id):
        self.tier = tier
        self.size = size
        self.put_id = put_id
        self.status = ReplicaStatus.COMPLETE

    def is_memory_replica(self):
        return self.tier in ("memory", "remote")

    def is_disk_replica(self):
        return self.tier in ("ssd", "remote-ssd")

    def is_local_disk_replica(self):
        return self.tier == "ssd"

    def __repr__(self):
        return f"ReplicaDescriptor({self.tier}, {self.size} bytes)"


class MooncakeHostMemAllocator:
    """Mooncake's host memory allocator (SGLang's standalone host pool):
    alloc(size) gives the address of @size zeroed, page-aligned bytes of
    anonymous shared memory (0 on failure), free(address) returns them (0,
    or -1 for an address this allocator did not give).  fluxonkv needs no
    registration of these bytes: puts and gets copy from and to any
    address of the process."""

    def __init__(self):
        self._maps = {}
        self._lock = threading.Lock()

    def alloc(self, size):
        size = operator.index(size)
        if size <= 0:
            return 0
        try:
            m = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        except (OSError, ValueError, OverflowError) as e:
            log.warning("MooncakeHostMemAllocator.alloc(%d): %s", size, e)
            return 0
        addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
        with self._lock:
            self._maps[addr] = m
        return addr

    def free(self, ptr):
        with self._lock:
            m = self._maps.pop(operator.index(ptr), None)
        if m is None:
            return -1
        try:
            m.close()
        except BufferError:     # still exported (a numpy view of it): keep
            with self._lock:
                self._maps[ptr] = m
            return -1
        return 0


# Mooncake's BufferHandle is the MemHolder itself: a buffer on every Python
# (memoryview(buf), numpy.asarray(buf): the native buffer protocol, 3.11
# included), with ptr() (the address of the bytes in this process), size()
# and release().  The bytes stay valid until release() or until the handle
# and every view of it are garbage collected, as in Mooncake.
BufferHandle = MemHolder


# ---- the multi-buffer calls ----------------------------------------------
#
# The extension parses each key's buffers, runs the batch and does the
# copies with process_vm_readv / process_vm_writev on this very process:
# an address not mapped here (a GPU device pointer, a freed buffer) is
# EFAULT for that key (-1), where a memmove would kill the process with
# SIGSEGV.  Where a seccomp filter refuses those calls it copies with
# memcpy, which trusts every address (_native._checked_copies() says).


_ERRORS = (FluxonKVError, TypeError, ValueError, OverflowError)
_HOSTPORT = re.compile(r"^(\[[^\]]*\]|[^:\[\]]*):\d+$")
DEFAULT_TENANT_ID = "default"


class MooncakeDistributedStore:
    """Mooncake's ``MooncakeDistributedStore`` on the local fluxonkv cache.

    The adapter keeps no state per key: nothing in it grows with the keys
    put.  Writes follow Mooncake: ``put*`` keep the first value of a key
    (a put of a key that exists stores nothing and returns 0), ``upsert*``
    replace it.
    """

    def __init__(self, device: Optional[str] = None) -> None:
        self._device = device
        self._store = None
        self._tenant = 0                # the bound tenant's id
        self._tenant_name = DEFAULT_TENANT_ID
        self._key_max = KEY_MAX         # the store's (TENANT_KEY_MAX bound)
        self._hostname = ""
        self._port_sock = None          # holds the port get_hostname() names
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

        ``tenant_id`` (a name of fluxond's ``tenants:`` configuration)
        binds the store to that tenant: its keys, gets and remove_all()
        are that tenant's only.  None, "" and "default" are tenant 0.  An
        unknown name returns INVALID_PARAMS, a tenant this user may not
        use (not among its uids / gids) INTERNAL_ERROR, each with
        ``last_error`` saying why; a module or fluxond that predates
        tenants raises TypeError naming ``tenant_id``, as a Mooncake
        without tenants does (SGLang then refuses to run the tenant
        rather than share the default key space).  A second setup() keeps
        the open store: with another tenant it returns INVALID_PARAMS.
        """
        tenant = kwargs.get("tenant_id")
        if tenant in (None, ""):
            tenant = DEFAULT_TENANT_ID
        if not isinstance(tenant, str):
            return self._fail(TypeError("tenant_id is a str, not "
                                        f"{type(tenant).__name__}"))
        if self._store is None:
            try:
                self._store = Store(self._device, tenant=tenant)
            except FluxonKVError as e:
                if e.errno == errno.EOPNOTSUPP and tenant != DEFAULT_TENANT_ID:
                    raise TypeError(
                        "setup() got an unexpected keyword argument "
                        f"'tenant_id': {e}") from e
                log.warning("setup(tenant_id=%r): %s", tenant, e)
                if e.op == "tenant" and e.errno == errno.ENOENT:
                    self.last_error = e
                    return INVALID_PARAMS   # no such tenant
                return self._fail(e)
            self._tenant_name = tenant
            self._tenant = self._store.tenant_id
            self._key_max = self._store.key_max
        elif tenant != self._tenant_name:
            return self._fail(ValueError(
                f"setup(tenant_id={tenant!r}): this store is open in tenant "
                f"{self._tenant_name!r}"))
        if not self._hostname:
            self._hostname = self._host_with_port(local_hostname)
        return OK

    def _host_with_port(self, host):
        """@host (this machine's name if empty) with a port, as Mooncake's
        segment names: a host that names its port keeps it; otherwise a
        free TCP port of MC_STORE_CLIENT_MIN_PORT..MC_STORE_CLIENT_MAX_PORT
        (12300..14300) is bound and held until close(), so two clients on
        one host never share a name."""
        host = host or socket.gethostname()
        if _HOSTPORT.match(host):
            return host
        try:
            lo = int(os.environ.get("MC_STORE_CLIENT_MIN_PORT", 12300))
            hi = int(os.environ.get("MC_STORE_CLIENT_MAX_PORT", 14300))
        except ValueError:
            lo, hi = 0, -1
        if not 0 < lo <= hi < 65536:
            lo, hi = 12300, 14300
        span = hi - lo + 1
        first = os.getpid() % span
        try:
            for port in [lo + (first + n) % span for n in range(span)] + [0]:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    sock.bind(("", port))   # 0 last: the range is taken
                except OSError:
                    sock.close()
                    continue
                self._port_sock = sock
                return f"{host}:{sock.getsockname()[1]}"
        except OSError as e:    # no IPv4 sockets here: the name alone
            log.warning("get_hostname: no port to hold (%s)", e)
        return host

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
        if self._port_sock is not None:
            self._port_sock.close()
            self._port_sock = None
        self._hostname = ""
        self._tenant = 0
        self._tenant_name = DEFAULT_TENANT_ID
        self._key_max = KEY_MAX
        return OK

    def get_hostname(self) -> str:
        """"host:port", this client's name (Mooncake's segment name)."""
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
        except _ERRORS as e:
            return False, self._fail(e)

    def _key(self, key):
        """(True, the module's key) or (False, INVALID_PARAMS)."""
        try:
            return True, native_key(key, self._key_max)
        except (TypeError, ValueError) as e:
            return False, self._fail(e)

    def _map_keys(self, keys, bad):
        """The module's keys of @keys: (indexes of the valid ones, their
        module keys, a list with @bad at the invalid ones and None
        elsewhere)."""
        idx, nkeys, out = [], [], [None] * len(keys)
        for i, k in enumerate(keys):
            ok, nk = self._key(k)
            if ok:
                idx.append(i)
                nkeys.append(nk)
            else:
                out[i] = bad
        return idx, nkeys, out

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

    def _each(self, fn, keys, cols, put):
        """fn(store, keys, *cols) -> one int per key (a negative errno, or
        a result), as Mooncake codes.  If the call fails as a whole (one
        key's bad address, a closed store), it is redone key by key, so
        every key gets its own code and the good ones are done."""
        kv = self._kv()
        if kv is None:
            return [INTERNAL_ERROR] * len(keys)
        try:
            return self._codes(fn(kv, keys, *cols), keys, put)
        except _ERRORS as e:
            if len(keys) <= 1:
                return [self._fail(e)] * len(keys)
        out = []
        for i in range(len(keys)):
            out.extend(self._each(fn, keys[i:i + 1],
                                  [c[i:i + 1] for c in cols], put))
        return out

    def _absent(self, nkeys):
        """Which of @nkeys (module keys) have no value: a list of bools,
        or None if the lookup failed (then every key counts as absent and
        the put decides)."""
        ok, r = self._call(Store.exists_many, nkeys)
        return [not x for x in r] if ok else None

    # ---- writes --------------------------------------------------------
    #
    # put*: Mooncake keeps the first value of a key (its PutStart answers
    # OBJECT_ALREADY_EXISTS, which the client returns as success): a key
    # that has a value is left alone and gets 0.  The check is a lookup
    # (no read); two clients putting one absent key at once may both
    # store it (the later value stays), which the stacks' content-addressed
    # keys make harmless.  upsert* replace the value.

    def _put_values(self, keys, values, keep_first):
        """Per-key codes for storing buffers @values under @keys."""
        n = len(keys)
        if n != len(values):
            return [INVALID_PARAMS] * n
        idx, nkeys, out = self._map_keys(keys, INVALID_PARAMS)
        views = {}
        for j, i in enumerate(idx):
            try:
                views[j] = memoryview(values[i])
            except TypeError as e:
                out[i] = self._fail(e)
        todo = [j for j in range(len(idx)) if j in views]
        for j in todo:
            if views[j].nbytes == 0:    # Mooncake: an empty put is a no-op
                out[idx[j]] = OK
        todo = [j for j in todo if views[j].nbytes]
        if keep_first and todo:
            absent = self._absent([nkeys[j] for j in todo])
            if absent is not None:
                for j, a in zip(list(todo), absent):
                    if not a:
                        out[idx[j]] = OK
                todo = [j for j, a in zip(todo, absent) if a]
        for j in todo:
            ok, r = self._call(Store.put, nkeys[j], views[j])
            out[idx[j]] = OK if ok else r
        return out

    def put(self, key: Key, value: Any,
            config: Optional[ReplicateConfig] = None) -> int:
        """0 (the value stored, or the key already had one), or a negative
        code."""
        return self._put_values([key], [value], True)[0]

    def upsert(self, key: Key, value: Any,
               config: Optional[ReplicateConfig] = None) -> int:
        """Store @value under @key, replacing a value it has."""
        return self._put_values([key], [value], False)[0]

    def _join(self, parts):
        return b"".join(memoryview(p).cast("B") for p in parts)

    def put_parts(self, key: Key, *parts: Any,
                  config: Optional[ReplicateConfig] = None) -> int:
        """Store the concatenation of @parts (this joins them: one copy)."""
        try:
            value = self._join(parts)
        except (TypeError, ValueError) as e:
            return self._fail(e)
        return self.put(key, value)

    def upsert_parts(self, key: Key, *parts: Any,
                     config: Optional[ReplicateConfig] = None) -> int:
        try:
            value = self._join(parts)
        except (TypeError, ValueError) as e:
            return self._fail(e)
        return self.upsert(key, value)

    def put_batch(self, keys: Sequence[Key], values: Sequence[Any],
                  config: Optional[ReplicateConfig] = None) -> int:
        """One status for the batch, as Mooncake: 0, or the first key's
        failure (the others are stored)."""
        if len(keys) != len(values):
            return INVALID_PARAMS
        return next((c for c in self._put_values(list(keys), list(values),
                                                 True) if c < 0), OK)

    def upsert_batch(self, keys: Sequence[Key], values: Sequence[Any],
                     config: Optional[ReplicateConfig] = None) -> int:
        if len(keys) != len(values):
            return INVALID_PARAMS
        return next((c for c in self._put_values(list(keys), list(values),
                                                 False) if c < 0), OK)

    def _put_from(self, keys, ptrs, sizes, keep_first):
        """Per-key codes for @sizes bytes at addresses @ptrs."""
        n = len(keys)
        if not n == len(ptrs) == len(sizes):
            return [INVALID_PARAMS] * n
        if self._kv() is None:
            return [INTERNAL_ERROR] * n
        idx, nkeys, out = self._map_keys(keys, INVALID_PARAMS)
        todo = []
        for j, i in enumerate(idx):
            try:
                empty = operator.index(sizes[i]) == 0
            except TypeError:
                empty = False           # put_from_many says what is wrong
            if empty:
                out[i] = OK             # Mooncake: an empty put is a no-op
            else:
                todo.append(j)
        if keep_first and todo:
            absent = self._absent([nkeys[j] for j in todo])
            if absent is not None:
                for j, a in zip(list(todo), absent):
                    if not a:
                        out[idx[j]] = OK
                todo = [j for j, a in zip(todo, absent) if a]
        if todo:
            codes = self._each(Store.put_from_many, [nkeys[j] for j in todo],
                               [[ptrs[idx[j]] for j in todo],
                                [sizes[idx[j]] for j in todo]], True)
            for j, c in zip(todo, codes):
                out[idx[j]] = c
        return out

    def put_from(self, key: Key, buffer_ptr: int, size: int,
                 config: Optional[ReplicateConfig] = None) -> int:
        """Store @size bytes at address @buffer_ptr (no copy in Python);
        0 for @size 0 (nothing stored), as Mooncake."""
        return self._put_from([key], [buffer_ptr], [size], True)[0]

    def upsert_from(self, key: Key, buffer_ptr: int, size: int,
                    config: Optional[ReplicateConfig] = None) -> int:
        return self._put_from([key], [buffer_ptr], [size], False)[0]

    def batch_put_from(self, keys: Sequence[Key], buffer_ptrs: Sequence[int],
                       sizes: Sequence[int],
                       config: Optional[ReplicateConfig] = None) -> List[int]:
        """One code per key: 0 or negative (one call, GIL released)."""
        return self._put_from(list(keys), list(buffer_ptrs), list(sizes), True)

    def batch_upsert_from(self, keys: Sequence[Key],
                          buffer_ptrs: Sequence[int], sizes: Sequence[int],
                          config: Optional[ReplicateConfig] = None) -> List[int]:
        return self._put_from(list(keys), list(buffer_ptrs), list(sizes), False)

    def remove(self, key: Key, force: bool = False) -> int:
        """0 if the key was removed, OBJECT_NOT_FOUND (-704) if missing."""
        ok, k = self._key(key)
        if not ok:
            return k
        ok, r = self._call(Store.delete, k)
        if not ok:
            return r
        return OK if r else OBJECT_NOT_FOUND

    def batch_remove(self, keys: Sequence[Key], force: bool = False) -> List[int]:
        keys = list(keys)
        idx, nkeys, out = self._map_keys(keys, INVALID_PARAMS)
        if nkeys:
            ok, r = self._call(Store.delete_many, nkeys)
            if not ok:      # each key on its own: its own code
                r = [self.remove(keys[i]) for i in idx]
            else:
                r = [OK if x else OBJECT_NOT_FOUND for x in r]
            for i, c in zip(idx, r):
                out[i] = c
        return out

    def remove_by_regex(self, regex_pattern: str, force: bool = False) -> int:
        """Remove every key of the store that @regex_pattern matches
        (anywhere in the key, as Mooncake's regex_search) and return how
        many; a negative code on failure (INVALID_PARAMS for a pattern
        that is not a POSIX extended regular expression).

        The master does it (fluxond's control socket, CLEAR), across every
        process's keys of this store's tenant (setup's tenant_id; others'
        are not touched).  The pattern is POSIX ERE, not ECMAScript: \\d
        and lazy quantifiers are not known.  Keys longer than key_max (256
        bytes, 250 in a tenant) are stored under their SHA-256 name: only
        remove_all() removes them.
        """
        if not isinstance(regex_pattern, str):
            return self._fail(TypeError("a pattern is a str"))
        return self._clear(regex_pattern, "remove_by_regex")

    def remove_all(self, force: bool = False) -> int:
        """Remove every key of the store, every process's (Mooncake's
        remove_all: SGLang's clear(), vLLM's reset) -- of this store's
        tenant only (tenant 0 without one) -- and return how many;
        a negative code on failure (RPC_FAIL: no fluxond listens on its
        control socket, UNAVAILABLE_IN_CURRENT_MODE: that daemon is a
        cluster node, not the master).  Values held by a get stay readable
        until released, as for remove()."""
        return self._clear(None, "remove_all")

    def _clear(self, pattern, op):
        kv = self._kv()
        if kv is None:
            return INTERNAL_ERROR
        try:
            # A barrier: the module sends its batched notes of local puts
            # before a DELETE upcall, so once this returns the master knows
            # every put that returned before it (any process's).
            kv.delete(_BARRIER_KEY)
            return _control.clear(pattern, tenant=self._tenant)
        except FluxonKVError as e:
            e.op = op
            log.warning("%s: %s", op, e)
            return self._fail(e)

    # ---- multi-buffer batches (vLLM store connector, SGLang MLA pools) ----

    def batch_put_from_multi_buffers(self, keys: Sequence[Key],
                                     all_buffer_ptrs: Sequence[Sequence[int]],
                                     all_sizes: Sequence[Sequence[int]],
                                     config: Optional[ReplicateConfig] = None
                                     ) -> List[int]:
        """Store for each key the concatenation of its buffers
        (all_buffer_ptrs[i][j], all_sizes[i][j] bytes).  One code per key:
        0 (stored, already there, or 0 bytes: nothing stored, as Mooncake)
        or negative (INVALID_PARAMS for that key's malformed buffers, -1
        for an address not mapped here).

        One call into the extension: a key whose buffers are one range
        (a single buffer, or adjacent ones) is a plain put from it, the
        others a gather put (the module copies each buffer into the
        segment: one copy, no staging).  A module without gather puts,
        or a key of more than 1,024 separate buffers, is gathered into a
        staging buffer first (one copy more).
        """
        return self._put_multi(keys, all_buffer_ptrs, all_sizes, True)

    def batch_upsert_from_multi_buffers(self, keys, all_buffer_ptrs,
                                        all_sizes, config=None):
        return self._put_multi(keys, all_buffer_ptrs, all_sizes, False)

    def _put_multi(self, keys, all_buffer_ptrs, all_sizes, keep_first):
        keys = list(keys)
        n = len(keys)
        if not n == len(all_buffer_ptrs) == len(all_sizes):
            return [INVALID_PARAMS] * n
        if self._kv() is None:
            return [INTERNAL_ERROR] * n
        idx, nkeys, out = self._map_keys(keys, INVALID_PARAMS)
        if keep_first and idx:
            absent = self._absent(nkeys)
            if absent is not None:
                for i, a in zip(idx, absent):
                    if not a:
                        out[i] = OK
                idx = [i for i, a in zip(idx, absent) if a]
                nkeys = [k for k, a in zip(nkeys, absent) if a]
        if idx:
            ok, r = self._call(Store.put_from_multi, nkeys,
                               [all_buffer_ptrs[i] for i in idx],
                               [all_sizes[i] for i in idx])
            codes = self._codes(r, nkeys, True) if ok else [r] * len(idx)
            for i, c in zip(idx, codes):
                out[i] = c
        return out

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

        One call into the extension for the batch: a key with one buffer
        (or adjacent ones) is a GET_INTO (the module copies into it, as
        batch_get_into); the others take a holder on the segment and copy
        from it straight into each buffer (one copy, no intermediate).
        """
        keys = list(keys)
        n = len(keys)
        if not n == len(all_buffer_ptrs) == len(all_sizes):
            return [INVALID_PARAMS] * n
        if self._kv() is None:
            return [INTERNAL_ERROR] * n
        idx, nkeys, out = self._map_keys(keys, INVALID_PARAMS)
        if idx:
            ok, r = self._call(Store.get_into_multi, nkeys,
                               [all_buffer_ptrs[i] for i in idx],
                               [all_sizes[i] for i in idx])
            codes = self._codes(r, nkeys, False) if ok else [r] * len(idx)
            for i, c in zip(idx, codes):
                out[i] = c
        return out

    # ---- reads -----------------------------------------------------------

    def get(self, key: Key) -> bytes:
        """The value as bytes (a copy), b"" on a miss or an error."""
        h = self.get_buffer(key)
        if h is None:
            return b""
        try:
            return bytes(h)
        finally:
            h.release()

    def get_batch(self, keys: Sequence[Key]) -> List[bytes]:
        out = []
        for h in self.batch_get_buffer(keys):
            out.append(b"" if h is None else bytes(h))
            if h is not None:
                h.release()
        return out

    def get_buffer(self, key: Key) -> Optional[BufferHandle]:
        """A zero-copy BufferHandle, or None on a miss or an error.  Its
        bytes stay valid, unchanged, until release() or until the handle
        and every view of it are gone, even if the key is overwritten or
        removed meanwhile."""
        ok, k = self._key(key)
        if not ok:
            return None
        ok, h = self._call(Store.get, k)
        if not ok or h is None:
            return None
        return h

    def batch_get_buffer(self, keys: Sequence[Key]) -> List[Optional[BufferHandle]]:
        """BufferHandle-or-None per key (one call, GIL released)."""
        keys = list(keys)
        idx, nkeys, out = self._map_keys(keys, None)
        if nkeys:
            ok, hs = self._call(Store.get_many, nkeys)
            if not ok:      # each key on its own
                hs = [self.get_buffer(keys[i]) for i in idx]
            for i, h in zip(idx, hs):
                out[i] = h
        return out

    def get_into(self, key: Key, buffer_ptr: int, size: int) -> int:
        """Copy the value to address @buffer_ptr (capacity @size).

        Returns the length copied, or a negative code (OBJECT_NOT_FOUND on
        a miss, INVALID_PARAMS when the value does not fit).
        """
        return self.batch_get_into([key], [buffer_ptr], [size])[0]

    def batch_get_into(self, keys: Sequence[Key], buffer_ptrs: Sequence[int],
                       sizes: Sequence[int]) -> List[int]:
        """Bytes read or a negative code per key (one call, GIL released)."""
        keys = list(keys)
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            return [INVALID_PARAMS] * len(keys)
        if self._kv() is None:
            return [INTERNAL_ERROR] * len(keys)
        idx, nkeys, out = self._map_keys(keys, INVALID_PARAMS)
        if nkeys:
            ptrs, sizes = list(buffer_ptrs), list(sizes)
            codes = self._each(Store.get_into_many, nkeys,
                               [[ptrs[i] for i in idx],
                                [sizes[i] for i in idx]], False)
            for i, c in zip(idx, codes):
                out[i] = c
        return out

    def get_size(self, key: Key) -> int:
        """The value's length, or a negative code (-704 on a miss).
        A lookup: the value is not read."""
        ok, k = self._key(key)
        if not ok:
            return k
        ok, r = self._call(Store.lookup, k)
        if not ok:
            return r
        return OBJECT_NOT_FOUND if r is None else r.len

    def is_exist(self, key: Key) -> int:
        """1 if the key has a value, 0 if not, -1 on an error (a lookup)."""
        return self.batch_is_exist([key])[0]

    def batch_is_exist(self, keys: Sequence[Key]) -> List[int]:
        """1 / 0 per key, -1 for a key that cannot be looked up."""
        keys = list(keys)
        idx, nkeys, out = self._map_keys(keys, -1)
        if nkeys:
            ok, r = self._call(Store.exists_many, nkeys)
            if ok:
                r = [1 if x else 0 for x in r]
            elif len(nkeys) > 1:
                r = [self.is_exist(keys[i]) for i in idx]
            else:
                r = [-1]
            for i, c in zip(idx, r):
                out[i] = c
        return out

    def get_replica_desc(self, key: Key) -> List[ReplicaDescriptor]:
        """The replicas of @key: one ReplicaDescriptor (where a get would
        read it: "memory" or "ssd"), [] on a miss or an error.  A lookup:
        the value is not read."""
        return self.batch_get_replica_desc([key]).get(key, [])

    def batch_get_replica_desc(self, keys: Sequence[Key]
                               ) -> "dict[Key, List[ReplicaDescriptor]]":
        """{key: [ReplicaDescriptor]} for the keys that have a value (the
        others are left out, as Mooncake's map of found keys)."""
        keys = list(keys)
        idx, nkeys, _ = self._map_keys(keys, None)
        out = {}
        if not nkeys:
            return out
        ok, r = self._call(Store.lookup_many, nkeys)
        if not ok:
            return out
        for i, lk in zip(idx, r):
            if lk is not None:
                out[keys[i]] = [ReplicaDescriptor(lk.source, lk.len, lk.put_id)]
        return out

    def __getattr__(self, name):
        if name.endswith("_tensor") or "_tensor_" in name or name.startswith("pub_"):
            raise NotImplementedError(
                f"MooncakeDistributedStore.{name}: tensor APIs are not mapped "
                "by fluxonkv (put the tensor's bytes with put()/put_from())")
        raise AttributeError(name)
