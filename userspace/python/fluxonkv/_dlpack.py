# SPDX-License-Identifier: GPL-2.0
"""DLPack export of a MemHolder, built with ctypes only.

A holder's bytes are read-only (the segment is mapped PROT_READ): writing
through a consumer's tensor would kill the process with SIGSEGV.  Only
DLPack >= 1.0 can say "read-only" (DLPACK_FLAG_BITMASK_READ_ONLY in a
``DLManagedTensorVersioned``), so that is the only form exported: a consumer
that asks for the legacy unversioned capsule (no ``max_version``, as numpy
< 2.1 does) gets BufferError -- numpy itself refuses to export read-only
arrays that way for the same reason.

The tensor is 1-D uint8 of ``len(holder)`` elements on the CPU.  While a
capsule or the consumer's tensor lives, the holder's view() stays exported
(a Py_buffer taken on it), so MemHolder.release() raises BufferError until
the consumer calls the deleter (or the unconsumed capsule is collected).
"""
import ctypes
import itertools
import threading

from ._buffer import (PyBuffer, PyBUF_C_CONTIGUOUS, _capi, _get_buffer,
                      _release_buffer)

KDL_CPU = 1
KDL_UINT = 1
FLAG_READ_ONLY = 1 << 0
VERSION = (1, 0)

NAME = b"dltensor_versioned"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p,
                     ctypes.c_char_p, CAPSULE_DESTRUCTOR)
_capsule_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p,
                          ctypes.c_char_p)
_capsule_get_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_char_p)

# manager_ctx -> what the exported tensor keeps alive (struct, shape, export)
_live = {}
_live_lock = threading.Lock()
_ids = itertools.count(1)


def _delete(ptr):
    """DLManagedTensorVersioned.deleter: drop the export of the view."""
    mt = DLManagedTensorVersioned.from_address(ptr)
    with _live_lock:
        entry = _live.pop(mt.manager_ctx, None)
    if entry is not None:
        _release_buffer(ctypes.byref(entry[2]))


def _destroy_capsule(capsule):
    """Capsule destructor: an unconsumed capsule still owns its tensor."""
    if _capsule_is_valid(capsule, NAME):
        _delete(_capsule_get_pointer(capsule, NAME))


_DELETER = DELETER(_delete)
_DESTRUCTOR = CAPSULE_DESTRUCTOR(_destroy_capsule)


def live_exports():
    """How many exported tensors have not been deleted yet (for tests)."""
    return len(_live)


def export(view, address, length, max_version=None, dl_device=None, copy=None):
    """A "dltensor_versioned" capsule over @view (see the module doc)."""
    if max_version is None or tuple(max_version)[0] < 1:
        raise BufferError(
            "fluxonkv values are read-only and a legacy (unversioned) DLPack "
            "capsule cannot say so; the consumer must pass max_version >= "
            "(1, 0) (numpy >= 2.1, recent torch), or use view()/bytes()")
    if dl_device is not None and tuple(dl_device) != (KDL_CPU, 0):
        raise BufferError(f"fluxonkv values live on the CPU, not {dl_device}")
    if copy:
        raise BufferError("copy=True: use bytes(holder) for a copy")

    export_buf = PyBuffer()
    # a real export of the holder's memoryview: release() refuses until
    # the deleter gives it back
    _get_buffer(ctypes.py_object(view), ctypes.byref(export_buf),
                PyBUF_C_CONTIGUOUS)
    try:
        shape = (ctypes.c_int64 * 1)(length)
        mt = DLManagedTensorVersioned()
        mt.version = DLPackVersion(*VERSION)
        mt.deleter = _DELETER
        mt.flags = FLAG_READ_ONLY
        t = mt.dl_tensor
        t.data = address
        t.device = DLDevice(KDL_CPU, 0)
        t.ndim = 1
        t.dtype = DLDataType(KDL_UINT, 8, 1)
        t.shape = shape
        t.strides = None  # compact row-major
        t.byte_offset = 0
        ctx = next(_ids)
        mt.manager_ctx = ctx
        with _live_lock:
            _live[ctx] = (mt, shape, export_buf)
    except BaseException:
        _release_buffer(ctypes.byref(export_buf))
        raise
    try:
        return _capsule_new(ctypes.addressof(mt), NAME, _DESTRUCTOR)
    except BaseException:
        _delete(ctypes.addressof(mt))
        raise
