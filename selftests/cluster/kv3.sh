#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Three fluxonkv nodes, one master, where it matters that the master is a
# third party: run in every guest by tools/vm/cluster --nodes 3.  node3's
# values are pulled by node2 (neither is the master: the bytes cross
# node1's hub, the route comes from node1), node2's promoted copy serves
# node2 itself and node1; node3's fluxond killed: node1 and node2 keep
# serving their copies, node3-only keys miss at once.
# TAP in $FLUXON_RESULTS/kv3-node<I>.tap.
set -euo pipefail

TAP_NAME=kv3
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
SSD_DEV=""
# shellcheck source=selftests/cluster/node.sh
. "$(dirname "$0")/node.sh"

out "TAP version 13"
if [ "$N" -ne 3 ]; then
	out "1..0 # SKIP kv3.sh runs on exactly 3 nodes"
	exit 0
fi
case $I in
1) out "1..13" ;;
2) out "1..8" ;;
3) out "1..5" ;;
esac

rmmod fluxonkv 2>/dev/null || true
check "module loads (64 MiB segment)" insmod "$KO" segment_mb=64 request_timeout_ms=8000
config /tmp/fkv.yaml "$SECRET"
[ -z "${FLUXON_RESULTS:-}" ] || LOG=$FLUXON_RESULTS/fluxond-node$I.log
: >"$LOG"

case $I in
1)
	start_daemon /tmp/fkv.yaml
	check "fluxond starts in master role" daemon_up
	mark master-up
	check "node2 joins" logged "node 'node2' joined"
	check "node3 joins" logged "node 'node3' joined"
	wait_for read.2 || true
	check "node3's value read on node1 from another node's DRAM" get_same t4 remote
	check "node1 keeps its own copy" get_same t4 memory
	mark read.1
	# node3 overwrites: once its put returned, nobody serves the old one.
	wait_for overwritten.3 || true
	check "after node3's overwrite node1 reads the new version" get_same t4 remote
	check "the overwrite's answer waited for the other nodes' drops" cluster_json \
		"c['stats']['answers_held_for_drops'] >= 1 and c['stats']['drop_ack_timeouts'] == 0"
	mark reread.1
	wait_for killed.3 || true
	check "node3's death is member-left" logged "member-left: node 'node3'"
	check "a key only node3 held misses at once" misses t1
	check "node1's copy still serves" get_same t4 memory
	;;
2)
	wait_for master-up || true
	start_daemon /tmp/fkv.yaml
	check "fluxond joins in node role" daemon_up
	wait_for puts.3 || true
	check "node3's 4 MiB value pulled by node2 (master elsewhere)" get_same t4 remote
	check "the pulled copy became node2's own replica" get_same t4 memory
	mark read.2
	wait_for overwritten.3 || true
	check "after node3's overwrite node2 reads the new version" get_same t4 remote
	mark reread.2
	wait_for killed.3 || true
	check "node2's copy outlives node3" get_same t4 memory
	;;
3)
	wait_for master-up || true
	start_daemon /tmp/fkv.yaml
	check "fluxond joins in node role" daemon_up
	put_new t4 $((4 << 20))
	put_new t1 1
	mark puts.3
	wait_for read.1 || true
	# Both others hold copies of t4: overwrite it (the master waits for
	# their drops before answering), then let them read.
	put_new t4 $((4 << 20))
	mark overwritten.3
	wait_for reread.1 reread.2 || true
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null || true
	mark killed.3
	check "the module lost its daemon" test "$(stat_of daemon_pid)" = 0
	;;
esac

finish
