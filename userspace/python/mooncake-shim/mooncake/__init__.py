# SPDX-License-Identifier: GPL-2.0
"""fluxonkv's stand-in for Mooncake's Python package (fluxonkv-mooncake).

Only ``mooncake.store`` is provided: MooncakeDistributedStore and the
names its callers import, backed by the node-local fluxonkv cache
(fluxonkv.mooncake).  There is no transfer engine (``mooncake.engine``).
"""
FLUXONKV = True     # a caller can tell this shim from a real Mooncake
