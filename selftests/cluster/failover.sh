#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The master is not a single point of failure (issue 32): run in every guest
# by tools/vm/cluster --nodes 3:
#   tools/vm/cluster --nodes 3 --results DIR -- selftests/cluster/failover.sh
# node3 runs etcd (the host's /usr/bin/etcd, on 10.77.0.3:2379) and a
# fluxond that is no candidate; node1 and node2 are master candidates.
#  1. node1 starts first and wins the election; node2 and node3 follow it
#     (the leader's address read from etcd, no master in their config).
#  2. node2 and node3 run a checked load (failload.py: puts of their own
#     keys, gets of their own and the other's, every acknowledged version
#     written down), and node1's fluxond is killed (-9) under it.
#  3. node2 and node3 see the master's end close: their modules serve their
#     own local hits alone on the lease (FLUXONKV_UNREGISTER_F_LEASED;
#     node3 counts them in hits_alone) until it runs out.
#     node2 wins once node1's etcd lease has expired and re-executes as the
#     master in a higher term; node3 re-executes to follow it; both reload
#     their kept replicas into it (REPORT).  The load sees no wrong bytes
#     and no version going backwards, and its longest outage is printed.
#  4. node1 comes back as a follower of node2, and every acknowledged put
#     of node2 and node3 reads back at its version (or a later one) on
#     every node.
#  5. etcd is killed (-9) and restarted on node3: a leader exists again
#     and every acknowledged put still reads back on every node.
#  6. the leader's fluxond is stopped (SIGSTOP) for two TTLs: the other
#     candidate leads; resumed, the old leader steps down before answering
#     and follows; every acknowledged put still reads back.
#  7. the leader is cut off from etcd (tc drops its packets to etcd's
#     port) but not from its nodes: it steps down, the other candidate
#     leads, and once etcd answers again the old one follows it.
# FAILOVER_SHORT=1 runs parts 1-4 only (make check, failover_short.sh).
# TAP in $FLUXON_RESULTS/failover-node<I>.tap; etcd's log in
# $FLUXON_RESULTS/etcd.log.
set -euo pipefail

TAP_NAME=failover
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/cluster/node.sh
. "$(dirname "$0")/node.sh"

out "TAP version 13"
if [ "$N" -ne 3 ]; then
	out "1..0 # SKIP failover.sh runs on exactly 3 nodes"
	exit 0
fi
ETCD=${ETCD:-/usr/bin/etcd}
if [ ! -x "$ETCD" ]; then
	out "1..0 # SKIP $ETCD is absent on the host (tools/deps: etcd-server)"
	exit 0
fi
# FAILOVER_SHORT=1 (make check: selftests/cluster/failover_short.sh):
# parts 1-4 only, the leader killed under load and its return.
if [ -n "${FAILOVER_SHORT:-}" ]; then
	case $I in
	1) out "1..12" ;;
	*) out "1..16" ;;
	esac
else
	case $I in
	1) out "1..22" ;;
	2) out "1..26" ;;
	3) out "1..23" ;;
	esac
fi

# Under TCG on a shared 2-core host a guest stalls for seconds: a lease
# and a membership that tolerate it (the unit test checks the timing with
# a 1 s TTL natively).
TTL_MS=${FAILOVER_TTL_MS:-8000}
LOAD_S=${FAILOVER_LOAD_S:-40}
ETCD_URL=http://$(ip_of 3):2379

rmmod fluxonkv 2>/dev/null || true
check "module loads (64 MiB segment)" insmod "$KO" segment_mb=64 request_timeout_ms=8000

# No role, no master for node3: the election decides (cluster.md).
fconfig() {
	cat >"$1" <<-EOC
	fluxonkv_spec:
	  instance: node$I
	  cluster:
	    node_name: node$I
	    listen: 0.0.0.0:7471
	    advertise: $FLUXON_NODE_IP:7471
	    secret: "$SECRET"
	    heartbeat_ms: 200
	    dead_after_ms: 6000
	    state_dir: /var/tmp/fluxonkv
	    etcd:
	      endpoints: ["$ETCD_URL"]
	      prefix: /fluxonkv/failover-test
	      lease_ttl_ms: $TTL_MS
	EOC
	if [ "$I" -ne 3 ]; then
		cat >>"$1" <<-EOC
		    master_candidate: true
		    master: $FLUXON_NODE_IP:7470
		EOC
	fi
}
fconfig /tmp/fkv.yaml
rm -rf /var/tmp/fluxonkv
[ -z "${FLUXON_RESULTS:-}" ] || LOG=$FLUXON_RESULTS/fluxond-node$I.log
: >"$LOG"
LOAD=$REPO/selftests/cluster/failload.py
load() { PYTHONPATH=$REPO/userspace/python python3 "$LOAD" "$@"; }
verify() {	# verify NAME...: every acknowledged put reads back, within 60 s
	local t
	for ((t = 0; t < 30; t++)); do
		load verify "$SH" "$@" >/tmp/verify.out 2>&1 && return 0
		sleep 2
	done
	diag "verify: $(tail -n 1 /tmp/verify.out); $(head -n 3 /tmp/verify.out)"
	return 1
}
term_of() {	# term_of LOG: the last "master term N" it logged
	sed -n 's/.*master term \([0-9]*\) .*/\1/p' "$1" | tail -n 1
}

case $I in
1)
	# A wrong endpoint (node3 is up, nothing listens on its port 1): exit 1
	# at once, saying so.
	sed "s|$ETCD_URL|http://$(ip_of 3):1|" /tmp/fkv.yaml >/tmp/fkv-bad.yaml
	bad_endpoint() {
		local rc=0
		"$FLUXOND" --config /tmp/fkv-bad.yaml --control none >/tmp/bad.out 2>&1 || rc=$?
		diag "$(head -n 1 /tmp/bad.out)"
		[ "$rc" -eq 1 ] && grep -q "cluster.etcd: no endpoint answers (etcd http://$(ip_of 3):1: .*Connection refused" /tmp/bad.out
	}
	wait_for etcd-up || true
	check "a wrong etcd endpoint: exit 1 with the endpoint and the reason" bad_endpoint
	start_daemon /tmp/fkv.yaml
	check "fluxond starts and registers" daemon_up
	check "node1 wins the election" logged "etcd election: leading as node1"
	term_of "$LOG" >"$SH/term.1"
	mark master-up
	check "node2 and node3 join node1" wait_for up.2 up.3
	check "fluxonctl cluster: node1 leads in a term" cluster_json \
		"c['stats']['etcd_leader_self'] == 1 and c['stats']['etcd_term'] >= 1 and c['stats']['etcd_healthy'] == 1"
	mark go
	wait_for loading.2 loading.3 || true
	sleep 8
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null || true
	mark killed.1
	diag "node1's fluxond killed (-9) under load"
	# Back once node2 leads: a candidate that loses follows.
	check "node2 took over" wait_for leader.2
	: >"$LOG.2"
	LOG=$LOG.2
	start_daemon /tmp/fkv.yaml
	check "node1 comes back and registers" daemon_up
	check "node1 follows node2" logged "etcd election: following node2"
	mark back.1
	wait_for loaded.2 loaded.3 || true
	check "node2's and node3's acknowledged puts read back on node1" verify b c
	;;
2)
	wait_for master-up || true
	start_daemon /tmp/fkv.yaml
	check "fluxond starts and registers" daemon_up
	check "node2 follows node1" logged "etcd election: following node1"
	check "node2 joined" logged "joined the master at"
	mark up.2
	wait_for go || true
	load "$LOAD_S" "$SH" b 50 c >/tmp/load.out 2>/tmp/load.err &
	LPID=$!
	mark loading.2
	wait_for killed.1 || true
	check "node2's module serves its hits alone on the lease" \
		logged "the master's end closed: local hits go on"
	check "node2 wins the election after node1's lease ran out" logged "won the election: becoming the master" 1
	check "node2 re-executes as the master" logged "etcd election: leading as node2"
	# (the pid is the node's: daemon_up alone does not see the re-exec)
	check "the re-executed fluxond registers as master (same pid)" \
		logged "master term"
	daemon_up || true
	term_of "$LOG" >"$SH/term.2"
	check "node2's term is above node1's" test "$(cat "$SH/term.2")" -gt "$(cat "$SH/term.1")"
	mark leader.2
	check "node3 rejoins node2" logged "node 'node3' joined"
	rc=0
	wait "$LPID" || rc=$?
	diag "node2 load: $(cat /tmp/load.out) $(head -c 600 /tmp/load.err)"
	check "node2's load: no wrong bytes, no version backwards" test "$rc" = 0
	check "node2's load got puts acknowledged" grep -q ' acked=[1-9]' /tmp/load.out
	mark loaded.2
	wait_for back.1 loaded.3 || true
	check "every acknowledged put of node2 and node3 reads back on node2" verify b c
	check "fluxonctl cluster: node2 leads" cluster_json \
		"c['stats']['etcd_leader_self'] == 1 and c['stats']['etcd_elections_won'] >= 1"
	;;
3)
	mkdir -p /tmp/etcd
	elog=/tmp/etcd.log
	[ -z "${FLUXON_RESULTS:-}" ] || elog=$FLUXON_RESULTS/etcd.log
	"$ETCD" --name n3 --data-dir /tmp/etcd/data \
		--listen-client-urls "$ETCD_URL,http://127.0.0.1:2379" \
		--advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster n3=http://127.0.0.1:2380 \
		--heartbeat-interval 100 --election-timeout 1000 >"$elog" 2>&1 &
	EPID=$!
	etcd_up() {
		local t
		for ((t = 0; t < 300; t++)); do
			ETCDCTL_API=3 etcdctl --endpoints "$ETCD_URL" endpoint health \
				>/dev/null 2>&1 && return 0
			sleep 0.1
		done
		return 1
	}
	check "etcd starts on node3" etcd_up
	mark etcd-up
	wait_for master-up || true
	start_daemon /tmp/fkv.yaml
	check "fluxond starts and registers" daemon_up
	check "node3 follows node1" logged "etcd election: following node1"
	mark up.3
	wait_for go || true
	load "$LOAD_S" "$SH" c 50 b >/tmp/load.out 2>/tmp/load.err &
	LPID=$!
	mark loading.3
	wait_for killed.1 || true
	check "node3's module serves its hits alone on the lease" \
		logged "the master's end closed: local hits go on"
	check "node3 sees the new leader" logged "a new leader at another address"
	check "node3 follows node2" logged "etcd election: following node2"
	check "the re-executed fluxond registers (same pid)" daemon_up
	rc=0
	wait "$LPID" || rc=$?
	diag "node3 load: $(cat /tmp/load.out) $(head -c 600 /tmp/load.err)"
	check "node3's load: no wrong bytes, no version backwards" test "$rc" = 0
	check "node3's load got puts acknowledged" grep -q ' acked=[1-9]' /tmp/load.out
	diag "node3's hits served without a master: $(stat_of hits_alone)"
	check "node3 read its own hits while it had no master" \
		test "$(stat_of hits_alone)" -gt 0
	mark loaded.3
	wait_for back.1 loaded.2 || true
	check "every acknowledged put of node2 and node3 reads back on node3" verify b c
	check "etcd holds node2 as the leader" sh -c \
		"ETCDCTL_API=3 etcdctl --endpoints $ETCD_URL get --print-value-only /fluxonkv/failover-test/leader | grep -q '^node2 '"
	check "fluxonctl cluster lists both candidates" cluster_json \
		"sorted((x['name'], x['address']) for x in c.get('candidates', [])) == [('node1', '$(ip_of 1):7470'), ('node2', '$(ip_of 2):7470')]"
	;;
esac

# Nobody stops before every node has verified (a leader that stops
# resigns: node1 would take over, and node2's values go with its fluxond).
mark "verified.$I"
wait_for verified.1 verified.2 verified.3 || true

if [ -z "${FAILOVER_SHORT:-}" ]; then
# 5. etcd itself restarted (kill -9, same data directory): leases and keys
#    survive it; a leader that could not keep its lease alive for 3/4 of
#    the TTL steps down and the election runs again.  Either way a leader
#    exists afterwards and every acknowledged put still reads back.
if [ "$I" -eq 3 ]; then
	kill -9 "$EPID"
	wait "$EPID" 2>/dev/null || true
	sleep 1
	"$ETCD" --name n3 --data-dir /tmp/etcd/data \
		--listen-client-urls "$ETCD_URL,http://127.0.0.1:2379" \
		--advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster n3=http://127.0.0.1:2380 \
		--heartbeat-interval 100 --election-timeout 1000 >>"$elog" 2>&1 &
	EPID=$!
	check "etcd comes back after a kill -9" etcd_up
	mark etcd-back
	leader_again() {
		local t
		for ((t = 0; t < 60; t++)); do
			ETCDCTL_API=3 etcdctl --endpoints "$ETCD_URL" get --print-value-only \
				/fluxonkv/failover-test/leader 2>/dev/null | grep -q '^node' && return 0
			sleep 1
		done
		return 1
	}
	check "a leader is in etcd after its restart" leader_again
fi
wait_for etcd-back || true
sleep 3
check "after etcd's restart every acknowledged put still reads back" verify b c
[ "$I" -ne 2 ] || diag "node2 stepped down $(grep -c 'stepping down' "$LOG" || true) time(s) in all"
mark "verified2.$I"
wait_for verified2.1 verified2.2 verified2.3 || true

# 6. The leader's process stopped (SIGSTOP, as a paused VM) for two TTLs,
#    then resumed: a standby leads meanwhile; the resumed one steps down
#    before it answers anything (its hold on the lease ran out) and
#    re-executes as a follower.
if [ "$I" -eq 3 ]; then
	ETCDCTL_API=3 etcdctl --endpoints "$ETCD_URL" get --print-value-only \
		/fluxonkv/failover-test/leader | cut -d' ' -f1 >"$SH/stopped.tmp"
	mv "$SH/stopped.tmp" "$SH/stopped"
	diag "stopping the leader, $(cat "$SH/stopped")"
fi
wait_for stopped || true
if [ "$I" -ne 3 ]; then
	if [ "$(cat "$SH/stopped")" = "node$I" ]; then
		before=$(grep -c 'stepping down from master' "$LOG" || true)
		fbefore=$(grep -c 'etcd election: following' "$LOG" || true)
		kill -STOP "$DPID"
		sleep $((TTL_MS * 2 / 1000))
		kill -CONT "$DPID"
		mark resumed
		check "the resumed leader steps down" \
			logged "stepping down from master" $((before + 1))
		check "and re-executes as a follower" \
			logged "etcd election: following" $((fbefore + 1))
	else
		skip "the resumed leader steps down" "node$I was not the leader"
		skip "and re-executes as a follower" "node$I was not the leader"
	fi
else
	wait_for resumed || true
	no_longer() {
		local t v
		for ((t = 0; t < 60; t++)); do
			v=$(ETCDCTL_API=3 etcdctl --endpoints "$ETCD_URL" get --print-value-only \
				/fluxonkv/failover-test/leader 2>/dev/null | cut -d' ' -f1)
			[ -n "$v" ] && [ "$v" != "$(cat "$SH/stopped")" ] && return 0
			sleep 1
		done
		return 1
	}
	check "another candidate leads after the stop" no_longer
fi
wait_for resumed || true
sleep 3
check "after the stopped leader's return every acknowledged put still reads back" verify b c
mark "verified3.$I"
wait_for verified3.1 verified3.2 verified3.3 || true

# 7. The leader cut off from etcd but not from its nodes (its packets to
#    etcd's client port dropped): its keepalives fail, it steps down on its
#    own clock, the other candidate wins, and once etcd answers again the
#    old leader follows the new one -- its re-executed image waits for
#    etcd rather than exit as a first start would.
if [ "$I" -eq 3 ]; then
	ETCDCTL_API=3 etcdctl --endpoints "$ETCD_URL" get --print-value-only \
		/fluxonkv/failover-test/leader | cut -d' ' -f1 >"$SH/cut.tmp"
	mv "$SH/cut.tmp" "$SH/cut"
	diag "cutting the leader off from etcd: $(cat "$SH/cut")"
fi
wait_for cut || true
if [ "$I" -ne 3 ]; then
	if [ "$(cat "$SH/cut")" = "node$I" ]; then
		before=$(grep -c 'stepping down from master' "$LOG" || true)
		fbefore=$(grep -c 'etcd election: following' "$LOG" || true)
		cut_etcd() {	# (the guest kernel cannot autoload modules)
			modprobe -a sch_prio cls_u32 act_gact &&
			tc qdisc add dev eth0 root handle 1: prio &&
			tc filter add dev eth0 parent 1: protocol ip prio 1 u32 \
				match ip dst "$(ip_of 3)/32" match ip dport 2379 0xffff \
				action drop
		}
		check "the leader's packets to etcd are dropped (tc)" cut_etcd
		check "the leader cut off from etcd steps down" \
			logged "stepping down from master" $((before + 1))
		wait_for cutlead || true
		sleep 8		# longer than a first start's wait for etcd
		tc qdisc del dev eth0 root 2>/dev/null || true
		mark healed
		check "etcd reachable again, the old leader follows the new one" \
			logged "etcd election: following" $((fbefore + 1))
		check "its fluxond lived through it" kill -0 "$DPID"
		check "and registers with its module again" daemon_up
	else
		for t in "packets dropped" "steps down" "follows the new one" \
			"lived through it" "registers again"; do
			skip "the cut-off leader: $t" "node$I was not the leader"
		done
	fi
else
	cp "$SH/cut" "$SH/stopped"
	check "another candidate leads while the leader is cut off from etcd" no_longer
	mark cutlead
fi
wait_for healed || true
sleep 3
check "after the cut from etcd every acknowledged put still reads back" verify b c
mark "verified4.$I"
wait_for verified4.1 verified4.2 verified4.3 || true
fi
# node1 and node2 stop (and resign) while etcd still runs; then node3
# stops etcd, which finish's wait would otherwise wait for.
if [ "$I" -eq 3 ]; then
	wait_for fin.1 fin.2 || true
	kill "$EPID" 2>/dev/null || true
	wait "$EPID" 2>/dev/null || true
else
	kill "$DPID" 2>/dev/null || true
	wait "$DPID" 2>/dev/null || true
	mark "fin.$I"
fi
finish
