# SPDX-License-Identifier: GPL-2.0
"""What needs no device: buffer borrowing, holder lifetime rules, errors,
DLPack.  These run anywhere the extension is built (host, CI, VM).

MemHolder (the native type) is exercised over ordinary process memory (a
bytearray, through the MemHolder._wrap test seam) with a recording release
callback standing in for the kernel pin.
"""
import array
import ctypes
import errno
import gc
import pickle

import pytest

from fluxonkv import FluxonKVError, MemHolder
from fluxonkv._buffer import address_of, pinned


class FakePin:
    """Process memory plus a count of releases, in place of a kernel holder."""

    def __init__(self, data):
        self.backing = bytearray(data)
        self.addr = address_of(self.backing)
        self.releases = 0

    def release(self):
        self.releases += 1
        return 0

    def holder(self, rc=0):
        def fin():
            self.release()
            return rc
        return MemHolder._wrap(self.backing, fin, put_id=5)


# ---- borrowing buffers -------------------------------------------------

@pytest.mark.parametrize("obj", [b"abc", bytearray(b"abc"), memoryview(b"zabc")[1:],
                                 array.array("B", b"abc")],
                         ids=["bytes", "bytearray", "memoryview", "array"])
def test_pinned_gives_the_objects_own_bytes(obj):
    with pinned(obj) as (addr, n):
        assert n == 3
        assert ctypes.string_at(addr, n) == b"abc"


def test_pinned_does_not_copy():
    b = bytearray(b"in place")
    with pinned(b) as (addr, n):
        ctypes.memmove(addr, b"IN", 2)  # writes land in the bytearray
    assert b == b"IN place"
    ro = b"immutable"
    with pinned(ro) as (addr, n):
        assert addr == ctypes.cast(ctypes.c_char_p(ro), ctypes.c_void_p).value
        assert n == 9


def test_pinned_holds_the_export_until_the_block_ends():
    b = bytearray(b"grow")
    with pinned(b):
        with pytest.raises(BufferError):
            b.extend(b"er")
    b.extend(b"er")
    assert b == b"grower"


def test_pinned_rejects_non_contiguous_and_non_buffers():
    with pytest.raises(ValueError, match="contiguous"):
        with pinned(memoryview(b"abcdef")[::2]):
            pass
    for obj in ("text", 3, None, [1, 2]):
        with pytest.raises(TypeError, match="buffer protocol"):
            with pinned(obj):
                pass


# ---- holder lifetime ---------------------------------------------------

def test_holder_reads_the_memory_it_wraps_without_copying():
    pin = FakePin(b"0123456789")
    h = pin.holder()
    assert len(h) == 10 and h.put_id == 5 and h.source == "memory"
    assert bytes(h) == b"0123456789" and h.tobytes() == b"0123456789"
    v = h.view()
    assert v.readonly and v.format == "B" and v.nbytes == 10
    assert address_of(v) == pin.addr == h.address
    pin.backing[0:1] = b"X"  # same memory, seen through the view
    assert v[0] == ord("X")
    assert h.view() is v
    h.release()
    assert pin.releases == 1


def test_release_invalidates_the_view_and_the_holder():
    pin = FakePin(b"abc")
    h = pin.holder()
    v = h.view()
    h.release()
    assert h.released and pin.releases == 1
    with pytest.raises(ValueError):
        v[0]
    for use in (len, bytes, lambda x: x.view(), lambda x: x.address):
        with pytest.raises(ValueError, match="released"):
            use(h)
    h.release()
    assert pin.releases == 1


def test_release_refuses_while_a_slice_of_the_view_lives():
    pin = FakePin(b"abcdef")
    h = pin.holder()
    part = h.view()[1:3]
    with pytest.raises(BufferError, match="derived"):
        h.release()
    assert pin.releases == 0 and not h.released
    assert bytes(part) == b"bc"
    part.release()  # releasing it is as good as dropping it
    h.release()
    assert pin.releases == 1


@pytest.mark.parametrize("derive", [lambda v: memoryview(v), lambda v: v.cast("c"),
                                    lambda v: memoryview(v.obj)],
                         ids=["memoryview(view)", "cast", "memoryview(view.obj)"])
def test_release_refuses_while_anything_derived_lives(derive):
    pin = FakePin(b"abcdef")
    h = pin.holder()
    other = derive(h.view())
    with pytest.raises(BufferError):
        h.release()
    assert pin.releases == 0
    del other
    h.release()
    assert pin.releases == 1


def test_release_refuses_while_the_view_is_exported():
    pin = FakePin(b"abcdef")
    h = pin.holder()
    v = h.view()
    with pinned(v):
        with pytest.raises(BufferError, match="exported"):
            h.release()
        assert pin.releases == 0
    h.release()
    assert pin.releases == 1


def test_holder_is_a_read_only_buffer():
    # the native type's buffer protocol: memoryview(h) on every version
    pin = FakePin(b"abc")
    h = pin.holder()
    m = memoryview(h)
    assert m.readonly and bytes(m) == b"abc" and m.obj is h
    assert h.view().obj is h
    with pytest.raises(TypeError, match="not writable"):
        ctypes.c_char.from_buffer(h)  # a writable export is refused
    with pytest.raises(BufferError, match="exported"):
        h.release()
    assert pin.releases == 0
    m.release()
    h.release()
    assert pin.releases == 1
    with pytest.raises(ValueError, match="released"):
        memoryview(h)


def test_a_copy_in_flight_pins_the_holder():
    # bytes(h) of a large value copies with the GIL released and counts
    # as an export meanwhile; afterwards nothing is left exported
    pin = FakePin(bytes(range(256)) * 1024)
    h = pin.holder()
    assert bytes(h) == bytes(pin.backing)
    assert h._exports == 0
    h.release()
    assert pin.releases == 1


def test_dropped_holder_is_released():
    pin = FakePin(b"abc")
    h = pin.holder()
    del h
    gc.collect()
    assert pin.releases == 1


def test_view_keeps_a_dropped_holder_pinned_until_it_goes():
    pin = FakePin(b"abc")
    v = pin.holder().view()
    gc.collect()
    assert pin.releases == 0
    assert bytes(v) == b"abc"
    del v
    gc.collect()
    assert pin.releases == 1


def test_context_manager_releases():
    pin = FakePin(b"abc")
    with pin.holder() as h:
        assert bytes(h) == b"abc"
    assert h.released and pin.releases == 1


def test_failed_kernel_release_raises_fluxonkv_error():
    pin = FakePin(b"abc")
    h = pin.holder(rc=-errno.EINVAL)
    with pytest.raises(FluxonKVError) as ei:
        h.release()
    assert ei.value.errno == errno.EINVAL and ei.value.op == "release"
    assert h.released


# ---- errors and library lookup -------------------------------------------

def test_fluxonkv_error_is_an_oserror_that_pickles():
    e = FluxonKVError(errno.E2BIG, "key or value too large", op="put")
    assert isinstance(e, OSError)
    assert e.errno == errno.E2BIG and e.strerror == "key or value too large"
    assert str(e) == "put: key or value too large [E2BIG]"
    back = pickle.loads(pickle.dumps(e))
    assert (back.errno, back.strerror, back.op) == (e.errno, e.strerror, "put")


# ---- DLPack ----------------------------------------------------------------

_capi = ctypes.pythonapi
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_SetName.restype = ctypes.c_int
_capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_USED = b"used_dltensor_versioned"


def _consume(capsule):
    """What a DLPack consumer does: take the tensor, rename the capsule."""
    from fluxonkv._dlpack import DLManagedTensorVersioned

    ptr = _capi.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
    _capi.PyCapsule_SetName(capsule, _USED)
    return DLManagedTensorVersioned.from_address(ptr), ptr


def test_dlpack_exports_a_read_only_uint8_cpu_tensor():
    from fluxonkv import _dlpack

    pin = FakePin(b"dlpack bytes")
    h = pin.holder()
    assert h.__dlpack_device__() == (1, 0)
    capsule = h.__dlpack__(max_version=(1, 2))
    mt, ptr = _consume(capsule)
    t = mt.dl_tensor
    assert (mt.version.major, mt.version.minor) == (1, 0)
    assert mt.flags & _dlpack.FLAG_READ_ONLY
    assert t.data == h.address and t.byte_offset == 0
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    assert (t.ndim, t.shape[0], bool(t.strides)) == (1, len(h), False)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (1, 8, 1)
    assert ctypes.string_at(t.data, t.shape[0]) == b"dlpack bytes"
    del capsule  # consumed: the tensor outlives the capsule
    with pytest.raises(BufferError):
        h.release()
    assert pin.releases == 0
    mt.deleter(ptr)  # the consumer is done
    h.release()
    assert pin.releases == 1


def test_unconsumed_dlpack_capsule_gives_the_memory_back():
    from fluxonkv import _dlpack

    pin = FakePin(b"abc")
    h = pin.holder()
    before = _dlpack.live_exports()
    capsule = h.__dlpack__(max_version=(1, 0))
    assert _dlpack.live_exports() == before + 1
    with pytest.raises(BufferError):
        h.release()
    del capsule
    assert _dlpack.live_exports() == before
    h.release()
    assert pin.releases == 1


def test_dlpack_refuses_what_it_cannot_do_honestly():
    pin = FakePin(b"abc")
    h = pin.holder()
    with pytest.raises(BufferError, match="read-only"):
        h.__dlpack__()  # legacy capsules cannot flag read-only memory
    with pytest.raises(BufferError):
        h.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(BufferError):
        h.__dlpack__(max_version=(1, 0), copy=True)
    h.release()
    with pytest.raises(ValueError):
        h.__dlpack__(max_version=(1, 0))
    assert pin.releases == 1


def test_numpy_from_dlpack():
    np = pytest.importorskip("numpy")
    pin = FakePin(b"\x01\x02\x03\x04")
    h = pin.holder()
    major, minor = (int(x) for x in np.__version__.split(".")[:2])
    if (major, minor) < (2, 1):
        # numpy < 2.1 only asks for legacy capsules: refused, not faked
        with pytest.raises(BufferError):
            np.from_dlpack(h)
        h.release()
        return
    a = np.from_dlpack(h)
    assert a.dtype == np.uint8 and a.tolist() == [1, 2, 3, 4]
    assert not a.flags.writeable
    with pytest.raises(BufferError):
        h.release()
    del a
    gc.collect()
    h.release()
    assert pin.releases == 1


def test_numpy_views_the_holder_without_a_copy():
    np = pytest.importorskip("numpy")
    pin = FakePin(b"\x05\x06\x07\x08")
    h = pin.holder()
    a = np.frombuffer(h, dtype=np.uint8)
    b = np.asarray(h)
    assert a.tolist() == b.tolist() == [5, 6, 7, 8]
    assert a.ctypes.data == b.ctypes.data == h.address == pin.addr
    assert not a.flags.writeable and not b.flags.writeable
    with pytest.raises(BufferError):
        h.release()
    del a, b
    gc.collect()
    h.release()
    assert pin.releases == 1
