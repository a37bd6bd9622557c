# SPDX-License-Identifier: GPL-2.0
"""Store: one open /dev/fluxonkv and its read-only segment mapping.

The calls themselves live in the compiled fluxonkv._native.Store
(_native.c): each releases the GIL while the kernel works, the batch calls
loop in C.  This subclass adds what needs no speed: info() as a
namedtuple and repr().
"""
from collections import namedtuple

from . import _native

Info = namedtuple("Info", "abi_version segment_size segment_used value_max "
                          "key_max daemon")


class Store(_native.Store):
    """A client of the node-local fluxonkv cache.

    ``Store()`` opens /dev/fluxonkv (``Store(device=path)`` another node) and
    maps its segment read-only.  Use it as a context manager or call
    close().  One Store may be used by any number of threads at once.

    Keys are str (UTF-8) or bytes, 1..256 bytes.  Values are any
    C-contiguous buffer, passed to the kernel by address (no copy in
    Python).  A miss is never an exception: get() and lookup() return
    None, delete() and exists() False.
    """

    __slots__ = ()

    def info(self) -> Info:
        """Live FLUXONKV_IOC_INFO values as an Info namedtuple."""
        return Info(*self._info())

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"segment={self.segment_size}"
        return f"<fluxonkv.Store {self.device} {state}>"
