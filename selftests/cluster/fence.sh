#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Versions never go backwards across a master restart and a node's rejoin
# (issue 28): run in both guests by tools/vm/cluster:
#   tools/vm/cluster --nodes 2 --results DIR -- selftests/cluster/fence.sh
# node1 runs the master, node2 a node.
#  1. node2 puts K and 20 more values (its put_ids climb above anything
#     node1's module saw).  The master is killed, then node2's fluxond:
#     its module keeps K (node2 never left that master: no fence).
#  2. The master is restarted; before node2 is back, node1 puts
#     a new K and the put returns.  The restarted master numbers it in a
#     new term (cluster.state_dir/master.term), above every put_id of the
#     previous master -- before terms it numbered from node1's module's
#     highest put_id, below node2's K, and adopted node2's older K over
#     the acknowledged one when node2 reported it.
#  3. node2's fluxond comes back with its reports held back 5 s (fault
#     injection: FLUXOND_TEST_REPORT_DELAY_MS): a get of K on node2 in that
#     window must not be its module's kept, overwritten K (kept replicas
#     are no local hits until the master has adopted them: ADOPT_DONE);
#     it must be node1's new K.  Afterwards both nodes read node1's K.
#     node2 also kept 3000 small values, and its control connection's
#     queue is squeezed to 16 KiB (fault injection:
#     FLUXOND_TEST_CTL_TX_MAX): its reports go in acknowledged batches
#     and none is dropped -- before, one REPORT per value went out at
#     once and those that met a full queue were dropped.  Once the master
#     has answered them, node2's module serves them as local hits again
#     (ADOPT_DONE).
#  4. node2 puts L and its fluxond is stopped (SIGSTOP: a daemon that
#     hangs, or a node cut off, keeps its module and its replicas); node1
#     overwrites L, which returns once node2's lease ran out
#     (cluster.lease_ms, 3200 ms here, while node2 stays a member for
#     dead_after_ms, 6 s).  A get of L on node2 must not be
#     its old bytes: its module serves local hits only within the lease
#     (FLUXONKV_REGISTER_F_LEASE); before the lease it served them as long
#     as the daemon stayed registered.  node2's fluxond resumed rejoins
#     and reads node1's L.
#  5. node2 puts G and its fluxond is killed: it leaves the master, whose
#     fence for node2 rises (cluster.state_dir/fences) before it goes on.
#     node1 puts G anew and deletes it (a tombstone, in memory only); the
#     master is killed and restarted (term 3).  node2 comes back and
#     reports its kept G: before the fence, the restarted master knew no
#     tombstone and adopted it -- a deleted value back.  Now G stays
#     deleted on both nodes.
# TAP in $FLUXON_RESULTS/fence-node<I>.tap.
set -euo pipefail

TAP_NAME=fence
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/cluster/node.sh
. "$(dirname "$0")/node.sh"

out "TAP version 13"
if [ "$N" -ne 2 ]; then
	out "1..0 # SKIP fence.sh runs on exactly 2 nodes"
	exit 0
fi
if [ "$I" -eq 1 ]; then out "1..23"; else out "1..24"; fi

rmmod fluxonkv 2>/dev/null || true
check "module loads" insmod "$KO" segment_mb=64 request_timeout_ms=8000
# A member that stops answering stays one for 6 s: an overwrite in that
# time can only return through the lease (200 + 6000 / 2 = 3200 ms).
DEAD_AFTER_MS=6000 config /tmp/fkv.yaml "$SECRET"
[ -z "${FLUXON_RESULTS:-}" ] || LOG=$FLUXON_RESULTS/fluxond-node$I.log
: >"$LOG"
TERM_FILE=/var/tmp/fluxonkv/master.term
FENCE_FILE=/var/tmp/fluxonkv/fences

term_is() {	# term_is N: the master's term file says N
	[ "$(cat "$TERM_FILE" 2>/dev/null)" = "$1" ] ||
		{ diag "$TERM_FILE: '$(cat "$TERM_FILE" 2>&1)', wanted $1"; return 1; }
}

if [ "$I" -eq 1 ]; then
	rm -rf /var/tmp/fluxonkv
	start_daemon /tmp/fkv.yaml
	check "the master starts" daemon_up
	check "the master's first term is written down" term_is 1
	put_new low 1000
	mark master-up
	# node2's 3000 puts take a while under TCG on a busy host
	WAIT=600 wait_for ready.2 || true
	# The master dies with node2 a member, and restarts while node2 is
	# away; a put of K returns.
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null || true
	mark master-down.1
	wait_for down.2 || true
	nofence() { ! grep -qs node2 "$FENCE_FILE"; }
	check "node2 never left that master: no fence" nofence
	start_daemon /tmp/fkv.yaml
	check "the master restarts" daemon_up
	check "the restarted master is in term 2" term_is 2
	check "the restarted master logs its term" logged "master term 2 "
	check "node1 puts a new K before node2 is back" put_new K 2000
	check "node1 reads its new K" get_same K memory
	mark kput.1

	WAIT=600 wait_for read.2 || true
	check "node1's K is still the acknowledged one after node2's reports" get_same K memory
	check "node2's report of its older K was refused" logged "node 2's reports: [0-9]* adopted, [1-9][0-9]* refused"
	check "node2's 3000 small values were all reported and adopted" \
		logged "node 2's reports: 30[0-9][0-9] adopted"

	# node2's daemon hangs: the overwrite waits for its lease, not more.
	wait_for stopped.2 || true
	check "node1 overwrites L while node2's daemon is stopped" put_new L 3000
	check "the overwrite waited for node2's lease" \
		logged "did not acknowledge a drop in 3200 ms"
	mark lput.1

	# node2 leaves with G; G is put anew here and deleted; the master
	# restarts: node2's kept G must not come back.
	wait_for p4done.2 || true
	left0=$(grep -c "member-left: node 'node2'" "$LOG" || true)
	wait_for gdown.2 || true
	check "node2 left the master with G" logged "member-left: node 'node2'" $((left0 + 1))
	check "node1 puts G anew" put_new G 1500
	check "node1 deletes G" "$CTL" delete G
	check "node2's fence is on disk" grep -qs "^node2 " "$FENCE_FILE"
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null || true
	start_daemon /tmp/fkv.yaml
	restarted3() { daemon_up && term_is 3; }
	check "the master restarts in term 3" restarted3
	mark restarted3.1
	wait_for gread.2 || true
	check "node2's kept G was refused: fenced" logged "node 'node2' was fenced at"
	check "G stays deleted on node1" misses G
	finish
fi

wait_for master-up || true
start_daemon /tmp/fkv.yaml
check "node2 joins" daemon_up
for i in $(seq 1 20); do put_new "f$i" 500; done
check "node2 puts K after 20 other values" put_new K 3000
check "node2 reads its K" get_same K memory
putmany() { PYTHONPATH=$REPO/userspace/python python3 "$REPO/selftests/cluster/putmany.py" "$@"; }
check "node2 puts 3000 small values" putmany put m 3000 512
mark ready.2
wait_for master-down.1 || true
kill -9 "$DPID"
wait "$DPID" 2>/dev/null || true
mark down.2

wait_for kput.1 || true
FLUXOND_TEST_REPORT_DELAY_MS=5000 FLUXOND_TEST_CTL_TX_MAX=16384 \
	start_daemon /tmp/fkv.yaml
check "node2 rejoins the restarted master" daemon_up
# In the 5 s before node2 reports: its module still holds its old K.
check "a get on node2 before its reports is node1's new K, not the kept one" get_same K remote
check "node2 reported what its module kept" logged "reported [0-9]* replicas our module kept"
check "node2 reads node1's new K after the reports" get_same K remote
check "node2's own older values were adopted: local hits" get_same f7 memory
check "node2 reported every kept replica, in batches" \
	logged "reported 30[0-9][0-9] replicas our module kept to the master in [0-9]* batches"
adopted_locally() {	# the module took ADOPT_DONE (within 20 s)
	local t
	for ((t = 0; t < 100; t++)); do
		dmesg | grep -q "kept replicas adopted: local hits again" && return 0
		sleep 0.2
	done
	diag "no ADOPT_DONE in the kernel log"
	return 1
}
check "node2's module serves the adopted replicas locally (ADOPT_DONE)" adopted_locally
check "node2 reads back its 3000 small values" putmany check m 3000 512
mark read.2

not_stale() {	# not_stale KEY OLD: a get of KEY does not return OLD's bytes
	local rc=0
	"$CTL" get "$1" -o "/tmp/got.$1" 2>/tmp/get.err || rc=$?
	if [ "$rc" -eq 0 ] && cmp -s "/tmp/got.$1" "$2"; then
		diag "get $1 returned the overwritten bytes"
		return 1
	fi
	diag "get $1: exit $rc, $(head -c 200 /tmp/get.err)"
}
reads_again() {	# reads_again KEY: node2 back, KEY is node1's bytes (20 s)
	local t
	for ((t = 0; t < 40; t++)); do
		"$CTL" get "$1" -o "/tmp/got.$1" 2>/dev/null &&
			cmp -s "/tmp/got.$1" "$SH/val.$1" && return 0
		sleep 0.5
	done
	diag "get $1 after node2 resumed: not node1's bytes"
	return 1
}
check "node2 puts L" put_new L 4000
check "node2 reads L from its own DRAM" get_same L memory
cp "$SH/val.L" /tmp/old.L
refused0=$(stat_of lease_refused 2>/dev/null || echo 0)
kill -STOP "$DPID"
mark stopped.2
wait_for lput.1 || true
check "a get on node2 while its daemon is stopped is not its old L" not_stale L /tmp/old.L
check "node2's module refused the local hit: the lease ran out" \
	stat_above lease_refused "$refused0" 1
kill -CONT "$DPID"
check "node2 resumed reads node1's L" reads_again L
mark p4done.2

check "node2 puts G" put_new G 2500
check "node2 reads G from its own DRAM" get_same G memory
cp "$SH/val.G" /tmp/old.G
kill -9 "$DPID"
wait "$DPID" 2>/dev/null || true
mark gdown.2
wait_for restarted3.1 || true
reported0=$(grep -c "replicas our module kept to the master" "$LOG" || true)
start_daemon /tmp/fkv.yaml
# every batch of its reports acknowledged: the master adopted or refused
# each (none is adopted here, so the module logs no ADOPT_DONE count)
rejoined3() { daemon_up && logged "replicas our module kept to the master" $((reported0 + 1)); }
check "node2 rejoins the term 3 master, its reports answered" rejoined3
check "node2's kept G does not come back: it was deleted" not_stale G /tmp/old.G
mark gread.2
finish
