# SPDX-License-Identifier: GPL-2.0
"""MemHolder: a pinned, read-only, zero-copy view of one value.

How the memory is kept safe
---------------------------
The bytes of a holder live in the store's read-only segment mapping.  They
stay valid until the kernel holder is released; after that they may be
reused for another value, and after the store is closed they are unmapped.
So nothing a holder hands out may be readable after its release:

* ``view()`` returns a read-only ``memoryview`` built on a ctypes array laid
  over the segment (``(c_ubyte * len).from_address(addr)``).  ``release()``
  calls ``memoryview.release()`` on it, so any later access raises
  ValueError.
* A memoryview that is itself exported (``numpy.frombuffer(view)``, a
  ``memoryview(holder)`` on Python 3.12+) cannot be released: ``release()``
  then raises BufferError and the holder stays pinned.
* Memoryviews *derived* from the view (``view[a:b]``, ``memoryview(view)``,
  ``view.cast(...)``) share its underlying buffer but are separate objects
  that ``release()`` cannot reach.  Each of them keeps a reference to the
  ctypes array, so ``release()`` counts the array's references
  (``sys.getrefcount``, CPython) and raises BufferError while any of them is
  alive.  Drop (or ``.release()``) them and call ``release()`` again.
* The kernel holder itself is released by a ``weakref.finalize`` on that
  ctypes array: when the MemHolder is garbage collected, the bytes stay
  pinned for exactly as long as some memoryview still refers to them, and
  are released when the last one goes.  A process that exits releases all
  its holders (the kernel drops them when the device file is closed).

A MemHolder is safe to share between threads.
"""
import ctypes
import sys
import threading
import weakref

from . import _lib


def _release_kernel_holder(handle, hstruct):
    """Finalizer of a holder's ctypes array: drop the kernel pin."""
    return handle.release_holder(hstruct)


class MemHolder:
    """A pinned value: ``len(h)``, ``h.view()``, ``bytes(h)``, ``h.release()``.

    Attributes: ``put_id`` (version of the value), ``source`` ("memory",
    "ssd", and in a cluster "remote" or "remote-ssd"), ``address`` (int address of the first byte in this process).
    Using a released holder raises ValueError.
    """

    __slots__ = ("_arr", "_fin", "_view", "_lock", "_base_refs", "_len",
                 "_addr", "put_id", "source", "__weakref__")

    def __init__(self, addr, length, put_id, source, finalizer_fn, *args):
        """Wrap @length bytes at @addr; finalizer_fn(*args) drops the pin.

        Internal: Store.get() builds holders.  finalizer_fn runs exactly
        once, on release() or when the memory is no longer referenced.
        """
        arr = (ctypes.c_ubyte * length).from_address(addr)
        self._fin = weakref.finalize(arr, finalizer_fn, *args)
        # At exit the device file closes and the kernel drops the pins; do
        # not unmap or release under code that may still be running.
        self._fin.atexit = False
        self._arr = arr
        del arr
        self._view = None
        self._lock = threading.Lock()
        self._len = length
        self._addr = addr
        self.put_id = put_id
        self.source = source
        # References to the array when nothing but this holder has it,
        # counted with the same expression release() uses.
        self._base_refs = sys.getrefcount(self._arr)

    @classmethod
    def _from_fkv(cls, handle, hstruct):
        return cls(hstruct.data, hstruct.len, hstruct.put_id,
                   _lib.SOURCE_NAMES.get(hstruct.source, "unknown"),
                   _release_kernel_holder, handle, hstruct)

    # ---- state ---------------------------------------------------------

    def _live(self):
        arr = self._arr
        if arr is None:
            raise ValueError("operation on a released MemHolder")
        return arr

    @property
    def released(self):
        """True once release() succeeded."""
        return self._arr is None

    @property
    def address(self):
        """Address of the first byte (int); ValueError once released."""
        self._live()
        return self._addr

    def __len__(self):
        self._live()
        return self._len

    @property
    def nbytes(self):
        return len(self)

    # ---- access --------------------------------------------------------

    def view(self):
        """A read-only memoryview of the value, without copying.

        The same memoryview object is returned until it is released (by the
        caller, or by release()).  It becomes unusable (ValueError) when the
        holder is released.
        """
        with self._lock:
            arr = self._live()
            v = self._view
            if v is not None:
                try:
                    v.nbytes  # raises ValueError once released
                    return v
                except ValueError:
                    pass
            v = memoryview(arr).cast("B").toreadonly()
            self._view = v
            return v

    def __bytes__(self):
        with self._lock:
            self._live()
            return ctypes.string_at(self._addr, self._len)

    tobytes = __bytes__

    def __buffer__(self, flags):
        # PEP 688 (Python 3.12+): memoryview(holder), numpy.asarray(holder).
        # The export sits on view(), so release() refuses while it lives.
        return self.view()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """A DLPack >= 1.0 capsule (1-D uint8, CPU, flagged read-only).

        Legacy requests (no max_version) raise BufferError: they cannot
        carry the read-only flag.  release() refuses while the consumer's
        tensor lives.  See fluxonkv/_dlpack.py.
        """
        from . import _dlpack

        if stream is not None:
            raise BufferError("stream must be None for CPU memory")
        view = self.view()
        return _dlpack.export(view, self._addr, self._len, max_version,
                              dl_device, copy)

    def __dlpack_device__(self):
        return (1, 0)  # (kDLCPU, device 0)

    # ---- lifetime ------------------------------------------------------

    def release(self):
        """Unpin the value; idempotent.

        Raises BufferError, leaving the holder pinned, while the memoryview
        from view() is exported or a memoryview derived from it is alive
        (see the module docstring).  FluxonKVError if the kernel refused.
        """
        with self._lock:
            if self._arr is None:
                return
            v = self._view
            if v is not None:
                try:
                    v.release()
                except BufferError:
                    raise BufferError(
                        "MemHolder.release(): the memoryview from view() is "
                        "still exported (e.g. a numpy array or a memoryview "
                        "of it is alive); delete those first") from None
                self._view = None
            if sys.getrefcount(self._arr) > self._base_refs:
                raise BufferError(
                    "MemHolder.release(): memory still referenced by a "
                    "memoryview derived from view() (a slice, cast or "
                    "memoryview(view)); delete or .release() it first")
            arr, self._arr = self._arr, None
            # Run the finalizer while the array still exists, so its result
            # (the kernel's answer) comes back here.
            rc = self._fin()
            del arr
        if rc:
            raise _lib.error(rc, "release")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        if self._arr is None:
            return "<fluxonkv.MemHolder released>"
        return (f"<fluxonkv.MemHolder len={self._len} put_id={self.put_id} "
                f"source={self.source} at 0x{self._addr:x}>")
