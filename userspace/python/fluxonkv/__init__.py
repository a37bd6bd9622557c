# SPDX-License-Identifier: GPL-2.0
"""fluxonkv: Python client of the fluxonkv node-local cache.

A compiled extension (fluxonkv._native, the CPython C API over
libfluxonkv; see README.md next to this package)::

    import fluxonkv

    with fluxonkv.Store() as kv:
        put_id = kv.put("layer0/kv", payload)      # any contiguous buffer
        with kv.get("layer0/kv") as h:             # None on a miss
            consume(memoryview(h))                 # zero-copy, read-only
        kv.delete("layer0/kv")                     # False if it was missing

    with fluxonkv.Store(tenant="alpha") as kv:     # a tenant's own key space
        ...
"""
from .errors import FluxonKVError
from ._native import Lookup, MemHolder
from .store import Info, Store
from ._control import clear, tenant_id

__all__ = ["Store", "MemHolder", "Lookup", "FluxonKVError", "Info", "clear",
           "tenant_id"]
__version__ = "0.1.0"
