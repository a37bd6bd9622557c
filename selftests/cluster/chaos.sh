#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The cluster under faults, with a history check across nodes (issue 28):
# run in every guest by tools/vm/cluster --nodes 3.  node1 runs the master.
# Every node runs selftests/cluster/chaoswork.py for the whole run: puts
# of its own keys, gets of everyone's, each acknowledged put announced to
# the others, every read checked (whole, never older than a version the
# reader knew was acknowledged, never older than one it read, never a miss
# of an acknowledged version unless its writer or the reader is away).
#
# Under that load, CHAOS_ROUNDS rounds (default 1) of the steps in
# CHAOS_STEPS, one after another (default "restart:3 cut:3 master:both
# loris:2", the short pass make check runs; make chaos runs the matrix):
#  restart:J    node J's fluxond SIGKILLed and restarted (its module keeps
#               its values; it rejoins and reports them); J is 2 or 3;
#  cut:J        node J cut off (its link down for 10 s: member-left, its
#               lease runs out, it rejoins and its fence is lifted); node J
#               stops writing first, so its last versions are from before
#               the cut, and reads only its own keys until 8 s after the
#               next master restart (or the round's end);
#  master:ORDER the master SIGKILLed and restarted (a new term: the routes
#               come back from every node's reports).  ORDER "both": node2
#               and node3 rejoin as they come; "23": node3's fluxond is
#               stopped (SIGSTOP) from the master's death until node2's
#               reports were judged in the restarted master's log, then
#               resumed; "32": node2 held back so, node3 first.  No node's
#               kept copies may be fenced (every fence was lifted at its
#               rejoin).  Before the fence lifting, the restarted master
#               refused a node's copies from before a cut -- the newest
#               acknowledged versions of its keys, lost while it lived;
#  overwrite:J  node J puts K and D, node1 reads both (a copy there too);
#               node J is cut off (its link up, every packet dropped both
#               ways: tc); during the cut the other node
#               overwrites K (answered once node J's lease ran out), node J
#               must not read its old K (its module refuses the local hit
#               past the lease, or its fluxond already unregistered), then
#               the other node deletes D; node J must not read its old D
#               either, and once it rejoined nobody reads K's or D's old
#               bytes: its reports of both are refused;
#  loris:J      node J holds 40 half-open connections on each of node1's
#               ports, trickling a byte a second (slowloris): bounded,
#               refused, timed out, while the others' requests go on;
#  impostor     a second fluxond on node3, configured as "node2" with the
#               cluster secret, joins the master while node2 lives: the
#               master refuses it (EBUSY, "a live member holds that node
#               name"), node2 stays the same member (incarnation) and keeps
#               serving (a put on node2 read on node1).  The impostor never
#               gets past the join (a node registers with its module only
#               once joined), so it needs no module of its own.
# TAP in $FLUXON_RESULTS/chaos-node<I>.tap (the plan at the end: its count
# depends on the steps).
# shellcheck disable=SC2317 # functions run through check and step_<name>
set -euo pipefail

TAP_NAME=chaos
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
SSD_DEV=""
# shellcheck source=selftests/cluster/node.sh
. "$(dirname "$0")/node.sh"
WAIT=300
ROUNDS=${CHAOS_ROUNDS:-1}
STEPS=${CHAOS_STEPS:-restart:3 cut:3 master:both loris:2}
PLAN_AT_END=1

out "TAP version 13"
if [ "$N" -ne 3 ]; then
	out "1..0 # SKIP chaos.sh runs on exactly 3 nodes"
	exit 0
fi
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { out "Bail out! CHAOS_ROUNDS='$ROUNDS'"; exit 1; }
for s in $STEPS; do
	case $s in
	restart:[23] | cut:[23] | master:both | master:23 | master:32 | \
	overwrite:[23] | loris:[23] | impostor) ;;
	*) out "Bail out! unknown step '$s' in CHAOS_STEPS"; exit 1 ;;
	esac
done
diag "node$I: $ROUNDS round(s) of: $STEPS"

rmmod fluxonkv 2>/dev/null || true
check "module loads (64 MiB segment)" insmod "$KO" segment_mb=64 request_timeout_ms=8000
# Three TCG guests on a busy host: a member is left after 5 s of silence
# (the 2 s default saw healthy nodes dropped when the host was loaded).
DEAD_AFTER_MS=5000 config /tmp/fkv.yaml "$SECRET"
[ -z "${FLUXON_RESULTS:-}" ] || LOG=$FLUXON_RESULTS/fluxond-node$I.log
: >"$LOG"

work() {	# the load, in the background: WPID
	PYTHONPATH=$REPO/userspace/python python3 "$REPO/selftests/cluster/chaoswork.py" \
		"$I" "$N" "$SH" >/tmp/chaoswork.out 2>/tmp/chaoswork.err &
	WPID=$!
}
# after L PATTERN: the first line of the master's log past line L that
# has PATTERN, as its number in the whole log (nothing if none)
after() {
	local k
	k=$(tail -n +"$(($1 + 1))" "$LOG" | grep -n -m 1 -- "$2" | cut -d: -f1) || true
	[ -z "$k" ] || echo $(($1 + k))
}
# id_of L NAME: the id NAME last joined with past line L of the log
id_of() {
	tail -n +"$(($1 + 1))" "$LOG" |
		sed -n "s/.*node '$2' joined: id \([0-9]*\),.*/\1/p" | tail -n 1
}
# judged L NAME: past line L of the master's log, NAME joined and its
# reports were judged (the log names nodes by id, given by join order)
judged() {
	local deadline=$((SECONDS + 60)) id
	while [ "$SECONDS" -lt "$deadline" ]; do
		id=$(id_of "$1" "$2")
		[ -n "$id" ] && [ -n "$(after "$1" "node $id's reports:")" ] && return 0
		sleep 0.2
	done
	diag "$2 not judged past line $1 of the log"
	return 1
}
lines() { wc -l <"$LOG"; }
count() { grep -c -- "$1" "$LOG" || true; }
# summary_ok: our worker ended with no violation and no unexpected error
summary_ok() {
	local rc=0
	wait "$WPID" || rc=$?
	diag "worker: $(tail -n 1 /tmp/chaoswork.out 2>/dev/null)"
	sed 's/^/# /' /tmp/chaoswork.err | head -n 20 | while read -r l; do out "$l"; done
	[ "$rc" -eq 0 ] && python3 -c "import json, sys
s = json.load(open('$SH/summary.$I'))
sys.exit(0 if not s['violations'] and not s['errors'] else 1)"
}
busy() {	# busy: our worker read and wrote enough to mean something
	local rc=0 line
	line=$(python3 -c "import json, sys
s = json.load(open('$SH/summary.$I'))
print('hits %d, puts %d, unavailable %d, misses allowed %d, violations %d' %
      (s['hits'], s['puts'], s['unavailable'], s['misses_allowed'],
       s['violations']))
sys.exit(0 if s['hits'] >= 30 and s['puts'] >= 10 else 1)") || rc=$?
	diag "$line"
	return "$rc"
}
settle() { sleep 2; rm -f "$SH/$1"; }
# cstat NAME: the master's cluster counter NAME (fluxonctl cluster --json)
cstat() {
	"$CTL" cluster --json | python3 -c "import json, sys
print(json.load(sys.stdin)['stats']['$1'])"
}
# incarnation NAME: the incarnation the master knows NAME by, if live
incarnation() {
	"$CTL" cluster --json | python3 -c "import json, sys
n = [x for x in json.load(sys.stdin)['nodes'] if x['name'] == '$1' and x['live']]
print(n[0]['incarnation'] if n else 'none')"
}
back() {	# registered again with the master (60 s)
	local t
	for ((t = 0; t < 600; t++)); do
		[ "$(stat_of daemon_pid)" = "$DPID" ] && return 0
		sleep 0.1
	done
	diag "daemon_pid $(stat_of daemon_pid), wanted $DPID"
	return 1
}
restart_daemon() {
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null || true
	start_daemon /tmp/fkv.yaml
}
# not_stale KEY OLD: a get of KEY does not return OLD's bytes (a failure
# to reach the cache is fine: a cut-off node cannot ask the master)
not_stale() {
	local rc=0
	"$CTL" get "$1" -o "/tmp/got.$1" 2>/tmp/get.err || rc=$?
	if [ "$rc" -eq 0 ] && cmp -s "/tmp/got.$1" "$2"; then
		diag "get $1 returned the overwritten or deleted bytes"
		return 1
	fi
	diag "get $1: exit $rc, $(head -c 200 /tmp/get.err)"
}
# reads_new KEY OLD: within 30 s KEY reads as $SH/val.KEY, and no get
# in the meantime returns OLD's bytes
reads_new() {
	local t rc
	for ((t = 0; t < 60; t++)); do
		rc=0
		"$CTL" get "$1" -o "/tmp/got.$1" 2>/dev/null || rc=$?
		if [ "$rc" -eq 0 ]; then
			cmp -s "/tmp/got.$1" "$SH/val.$1" && return 0
			if cmp -s "/tmp/got.$1" "$2"; then
				diag "get $1 returned the overwritten bytes"
				return 1
			fi
		fi
		sleep 0.5
	done
	diag "get $1: never the new bytes (last exit $rc)"
	return 1
}
# stays_deleted KEY OLD: within 30 s a get of KEY misses (exit 3), and
# none in the meantime returns OLD's bytes
stays_deleted() {
	local t rc
	for ((t = 0; t < 60; t++)); do
		rc=0
		"$CTL" get "$1" -o "/tmp/got.$1" 2>/dev/null || rc=$?
		[ "$rc" -eq 3 ] && return 0
		if [ "$rc" -eq 0 ]; then
			diag "get $1 returned $(cmp -s "/tmp/got.$1" "$2" && echo "the deleted" || echo other) bytes"
			return 1
		fi
		sleep 0.5
	done
	diag "get $1: exit $rc, never a miss"
	return 1
}

# silence / unsilence: eth0 stays up but drops every packet both ways
# (netem loss on egress, a matchall drop on ingress): the sockets hear
# nothing (a link down makes sends fail at once, so fluxond gives the
# master up at once and the module's lease is never what refuses a hit).
silence() {
	modprobe -a sch_netem sch_ingress cls_matchall act_gact &&
		tc qdisc add dev eth0 root netem loss 100% &&
		tc qdisc add dev eth0 ingress &&
		tc filter add dev eth0 parent ffff: matchall action drop
}
unsilence() {
	tc qdisc del dev eth0 root 2>/dev/null || true
	tc qdisc del dev eth0 ingress 2>/dev/null || true
}

# One step: S counts steps across rounds; its markers are s<S>.<what>;
# node1 marks s<S>.end when done and the others wait for it.
cue() { mark "s$S.$1"; }
await() { wait_for "s$S.$1"; }

step_restart() {	# restart:J
	local j=$1 l0
	case $I in
	1)
		l0=$(lines)
		mark "away.$j"
		cue restart
		await restarted || true
		check "$T node$j restarted: it rejoins and its reports are judged" judged "$l0" "node$j"
		settle "away.$j"
		sleep 5
		;;
	"$j")
		await restart || true
		restart_daemon
		check "$T fluxond restarts and registers" daemon_up
		cue restarted
		;;
	esac
}

step_cut() {	# cut:J
	local j=$1 l0 left0 lifted0
	case $I in
	1)
		mark "nowrite.$j"
		sleep 3
		l0=$(lines)
		left0=$(count "member-left: node 'node$j'")
		lifted0=$(count "node 'node$j' is back and its kept copies judged")
		mark "away.$j"
		cue cut
		check "$T node$j cut off is member-left" logged "member-left: node 'node$j'" $((left0 + 1))
		await healed || true
		check "$T node$j back: it rejoins and its reports are judged" judged "$l0" "node$j"
		check "$T node$j's fence is lifted once it acknowledged the judgement" \
			logged "node 'node$j' is back and its kept copies judged" $((lifted0 + 1))
		settle "away.$j"
		;;
	"$j")
		await cut || true
		ip link set eth0 down
		sleep 10
		ip link set eth0 up
		cue healed
		check "$T fluxond lived through the cut" kill -0 "$DPID"
		check "$T node$j registers again after the cut" back
		;;
	esac
}

step_master() {	# master:both|23|32
	local order=$1 l0 first="" held="" id r j
	case $order in
	23) first=2 held=3 ;;
	32) first=3 held=2 ;;
	esac
	case $I in
	1)
		l0=$(lines)
		mark away.all
		kill -9 "$DPID"
		wait "$DPID" 2>/dev/null || true
		if [ -n "$held" ]; then
			mark "away.$held"
			cue hold
			await held || true
		fi
		start_daemon /tmp/fkv.yaml
		check "$T the master restarts" daemon_up
		if [ -n "$held" ]; then
			check "$T node$first rejoins the restarted master first, its reports judged" \
				judged "$l0" "node$first"
			cue release
			check "$T node$held, held back, rejoins after that, its reports judged" \
				judged "$l0" "node$held"
			id=$(id_of "$l0" "node$first")
			r=$(after "$l0" "node $id's reports:")
			j=$(after "$l0" "node 'node$held' joined")
			diag "node$first judged at line ${r:-?}, node$held joined at line ${j:-?}"
			check "$T node$held joined only after node$first's reports were judged" \
				test "${j:-0}" -gt "${r:-999999999}"
		else
			check "$T node2 rejoins the restarted master, its reports judged" judged "$l0" node2
			check "$T node3 rejoins the restarted master, its reports judged" judged "$l0" node3
		fi
		check "$T no node's kept copies were fenced (every fence was lifted)" \
			test -z "$(after "$l0" "was fenced at")"
		settle away.all
		[ -z "$held" ] || rm -f "$SH/away.$held"
		if compgen -G "$SH/nowrite.*" >/dev/null; then
			sleep 8		# a cut node reads its own keys, not yet rewritten
			rm -f "$SH"/nowrite.*
		fi
		sleep 5
		;;
	"$held")
		await hold || true
		kill -STOP "$DPID"
		cue held
		await release || true
		kill -CONT "$DPID"
		check "$T fluxond held back (SIGSTOP) through the master's restart lives on" kill -0 "$DPID"
		check "$T node$held registers again" back
		;;
	esac
}

step_overwrite() {	# overwrite:J: J cut off, W overwrites and deletes
	local j=$1 w=$((5 - $1)) k="owk$S" d="owd$S" l0 left0 lifted0 id line
	case $I in
	1)
		await kput || true
		check "$T node1 reads node$j's K" get_same "$k" remote
		check "$T node1 reads node$j's D" get_same "$d" remote
		cp "$SH/val.$k" "/tmp/old.$k"
		cp "$SH/val.$d" "/tmp/old.$d"
		l0=$(lines)
		left0=$(count "member-left: node 'node$j'")
		lifted0=$(count "node 'node$j' is back and its kept copies judged")
		mark "away.$j"
		cue cut
		await over || true
		check "$T node1 reads node$w's K, not node$j's" reads_new "$k" "/tmp/old.$k"
		check "$T D is deleted on node1" stays_deleted "$d" "/tmp/old.$d"
		check "$T node$j cut off is member-left" logged "member-left: node 'node$j'" $((left0 + 1))
		await healed || true
		check "$T node$j back: it rejoins and its reports are judged" judged "$l0" "node$j"
		id=$(id_of "$l0" "node$j")
		line=$(tail -n +"$((l0 + 1))" "$LOG" | grep -m 1 "node ${id:-x}'s reports:" || true)
		diag "${line#*cluster: }"
		refused() { [[ $line =~ adopted,\ ([0-9]+)\ refused ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]; }
		check "$T node$j's kept K and D were refused" refused
		check "$T node$j's fence is lifted once it acknowledged the judgement" \
			logged "node 'node$j' is back and its kept copies judged" $((lifted0 + 1))
		await readback || true
		check "$T node1 still reads node$w's K after node$j's rejoin" reads_new "$k" "/tmp/old.$k"
		check "$T D stays deleted on node1 after node$j's rejoin" stays_deleted "$d" "/tmp/old.$d"
		settle "away.$j"
		;;
	"$j")
		check "$T node$j puts K" put_new "$k" 3000
		check "$T node$j puts D" put_new "$d" 2000
		check "$T node$j reads K from its own DRAM" get_same "$k" memory
		check "$T node$j reads D from its own DRAM" get_same "$d" memory
		cp "$SH/val.$k" "/tmp/old.$k"
		cp "$SH/val.$d" "/tmp/old.$d"
		cue kput
		await cut || true
		local t0=$SECONDS lr0
		lr0=$(stat_of lease_refused 2>/dev/null || echo 0)
		check "$T node$j cut off: every packet dropped both ways" silence
		cue down
		await kover || true
		check "$T cut off, node$j does not read its old K after the overwrite" \
			not_stale "$k" "/tmp/old.$k"
		diag "module lease_refused $lr0 -> $(stat_of lease_refused 2>/dev/null || echo ?)"
		cue kchecked
		await over || true
		check "$T cut off, node$j does not read its old D after the delete" \
			not_stale "$d" "/tmp/old.$d"
		sleep $((10 - (SECONDS - t0) > 0 ? 10 - (SECONDS - t0) : 0))
		unsilence
		cue healed
		check "$T fluxond lived through the cut" kill -0 "$DPID"
		check "$T node$j registers again after the cut" back
		check "$T node$j reads node$w's K after its rejoin" reads_new "$k" "/tmp/old.$k"
		check "$T D stays deleted on node$j after its rejoin" stays_deleted "$d" "/tmp/old.$d"
		cue readback
		;;
	"$w")
		await kput || true
		check "$T node$w reads node$j's K before the cut" get_same "$k" remote
		cp "$SH/val.$k" "/tmp/old.$k"
		cp "$SH/val.$d" "/tmp/old.$d"
		await down || true
		check "$T node$w overwrites K while node$j is cut off" put_new "$k" 3500
		cue kover
		await kchecked || true
		check "$T node$w deletes D while node$j is cut off" "$CTL" delete "$d"
		cue over
		check "$T node$w reads its new K" get_same "$k" memory
		check "$T D is deleted on node$w" stays_deleted "$d" "/tmp/old.$d"
		await readback || true
		check "$T node$w still reads its K after node$j's rejoin" reads_new "$k" "/tmp/old.$k"
		check "$T D stays deleted on node$w after node$j's rejoin" stays_deleted "$d" "/tmp/old.$d"
		;;
	esac
}

step_loris() {	# loris:J
	local j=$1 l0 p0 d0
	case $I in
	1)
		l0=$(lines)
		p0=$(cstat control_preauth_refused)
		d0=$(($(cstat data_preauth_refused) + $(cstat data_handshake_timeouts)))
		cue loris
		await lorisdone || true
		check "$T the master port refused the trickling strangers past its limits" \
			cluster_json "c['stats']['control_preauth_refused'] > $p0"
		check "$T the data port refused or timed them out" \
			cluster_json "c['stats']['data_preauth_refused'] + c['stats']['data_handshake_timeouts'] > $d0"
		check "$T node2 and node3 stayed members through it" \
			test -z "$(after "$l0" "member-left: node")"
		sleep 5
		;;
	"$j")
		await loris || true
		loris() {	# 40 connections per port, a byte a second, 12 s
			python3 - "$MASTER_IP" <<-'EOF'
			import socket, sys, time
			socks = []
			for port in (7470, 7471):
			    for _ in range(40):
			        try:
			            s = socket.create_connection((sys.argv[1], port), timeout=2)
			            s.setblocking(False)
			            socks.append(s)
			        except OSError:
			            pass
			print(f"{len(socks)} connections open")
			for _ in range(12):
			    for s in socks:
			        try:
			            s.send(b"\x10")
			        except OSError:
			            pass
			    time.sleep(1)
			EOF
		}
		check "$T slowloris held its connections on both ports for 12 s" loris
		cue lorisdone
		check "$T fluxond survived the slowloris" kill -0 "$DPID"
		;;
	esac
}

# node3 runs a second fluxond as "node2" (data port 7472, no control
# socket: node3's fluxonctl keeps talking to its own; its own state
# directory and log) while node2 is a live member.
step_impostor() {
	local l0 r0 inc0 k="imp$S"
	case $I in
	1)
		l0=$(lines)
		r0=$(cstat member_refused)
		inc0=$(incarnation node2)
		diag "node2 is incarnation $inc0, member_refused $r0"
		cue imp
		await impdone || true
		check "$T the master refused the impostor: a live member holds that name" \
			test -n "$(after "$l0" "refused node 'node2' from $(ip_of 3).*: a live member holds that name")"
		check "$T the refusal is counted (member_refused)" \
			cluster_json "c['stats']['member_refused'] > $r0"
		check "$T node2 is the same live member (incarnation $inc0)" \
			test "$(incarnation node2)" = "$inc0"
		check "$T node2 neither left nor joined again" \
			test -z "$(after "$l0" "member-left: node 'node2'")$(after "$l0" "node 'node2' joined")"
		await impput || true
		check "$T node1 reads what node2 put after the impostor's tries" get_same "$k" remote
		;;
	2)
		await impdone || true
		check "$T node2 still puts after the impostor's tries" put_new "$k" 2500
		check "$T node2 reads it from its own DRAM" get_same "$k" memory
		cue impput
		;;
	3)
		await imp || true
		local ilog=/tmp/impostor.log ipid
		[ -z "${FLUXON_RESULTS:-}" ] || ilog=$FLUXON_RESULTS/fluxond-impostor-s$S.log
		sed -e 's/^\(  *node_name:\).*/\1 node2/' \
		    -e 's/^\(  *listen:\).*/\1 0.0.0.0:7472/' \
		    -e "s/^\(  *advertise:\).*/\1 $FLUXON_NODE_IP:7472/" \
		    -e 's|^\(  *state_dir:\).*|\1 /var/tmp/fluxonkv-impostor|' \
		    /tmp/fkv.yaml >/tmp/impostor.yaml
		: >"$ilog"
		"$FLUXOND" --config /tmp/impostor.yaml --control none --log-level info >>"$ilog" 2>&1 &
		ipid=$!
		refused_imp() {	# the impostor's log has its refusal twice (30 s)
			local t
			for ((t = 0; t < 300; t++)); do
				[ "$(grep -c "refused this node 'node2': a live member holds that node name" "$ilog")" -ge 2 ] &&
					return 0
				kill -0 "$ipid" 2>/dev/null || { diag "the impostor exited"; break; }
				sleep 0.1
			done
			diag "impostor's log:"
			tail -n 10 "$ilog" | sed 's/^/#   /' | while read -r l; do out "$l"; done
			return 1
		}
		check "$T the impostor as node2 is refused: a live member holds that node name (twice)" refused_imp
		check "$T the impostor never joined" eval "! grep -q 'joined the master' '$ilog'"
		kill "$ipid" 2>/dev/null || true
		wait "$ipid" 2>/dev/null || true
		check "$T node3's own fluxond still holds its module, the impostor gone" \
			test "$(stat_of daemon_pid)" = "$DPID"
		cue impdone
		;;
	esac
}

case $I in
1)
	start_daemon /tmp/fkv.yaml
	check "the master starts" daemon_up
	mark master-up
	check "node2 and node3 join" logged "node 'node3' joined"
	logged "node 'node2' joined" >/dev/null
	mark go
	work
	sleep 15
	;;
*)
	wait_for master-up || true
	start_daemon /tmp/fkv.yaml
	check "fluxond joins" daemon_up
	wait_for go || true
	work
	;;
esac

S=0
for ((R = 1; R <= ROUNDS; R++)); do
	for step in $STEPS; do
		S=$((S + 1))
		T="r$R.$S $step:"
		[ "$I" -ne 1 ] || diag "round $R step $S: $step (log line $(lines))"
		"step_${step%%:*}" "${step#*:}"
		if [ "$I" -eq 1 ]; then cue end; else await end || true; fi
	done
	# a cut node not followed by a master restart writes again
	[ "$I" -ne 1 ] || rm -f "$SH"/nowrite.*
done

case $I in
1)
	mark stop
	check "no read on node1 saw a torn, older or lost value" summary_ok
	check "node1's load ran" busy
	wait_for summary.2 summary.3 || true
	check "the other nodes' workers finished" test -e "$SH/summary.2" -a -e "$SH/summary.3"
	check "fluxonctl cluster: every node live at the end" cluster_json \
		"n['node2']['live'] and n['node3']['live']"
	;;
*)
	wait_for stop || true
	check "no read on node$I saw a torn, older or lost value" summary_ok
	check "node$I's load ran" busy
	check "node$I is registered at the end" test "$(stat_of daemon_pid)" = "$DPID"
	;;
esac
finish
