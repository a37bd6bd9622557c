#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/cluster/kv.sh with transport: rdma between the two guests on
# Soft-RoCE (node.sh brings rxe0 up when TRANSPORT=rdma): the whole
# two-node suite — pulls, SSD pushes, placement, node and master restarts
# with warm adoption — over the RDMA data plane.
export TRANSPORT=rdma
exec "$(dirname "$0")/kv.sh" "$@"
