#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The RDMA data plane between two guests on Soft-RoCE (rdma_rxe on each
# guest's virtio-net): run in both guests by tools/vm/cluster:
#   tools/vm/cluster --nodes 2 --disk ssd0:512M -- selftests/cluster/rdma.sh
# Both fluxonds run with transport: rdma.  node1 (master) reads node2's
# values by RDMA READ from node2's segment (1 B, 4 MiB - 128 B, 16 MiB),
# byte-exact; values only on node2's SSD are pushed as staged chunks that
# node1 READs (multi-chunk); node2's RDMA device is deleted mid-run
# (`rdma link delete`): node1's next pull falls back to TCP without
# failing the get; node2's fluxond killed while node1 reads: right bytes
# or a clean miss, nothing hangs.  TAP in $FLUXON_RESULTS/rdma-node<I>.tap.
set -euo pipefail

TAP_NAME=rdma
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
SSD_DEV=""
[ "$I" -ne 2 ] || SSD_DEV=/dev/disk/by-id/virtio-ssd0
TRANSPORT=rdma
# shellcheck source=selftests/cluster/node.sh
. "$(dirname "$0")/node.sh"

out "TAP version 13"
if [ "$N" -ne 2 ]; then
	out "1..0 # SKIP rdma.sh runs on exactly 2 nodes"
	exit 0
fi
if [ "$I" -eq 1 ]; then out "1..17"; else out "1..11"; fi

soft_roce() {	# rxe0 on eth0, ACTIVE
	modprobe crc32_generic 2>/dev/null || true
	modprobe rdma_rxe || return 1
	modprobe rdma_ucm || return 1	# librdmacm's /dev/infiniband/rdma_cm
	# (node.sh has brought it up already for TRANSPORT=rdma)
	rdma link show rxe0/1 >/dev/null 2>&1 ||
		rdma link add rxe0 type rxe netdev eth0 || return 1
	rdma link show rxe0/1 | grep -q "state ACTIVE" || return 1
	# librdmacm lets a removed device go only while another is left
	# (xport_rdma.c, teardown): node2, whose rxe0 is deleted below, has a
	# second one on a dummy interface, as a host with two NICs would.
	[ "$I" -eq 2 ] || return 0
	modprobe dummy && ip link add dummy0 type dummy &&
		ip link set dummy0 up &&
		rdma link add rxe1 type rxe netdev dummy0
}
check "Soft-RoCE device rxe0 on eth0" soft_roce
SEG_MB=96
[ "$I" -eq 1 ] || SEG_MB=32
rmmod fluxonkv 2>/dev/null || true
check "module loads ($SEG_MB MiB segment)" insmod "$KO" segment_mb=$SEG_MB request_timeout_ms=8000
config /tmp/fkv.yaml "$SECRET"
[ -z "${FLUXON_RESULTS:-}" ] || LOG=$FLUXON_RESULTS/fluxond-node$I.log
: >"$LOG"
[ "$I" -eq 1 ] || check "the SSD tier attaches" "$CTL" config attach /tmp/fkv.yaml

# stat NAME: this node's data-plane counter from fluxonctl cluster --json
cstat() {
	"$CTL" cluster --json | python3 -c "import json, sys; print(json.load(sys.stdin)['stats']['$1'])"
}

if [ "$I" -eq 1 ]; then
	start_daemon /tmp/fkv.yaml
	check "fluxond starts with transport rdma" daemon_up
	check "the segment is registered on rxe0" logged "RDMA on rxe0"
	mark master-up
	check "node2 joins" logged "node 'node2' joined"
	wait_for puts.2 || true
	check "1 B value READ from node2's segment" get_same k1 remote
	check "4 MiB - 128 B value READ from node2's segment" get_same k4 remote
	check "16 MiB value READ from node2's segment (4 READs)" get_same k16 remote
	read_by_rdma() {
		local p b
		p=$(cstat rdma_pulls) b=$(cstat rdma_bytes)
		diag "rdma_pulls $p rdma_bytes $b rdma_fallbacks $(cstat rdma_fallbacks)"
		[ "$p" -ge 3 ] && [ "$b" -ge $(((20 << 20) - 127)) ] &&
			[ "$(cstat rdma_fallbacks)" -eq 0 ]
	}
	check "the bytes moved by RDMA READ, no fallback" read_by_rdma
	mark read.1
	wait_for ssd.2 || true
	pulls0=$(cstat rdma_pulls)
	check "4 MiB - 128 B value pushed from node2's SSD by READs of its staging" get_same s4 remote-ssd
	check "16 MiB value pushed from node2's SSD (4 staged chunks READ)" get_same s16 remote-ssd
	check "both pushes moved by RDMA" test "$(cstat rdma_pulls)" -ge $((pulls0 + 2))
	mark ssdread.1
	# node2 deletes its device: the next pull falls back to TCP.
	wait_for devgone.2 || true
	fb0=$(cstat rdma_fallbacks)
	check "after node2's device is gone its value still arrives (TCP)" get_same late remote
	fell_back() {
		diag "rdma_fallbacks $(cstat rdma_fallbacks) (was $fb0)"
		[ "$(cstat rdma_fallbacks)" -gt "$fb0" ] && logged "RDMA to .* (.*): TCP for"
	}
	check "the fallback is counted and logged" fell_back
	mark late.1
	# Readers run while node2 dies: right bytes or a clean miss, no hang.
	getloop_start 5 k4 late2
	sleep 1
	mark phase.kill
	wait_for killed.2 || true
	check "gets while node2 dies: right bytes or a miss, none hangs" midtraffic
else
	wait_for master-up || true
	start_daemon /tmp/fkv.yaml
	check "fluxond joins with transport rdma" daemon_up
	put_new k1 1
	put_new k4 $(((4 << 20) - 128))
	put_new k16 $((16 << 20))
	mark puts.2
	wait_for read.1 || true
	check "node1's reads were served from our segment by RDMA" test "$(cstat rdma_served)" -ge 3
	# Only on the SSD: persisted, then pushed out of DRAM by fillers.
	commits0=$(stat_of ssd_commits_published)
	put_new s4 $(((4 << 20) - 128))
	put_new s16 $((16 << 20))
	committed() {
		local t
		for ((t = 0; t < 300; t++)); do
			[ "$(stat_of ssd_commits_published)" -ge $((commits0 + 2)) ] && return 0
			sleep 0.1
		done
		return 1
	}
	check "both values committed to node2's SSD" committed
	for f in 1 2 3 4 5 6; do put_new "fill$f" $((6 << 20)); done
	mark ssd.2
	wait_for ssdread.1 || true
	put_new late 4096
	put_new late2 8192
	gone() { timeout 30 rdma link delete rxe0 && ! rdma link show rxe0/1 2>/dev/null; }
	check "rdma link delete rxe0 while fluxond runs" gone
	check "fluxond saw its device go" logged "device rxe0 removed"
	mark devgone.2
	kill_daemon phase.kill
	check "the module lost its daemon" test "$(stat_of daemon_pid)" = 0
fi

finish
