#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's failover run (issue 32): selftests/cluster/failover.sh parts
# 1-4 only -- the etcd leader killed (-9) under a checked load on the other
# two nodes, the standby taking over, the nodes serving their own hits
# alone on the lease meanwhile, the old leader back as a follower, every
# acknowledged put read back on every node.  Three guests, ~2.5 min here:
#   tools/vm/cluster --nodes 3 --results DIR -- selftests/cluster/failover_short.sh
# (make cluster-test runs the whole of failover.sh as well.)
FAILOVER_SHORT=1 exec "$(dirname "$0")/failover.sh" "$@"
