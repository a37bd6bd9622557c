#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Two fluxonkv nodes, one master: run in both guests by tools/vm/cluster:
#   tools/vm/cluster --nodes 2 --results DIR -- selftests/cluster/kv.sh
# node1 runs fluxond in master role, node2 in node role with an SSD tier
# (the raw disk virtio-ssd0: tools/vm/cluster --disk ssd0:512M).  Checks,
# with byte-exact content: a wrong secret refused on both sides; node2's
# puts read on node1 (pulled from node2's DRAM: 1 B, 4 MiB - 128 B,
# 16 MiB), then served from node1's own promoted copy; node1's put read on
# node2; a delete on node2 seen on node1; node2's fluxond killed:
# member-left on node1, node2-only keys miss at once, nothing hangs; node2
# back under a new incarnation and serving again; values only on node2's
# SSD (its DRAM copies evicted) pushed to node1 in 4 MiB chunks (1 B,
# 4 MiB - 128 B, 16 MiB); the master restarted; node2 full (its segment
# pinned by holders): its put placed on node1, read there from DRAM and
# back on node2.  TAP in $FLUXON_RESULTS/kv-node<I>.tap.
set -euo pipefail

TAP_NAME=kv${TRANSPORT:+-$TRANSPORT}
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
# node2's SSD goes through device-mapper, so that it can fail on demand.
SSD_DEV=""
[ "$I" -ne 2 ] || SSD_DEV=/dev/mapper/fkvssd
SSD_RAW=/dev/disk/by-id/virtio-ssd0
# shellcheck source=selftests/cluster/node.sh
. "$(dirname "$0")/node.sh"

out "TAP version 13"
if [ "$N" -ne 2 ]; then
	out "1..0 # SKIP kv.sh runs on exactly 2 nodes"
	exit 0
fi
extra=0
[ "${TRANSPORT:-tcp}" != rdma ] || extra=1
if [ "$I" -eq 1 ]; then out "1..$((41 + extra))"; else out "1..25"; fi

# node2's small segment makes its DRAM copies go to its SSD tier.
SEG_MB=96
[ "$I" -eq 1 ] || SEG_MB=32
rmmod fluxonkv 2>/dev/null || true
check "module loads ($SEG_MB MiB segment)" insmod "$KO" segment_mb=$SEG_MB request_timeout_ms=8000
config /tmp/fkv.yaml "$SECRET"
: >"$LOG"
# The daemon's log lands next to the TAP for whoever reads a failure.
[ -z "${FLUXON_RESULTS:-}" ] || LOG=$FLUXON_RESULTS/fluxond-node$I.log
: >"$LOG"
if [ "$I" -eq 2 ]; then
	modprobe dm_mod 2>/dev/null || true
	# No udev in the guest: libdevmapper makes the /dev/mapper nodes.
	export DM_DISABLE_UDEV=1
	dmsetup --noudevsync remove fkvssd 2>/dev/null || true
	SSD_SECTORS=$(blockdev --getsz "$SSD_RAW")
	dmsetup --noudevsync create fkvssd --table "0 $SSD_SECTORS linear $SSD_RAW 0"
	check "the SSD tier attaches (256 MiB, dm-linear on a raw disk)" "$CTL" config attach /tmp/fkv.yaml
fi

if [ "$I" -eq 1 ]; then
	start_daemon /tmp/fkv.yaml
	check "fluxond starts in master role" daemon_up
	mark master-up
	check "a node with a wrong secret is refused" logged "refused node 'node2'.*wrong cluster secret"
	check "node2 joins" logged "node 'node2' joined"
	check "fluxonctl cluster: both nodes live" cluster_json \
		"c['role'] == 'master' and n['node1']['live'] and n['node2']['live'] and n['node2']['address'] == '$(ip_of 2):7471'"
	wait_for puts.2 || true
	check "1 B value pulled from node2" get_same k1 remote
	check "4 MiB - 128 B value pulled from node2" get_same k4 remote
	check "16 MiB value pulled from node2" get_same k16 remote
	check "the pulled copy became node1's own replica" get_same k16 memory
	diag "hits_remote $(stat_of hits_remote), fetches $(stat_of fetches), fetch_errors $(stat_of fetch_errors)"
	ot0=$(stat_of puts_one_trip)
	put_new m2 $((2 << 20))
	mark put.1
	check "the master node's put is one PUT to its own master" \
		test "$(stat_of puts_one_trip)" -eq $((ot0 + 1))
	wait_for deleted.2 || true
	check "a delete on node2 is a miss on node1" misses k1
	# Readers run while node2 dies: right bytes or a clean miss, no hang.
	# (only2b, not only2: a read promotes a copy here, and only2 must
	# stay node2's alone for the checks after its death.)
	getloop_start 6 k4 only2b m2
	sleep 1
	mark phase.kill
	wait_for killed.2 || true
	check "gets while node2 dies: right bytes or a miss, none hangs" midtraffic
	check "node2's death is member-left" logged "member-left: node 'node2'"
	check "fluxonctl cluster: node2 left, connection closed" cluster_json \
		"n['node2']['lefts'] >= 1 and n['node2']['last_left'] == 'connection closed' and c['stats']['member_left'] >= 1"
	check "a key only node2 held misses at once" misses only2
	mark missed.1
	check "node1's copies still serve" get_same k4 memory
	wait_for back.2 || true
	check "node2 rejoins under a new incarnation" logged "node 'node2' joined" 2
	# Its module kept its replicas (warm restart): reported, adopted.
	check "node2's kept value is back once it rejoined" get_same only2 remote
	check "node2's new put is read on node1" get_same after remote
	mark after.1
	wait_for ssd.2 || true
	check "1 B value pushed from node2's SSD" get_same s1 remote-ssd
	check "4 MiB - 128 B value pushed from node2's SSD" get_same s4 remote-ssd
	check "16 MiB value pushed from node2's SSD (4 chunks)" get_same s16 remote-ssd
	check "the pushed copy became node1's own replica" get_same s16 memory
	mark ssdread.1
	# node2's device fails: the push of serr fails, the route goes, a miss.
	wait_for ssderr.2 || true
	errors0=$(stat_of fetch_errors)
	check "an SSD source failing mid-push is revoked: a clean miss" misses serr
	ssd_revoked() {
		[ "$(stat_of fetch_errors)" -gt "$errors0" ] ||
			{ diag "fetch_errors stayed $errors0"; return 1; }
		cluster_json "c['stats']['master_ssd_revoked'] >= 1"
	}
	check "the failed push counted, the master dropped the SSD source" ssd_revoked
	check "Prometheus series by node" sh -c "'$CTL' cluster --prometheus | grep -q '^fluxonkv_cluster_node_up{node=\"node2\",id=\"2\"} 1\$'"
	mark serrdone.1
	diag "hits_remote $(stat_of hits_remote), fetch_errors $(stat_of fetch_errors)"
	# The master restarts: the nodes lose their routes, rejoin, serve.
	wait_for ssdpushed.2 || true
	# s4's copies: node2's SSD and the one promoted here.  The delete
	# must retire node2's SSD copy in its module too: a copy left routed
	# there is reported to the restarted master, which knows no
	# tombstone of this term and adopts it -- a deleted value back.
	check "node1 deletes s4, whose copy is on node2's SSD" "$CTL" delete s4
	check "the master told node2 to retire its SSD copy" \
		cluster_json "c['stats']['master_ssd_dropped'] >= 1"
	reports0=$(grep -c "node 2's reports:" "$LOG" || true)
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null || true
	mark master.killed
	start_daemon /tmp/fkv.yaml
	check "the master restarts" daemon_up
	check "node2 rejoins the restarted master" logged "node 'node2' joined" 3
	# Warm restart: the new master adopts what the modules kept.
	check "the restarted master adopted its own module's replicas" logged "warm restart (master node): adopted [1-9]"
	check "node1's copy from before the restart is a local hit again" get_same s16 memory
	check "node2's value from before the restart, reported and adopted, is pulled" get_same keep2 remote
	check "node2's reports are answered" logged "node 2's reports:" $((reports0 + 1))
	check "s4, deleted before the restart, stays deleted" misses s4
	check "the master had node2's DRAM-only keep2 persisted again" logged \
		"replicas node 2 kept had no SSD copy: persisted again"
	check "... and counted it" cluster_json "c['stats']['kept_replicas_repersisted'] >= 1"
	mark master.back
	wait_for after2.2 || true
	check "after the master's restart node2's put is read on node1" get_same after2 remote
	mark after2read.1
	# node2 is full (every byte pinned): its put lands here.
	wait_for placed.2 || true
	check "the put placed here is a local DRAM hit" get_same placed memory
	check "node1's module made the target" test "$(stat_of puts_targeted)" -ge 1
	if [ "$extra" -eq 1 ]; then
		check "the pulls since the master's restart moved by RDMA READ" cluster_json \
			"c['stats']['rdma_pulls'] >= 2 and c['stats']['rdma_fallbacks'] == 0"
	fi
	mark placedread.1
else
	wait_for master-up || true
	config /tmp/bad.yaml wrong-secret-0123456789abcdef
	refused() {
		local rc=0
		timeout 30 "$FLUXOND" --config /tmp/bad.yaml >/tmp/bad.log 2>&1 || rc=$?
		grep -q "refused this node 'node2': wrong cluster secret" /tmp/bad.log ||
			{ diag "$(tail -n 3 /tmp/bad.log)"; return 1; }
		[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
	}
	check "fluxond with a wrong secret exits with a clear error" refused
	start_daemon /tmp/fkv.yaml
	check "fluxond joins and registers in node role" daemon_up
	ot0=$(stat_of puts_one_trip)
	put_new k1 1
	put_new k4 $(((4 << 20) - 128))
	put_new k16 $((16 << 20))
	put_new only2 4096
	put_new only2b 4096
	mark puts.2
	check "each put asked the master once (PUT, no PUT_START / PUT_DONE)" \
		test "$(stat_of puts_one_trip)" -eq $((ot0 + 5))
	wait_for put.1 || true
	check "node1's value pulled from the master node" get_same m2 remote
	check "delete on node2" "$CTL" delete k1
	mark deleted.2
	kill_daemon phase.kill
	check "the module lost its daemon" test "$(stat_of daemon_pid)" = 0
	wait_for missed.1 || true	# node1 saw our values go first
	start_daemon /tmp/fkv.yaml
	check "fluxond restarts and rejoins" daemon_up
	check "the restarted node's kept copy of node1's value is adopted: a local hit" get_same m2 memory
	put_new after 12345
	mark back.2
	wait_for after.1 || true	# before the fillers push it out
	# Only on the SSD: persisted, then pushed out of DRAM by fillers.
	commits0=$(stat_of ssd_commits_published)
	put_new s1 1
	put_new s4 $(((4 << 20) - 128))
	put_new s16 $((16 << 20))
	put_new serr $((5 << 20))
	committed() {	# committed N: N more SSD commits published
		local t
		for ((t = 0; t < 300; t++)); do
			[ "$(stat_of ssd_commits_published)" -ge $((commits0 + $1)) ] && return 0
			sleep 0.1
		done
		diag "ssd_commits_published $(stat_of ssd_commits_published), wanted $((commits0 + $1))"
		return 1
	}
	check "the four values are committed to node2's SSD" committed 4
	for f in 1 2 3 4 5 6 7 8; do put_new "fill$f" $((6 << 20)); done
	evicted() {	# node2's DRAM no longer holds s1/s4/s16
		local k
		for k in s1 s4 s16 serr; do
			if awk -F'\t' -v k="$k" '$7 == k { f = 1 } END { exit !f }' \
			       /sys/kernel/debug/fluxonkv/replicas; then
				diag "$k still in node2's DRAM"
				return 1
			fi
		done
	}
	check "fillers evicted them from node2's DRAM" evicted
	mark ssd.2
	wait_for ssdread.1 || true
	check "node2 pushed the SSD values in chunks (1 + 1 + 4)" cluster_json \
		"c['role'] == 'node' and c['stats']['ssd_pushes'] >= 3 and c['stats']['ssd_push_chunks'] >= 6"
	# From now on every IO of node2's SSD fails.
	dmsetup --noudevsync suspend fkvssd &&
		dmsetup --noudevsync reload fkvssd --table "0 $SSD_SECTORS error" &&
		dmsetup --noudevsync resume fkvssd
	mark ssderr.2
	perr0=$(stat_of ssd_persist_errors)
	put_new keep2 3000	# only here: survives the master's restart
	# ssd_committed KEY [SECONDS]: our SSD rings hold a committed entry of KEY
	ssd_committed() {
		local t
		for ((t = 0; t <= ${2:-0} * 10; t++)); do
			awk -F'\t' -v k="$1" '$5 == "committed" && $9 == k { f = 1 } END { exit !f }' \
				/sys/kernel/debug/fluxonkv/rings && return 0
			[ "${2:-0}" -eq 0 ] || sleep 0.1
		done
		return 1
	}
	check "keep2's persist fails on the failing SSD" stat_above ssd_persist_errors "$perr0" 10
	check "... so keep2 is in DRAM only" eval '! ssd_committed keep2'
	# The device heals once node1 is done with serr; keep2 stays DRAM-only
	# until the restarted master finds it so and has it persisted again.
	wait_for serrdone.1 || true
	dmsetup --noudevsync suspend fkvssd &&
		dmsetup --noudevsync reload fkvssd --table "0 $SSD_SECTORS linear $SSD_RAW 0" &&
		dmsetup --noudevsync resume fkvssd
	mark ssdpushed.2
	wait_for master.killed || true
	# Without a master a key not held here fails fast with "no daemon"
	# (exit 4): nobody can say it is a miss.  (node2's own "after" may
	# still be served alone on its lease meanwhile: degraded service,
	# cluster.md; failover.sh checks that.)
	fails_fast() {	# within 10 s, each get prompt
		local t rc t0 alone0
		alone0=$(stat_of hits_alone)
		for ((t = 0; t < 50; t++)); do
			rc=0 t0=$SECONDS
			"$CTL" get never-put-anywhere -o /dev/null 2>/dev/null || rc=$?
			[ $((SECONDS - t0)) -le 9 ] || { diag "a get took $((SECONDS - t0)) s"; return 1; }
			if [ "$rc" -eq 4 ]; then
				"$CTL" get after -o /dev/null 2>/dev/null || true
				diag "own hits served alone meanwhile: $(($(stat_of hits_alone) - alone0))"
				return 0
			fi
			sleep 0.2
		done
		diag "a get of a key not held here kept exiting $rc"
		return 1
	}
	check "without a master, a key not held here fails fast (no daemon)" fails_fast
	wait_for master.back || true
	reregistered() {
		local t
		for ((t = 0; t < 300; t++)); do
			[ "$(stat_of daemon_pid)" = "$DPID" ] && return 0
			sleep 0.1
		done
		return 1
	}
	check "node2 registers again once it rejoined" reregistered
	check "node2 reported the replicas its module kept" logged "reported [1-9][0-9]* replicas our module kept"
	check "node2's module retired its SSD copy of the deleted s4" \
		test "$(stat_of ssd_unrouted 2>/dev/null || echo 0)" -ge 1
	check "the DRAM-only keep2 is persisted again after the master's restart" \
		ssd_committed keep2 30

	put_new after2 777
	mark after2.2
	# Full: 25 MiB of the 32 MiB segment pinned by holders, so an 8 MiB
	# put cannot fit even after the master evicted everything here.  What
	# the warm restarts kept goes first, so that the five fit as such.
	wait_for after2read.1 || true
	for k in k4 k16 only2 only2b after s1 s4 s16 serr after2 keep2 m2 \
		 fill1 fill2 fill3 fill4 fill5 fill6 fill7 fill8; do
		"$CTL" delete "$k" >/dev/null 2>&1 || true
	done
	for f in 1 2 3 4 5; do put_new "full$f" $((5 << 20)); done
	PYTHONPATH=$REPO/userspace/python python3 "$REPO/selftests/cluster/hold.py" \
		"$SH/unhold" full1 full2 full3 full4 full5 >/tmp/hold.out 2>&1 &
	HOLD=$!
	held() {
		local t
		for ((t = 0; t < 100; t++)); do
			grep -q '^held 5' /tmp/hold.out && return 0
			kill -0 "$HOLD" 2>/dev/null || break
			sleep 0.1
		done
		diag "hold.py: $(cat /tmp/hold.out)"
		return 1
	}
	check "holders pin 25 MiB of node2's 32 MiB segment" held
	placed0=$(stat_of puts_placed)
	placed_ok() {
		local t0=$SECONDS
		put_new placed $((8 << 20)) || return 1
		diag "the placed put took $((SECONDS - t0)) s"
		[ "$(stat_of puts_placed)" -eq $((placed0 + 1)) ] &&
			[ "$(stat_of place_errors)" -eq 0 ] ||
			{ diag "puts_placed $(stat_of puts_placed) place_errors $(stat_of place_errors)"; return 1; }
		cluster_json "c['stats']['puts_placed_remote'] >= 1 and c['stats']['place_bytes_sent'] >= 8 << 20"
	}
	check "a full node's 8 MiB put is placed on node1" placed_ok
	mark placed.2
	wait_for placedread.1 || true
	: >"$SH/unhold"
	wait "$HOLD" || true
	check "node2 reads its placed value back from node1" get_same placed remote
fi

finish
