# SPDX-License-Identifier: GPL-2.0
"""``from mooncake.store import MooncakeDistributedStore`` on fluxonkv.

Everything here is fluxonkv.mooncake: see its docstring and
userspace/python/README.md for what maps to what.
"""
from fluxonkv.mooncake import (  # noqa: F401
    BufferHandle,
    MooncakeDistributedStore,
    MooncakeHostMemAllocator,
    ReplicaDescriptor,
    ReplicaStatus,
    ReplicateConfig,
    SoftPinAction,
)

__all__ = ["BufferHandle", "MooncakeDistributedStore",
           "MooncakeHostMemAllocator", "ReplicaDescriptor", "ReplicaStatus",
           "ReplicateConfig", "SoftPinAction"]
