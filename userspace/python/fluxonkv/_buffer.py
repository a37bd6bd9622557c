# SPDX-License-Identifier: GPL-2.0
"""Borrow the address of any buffer-protocol object without copying it.

``pinned(obj)`` calls ``PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS)``
(a private ctypes prototype of the C API) and ``PyBuffer_Release`` when the
block ends.
This one path serves bytes, bytearray, memoryview, array.array, mmap and
numpy arrays alike, read-only or writable: ctypes' own
``(c_char * n).from_buffer()`` refuses read-only buffers, and ``c_char_p``
only knows bytes.

Holding the export for the duration of the C call is what keeps the memory
valid while the GIL is released: a bytearray cannot be resized, an mmap not
closed, while its buffer is exported.
"""
import contextlib
import ctypes


class PyBuffer(ctypes.Structure):
    """Py_buffer (Include/pybuffer.h; in the stable ABI since 3.11)."""

    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


PyBUF_STRIDES = 0x0018
PyBUF_C_CONTIGUOUS = 0x0020 | PyBUF_STRIDES



def _capi(name, restype, *argtypes):
    """A private prototype of a C-API function (GIL held, errors raised).

    Own function objects, not ctypes.pythonapi's shared ones, so no other
    code that sets pythonapi.X.argtypes can change how these are called.
    """
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_get_buffer = _capi("PyObject_GetBuffer", ctypes.c_int, ctypes.py_object,
                    ctypes.POINTER(PyBuffer), ctypes.c_int)
_release_buffer = _capi("PyBuffer_Release", None, ctypes.POINTER(PyBuffer))


@contextlib.contextmanager
def pinned(obj, what="value"):
    """Yield (address, nbytes) of @obj's bytes, exported until the block ends.

    TypeError if @obj does not support the buffer protocol, ValueError if
    its buffer is not C-contiguous.
    """
    view = PyBuffer()
    try:
        # a PYFUNCTYPE call that fails raises the exception it set
        _get_buffer(obj, ctypes.byref(view), PyBUF_C_CONTIGUOUS)
    except BufferError as e:
        raise ValueError(f"{what} must be a C-contiguous buffer: {e}") from None
    except TypeError:
        raise TypeError(f"{what} must support the buffer protocol "
                        f"(bytes, bytearray, memoryview, numpy array...), "
                        f"not {type(obj).__name__}") from None
    try:
        yield view.buf or 0, view.len
    finally:
        _release_buffer(ctypes.byref(view))


def address_of(obj):
    """Address of @obj's first byte (its export is released at once).

    For inspection only (tests, zero-copy checks): the address is valid only
    as long as the object keeps its memory.
    """
    with pinned(obj, "object") as (addr, _):
        return addr
