# SPDX-License-Identifier: GPL-2.0
"""FluxonKVError: every failure reported by libfluxonkv or the kernel."""
import errno as _errno


class FluxonKVError(OSError):
    """An error from fluxonkv.

    ``errno`` is the positive errno (``errno.E2BIG``, ``errno.ENOTCONN``...),
    ``strerror`` the text of ``fkv_strerror()``, ``op`` the operation that
    failed ("open", "put", "get", "delete", "release", "lookup", "info").

    A miss is not an error: ``Store.get`` returns None and ``Store.delete``
    returns False.  KeyError is never raised.
    """

    def __init__(self, err, message, op=None):
        super().__init__(err, message)
        self.op = op

    def __str__(self):
        name = _errno.errorcode.get(self.errno, str(self.errno))
        where = f"{self.op}: " if self.op else ""
        return f"{where}{self.strerror} [{name}]"

    def __reduce__(self):
        # picklable across processes (multiprocessing) with op preserved
        return (type(self), (self.errno, self.strerror, self.op))
