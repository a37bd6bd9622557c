# SPDX-License-Identifier: GPL-2.0
"""Store: one open /dev/fluxonkv and its read-only segment mapping.

The calls themselves live in the compiled fluxonkv._native.Store
(_native.c): each releases the GIL while the kernel works, the batch calls
loop in C.  This subclass adds what needs no speed: the tenant binding at
open, info() as a namedtuple and repr().
"""
from collections import namedtuple

from . import _control, _native

Info = namedtuple("Info", "abi_version segment_size segment_used value_max "
                          "key_max daemon tenants isolated")


class Store(_native.Store):
    """A client of the node-local fluxonkv cache.

    ``Store()`` opens /dev/fluxonkv (``Store(device=path)`` another node) and
    maps its segment read-only.  Use it as a context manager or call
    close().  One Store may be used by any number of threads at once.

    ``Store(tenant=...)`` works in a tenant's key space: a name from
    fluxond's ``tenants:`` configuration (resolved over its control socket,
    ``control`` or $FLUXOND_CONTROL), or an id; None, "default" and 0 are
    the default tenant.  The binding is made once, at open.

    Keys are str (UTF-8) or bytes, 1..key_max bytes (256; 250 in a tenant).
    Values are any C-contiguous buffer, passed to the kernel by address
    (no copy in Python).  A miss is never an exception: get() and lookup()
    return None, delete() and exists() False.
    """

    __slots__ = ()

    def __init__(self, device=None, tenant=None, control=None):
        # a bad tenant argument is refused before the device is opened
        if tenant is not None and (isinstance(tenant, bool) or
                                   not isinstance(tenant, (int, str))):
            raise TypeError("tenant is a name (str) or an id (int), not "
                            f"{type(tenant).__name__}")
        tid = _control.resolve_tenant(tenant, control)
        super().__init__(device)
        if tid:
            try:
                self._bind_tenant(tid)
            except BaseException:
                self.close()
                raise

    def info(self) -> Info:
        """Live FLUXONKV_IOC_INFO values as an Info namedtuple (tenants:
        the module has tenants; isolated: a tenant table is loaded)."""
        return Info(*self._info())

    def __repr__(self) -> str:
        if self.closed:
            return f"<fluxonkv.Store {self.device} closed>"
        tenant = f" tenant={self.tenant_id}" if self.tenant_id else ""
        return f"<fluxonkv.Store {self.device} segment={self.segment_size}{tenant}>"
