// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonkv._native: the CPython extension over libfluxonkv.
 *
 * Two types:
 *
 *   Store      one open /dev/fluxonkv and its read-only segment mapping
 *              (fluxonkv.Store subclasses it for a few Python-only extras);
 *   MemHolder  one pinned value: a read-only buffer-protocol object over the
 *              segment bytes, zero copy.
 *
 * GIL: every call that enters the kernel (put, get, delete, lookup,
 * release and the batch calls) runs with the GIL released; a batch is one
 * call into C that loops with the GIL released.  Everything a call needs
 * from Python objects (key bytes, value buffers) is taken before the GIL
 * goes and kept alive until it comes back.
 *
 * Lifetime.  struct fkvpy_dev owns the struct fkv (fd + mapping) and
 * counts its users: the open Store, every holder not yet released and
 * every call in flight.  fkv_close() runs when the last one goes, so the
 * mapping is never unmapped under bytes someone can still read, not even
 * when Store.close() races a call in another thread.  All counters and
 * lists here are protected by the GIL.
 *
 * A MemHolder counts its buffer exports (memoryview(h), numpy arrays,
 * h.view() and everything derived from it).  release() refuses with
 * BufferError while any export is alive, as mmap.close() does; the
 * kernel pin is otherwise dropped by release(), by Store.close(), or when
 * the holder is deallocated -- which cannot happen while an export lives,
 * since every export holds a reference to it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fluxonkv.h>

/* Copies at least this large run with the GIL released. */
#define FKVPY_NOGIL_COPY	(64 * 1024)

/* ---- the shared device ------------------------------------------------ */

struct fkvpy_dev {
	struct fkv *kv;
	Py_ssize_t users;	/* protected by the GIL */
	const char *base;
	size_t size;
	int put_iov;		/* the module takes gather puts */
};

static void dev_put(struct fkvpy_dev *dev)
{
	if (--dev->users == 0) {
		fkv_close(dev->kv);
		PyMem_RawFree(dev);
	}
}

/* ---- module state ------------------------------------------------------ */

static PyObject *FluxonKVError;		/* fluxonkv.errors.FluxonKVError */
static PyObject *source_names[5];	/* enum fluxonkv_source -> str */
static PyObject *source_unknown;
static PyTypeObject LookupType;		/* structseq fluxonkv.Lookup */

static PyObject *source_name(unsigned int source)
{
	PyObject *s = source < 5 ? source_names[source] : source_unknown;

	Py_INCREF(s);
	return s;
}

/*
 * Raise FluxonKVError(errno, @msg, op=@op) for the errno @err (either
 * sign); @msg NULL: fkv_strerror()'s text.  Returns NULL.
 */
static PyObject *raise_errno_msg(int err, const char *op, const char *msg)
{
	PyObject *exc, *args = NULL, *kw = NULL;

	if (err > 0)
		err = -err;
	args = Py_BuildValue("(is)", -err, msg ? msg : fkv_strerror(err));
	kw = Py_BuildValue("{ss}", "op", op);
	if (!args || !kw)
		goto out;
	exc = PyObject_Call(FluxonKVError, args, kw);
	if (exc) {
		PyErr_SetObject(FluxonKVError, exc);
		Py_DECREF(exc);
	}
out:
	Py_XDECREF(args);
	Py_XDECREF(kw);
	return NULL;
}

static PyObject *raise_errno(int err, const char *op)
{
	return raise_errno_msg(err, op, NULL);
}

/* ---- keys and values ----------------------------------------------------- */

struct fkvpy_key {
	const char *p;
	Py_ssize_t n;
	Py_buffer buf;		/* bytearray / memoryview keys only */
	int has_buf;
};

/*
 * The bytes of a key: a str is its UTF-8 (CPython caches it in the str,
 * so repeated keys cost no encode), bytes are used in place, bytearray
 * and memoryview through their buffer.  The caller keeps the key object
 * alive until key_done().
 */
static int key_get(PyObject *o, struct fkvpy_key *k)
{
	k->has_buf = 0;
	if (PyUnicode_Check(o)) {
		k->p = PyUnicode_AsUTF8AndSize(o, &k->n);
		return k->p ? 0 : -1;
	}
	if (PyBytes_Check(o)) {
		k->p = PyBytes_AS_STRING(o);
		k->n = PyBytes_GET_SIZE(o);
		return 0;
	}
	if (PyByteArray_Check(o) || PyMemoryView_Check(o)) {
		if (PyObject_GetBuffer(o, &k->buf, PyBUF_C_CONTIGUOUS) < 0) {
			PyErr_Clear();
			PyErr_SetString(PyExc_ValueError,
					"key must be a C-contiguous buffer");
			return -1;
		}
		k->has_buf = 1;
		k->p = k->buf.buf;
		k->n = k->buf.len;
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "key must be str or bytes, not %.100s",
		     Py_TYPE(o)->tp_name);
	return -1;
}

static void key_done(struct fkvpy_key *k)
{
	if (k->has_buf) {
		PyBuffer_Release(&k->buf);
		k->has_buf = 0;
	}
}

/* Borrow @o's bytes for a put: any C-contiguous buffer, read-only too. */
static int value_get(PyObject *o, Py_buffer *view)
{
	if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS) == 0)
		return 0;
	if (PyErr_ExceptionMatches(PyExc_BufferError)) {
		PyErr_Clear();
		PyErr_SetString(PyExc_ValueError,
				"value must be a C-contiguous buffer");
	} else if (PyErr_ExceptionMatches(PyExc_TypeError)) {
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError,
			     "value must support the buffer protocol (bytes, "
			     "bytearray, memoryview, numpy array...), not %.100s",
			     Py_TYPE(o)->tp_name);
	}
	return -1;
}

/* An int address (a tensor's data_ptr()) as a pointer; NULL + error. */
static int address_get(PyObject *o, void **p)
{
	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "address must be an int, not %.100s",
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	*p = PyLong_AsVoidPtr(o);
	return *p == NULL && PyErr_Occurred() ? -1 : 0;
}

static int size_get(PyObject *o, size_t *n)
{
	Py_ssize_t v = PyLong_AsSsize_t(o);

	if (v == -1 && PyErr_Occurred())
		return -1;
	if (v < 0) {
		PyErr_SetString(PyExc_ValueError, "size must be >= 0");
		return -1;
	}
	*n = (size_t)v;
	return 0;
}

/* ---- MemHolder ------------------------------------------------------------ */

enum holder_state { H_LIVE, H_RELEASING, H_RELEASED };

typedef struct StoreObject StoreObject;

typedef struct HolderObject {
	PyObject_HEAD
	struct fkvpy_dev *dev;		/* NULL for a wrap() holder */
	struct fkv_holder h;
	const char *data;
	Py_ssize_t len;
	unsigned long long put_id;
	PyObject *source;		/* str */
	int state;			/* enum holder_state */
	Py_ssize_t exports;		/* live Py_buffers on us + copies in flight */
	PyObject *view_ref;		/* weakref to the memoryview view() made */
	PyObject *callback;		/* wrap() holders: called once on release */
	PyObject *backing;		/* wrap() holders: whose buffer we show */
	Py_buffer backing_buf;
	StoreObject *store;		/* borrowed; NULL once unlinked */
	struct HolderObject *prev, *next;	/* the store's list of holders */
	PyObject *weakreflist;
} HolderObject;

struct StoreObject {
	PyObject_HEAD
	struct fkvpy_dev *dev;		/* NULL once closed */
	PyObject *device;		/* str */
	HolderObject *holders;		/* every holder not yet released */
	PyObject *weakreflist;
};

static PyTypeObject HolderType;
static PyTypeObject StoreType;

static const char released_msg[] = "operation on a released MemHolder";
static const char closed_msg[] = "operation on a closed fluxonkv Store";
static const char exported_msg[] =
	"MemHolder.release(): its memory is still exported (a memoryview derived "
	"from view() -- a slice, a cast, memoryview(view) --, memoryview(holder), "
	"a numpy array or a DLPack tensor is alive); delete or .release() those "
	"first";

static void holder_link(StoreObject *s, HolderObject *h)
{
	h->store = s;
	h->prev = NULL;
	h->next = s->holders;
	if (s->holders)
		s->holders->prev = h;
	s->holders = h;
}

static void holder_unlink(HolderObject *h)
{
	StoreObject *s = h->store;

	if (!s)
		return;
	if (h->prev)
		h->prev->next = h->next;
	else
		s->holders = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->prev = h->next = NULL;
	h->store = NULL;
}

static HolderObject *holder_new(StoreObject *s, const struct fkv_holder *fh)
{
	HolderObject *h = PyObject_New(HolderObject, &HolderType);

	if (!h)
		return NULL;
	h->dev = s->dev;
	h->dev->users++;
	h->h = *fh;
	h->data = fh->data;
	h->len = (Py_ssize_t)fh->len;
	h->put_id = fh->put_id;
	h->source = source_name(fh->source);
	h->state = H_LIVE;
	h->exports = 0;
	h->view_ref = NULL;
	h->callback = NULL;
	h->backing = NULL;
	h->weakreflist = NULL;
	h->store = NULL;
	h->prev = h->next = NULL;
	holder_link(s, h);
	return h;
}

static int holder_live(HolderObject *h)
{
	if (h->state != H_LIVE) {
		PyErr_SetString(PyExc_ValueError, released_msg);
		return -1;
	}
	return 0;
}

/*
 * Drop the pin of a holder whose state is already H_RELEASING, the GIL
 * held: the kernel release (GIL released around the ioctl) or a wrap()
 * holder's callback.  Returns 0 or a negative errno; -1 with an
 * exception set only when a wrap() callback raised.
 */
static int holder_drop(HolderObject *h, int *raised)
{
	int rc = 0;

	*raised = 0;
	holder_unlink(h);
	if (h->dev) {
		struct fkvpy_dev *dev = h->dev;

		Py_BEGIN_ALLOW_THREADS
		rc = fkv_holder_release(dev->kv, &h->h);
		Py_END_ALLOW_THREADS
		h->dev = NULL;
		dev_put(dev);
	} else if (h->callback) {
		PyObject *r = PyObject_CallNoArgs(h->callback);

		Py_CLEAR(h->callback);
		if (!r) {
			*raised = 1;
			rc = -1;
		} else {
			rc = PyLong_Check(r) ? (int)PyLong_AsLong(r) : 0;
			Py_DECREF(r);
		}
		if (h->backing) {
			PyBuffer_Release(&h->backing_buf);
			Py_CLEAR(h->backing);
		}
	}
	h->state = H_RELEASED;
	return rc;
}

/*
 * Make @h releasable: release the memoryview view() handed out (its
 * later use raises ValueError), then check that no export is left.
 */
static int holder_unexport(HolderObject *h)
{
	if (h->view_ref) {
		PyObject *v = PyWeakref_GetObject(h->view_ref);

		if (v && v != Py_None) {
			PyObject *r;

			Py_INCREF(v);
			r = PyObject_CallMethod(v, "release", NULL);
			Py_DECREF(v);
			if (!r) {
				if (!PyErr_ExceptionMatches(PyExc_BufferError))
					return -1;
				PyErr_Clear();
				PyErr_SetString(PyExc_BufferError, exported_msg);
				return -1;
			}
			Py_DECREF(r);
		}
		Py_CLEAR(h->view_ref);
	}
	if (h->exports) {
		PyErr_SetString(PyExc_BufferError, exported_msg);
		return -1;
	}
	return 0;
}

static PyObject *holder_release(HolderObject *h, PyObject *unused)
{
	int rc, raised;

	if (h->state != H_LIVE)
		Py_RETURN_NONE;
	if (holder_unexport(h) < 0)
		return NULL;
	h->state = H_RELEASING;
	rc = holder_drop(h, &raised);
	if (raised)
		return NULL;
	if (rc)
		return raise_errno(rc, "release");
	Py_RETURN_NONE;
}

static void holder_dealloc(HolderObject *h)
{
	if (h->weakreflist)
		PyObject_ClearWeakRefs((PyObject *)h);
	if (h->state == H_LIVE) {
		int raised;

		/* nothing can export us any more: every export holds a ref */
		h->state = H_RELEASING;
		if (holder_drop(h, &raised) && raised)
			PyErr_WriteUnraisable((PyObject *)h);
	}
	Py_CLEAR(h->view_ref);
	Py_CLEAR(h->source);
	PyObject_Free(h);
}

static int holder_getbuffer(HolderObject *h, Py_buffer *view, int flags)
{
	if (h->state != H_LIVE) {
		PyErr_SetString(PyExc_ValueError, released_msg);
		view->obj = NULL;
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)h, (void *)h->data, h->len, 1,
			      flags) < 0)
		return -1;
	h->exports++;
	return 0;
}

static void holder_releasebuffer(HolderObject *h, Py_buffer *view)
{
	h->exports--;
}

static PyBufferProcs holder_as_buffer = {
	.bf_getbuffer = (getbufferproc)holder_getbuffer,
	.bf_releasebuffer = (releasebufferproc)holder_releasebuffer,
};

static Py_ssize_t holder_length(HolderObject *h)
{
	if (holder_live(h) < 0)
		return -1;
	return h->len;
}

static PySequenceMethods holder_as_sequence = {
	.sq_length = (lenfunc)holder_length,
};

static PyObject *holder_view(HolderObject *h, PyObject *unused)
{
	PyObject *v;

	if (holder_live(h) < 0)
		return NULL;
	if (h->view_ref) {
		v = PyWeakref_GetObject(h->view_ref);
		if (v && v != Py_None) {
			/* the caller may have released it */
			PyObject *n = PyObject_GetAttrString(v, "nbytes");

			if (n) {
				Py_DECREF(n);
				Py_INCREF(v);
				return v;
			}
			PyErr_Clear();
		}
		Py_CLEAR(h->view_ref);
	}
	v = PyMemoryView_FromObject((PyObject *)h);
	if (!v)
		return NULL;
	h->view_ref = PyWeakref_NewRef(v, NULL);
	if (!h->view_ref) {
		Py_DECREF(v);
		return NULL;
	}
	return v;
}

/* A copy, the GIL released when it is large; the pin is held meanwhile. */
static PyObject *holder_bytes(HolderObject *h, PyObject *unused)
{
	PyObject *b;

	if (holder_live(h) < 0)
		return NULL;
	b = PyBytes_FromStringAndSize(NULL, h->len);
	if (!b)
		return NULL;
	if (h->len >= FKVPY_NOGIL_COPY) {
		char *dst = PyBytes_AS_STRING(b);

		h->exports++;	/* release() from another thread must wait */
		Py_BEGIN_ALLOW_THREADS
		memcpy(dst, h->data, h->len);
		Py_END_ALLOW_THREADS
		h->exports--;
	} else {
		memcpy(PyBytes_AS_STRING(b), h->data, h->len);
	}
	return b;
}

static PyObject *holder_enter(HolderObject *h, PyObject *unused)
{
	Py_INCREF(h);
	return (PyObject *)h;
}

static PyObject *holder_exit(HolderObject *h, PyObject *args)
{
	return holder_release(h, NULL);
}

static PyObject *holder_dlpack(HolderObject *h, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"stream", "max_version", "dl_device", "copy",
				 NULL};
	PyObject *stream = Py_None, *max_version = Py_None;
	PyObject *dl_device = Py_None, *copy = Py_None;
	PyObject *mod, *view, *r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO", kwlist, &stream,
					 &max_version, &dl_device, &copy))
		return NULL;
	if (stream != Py_None) {
		PyErr_SetString(PyExc_BufferError,
				"stream must be None for CPU memory");
		return NULL;
	}
	view = holder_view(h, NULL);
	if (!view)
		return NULL;
	mod = PyImport_ImportModule("fluxonkv._dlpack");
	if (!mod) {
		Py_DECREF(view);
		return NULL;
	}
	r = PyObject_CallMethod(mod, "export", "OKnOOO", view,
				(unsigned long long)(uintptr_t)h->data, h->len,
				max_version, dl_device, copy);
	Py_DECREF(mod);
	Py_DECREF(view);
	return r;
}

static PyObject *holder_dlpack_device(HolderObject *h, PyObject *unused)
{
	return Py_BuildValue("(ii)", 1, 0);	/* (kDLCPU, 0) */
}

static PyObject *holder_get_address(HolderObject *h, void *closure)
{
	if (holder_live(h) < 0)
		return NULL;
	return PyLong_FromVoidPtr((void *)h->data);
}

static PyObject *holder_get_nbytes(HolderObject *h, void *closure)
{
	if (holder_live(h) < 0)
		return NULL;
	return PyLong_FromSsize_t(h->len);
}

static PyObject *holder_get_released(HolderObject *h, void *closure)
{
	return PyBool_FromLong(h->state != H_LIVE);
}

static PyObject *holder_get_put_id(HolderObject *h, void *closure)
{
	return PyLong_FromUnsignedLongLong(h->put_id);
}

static PyObject *holder_get_source(HolderObject *h, void *closure)
{
	Py_INCREF(h->source);
	return h->source;
}

static PyObject *holder_get_exports(HolderObject *h, void *closure)
{
	return PyLong_FromSsize_t(h->exports);
}

/* Mooncake's BufferHandle calls: ptr() and size() */
static PyObject *holder_ptr(HolderObject *h, PyObject *unused)
{
	return holder_get_address(h, NULL);
}

static PyObject *holder_size(HolderObject *h, PyObject *unused)
{
	return holder_get_nbytes(h, NULL);
}

static PyObject *holder_repr(HolderObject *h)
{
	if (h->state != H_LIVE)
		return PyUnicode_FromString("<fluxonkv.MemHolder released>");
	return PyUnicode_FromFormat("<fluxonkv.MemHolder len=%zd put_id=%llu "
				    "source=%U at %p>", h->len, h->put_id,
				    h->source, h->data);
}

/*
 * MemHolder._wrap(buffer, callback, put_id=0, source="memory"): a holder
 * over ordinary process memory whose "kernel release" is callback()
 * (its int result is the errno, 0 for success).  For the device-free
 * tests of the lifetime rules; the buffer's export is kept until release.
 */
static PyObject *holder_wrap(PyObject *cls, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"buffer", "callback", "put_id", "source", NULL};
	PyObject *backing, *callback, *source = NULL;
	unsigned long long put_id = 0;
	HolderObject *h;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|KU", kwlist, &backing,
					 &callback, &put_id, &source))
		return NULL;
	if (!PyCallable_Check(callback)) {
		PyErr_SetString(PyExc_TypeError, "callback must be callable");
		return NULL;
	}
	h = PyObject_New(HolderObject, &HolderType);
	if (!h)
		return NULL;
	h->dev = NULL;
	memset(&h->h, 0, sizeof(h->h));
	h->state = H_RELEASED;	/* until the buffer is ours */
	h->exports = 0;
	h->view_ref = NULL;
	h->callback = NULL;
	h->backing = NULL;
	h->weakreflist = NULL;
	h->store = NULL;
	h->prev = h->next = NULL;
	h->put_id = put_id;
	h->source = source ? source : source_names[FLUXONKV_SOURCE_MEMORY];
	Py_INCREF(h->source);
	if (PyObject_GetBuffer(backing, &h->backing_buf, PyBUF_C_CONTIGUOUS) < 0) {
		Py_DECREF(h);
		return NULL;
	}
	Py_INCREF(backing);
	h->backing = backing;
	Py_INCREF(callback);
	h->callback = callback;
	h->data = h->backing_buf.buf;
	h->len = h->backing_buf.len;
	h->state = H_LIVE;
	return (PyObject *)h;
}

static PyMethodDef holder_methods[] = {
	{"release", (PyCFunction)holder_release, METH_NOARGS,
	 "Unpin the value; idempotent.  BufferError (the holder stays pinned)\n"
	 "while its memory is exported; FluxonKVError if the kernel refused."},
	{"view", (PyCFunction)holder_view, METH_NOARGS,
	 "A read-only memoryview of the value, zero copy; the same object\n"
	 "until it is released (by the caller or by release())."},
	{"tobytes", (PyCFunction)holder_bytes, METH_NOARGS, "A copy as bytes."},
	{"__bytes__", (PyCFunction)holder_bytes, METH_NOARGS, "A copy as bytes."},
	{"ptr", (PyCFunction)holder_ptr, METH_NOARGS,
	 "h.address (Mooncake's BufferHandle.ptr())."},
	{"size", (PyCFunction)holder_size, METH_NOARGS,
	 "len(h) (Mooncake's BufferHandle.size())."},
	{"__enter__", (PyCFunction)holder_enter, METH_NOARGS, NULL},
	{"__exit__", (PyCFunction)holder_exit, METH_VARARGS, NULL},
	{"__dlpack__", (PyCFunction)(void (*)(void))holder_dlpack,
	 METH_VARARGS | METH_KEYWORDS,
	 "A DLPack >= 1.0 capsule (1-D uint8, CPU, read-only flag); legacy\n"
	 "requests (no max_version) raise BufferError."},
	{"__dlpack_device__", (PyCFunction)holder_dlpack_device, METH_NOARGS,
	 NULL},
	{"_wrap", (PyCFunction)(void (*)(void))holder_wrap,
	 METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	 "Test seam: a holder over @buffer whose release calls @callback()."},
	{NULL}
};

static PyGetSetDef holder_getset[] = {
	{"address", (getter)holder_get_address, NULL,
	 "Address of the first byte in this process (int).", NULL},
	{"nbytes", (getter)holder_get_nbytes, NULL, "len(holder).", NULL},
	{"released", (getter)holder_get_released, NULL,
	 "True once release() succeeded.", NULL},
	{"put_id", (getter)holder_get_put_id, NULL, "Version of the value.",
	 NULL},
	{"source", (getter)holder_get_source, NULL,
	 "Where the get read it: \"memory\", \"ssd\", \"remote\", \"remote-ssd\".",
	 NULL},
	{"_exports", (getter)holder_get_exports, NULL,
	 "Live buffer exports (diagnostics).", NULL},
	{NULL}
};

static PyTypeObject HolderType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "fluxonkv.MemHolder",
	.tp_basicsize = sizeof(HolderObject),
	.tp_dealloc = (destructor)holder_dealloc,
	.tp_repr = (reprfunc)holder_repr,
	.tp_as_sequence = &holder_as_sequence,
	.tp_as_buffer = &holder_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A pinned value: len(h), memoryview(h), h.view(), bytes(h),\n"
		  "h.release(); put_id, source, address.  Using a released\n"
		  "holder raises ValueError.  Made by Store.get().",
	.tp_weaklistoffset = offsetof(HolderObject, weakreflist),
	.tp_methods = holder_methods,
	.tp_getset = holder_getset,
};

/* ---- Store ------------------------------------------------------------- */

/* The device of an open store with one more user (a call in flight). */
static struct fkvpy_dev *store_enter(StoreObject *s)
{
	struct fkvpy_dev *dev = s->dev;

	if (!dev) {
		PyErr_SetString(PyExc_ValueError, closed_msg);
		return NULL;
	}
	dev->users++;
	return dev;
}

/* @key converted into @k and a call in flight: the device, or NULL (the
 * key already given back). */
static struct fkvpy_dev *key_enter(StoreObject *s, PyObject *key,
				   struct fkvpy_key *k)
{
	struct fkvpy_dev *dev;

	if (key_get(key, k) < 0)
		return NULL;
	dev = store_enter(s);
	if (!dev)
		key_done(k);
	return dev;
}

static int store_init(StoreObject *s, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"device", NULL};
	PyObject *device = Py_None, *path = NULL;
	struct fluxonkv_info info;
	struct fkvpy_dev *dev;
	const char *cpath = NULL;
	struct fkv *kv;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Store", kwlist, &device))
		return -1;
	if (s->dev) {
		PyErr_SetString(PyExc_RuntimeError, "Store is already open");
		return -1;
	}
	if (device != Py_None) {
		if (!PyUnicode_FSConverter(device, &path))
			return -1;
		cpath = PyBytes_AS_STRING(path);
	}
	dev = PyMem_RawMalloc(sizeof(*dev));
	if (!dev) {
		PyErr_NoMemory();
		goto err_path;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_open(cpath, &kv);
	Py_END_ALLOW_THREADS
	if (rc) {
		raise_errno(rc, "open");
		goto err_free;
	}
	Py_XSETREF(s->device, cpath ? PyUnicode_DecodeFSDefault(cpath) :
		   PyUnicode_FromString(FKV_DEFAULT_DEVICE));
	if (!s->device)
		goto err_close;
	dev->kv = kv;
	dev->users = 1;
	dev->put_iov = !fkv_info(kv, &info) &&
		       (info.flags & FLUXONKV_INFO_PUT_IOV);
	dev->base = fkv_segment_base(kv);
	dev->size = fkv_segment_size(kv);
	s->dev = dev;
	Py_XDECREF(path);
	return 0;

err_close:
	fkv_close(kv);
err_free:
	PyMem_RawFree(dev);
err_path:
	Py_XDECREF(path);
	return -1;
}

/*
 * Close: unlink every holder and release those that can be; the busy
 * ones keep the device open (their dev reference) until they go.
 * Returns how many stayed pinned, -1 on an error.
 */
static Py_ssize_t store_shutdown(StoreObject *s, int release)
{
	struct fkvpy_dev *dev = s->dev;
	PyObject *list;
	Py_ssize_t i, busy = 0;
	HolderObject *h;

	if (!dev)
		return 0;
	s->dev = NULL;
	/* new references first: releasing drops the GIL */
	list = PyList_New(0);
	if (!list) {
		s->dev = dev;
		return -1;
	}
	while ((h = s->holders)) {
		holder_unlink(h);
		if (release && PyList_Append(list, (PyObject *)h) < 0)
			PyErr_Clear();	/* stays pinned until it goes */
	}
	for (i = 0; i < PyList_GET_SIZE(list); i++) {
		PyObject *r;

		h = (HolderObject *)PyList_GET_ITEM(list, i);
		r = holder_release(h, NULL);
		if (r) {
			Py_DECREF(r);
		} else {
			if (PyErr_ExceptionMatches(PyExc_BufferError))
				busy++;
			PyErr_Clear();
		}
	}
	Py_DECREF(list);
	dev_put(dev);
	return busy;
}

static PyObject *store_close(StoreObject *s, PyObject *unused)
{
	Py_ssize_t busy = store_shutdown(s, 1);

	if (busy < 0)
		return NULL;
	if (busy && PyErr_WarnFormat(PyExc_ResourceWarning, 1,
				     "fluxonkv Store closed with %zd holder(s) "
				     "still exported; the device stays open "
				     "until they go", busy) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static void store_dealloc(StoreObject *s)
{
	if (s->weakreflist)
		PyObject_ClearWeakRefs((PyObject *)s);
	/* holders outlive a dropped store: they keep the device themselves */
	store_shutdown(s, 0);
	Py_CLEAR(s->device);
	Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *store_put(StoreObject *s, PyObject *const *args,
			   Py_ssize_t nargs)
{
	struct fkvpy_dev *dev;
	struct fkvpy_key k;
	Py_buffer val;
	uint64_t put_id = 0;
	int rc;

	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "put(key, value)");
		return NULL;
	}
	if (key_get(args[0], &k) < 0)
		return NULL;
	if (value_get(args[1], &val) < 0)
		goto err_key;
	dev = store_enter(s);
	if (!dev)
		goto err_val;
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_put(dev->kv, k.p, k.n, val.buf, val.len, &put_id);
	Py_END_ALLOW_THREADS
	dev_put(dev);
	PyBuffer_Release(&val);
	key_done(&k);
	if (rc)
		return raise_errno(rc, "put");
	return PyLong_FromUnsignedLongLong(put_id);

err_val:
	PyBuffer_Release(&val);
err_key:
	key_done(&k);
	return NULL;
}

static PyObject *store_put_from(StoreObject *s, PyObject *const *args,
				Py_ssize_t nargs)
{
	struct fkvpy_dev *dev;
	struct fkvpy_key k;
	uint64_t put_id = 0;
	void *addr;
	size_t n;
	int rc;

	if (nargs != 3) {
		PyErr_SetString(PyExc_TypeError, "put_from(key, address, size)");
		return NULL;
	}
	if (address_get(args[1], &addr) < 0 || size_get(args[2], &n) < 0)
		return NULL;
	dev = key_enter(s, args[0], &k);
	if (!dev)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_put(dev->kv, k.p, k.n, addr, n, &put_id);
	Py_END_ALLOW_THREADS
	dev_put(dev);
	key_done(&k);
	if (rc)
		return raise_errno(rc, "put");
	return PyLong_FromUnsignedLongLong(put_id);
}

static PyObject *store_get(StoreObject *s, PyObject *key)
{
	struct fkvpy_dev *dev;
	struct fkvpy_key k;
	struct fkv_holder fh;
	HolderObject *h;
	int rc;

	dev = key_enter(s, key, &k);
	if (!dev)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_get(dev->kv, k.p, k.n, &fh);
	Py_END_ALLOW_THREADS
	key_done(&k);
	if (rc == -ENOENT) {
		dev_put(dev);
		Py_RETURN_NONE;
	}
	if (rc) {
		dev_put(dev);
		return raise_errno(rc, "get");
	}
	if (!s->dev) {
		/* closed by another thread meanwhile */
		fkv_holder_release(dev->kv, &fh);
		dev_put(dev);
		PyErr_SetString(PyExc_ValueError, closed_msg);
		return NULL;
	}
	h = holder_new(s, &fh);
	if (!h)
		fkv_holder_release(dev->kv, &fh);
	dev_put(dev);
	return (PyObject *)h;
}

static PyObject *store_delete(StoreObject *s, PyObject *key)
{
	struct fkvpy_dev *dev;
	struct fkvpy_key k;
	int rc;

	dev = key_enter(s, key, &k);
	if (!dev)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_delete(dev->kv, k.p, k.n);
	Py_END_ALLOW_THREADS
	dev_put(dev);
	key_done(&k);
	if (rc == -ENOENT)
		Py_RETURN_FALSE;
	if (rc)
		return raise_errno(rc, "delete");
	Py_RETURN_TRUE;
}

/*
 * What a get would return, without reading the value, taking a holder,
 * refilling from SSD or counting an access (FLUXONKV_IOC_LOOKUP).
 */
static int do_lookup(struct fkv *kv, const char *key, size_t n,
		     size_t *len, uint64_t *put_id, unsigned int *source)
{
	struct fkv_lookup l;
	int rc = fkv_lookup(kv, key, n, &l);

	if (!rc) {
		*len = l.len;
		*put_id = l.put_id;
		*source = l.source;
	}
	return rc;
}

static PyObject *lookup_result(size_t len, uint64_t put_id, unsigned int source)
{
	PyObject *r = PyStructSequence_New(&LookupType);

	if (!r)
		return NULL;
	PyStructSequence_SET_ITEM(r, 0, PyLong_FromSize_t(len));
	PyStructSequence_SET_ITEM(r, 1, PyLong_FromUnsignedLongLong(put_id));
	PyStructSequence_SET_ITEM(r, 2, source_name(source));
	if (PyErr_Occurred()) {
		Py_DECREF(r);
		return NULL;
	}
	return r;
}

/* 0 hit, 1 miss, -1 error raised */
static int store_lookup1(StoreObject *s, PyObject *key, size_t *len,
			 uint64_t *put_id, unsigned int *source)
{
	struct fkvpy_dev *dev;
	struct fkvpy_key k;
	int rc;

	dev = key_enter(s, key, &k);
	if (!dev)
		return -1;
	Py_BEGIN_ALLOW_THREADS
	rc = do_lookup(dev->kv, k.p, k.n, len, put_id, source);
	Py_END_ALLOW_THREADS
	dev_put(dev);
	key_done(&k);
	if (rc == -ENOENT)
		return 1;
	if (rc) {
		raise_errno(rc, "lookup");
		return -1;
	}
	return 0;
}

static PyObject *store_lookup(StoreObject *s, PyObject *key)
{
	unsigned int source;
	uint64_t put_id;
	size_t len;
	int r = store_lookup1(s, key, &len, &put_id, &source);

	if (r < 0)
		return NULL;
	if (r)
		Py_RETURN_NONE;
	return lookup_result(len, put_id, source);
}

static PyObject *store_exists(StoreObject *s, PyObject *key)
{
	unsigned int source;
	uint64_t put_id;
	size_t len;
	int r = store_lookup1(s, key, &len, &put_id, &source);

	if (r < 0)
		return NULL;
	return PyBool_FromLong(r == 0);
}

/*
 * get_into(key, dest, size=None): copy the value into @dest (a writable
 * buffer, or an int address with its capacity @size) without a holder
 * object: get, copy and release in one call with the GIL released.
 * Returns the length copied, None on a miss; FluxonKVError(ENOBUFS) when
 * the value does not fit (nothing is copied then).
 */
static PyObject *store_get_into(StoreObject *s, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"key", "dest", "size", NULL};
	PyObject *key, *dest, *size = Py_None;
	struct fkvpy_dev *dev;
	struct fkvpy_key k;
	struct fkv_holder fh;
	Py_buffer buf = {0};
	void *addr;
	size_t cap, vlen = 0;
	int rc, fits = 1;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:get_into", kwlist,
					 &key, &dest, &size))
		return NULL;
	if (PyLong_Check(dest)) {
		if (size == Py_None) {
			PyErr_SetString(PyExc_TypeError,
					"get_into(key, address, size): size is "
					"required with an address");
			return NULL;
		}
		if (address_get(dest, &addr) < 0 || size_get(size, &cap) < 0)
			return NULL;
	} else {
		if (PyObject_GetBuffer(dest, &buf,
				       PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError,
				     "dest must be a writable C-contiguous buffer "
				     "or an int address, not %.100s",
				     Py_TYPE(dest)->tp_name);
			return NULL;
		}
		addr = buf.buf;
		cap = buf.len;
		if (size != Py_None) {
			size_t n;

			if (size_get(size, &n) < 0)
				goto err_buf;
			if (n < cap)
				cap = n;
		}
	}
	if (key_get(key, &k) < 0)
		goto err_buf;
	dev = store_enter(s);
	if (!dev)
		goto err_key;
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_get(dev->kv, k.p, k.n, &fh);
	if (!rc) {
		vlen = fh.len;
		if (vlen <= cap)
			memcpy(addr, fh.data, vlen);
		else
			fits = 0;
		fkv_holder_release(dev->kv, &fh);	/* zeroes fh */
	}
	Py_END_ALLOW_THREADS
	dev_put(dev);
	key_done(&k);
	if (buf.obj)
		PyBuffer_Release(&buf);
	if (rc == -ENOENT)
		Py_RETURN_NONE;
	if (rc)
		return raise_errno(rc, "get");
	if (!fits) {
		char msg[128];

		snprintf(msg, sizeof(msg), "value of %zu bytes does not fit in %zu",
			 vlen, cap);
		return raise_errno_msg(ENOBUFS, "get", msg);
	}
	return PyLong_FromSize_t(vlen);

err_key:
	key_done(&k);
err_buf:
	if (buf.obj)
		PyBuffer_Release(&buf);
	return NULL;
}

static PyObject *store_info_raw(StoreObject *s, PyObject *unused)
{
	struct fluxonkv_info info;
	struct fkvpy_dev *dev = store_enter(s);
	int rc;

	if (!dev)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_info(dev->kv, &info);
	Py_END_ALLOW_THREADS
	dev_put(dev);
	if (rc)
		return raise_errno(rc, "info");
	return Py_BuildValue("(IKKKINNN)", info.abi_version,
			     (unsigned long long)info.segment_size,
			     (unsigned long long)info.segment_used,
			     (unsigned long long)info.value_max, info.key_max,
			     PyBool_FromLong(info.flags & FLUXONKV_INFO_DAEMON),
			     PyBool_FromLong(info.flags & FLUXONKV_INFO_TENANTS),
			     PyBool_FromLong(info.flags & FLUXONKV_INFO_ISOLATED));
}

/*
 * _bind_tenant(id): FLUXONKV_IOC_TENANT through fkv_bind_tenant(), the
 * GIL released around the ioctl like every call into the kernel.  The
 * module refuses it (EBUSY) once this description holds a value.
 */
static PyObject *store_bind_tenant(StoreObject *s, PyObject *arg)
{
	struct fkvpy_dev *dev;
	unsigned long id;
	int rc;

	if (!PyLong_Check(arg) || PyBool_Check(arg))
		return PyErr_Format(PyExc_TypeError,
				    "tenant id must be an int, not %.100s",
				    Py_TYPE(arg)->tp_name);
	id = PyLong_AsUnsignedLong(arg);
	if (id == (unsigned long)-1 && PyErr_Occurred()) {
		if (!PyErr_ExceptionMatches(PyExc_OverflowError))
			return NULL;
		PyErr_Clear();
		return raise_errno_msg(EINVAL, "tenant",
				       "a tenant id is 1..65535");
	}
	if (!id || id > FLUXONKV_TENANT_ID_MAX)
		return raise_errno_msg(EINVAL, "tenant",
				       "a tenant id is 1..65535");
	dev = store_enter(s);
	if (!dev)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = fkv_bind_tenant(dev->kv, (uint32_t)id);
	Py_END_ALLOW_THREADS
	dev_put(dev);
	if (rc)
		return raise_errno(rc, "tenant");
	Py_RETURN_NONE;
}

/* ---- batches ------------------------------------------------------------ */

/*
 * The keys of a batch, converted with the GIL held and kept (a tuple of
 * the key objects) until the batch is done.
 */
struct batch {
	PyObject *seq;			/* tuple */
	Py_ssize_t n;
	struct fkvpy_key *keys;
	Py_ssize_t nkeys;		/* converted so far */
};

static void batch_done(struct batch *b)
{
	Py_ssize_t i;

	for (i = 0; i < b->nkeys; i++)
		key_done(&b->keys[i]);
	PyMem_Free(b->keys);
	Py_XDECREF(b->seq);
}

/* @items: a sequence; @key_of(item) -> the key object (borrowed). */
static int batch_keys(struct batch *b, PyObject *items, int pairs)
{
	Py_ssize_t i;

	memset(b, 0, sizeof(*b));
	b->seq = PySequence_Tuple(items);
	if (!b->seq)
		return -1;
	b->n = PyTuple_GET_SIZE(b->seq);
	b->keys = PyMem_Calloc(b->n ? b->n : 1, sizeof(*b->keys));
	if (!b->keys) {
		PyErr_NoMemory();
		return -1;
	}
	for (i = 0; i < b->n; i++) {
		PyObject *it = PyTuple_GET_ITEM(b->seq, i);

		if (pairs) {
			if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 2) {
				PyErr_Format(PyExc_TypeError,
					     "item %zd: expected a (key, value) "
					     "pair", i);
				return -1;
			}
			it = PyTuple_GET_ITEM(it, 0);
		}
		if (key_get(it, &b->keys[i]) < 0)
			return -1;
		b->nkeys++;
	}
	return 0;
}

/*
 * The start of a batch over @items: the keys converted, @*res a zeroed
 * array of one @size-byte result per key, and a call in flight on the
 * device (returned; dev_put() it).  NULL with an exception set; the
 * caller frees @*res and batch_done()s either way.
 */
static struct fkvpy_dev *batch_begin(StoreObject *s, struct batch *b,
				     PyObject *items, size_t size, void **res)
{
	*res = NULL;
	if (batch_keys(b, items, 0) < 0)
		return NULL;
	*res = PyMem_Calloc(b->n ? b->n : 1, size);
	if (!*res) {
		PyErr_NoMemory();
		return NULL;
	}
	return store_enter(s);
}

/* items() of a mapping, else the pairs themselves, as (key, value) tuples */
static PyObject *as_pairs(PyObject *items)
{
	PyObject *seq, *out;
	Py_ssize_t i, n;

	if (PyDict_Check(items))
		return PyDict_Items(items);
	if (PyObject_HasAttrString(items, "items") && !PySequence_Check(items))
		seq = PyMapping_Items(items);
	else
		seq = PySequence_List(items);
	if (!seq)
		return NULL;
	n = PyList_GET_SIZE(seq);
	out = PyList_New(n);
	if (!out)
		goto out;
	for (i = 0; i < n; i++) {
		PyObject *it = PyList_GET_ITEM(seq, i), *t;

		if (PyTuple_Check(it)) {
			Py_INCREF(it);
			t = it;
		} else {
			t = PySequence_Tuple(it);
			if (!t) {
				Py_CLEAR(out);
				goto out;
			}
		}
		PyList_SET_ITEM(out, i, t);
	}
out:
	Py_DECREF(seq);
	return out;
}

/*
 * put_many(items): put every (key, value) of @items (a mapping or pairs)
 * in order, in one call with the GIL released across the loop.  Every
 * key and value is checked before anything is stored (TypeError /
 * ValueError store nothing).  Stops at the first store failure: the
 * items before it stay stored and the FluxonKVError carries .index and
 * .put_ids (those done).  Returns the list of put_ids.
 */
static PyObject *store_put_many(StoreObject *s, PyObject *items)
{
	struct fkvpy_dev *dev;
	struct batch b;
	Py_buffer *vals = NULL;
	uint64_t *ids = NULL;
	Py_ssize_t i, nvals = 0, done = 0;
	PyObject *pairs, *out = NULL;
	int rc = 0;

	pairs = as_pairs(items);
	if (!pairs)
		return NULL;
	if (batch_keys(&b, pairs, 1) < 0)
		goto out_batch;
	vals = PyMem_Calloc(b.n ? b.n : 1, sizeof(*vals));
	ids = PyMem_Calloc(b.n ? b.n : 1, sizeof(*ids));
	if (!vals || !ids) {
		PyErr_NoMemory();
		goto out_vals;
	}
	for (; nvals < b.n; nvals++) {
		PyObject *it = PyTuple_GET_ITEM(b.seq, nvals);

		if (value_get(PyTuple_GET_ITEM(it, 1), &vals[nvals]) < 0)
			goto out_vals;
	}
	dev = store_enter(s);
	if (!dev)
		goto out_vals;
	Py_BEGIN_ALLOW_THREADS
	for (i = 0; i < b.n; i++) {
		rc = fkv_put(dev->kv, b.keys[i].p, b.keys[i].n, vals[i].buf,
			     vals[i].len, &ids[i]);
		if (rc)
			break;
		done++;
	}
	Py_END_ALLOW_THREADS
	dev_put(dev);
	out = PyList_New(done);
	if (!out)
		goto out_vals;
	for (i = 0; i < done; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(ids[i]);

		if (!v) {
			Py_CLEAR(out);
			goto out_vals;
		}
		PyList_SET_ITEM(out, i, v);
	}
	if (rc) {
		PyObject *et, *ev, *tb;

		raise_errno(rc, "put");
		PyErr_Fetch(&et, &ev, &tb);
		PyErr_NormalizeException(&et, &ev, &tb);
		if (ev) {
			PyObject *idx = PyLong_FromSsize_t(done);

			if (idx) {
				PyObject_SetAttrString(ev, "index", idx);
				Py_DECREF(idx);
			}
			PyObject_SetAttrString(ev, "put_ids", out);
		}
		PyErr_Restore(et, ev, tb);
		Py_CLEAR(out);
	}
out_vals:
	for (i = 0; i < nvals; i++)
		PyBuffer_Release(&vals[i]);
	PyMem_Free(vals);
	PyMem_Free(ids);
out_batch:
	batch_done(&b);
	Py_DECREF(pairs);
	return out;
}

/* A list of @n Python ints from C values, or NULL. */
static PyObject *int_list(const long long *v, Py_ssize_t n)
{
	PyObject *out = PyList_New(n);
	Py_ssize_t i;

	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		PyObject *x = PyLong_FromLongLong(v[i]);

		if (!x) {
			Py_DECREF(out);
			return NULL;
		}
		PyList_SET_ITEM(out, i, x);
	}
	return out;
}

/* (addresses, sizes) of a raw-address batch of @n items */
static int batch_ranges(PyObject *addrs, PyObject *sizes, Py_ssize_t n,
			void ***pa, size_t **ps)
{
	PyObject *ta = NULL, *ts = NULL;
	Py_ssize_t i;
	int ret = -1;

	*pa = NULL;
	*ps = NULL;
	ta = PySequence_Tuple(addrs);
	ts = ta ? PySequence_Tuple(sizes) : NULL;
	if (!ts)
		goto out;
	if (PyTuple_GET_SIZE(ta) != n || PyTuple_GET_SIZE(ts) != n) {
		PyErr_SetString(PyExc_ValueError,
				"keys, addresses and sizes differ in length");
		goto out;
	}
	*pa = PyMem_Calloc(n ? n : 1, sizeof(**pa));
	*ps = PyMem_Calloc(n ? n : 1, sizeof(**ps));
	if (!*pa || !*ps) {
		PyErr_NoMemory();
		goto out;
	}
	for (i = 0; i < n; i++)
		if (address_get(PyTuple_GET_ITEM(ta, i), &(*pa)[i]) < 0 ||
		    size_get(PyTuple_GET_ITEM(ts, i), &(*ps)[i]) < 0)
			goto out;
	ret = 0;
out:
	if (ret) {
		PyMem_Free(*pa);
		PyMem_Free(*ps);
		*pa = NULL;
		*ps = NULL;
	}
	Py_XDECREF(ta);
	Py_XDECREF(ts);
	return ret;
}

/*
 * put_from_many(keys, addresses, sizes) / get_into_many(keys, addresses,
 * sizes): the raw-address batches connectors use (a tensor's data_ptr()
 * and its size per key).  One call, the GIL released across the loop;
 * never stops early.  Per item: put_from_many gives the put_id or a
 * negative errno; get_into_many gives the length copied or a negative
 * errno (-ENOENT a miss, -ENOBUFS when the value does not fit).
 * TypeError / ValueError for malformed arguments (nothing done).
 */
static PyObject *store_addr_batch(StoreObject *s, PyObject *args, int put)
{
	PyObject *keys, *addrs, *sizes, *out = NULL;
	struct fkv_op *ops;
	struct fkvpy_dev *dev;
	struct batch b;
	long long *res = NULL;
	void **pa = NULL;
	size_t *ps = NULL;
	Py_ssize_t i;
	int rc;

	if (!PyArg_ParseTuple(args, "OOO", &keys, &addrs, &sizes))
		return NULL;
	dev = batch_begin(s, &b, keys, sizeof(*res), (void **)&res);
	if (!dev)
		goto out;
	if (batch_ranges(addrs, sizes, b.n, &pa, &ps) < 0) {
		dev_put(dev);
		goto out;
	}
	ops = PyMem_Calloc(b.n ? b.n : 1, sizeof(*ops));
	if (!ops) {
		dev_put(dev);
		PyErr_NoMemory();
		goto out;
	}
	for (i = 0; i < b.n; i++) {
		ops[i].opcode = put ? FLUXONKV_OP_PUT : FLUXONKV_OP_GET_INTO;
		ops[i].key = b.keys[i].p;
		ops[i].key_len = b.keys[i].n;
		if (put)
			ops[i].value = pa[i];
		else
			ops[i].buf = pa[i];
		ops[i].buf_len = ps[i];
	}
	Py_BEGIN_ALLOW_THREADS
	/* one FLUXONKV_IOC_BATCH per 64 keys; each op has its own result */
	rc = fkv_batch(dev->kv, ops, b.n);
	Py_END_ALLOW_THREADS
	for (i = 0; i < b.n; i++) {
		if (ops[i].result)
			res[i] = ops[i].result == -EMSGSIZE ? -ENOBUFS :
				 ops[i].result;
		else
			res[i] = put ? (long long)ops[i].put_id :
				       (long long)ops[i].len;
	}
	PyMem_Free(ops);
	if (rc) {
		dev_put(dev);
		raise_errno(rc, put ? "put" : "get_into");
		goto out;
	}
	dev_put(dev);
	out = int_list(res, b.n);
out:
	PyMem_Free(res);
	PyMem_Free(pa);
	PyMem_Free(ps);
	batch_done(&b);
	return out;
}

static PyObject *store_put_from_many(StoreObject *s, PyObject *args)
{
	return store_addr_batch(s, args, 1);
}

static PyObject *store_get_into_many(StoreObject *s, PyObject *args)
{
	return store_addr_batch(s, args, 0);
}

/* ---- multi-buffer batches (the Mooncake adapter's *_multi_buffers) ----- */

/*
 * The copies between a holder (or a staging buffer) and a caller's pieces
 * go through process_vm_writev / process_vm_readv on this very process:
 * the kernel does the copy, so an address not mapped here (a GPU device
 * pointer, a freed buffer) is -EFAULT for that key where memcpy would
 * kill the process.  Where a seccomp filter refuses them (ENOSYS /
 * EPERM), memcpy, which trusts every address.  Written with the GIL
 * released: an int read and set whole.
 */
enum { VM_UNKNOWN, VM_WORKS, VM_REFUSED };
static volatile int vm_state = VM_UNKNOWN;

/*
 * Copy between @len contiguous bytes at @local and the @n pieces @iov
 * (their lengths add up to @len): @write scatters @local over them,
 * otherwise they are gathered into @local.  0 or -EFAULT.
 */
static int mb_copy(char *local, size_t len, const struct iovec *iov,
		   size_t n, int write)
{
	pid_t pid = getpid();
	size_t s, m, off = 0;

	if (vm_state != VM_REFUSED) {
		for (s = 0; s < n; s += m) {
			struct iovec liov;
			size_t part = 0, i;
			ssize_t r;

			m = n - s < FLUXONKV_IOV_MAX ? n - s : FLUXONKV_IOV_MAX;
			for (i = 0; i < m; i++)
				part += iov[s + i].iov_len;
			liov.iov_base = local + off;
			liov.iov_len = part;
			r = write ? process_vm_writev(pid, &liov, 1, iov + s, m, 0)
				  : process_vm_readv(pid, &liov, 1, iov + s, m, 0);
			if (r < 0 && s == 0 && (errno == ENOSYS || errno == EPERM)) {
				vm_state = VM_REFUSED;
				break;
			}
			if (r < 0 || (size_t)r != part)
				return -EFAULT;	/* stopped at an unmapped address */
			vm_state = VM_WORKS;
			off += part;
		}
		if (vm_state != VM_REFUSED)
			return 0;
	}
	for (s = 0, off = 0; s < n && off < len; s++) {
		if (write)
			memcpy(iov[s].iov_base, local + off, iov[s].iov_len);
		else
			memcpy(local + off, iov[s].iov_base, iov[s].iov_len);
		off += iov[s].iov_len;
	}
	return 0;
}

/* _checked_copies() -> bool: whether the multi-buffer copies check
 * addresses here (process_vm_* allowed), probed on a byte of our own. */
static PyObject *native_checked_copies(PyObject *mod, PyObject *unused)
{
	char a = 'a', b = 0;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };

	if (vm_state == VM_UNKNOWN)
		mb_copy(&a, 1, &iov, 1, 1);
	return PyBool_FromLong(vm_state == VM_WORKS);
}

/*
 * The pieces of every key of a multi-buffer batch, in one array: key i
 * has pieces [first[i], first[i] + n[i]) (adjacent ones merged, empty
 * ones dropped) and room[i] bytes, or err[i] < 0 (malformed buffers:
 * -EINVAL, with nothing of it in the array).
 */
struct mb_plan {
	struct iovec *iov;
	size_t niov, cap;
	Py_ssize_t nkeys;
	size_t *first, *n, *room;
	long long *res;			/* per key: the call's result */
};

static void mb_plan_done(struct mb_plan *p)
{
	PyMem_Free(p->iov);
	PyMem_Free(p->first);
	PyMem_Free(p->n);
	PyMem_Free(p->room);
	PyMem_Free(p->res);
}

/* An int (an int subclass, or what __index__ makes one) as a u64. */
static int mb_u64(PyObject *o, unsigned long long *v)
{
	PyObject *i;

	if (PyLong_CheckExact(o)) {
		*v = PyLong_AsUnsignedLongLong(o);
		return *v == (unsigned long long)-1 && PyErr_Occurred() ? -1 : 0;
	}
	i = PyNumber_Index(o);		/* floats and str: TypeError */
	if (!i)
		return -1;
	*v = PyLong_AsUnsignedLongLong(i);	/* negative: OverflowError */
	Py_DECREF(i);
	return *v == (unsigned long long)-1 && PyErr_Occurred() ? -1 : 0;
}

/* Key @k's buffers (@ptrs, @sizes: sequences of ints) into @p; -1 only
 * for no memory, a malformed key gets res -EINVAL. */
static int mb_key(struct mb_plan *p, Py_ssize_t k, PyObject *ptrs,
		  PyObject *sizes)
{
	PyObject *fp = NULL, *fs = NULL;
	Py_ssize_t j, m;
	size_t room = 0;
	int ret = 0;

	p->first[k] = p->niov;
	fp = PySequence_Fast(ptrs, "a key's buffer addresses are a sequence");
	fs = fp ? PySequence_Fast(sizes, "a key's sizes are a sequence") : NULL;
	if (!fs)
		goto bad;
	m = PySequence_Fast_GET_SIZE(fp);
	if (m != PySequence_Fast_GET_SIZE(fs))
		goto bad;
	for (j = 0; j < m; j++) {
		unsigned long long a, n;
		struct iovec *last;

		if (mb_u64(PySequence_Fast_GET_ITEM(fp, j), &a) < 0 ||
		    mb_u64(PySequence_Fast_GET_ITEM(fs, j), &n) < 0 ||
		    a > UINTPTR_MAX || n > SIZE_MAX || a + n < a ||
		    room + n < room)
			goto bad;
		if (!n)
			continue;
		room += n;
		last = p->niov > p->first[k] ? &p->iov[p->niov - 1] : NULL;
		if (last && (uintptr_t)last->iov_base + last->iov_len == a) {
			last->iov_len += n;
			continue;
		}
		if (p->niov == p->cap) {
			size_t cap = p->cap ? 2 * p->cap : 256;
			struct iovec *v = PyMem_Realloc(p->iov, cap * sizeof(*v));

			if (!v) {
				PyErr_NoMemory();
				ret = -1;
				goto out;
			}
			p->iov = v;
			p->cap = cap;
		}
		p->iov[p->niov].iov_base = (void *)(uintptr_t)a;
		p->iov[p->niov++].iov_len = n;
	}
	p->n[k] = p->niov - p->first[k];
	p->room[k] = room;
	goto out;
bad:
	if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError) &&
	    !PyErr_ExceptionMatches(PyExc_ValueError) &&
	    !PyErr_ExceptionMatches(PyExc_OverflowError)) {
		ret = -1;	/* MemoryError, KeyboardInterrupt... */
		goto out;
	}
	PyErr_Clear();
	p->niov = p->first[k];
	p->n[k] = 0;
	p->room[k] = 0;
	p->res[k] = -EINVAL;
out:
	Py_XDECREF(fp);
	Py_XDECREF(fs);
	return ret;
}

/*
 * The plan of a multi-buffer batch of @b.n keys: (@all_ptrs[i],
 * @all_sizes[i]) per key.  -1 with an exception (arguments that are not
 * sequences of b.n items: ValueError / TypeError, nothing done).
 */
static int mb_plan_make(struct mb_plan *p, Py_ssize_t nkeys,
			PyObject *all_ptrs, PyObject *all_sizes)
{
	PyObject *fp, *fs = NULL;
	Py_ssize_t k;
	int ret = -1;

	memset(p, 0, sizeof(*p));
	fp = PySequence_Fast(all_ptrs, "addresses: a sequence of sequences");
	fs = fp ? PySequence_Fast(all_sizes, "sizes: a sequence of sequences")
		: NULL;
	if (!fs)
		goto out;
	if (PySequence_Fast_GET_SIZE(fp) != nkeys ||
	    PySequence_Fast_GET_SIZE(fs) != nkeys) {
		PyErr_SetString(PyExc_ValueError,
				"keys, addresses and sizes differ in length");
		goto out;
	}
	p->nkeys = nkeys;
	p->first = PyMem_Calloc(nkeys ? nkeys : 1, sizeof(*p->first));
	p->n = PyMem_Calloc(nkeys ? nkeys : 1, sizeof(*p->n));
	p->room = PyMem_Calloc(nkeys ? nkeys : 1, sizeof(*p->room));
	p->res = PyMem_Calloc(nkeys ? nkeys : 1, sizeof(*p->res));
	if (!p->first || !p->n || !p->room || !p->res) {
		PyErr_NoMemory();
		goto out;
	}
	for (k = 0; k < nkeys; k++)
		if (mb_key(p, k, PySequence_Fast_GET_ITEM(fp, k),
			   PySequence_Fast_GET_ITEM(fs, k)) < 0)
			goto out;
	ret = 0;
out:
	Py_XDECREF(fp);
	Py_XDECREF(fs);
	return ret;
}

/*
 * fkv_batch @ops; operations a failed batch did not run (-ECANCELED) are
 * run one by one, so every operation has its own result.
 */
static void mb_batch(struct fkv *kv, struct fkv_op *ops, size_t n)
{
	size_t i;

	if (!fkv_batch(kv, ops, n))
		return;
	for (i = 0; i < n; i++)
		if (ops[i].result == -ECANCELED)
			fkv_batch(kv, &ops[i], 1);
}

/* A trace entry (the tests' view of the copies): (what, address, pieces) */
static int mb_trace(PyObject *trace, const char *what, const void *addr,
		    const struct iovec *iov, size_t n)
{
	PyObject *pieces, *t;
	size_t i;

	if (!trace)
		return 0;
	pieces = PyList_New(n);
	if (!pieces)
		return -1;
	for (i = 0; i < n; i++) {
		PyObject *x = Py_BuildValue("(KK)",
				(unsigned long long)(uintptr_t)iov[i].iov_base,
				(unsigned long long)iov[i].iov_len);

		if (!x) {
			Py_DECREF(pieces);
			return -1;
		}
		PyList_SET_ITEM(pieces, i, x);
	}
	t = Py_BuildValue("(sKN)", what, (unsigned long long)(uintptr_t)addr,
			  pieces);
	if (!t)
		return -1;
	i = PyList_Append(trace, t);
	Py_DECREF(t);
	return (int)i;
}

/*
 * get_into_multi(keys, all_addresses, all_sizes, trace=None): scatter each
 * key's value over its buffers (all_addresses[i][j], all_sizes[i][j]
 * bytes), in order, all in one call with the GIL released.  Per key: the
 * bytes copied (a value shorter than the buffers fills a prefix) or a
 * negative errno: -ENOENT a miss, -ENOBUFS a value longer than the
 * buffers (nothing copied) or no buffer bytes, -EINVAL malformed buffers,
 * -EFAULT an address not mapped here.  A key whose buffers are one range
 * is a GET_INTO (the module copies); the others take a holder in the
 * batch and copy from it, in the segment mapping, straight into each
 * buffer (one copy), then release it.  @trace (a list, for the tests)
 * gets ("get_into" | "scatter", source address, pieces) per key copied.
 */
static PyObject *store_get_into_multi(StoreObject *s, PyObject *args,
				      PyObject *kw)
{
	static char *kwlist[] = {"keys", "addresses", "sizes", "trace", NULL};
	PyObject *keys, *addrs, *sizes, *trace = Py_None, *out = NULL;
	struct fkv_op *ops = NULL, *rel = NULL;
	struct fkvpy_dev *dev;
	struct mb_plan p;
	struct batch b;
	Py_ssize_t i;
	size_t nops = 0, nrel = 0, j;
	size_t *opk = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:get_into_multi",
					 kwlist, &keys, &addrs, &sizes, &trace))
		return NULL;
	if (trace != Py_None && !PyList_Check(trace))
		return PyErr_Format(PyExc_TypeError, "trace must be a list");
	if (trace == Py_None)
		trace = NULL;
	memset(&p, 0, sizeof(p));
	if (batch_keys(&b, keys, 0) < 0)
		goto out;
	if (mb_plan_make(&p, b.n, addrs, sizes) < 0)
		goto out;
	ops = PyMem_Calloc(b.n ? b.n : 1, sizeof(*ops));
	rel = PyMem_Calloc(b.n ? b.n : 1, sizeof(*rel));
	opk = PyMem_Calloc(b.n ? b.n : 1, sizeof(*opk));
	if (!ops || !rel || !opk) {
		PyErr_NoMemory();
		goto out;
	}
	for (i = 0; i < b.n; i++) {
		struct fkv_op *op;

		if (p.res[i])
			continue;	/* malformed */
		if (!p.n[i]) {
			p.res[i] = -ENOBUFS;	/* no buffer room at all */
			continue;
		}
		op = &ops[nops];
		opk[nops++] = i;
		op->key = b.keys[i].p;
		op->key_len = b.keys[i].n;
		if (p.n[i] == 1) {
			op->opcode = FLUXONKV_OP_GET_INTO;
			op->buf = p.iov[p.first[i]].iov_base;
			op->buf_len = p.iov[p.first[i]].iov_len;
		} else {
			op->opcode = FLUXONKV_OP_GET;
		}
	}
	dev = store_enter(s);
	if (!dev)
		goto out;
	Py_BEGIN_ALLOW_THREADS
	/* one FLUXONKV_IOC_BATCH per 64 keys; each op has its own result */
	mb_batch(dev->kv, ops, nops);
	for (j = 0; j < nops; j++) {
		struct fkv_op *op = &ops[j];
		size_t k = opk[j], left, m, len;
		struct iovec *v = &p.iov[p.first[k]];

		if (op->result) {
			p.res[k] = op->result == -EMSGSIZE ? -ENOBUFS : op->result;
			continue;
		}
		if (op->opcode == FLUXONKV_OP_GET_INTO) {
			p.res[k] = op->len;
			continue;
		}
		rel[nrel].opcode = FLUXONKV_OP_RELEASE;
		rel[nrel++].holder = op->holder;
		len = op->holder.len;
		if (len > p.room[k]) {
			p.res[k] = -ENOBUFS;	/* nothing copied */
			continue;
		}
		/* a shorter value fills a prefix of the buffers */
		for (m = 0, left = len; left > v[m].iov_len; m++)
			left -= v[m].iov_len;
		p.n[k] = m + 1;
		v[m].iov_len = left;
		p.res[k] = mb_copy((char *)op->holder.data, len, v, m + 1, 1);
		if (!p.res[k])
			p.res[k] = len;
	}
	if (nrel)
		mb_batch(dev->kv, rel, nrel);
	Py_END_ALLOW_THREADS
	dev_put(dev);
	for (j = 0; trace && j < nops; j++) {
		size_t k = opk[j];

		if (p.res[k] < 0)
			continue;
		if (mb_trace(trace, ops[j].opcode == FLUXONKV_OP_GET_INTO ?
			     "get_into" : "scatter",
			     ops[j].opcode == FLUXONKV_OP_GET_INTO ? NULL :
			     ops[j].holder.data, &p.iov[p.first[k]], p.n[k]) < 0)
			goto out;
	}
	out = int_list(p.res, b.n);
out:
	PyMem_Free(ops);
	PyMem_Free(rel);
	PyMem_Free(opk);
	mb_plan_done(&p);
	batch_done(&b);
	return out;
}

/*
 * put_from_multi(keys, all_addresses, all_sizes, trace=None): store for
 * each key the concatenation of its buffers, in one call with the GIL
 * released.  Per key: the put_id, 0 for 0 bytes (nothing stored), or a
 * negative errno (-EINVAL malformed buffers, -EFAULT an address not
 * mapped here: nothing stored).  A key whose buffers are one range is a
 * PUT; the others a gather put (FLUXONKV_OP_PUT_IOV: the module copies
 * each piece into the segment, no staging).  Where the module has no
 * gather puts, or a key has more than FLUXONKV_IOV_MAX pieces, its pieces
 * are gathered into a staging buffer first (one copy more).  @trace gets
 * ("put" | "put_iov" | "staged", address, pieces) per key sent.
 */
static PyObject *store_put_from_multi(StoreObject *s, PyObject *args,
				      PyObject *kw)
{
	static char *kwlist[] = {"keys", "addresses", "sizes", "trace", NULL};
	PyObject *keys, *addrs, *sizes, *trace = Py_None, *out = NULL;
	struct fkv_op *ops = NULL;
	struct fkvpy_dev *dev;
	struct mb_plan p;
	struct batch b;
	char **stage = NULL;
	unsigned char *staged = NULL;	/* per op: gather into stage[] */
	Py_ssize_t i;
	size_t nops = 0, j;
	size_t *opk = NULL;
	int gather;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:put_from_multi",
					 kwlist, &keys, &addrs, &sizes, &trace))
		return NULL;
	if (trace != Py_None && !PyList_Check(trace))
		return PyErr_Format(PyExc_TypeError, "trace must be a list");
	if (trace == Py_None)
		trace = NULL;
	memset(&p, 0, sizeof(p));
	if (batch_keys(&b, keys, 0) < 0)
		goto out;
	if (mb_plan_make(&p, b.n, addrs, sizes) < 0)
		goto out;
	ops = PyMem_Calloc(b.n ? b.n : 1, sizeof(*ops));
	opk = PyMem_Calloc(b.n ? b.n : 1, sizeof(*opk));
	stage = PyMem_Calloc(b.n ? b.n : 1, sizeof(*stage));
	staged = PyMem_Calloc(b.n ? b.n : 1, sizeof(*staged));
	if (!ops || !opk || !stage || !staged) {
		PyErr_NoMemory();
		goto out;
	}
	dev = store_enter(s);
	if (!dev)
		goto out;
	gather = dev->put_iov;
	for (i = 0; i < b.n; i++) {
		struct fkv_op *op;

		if (p.res[i] || !p.n[i])
			continue;	/* malformed, or 0 bytes: nothing stored */
		op = &ops[nops];
		opk[nops++] = i;
		op->key = b.keys[i].p;
		op->key_len = b.keys[i].n;
		if (p.n[i] == 1) {
			op->opcode = FLUXONKV_OP_PUT;
			op->value = p.iov[p.first[i]].iov_base;
			op->buf_len = p.iov[p.first[i]].iov_len;
		} else if (gather && p.n[i] <= FLUXONKV_IOV_MAX) {
			op->opcode = FLUXONKV_OP_PUT_IOV;
			op->value = &p.iov[p.first[i]];
			op->buf_len = p.n[i];
		} else {
			op->opcode = FLUXONKV_OP_PUT;	/* staged below */
			op->buf_len = p.room[i];
			staged[nops - 1] = 1;
		}
	}
	Py_BEGIN_ALLOW_THREADS
	for (j = 0; j < nops; j++) {
		size_t k = opk[j];

		if (!staged[j])
			continue;
		stage[k] = malloc(p.room[k]);
		ops[j].result = stage[k] ? mb_copy(stage[k], p.room[k],
						   &p.iov[p.first[k]], p.n[k], 0)
					 : -ENOMEM;
		ops[j].value = stage[k];
	}
	/* the keys whose staging failed are not sent */
	for (j = 0; j < nops; j++) {
		size_t k = opk[j];

		if (ops[j].result) {
			p.res[k] = ops[j].result;
			ops[j].opcode = FLUXONKV_OP_NONE;	/* skipped */
		}
	}
	mb_batch(dev->kv, ops, nops);
	for (j = 0; j < nops; j++) {
		size_t k = opk[j];

		if (ops[j].opcode == FLUXONKV_OP_NONE)
			continue;
		p.res[k] = ops[j].result ? ops[j].result
					 : (long long)ops[j].put_id;
	}
	Py_END_ALLOW_THREADS
	dev_put(dev);
	for (j = 0; trace && j < nops; j++) {
		size_t k = opk[j];

		if (ops[j].opcode == FLUXONKV_OP_NONE)
			continue;
		if (mb_trace(trace, ops[j].opcode == FLUXONKV_OP_PUT_IOV ?
			     "put_iov" : stage[k] ? "staged" : "put",
			     stage[k] ? stage[k] : ops[j].opcode ==
			     FLUXONKV_OP_PUT ? ops[j].value : NULL,
			     &p.iov[p.first[k]], p.n[k]) < 0)
			goto out;
	}
	out = int_list(p.res, b.n);
out:
	if (stage)
		for (i = 0; i < b.n; i++)
			free(stage[i]);
	PyMem_Free(stage);
	PyMem_Free(staged);
	PyMem_Free(ops);
	PyMem_Free(opk);
	mb_plan_done(&p);
	batch_done(&b);
	return out;
}

/*
 * get_many(keys): a list of MemHolder-or-None, in order; one call, the
 * GIL released across the gets.  On an error nothing is kept: the
 * holders already taken are released before the exception propagates.
 */
static PyObject *store_get_many(StoreObject *s, PyObject *keys)
{
	struct fkvpy_dev *dev;
	struct fkv_holder *fh = NULL;
	struct fkv_op *ops;
	struct batch b;
	PyObject *out = NULL;
	Py_ssize_t i;
	int rc = 0;

	dev = batch_begin(s, &b, keys, sizeof(*fh), (void **)&fh);
	if (!dev)
		goto err_batch;
	ops = PyMem_Calloc(b.n ? b.n : 1, sizeof(*ops));
	if (!ops) {
		dev_put(dev);
		PyErr_NoMemory();
		goto err_batch;
	}
	for (i = 0; i < b.n; i++) {
		ops[i].opcode = FLUXONKV_OP_GET;
		ops[i].key = b.keys[i].p;
		ops[i].key_len = b.keys[i].n;
	}
	Py_BEGIN_ALLOW_THREADS
	/* one FLUXONKV_IOC_BATCH per 64 keys */
	rc = fkv_batch(dev->kv, ops, b.n);
	for (i = 0; i < b.n; i++) {
		fh[i] = ops[i].holder;	/* zeroed for a miss or an error */
		if (!rc && ops[i].result && ops[i].result != -ENOENT)
			rc = ops[i].result;
	}
	if (rc)
		for (i = 0; i < b.n; i++)
			if (fh[i].data)
				fkv_holder_release(dev->kv, &fh[i]);
	Py_END_ALLOW_THREADS
	PyMem_Free(ops);
	if (rc) {
		dev_put(dev);
		raise_errno(rc, "get");
		goto err_batch;
	}
	out = s->dev ? PyList_New(b.n) : NULL;
	if (!s->dev)
		PyErr_SetString(PyExc_ValueError, closed_msg);
	for (i = 0; out && i < b.n; i++) {
		PyObject *h;

		if (!fh[i].data) {
			Py_INCREF(Py_None);
			PyList_SET_ITEM(out, i, Py_None);
			continue;
		}
		h = (PyObject *)holder_new(s, &fh[i]);
		if (!h) {
			Py_CLEAR(out);	/* releases the holders made so far */
			break;
		}
		fh[i].data = NULL;	/* the object owns it now */
		PyList_SET_ITEM(out, i, h);
	}
	if (!out) {
		/* the kernel holders no object took */
		for (i = 0; i < b.n; i++)
			if (fh[i].data)
				fkv_holder_release(dev->kv, &fh[i]);
	}
	dev_put(dev);
err_batch:
	PyMem_Free(fh);
	batch_done(&b);
	return out;
}

/*
 * release_many(holders): release every holder of @holders (taken from
 * this store) in one call, the GIL released across the kernel releases.
 * Checked first: a holder of another store is ValueError, an exported one
 * BufferError, and then none is released.  Already released ones are
 * skipped.  FluxonKVError (the first failure) if the kernel refused some;
 * they are released on the Python side all the same.
 */
static PyObject *store_release_many(StoreObject *s, PyObject *holders)
{
	struct fkv_op *ops;
	PyObject *seq;
	HolderObject **hs = NULL;
	struct fkvpy_dev *dev;
	Py_ssize_t i, n, m = 0;
	int rc = 0;

	seq = PySequence_Tuple(holders);
	if (!seq)
		return NULL;
	n = PyTuple_GET_SIZE(seq);
	hs = PyMem_Calloc(n ? n : 1, sizeof(*hs));
	if (!hs) {
		PyErr_NoMemory();
		goto out;
	}
	dev = store_enter(s);
	if (!dev)
		goto out;
	for (i = 0; i < n; i++) {
		HolderObject *h = (HolderObject *)PyTuple_GET_ITEM(seq, i);

		if (!PyObject_TypeCheck(h, &HolderType)) {
			PyErr_Format(PyExc_TypeError, "item %zd is not a MemHolder",
				     i);
			goto err_dev;
		}
		if (h->state != H_LIVE)
			continue;
		if (h->dev != dev) {
			PyErr_Format(PyExc_ValueError,
				     "item %zd: a holder of another Store", i);
			goto err_dev;
		}
	}
	for (i = 0; i < n; i++) {
		HolderObject *h = (HolderObject *)PyTuple_GET_ITEM(seq, i);

		if (h->state == H_LIVE && holder_unexport(h) < 0)
			goto err_dev;
	}
	for (i = 0; i < n; i++) {
		HolderObject *h = (HolderObject *)PyTuple_GET_ITEM(seq, i);

		if (h->state == H_LIVE) {
			h->state = H_RELEASING;
			holder_unlink(h);
			hs[m++] = h;
		}
	}
	ops = PyMem_Calloc(m ? m : 1, sizeof(*ops));
	if (!ops) {
		/* no room for a batch: one release at a time */
		Py_BEGIN_ALLOW_THREADS
		for (i = 0; i < m; i++) {
			int r = fkv_holder_release(dev->kv, &hs[i]->h);

			if (r && !rc)
				rc = r;
		}
		Py_END_ALLOW_THREADS
	} else {
		for (i = 0; i < m; i++) {
			ops[i].opcode = FLUXONKV_OP_RELEASE;
			ops[i].holder = hs[i]->h;
		}
		Py_BEGIN_ALLOW_THREADS
		/* one FLUXONKV_IOC_BATCH per 64 holders */
		rc = fkv_batch(dev->kv, ops, m);
		Py_END_ALLOW_THREADS
		for (i = 0; i < m; i++) {
			if (!rc && ops[i].result)
				rc = ops[i].result;
			memset(&hs[i]->h, 0, sizeof(hs[i]->h));
		}
		PyMem_Free(ops);
	}
	for (i = 0; i < m; i++) {
		hs[i]->state = H_RELEASED;
		hs[i]->dev = NULL;
		dev_put(dev);
	}
	dev_put(dev);
	PyMem_Free(hs);
	Py_DECREF(seq);
	if (rc)
		return raise_errno(rc, "release");
	Py_RETURN_NONE;

err_dev:
	dev_put(dev);
out:
	PyMem_Free(hs);
	Py_DECREF(seq);
	return NULL;
}

/*
 * lookup_many(keys) -> [Lookup or None]; exists_many(keys) -> [bool];
 * delete_many(keys) -> [bool]: one call, the GIL released across the
 * loop.  An error (other than a miss) raises after the loop, naming the
 * first failed item in .index.
 */
enum key_op { OP_LOOKUP, OP_EXISTS, OP_DELETE };

static PyObject *store_key_batch(StoreObject *s, PyObject *keys, enum key_op op)
{
	struct fkvpy_dev *dev;
	struct batch b;
	struct res { size_t len; uint64_t put_id; unsigned int source; int rc; } *r = NULL;
	PyObject *out = NULL;
	Py_ssize_t i, bad = -1;

	dev = batch_begin(s, &b, keys, sizeof(*r), (void **)&r);
	if (!dev)
		goto out;
	Py_BEGIN_ALLOW_THREADS
	for (i = 0; i < b.n; i++) {
		if (op == OP_DELETE)
			r[i].rc = fkv_delete(dev->kv, b.keys[i].p, b.keys[i].n);
		else
			r[i].rc = do_lookup(dev->kv, b.keys[i].p, b.keys[i].n,
					    &r[i].len, &r[i].put_id,
					    &r[i].source);
		if (r[i].rc && r[i].rc != -ENOENT && bad < 0)
			bad = i;
	}
	Py_END_ALLOW_THREADS
	dev_put(dev);
	if (bad >= 0) {
		PyObject *et, *ev, *tb, *idx;

		raise_errno(r[bad].rc, op == OP_DELETE ? "delete" : "lookup");
		PyErr_Fetch(&et, &ev, &tb);
		PyErr_NormalizeException(&et, &ev, &tb);
		idx = PyLong_FromSsize_t(bad);
		if (ev && idx)
			PyObject_SetAttrString(ev, "index", idx);
		Py_XDECREF(idx);
		PyErr_Restore(et, ev, tb);
		goto out;
	}
	out = PyList_New(b.n);
	for (i = 0; out && i < b.n; i++) {
		PyObject *x;

		if (op != OP_LOOKUP) {
			x = PyBool_FromLong(r[i].rc == 0);
		} else if (r[i].rc) {
			Py_INCREF(Py_None);
			x = Py_None;
		} else {
			x = lookup_result(r[i].len, r[i].put_id, r[i].source);
			if (!x)
				Py_CLEAR(out);
		}
		if (out)
			PyList_SET_ITEM(out, i, x);
	}
out:
	PyMem_Free(r);
	batch_done(&b);
	return out;
}

static PyObject *store_lookup_many(StoreObject *s, PyObject *keys)
{
	return store_key_batch(s, keys, OP_LOOKUP);
}

static PyObject *store_exists_many(StoreObject *s, PyObject *keys)
{
	return store_key_batch(s, keys, OP_EXISTS);
}

static PyObject *store_delete_many(StoreObject *s, PyObject *keys)
{
	return store_key_batch(s, keys, OP_DELETE);
}

static PyObject *store_gather_puts(StoreObject *s, PyObject *unused)
{
	if (!s->dev) {
		PyErr_SetString(PyExc_ValueError, closed_msg);
		return NULL;
	}
	return PyBool_FromLong(s->dev->put_iov);
}

static PyObject *store_enter_ctx(StoreObject *s, PyObject *unused)
{
	Py_INCREF(s);
	return (PyObject *)s;
}

static PyObject *store_exit_ctx(StoreObject *s, PyObject *args)
{
	return store_close(s, NULL);
}

static PyObject *store_get_closed(StoreObject *s, void *closure)
{
	return PyBool_FromLong(s->dev == NULL);
}

static PyObject *store_get_base(StoreObject *s, void *closure)
{
	if (!s->dev) {
		PyErr_SetString(PyExc_ValueError, closed_msg);
		return NULL;
	}
	return PyLong_FromVoidPtr((void *)s->dev->base);
}

static PyObject *store_get_size(StoreObject *s, void *closure)
{
	if (!s->dev) {
		PyErr_SetString(PyExc_ValueError, closed_msg);
		return NULL;
	}
	return PyLong_FromSize_t(s->dev->size);
}

static PyObject *store_get_key_max(StoreObject *s, void *closure)
{
	if (!s->dev) {
		PyErr_SetString(PyExc_ValueError, closed_msg);
		return NULL;
	}
	return PyLong_FromSize_t(fkv_key_max(s->dev->kv));
}

static PyObject *store_get_tenant(StoreObject *s, void *closure)
{
	if (!s->dev) {
		PyErr_SetString(PyExc_ValueError, closed_msg);
		return NULL;
	}
	return PyLong_FromUnsignedLong(fkv_tenant(s->dev->kv));
}

static PyObject *store_get_device(StoreObject *s, void *closure)
{
	PyObject *d = s->device ? s->device : Py_None;

	Py_INCREF(d);
	return d;
}

static PyObject *store_get_nholders(StoreObject *s, void *closure)
{
	Py_ssize_t n = 0;
	HolderObject *h;

	for (h = s->holders; h; h = h->next)
		n++;
	return PyLong_FromSsize_t(n);
}

static PyMethodDef store_methods[] = {
	{"put", (PyCFunction)(void (*)(void))store_put, METH_FASTCALL,
	 "put(key, value) -> put_id: store any C-contiguous buffer @value."},
	{"put_from", (PyCFunction)(void (*)(void))store_put_from, METH_FASTCALL,
	 "put_from(key, address, size) -> put_id: store raw memory."},
	{"get", (PyCFunction)store_get, METH_O,
	 "get(key) -> MemHolder or None (a miss)."},
	{"delete", (PyCFunction)store_delete, METH_O,
	 "delete(key) -> bool: False if the key had no value."},
	{"lookup", (PyCFunction)store_lookup, METH_O,
	 "lookup(key) -> Lookup(len, put_id, source) or None; never reads\n"
	 "the value, takes no holder, refills nothing."},
	{"exists", (PyCFunction)store_exists, METH_O,
	 "exists(key) -> bool (a lookup)."},
	{"get_into", (PyCFunction)(void (*)(void))store_get_into,
	 METH_VARARGS | METH_KEYWORDS,
	 "get_into(key, dest, size=None) -> bytes copied, or None on a miss.\n"
	 "@dest: a writable buffer, or an int address with its capacity @size.\n"
	 "FluxonKVError(ENOBUFS) when the value does not fit."},
	{"put_many", (PyCFunction)store_put_many, METH_O,
	 "put_many(items) -> [put_id]: a mapping or (key, value) pairs."},
	{"get_many", (PyCFunction)store_get_many, METH_O,
	 "get_many(keys) -> [MemHolder or None]."},
	{"release_many", (PyCFunction)store_release_many, METH_O,
	 "release_many(holders): release them all in one call."},
	{"lookup_many", (PyCFunction)store_lookup_many, METH_O,
	 "lookup_many(keys) -> [Lookup or None]."},
	{"exists_many", (PyCFunction)store_exists_many, METH_O,
	 "exists_many(keys) -> [bool]."},
	{"delete_many", (PyCFunction)store_delete_many, METH_O,
	 "delete_many(keys) -> [bool]."},
	{"put_from_many", (PyCFunction)store_put_from_many, METH_VARARGS,
	 "put_from_many(keys, addresses, sizes) -> [put_id or -errno]."},
	{"get_into_many", (PyCFunction)store_get_into_many, METH_VARARGS,
	 "get_into_many(keys, addresses, sizes) -> [length or -errno]."},
	{"get_into_multi", (PyCFunction)(void (*)(void))store_get_into_multi,
	 METH_VARARGS | METH_KEYWORDS,
	 "get_into_multi(keys, all_addresses, all_sizes) -> [length or -errno]:\n"
	 "each value scattered over its key's buffers (one copy)."},
	{"put_from_multi", (PyCFunction)(void (*)(void))store_put_from_multi,
	 METH_VARARGS | METH_KEYWORDS,
	 "put_from_multi(keys, all_addresses, all_sizes) -> [put_id, 0 or\n"
	 "-errno]: each key's buffers stored as one value (a gather put)."},
	{"gather_puts", (PyCFunction)store_gather_puts, METH_NOARGS,
	 "Whether the module takes gather puts (FLUXONKV_PUT_F_IOV)."},
	{"_info", (PyCFunction)store_info_raw, METH_NOARGS, NULL},
	{"_bind_tenant", (PyCFunction)store_bind_tenant, METH_O,
	 "_bind_tenant(id): bind to tenant @id (1..65535), once, before\n"
	 "anything is held (Store(tenant=) resolves names and calls it)."},
	{"close", (PyCFunction)store_close, METH_NOARGS,
	 "Close; idempotent.  Releases every holder taken through this store;\n"
	 "exported ones stay pinned and keep the device open (ResourceWarning)."},
	{"__enter__", (PyCFunction)store_enter_ctx, METH_NOARGS, NULL},
	{"__exit__", (PyCFunction)store_exit_ctx, METH_VARARGS, NULL},
	{NULL}
};

static PyGetSetDef store_getset[] = {
	{"closed", (getter)store_get_closed, NULL, "True once closed.", NULL},
	{"segment_base", (getter)store_get_base, NULL,
	 "Address of the read-only segment mapping in this process.", NULL},
	{"segment_size", (getter)store_get_size, NULL,
	 "Size of the segment mapping.", NULL},
	{"device", (getter)store_get_device, NULL, "The device path.", NULL},
	{"key_max", (getter)store_get_key_max, NULL,
	 "The longest key this store may use: 256, 250 once bound to a\n"
	 "tenant (FLUXONKV_IOC_INFO's key_max for this description).", NULL},
	{"tenant_id", (getter)store_get_tenant, NULL,
	 "The tenant this store is bound to (0: the default tenant).", NULL},
	{"_holders", (getter)store_get_nholders, NULL,
	 "Holders taken and not yet released (diagnostics).", NULL},
	{NULL}
};

static PyTypeObject StoreType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "fluxonkv._native.Store",
	.tp_basicsize = sizeof(StoreObject),
	.tp_dealloc = (destructor)store_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "Store(device=None): an open /dev/fluxonkv (see fluxonkv.Store).",
	.tp_weaklistoffset = offsetof(StoreObject, weakreflist),
	.tp_methods = store_methods,
	.tp_getset = store_getset,
	.tp_init = (initproc)store_init,
	.tp_new = PyType_GenericNew,
};

/* ---- module ----------------------------------------------------------- */

static PyStructSequence_Field lookup_fields[] = {
	{"len", "length of the value in bytes"},
	{"put_id", "version of the value"},
	{"source", "where a get would read it: \"memory\", \"ssd\"..."},
	{NULL}
};

static PyStructSequence_Desc lookup_desc = {
	"fluxonkv.Lookup",
	"What Store.lookup() found: (len, put_id, source).",
	lookup_fields,
	3,
};

static PyObject *native_strerror(PyObject *mod, PyObject *arg)
{
	int err = (int)PyLong_AsLong(arg);

	if (err == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(fkv_strerror(err > 0 ? -err : err));
}

static PyMethodDef module_methods[] = {
	{"strerror", native_strerror, METH_O,
	 "fkv_strerror(): what an errno means for fluxonkv."},
	{"_checked_copies", native_checked_copies, METH_NOARGS,
	 "Whether the multi-buffer copies check addresses here."},
	{NULL}
};

static struct PyModuleDef native_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "fluxonkv._native",
	.m_doc = "The compiled core of fluxonkv (CPython C API over libfluxonkv).",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
	static const char *names[] = {"none", "memory", "ssd", "remote",
				      "remote-ssd"};
	PyObject *m, *errors;
	unsigned int i;

	errors = PyImport_ImportModule("fluxonkv.errors");
	if (!errors)
		return NULL;
	FluxonKVError = PyObject_GetAttrString(errors, "FluxonKVError");
	Py_DECREF(errors);
	if (!FluxonKVError)
		return NULL;
	for (i = 0; i < 5; i++) {
		source_names[i] = PyUnicode_InternFromString(names[i]);
		if (!source_names[i])
			return NULL;
	}
	source_unknown = PyUnicode_InternFromString("unknown");
	if (!source_unknown)
		return NULL;
	if (PyType_Ready(&HolderType) < 0 || PyType_Ready(&StoreType) < 0)
		return NULL;
	if (!LookupType.tp_name &&
	    PyStructSequence_InitType2(&LookupType, &lookup_desc) < 0)
		return NULL;
	m = PyModule_Create(&native_module);
	if (!m)
		return NULL;
	if (PyModule_AddObjectRef(m, "Store", (PyObject *)&StoreType) < 0 ||
	    PyModule_AddObjectRef(m, "MemHolder", (PyObject *)&HolderType) < 0 ||
	    PyModule_AddObjectRef(m, "Lookup", (PyObject *)&LookupType) < 0 ||
	    PyModule_AddIntConstant(m, "ABI_VERSION", FLUXONKV_ABI_VERSION) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
