# SPDX-License-Identifier: GPL-2.0
# Helpers of the fluxonkv cluster tests (sourced after lib.sh): one node's
# module, configuration, fluxond and checks on its values.  node1 is the
# master; SSD_DEV, when set, gives this node an SSD tier on that device.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
KO=${FLUXONKV_KO:-$REPO/kmod/fluxonkv.ko}
FLUXOND=${FLUXOND:-$REPO/build/fluxond}
CTL=${FLUXONCTL:-$REPO/build/fluxonctl}
SYSFS=/sys/kernel/fluxonkv
SECRET=cluster-test-secret-0123456789
LOG=/tmp/fluxond.log
MASTER_IP=$(ip_of 1)

# Soft-RoCE on eth0 for transport: rdma (rdma.sh checks it step by step).
if [ "${TRANSPORT:-tcp}" = rdma ] && ! rdma link show rxe0/1 >/dev/null 2>&1; then
	modprobe crc32_generic 2>/dev/null || true
	modprobe rdma_rxe && modprobe rdma_ucm &&
		rdma link add rxe0 type rxe netdev eth0 ||
		echo "# node$I: no Soft-RoCE: fluxond will refuse transport rdma" >&2
fi

config() {	# config FILE SECRET (DEAD_AFTER_MS: cluster.dead_after_ms, default 2000)
	cat >"$1" <<-EOC
	fluxonkv_spec:
	  instance: node$I
	  cluster:
	    node_name: node$I
	    role: $([ "$I" -eq 1 ] && echo master || echo node)
	    master: $MASTER_IP:7470
	    listen: 0.0.0.0:7471
	    advertise: $FLUXON_NODE_IP:7471
	    transport: ${TRANSPORT:-tcp}
	    secret: "$2"
	    heartbeat_ms: 200
	    dead_after_ms: ${DEAD_AFTER_MS:-2000}
	    state_dir: /var/tmp/fluxonkv
	EOC
	if [ -n "${SSD_DEV:-}" ]; then
		cat >>"$1" <<-EOC
		  large_file_paths: [$SSD_DEV]
		  large_limit_size: ["256MB"]
		EOC
	fi
}

start_daemon() {	# start_daemon CONFIG: in the background, log appended
	"$FLUXOND" --config "$1" --log-level info >>"$LOG" 2>&1 &
	DPID=$!
}
kill_daemon() {	# kill_daemon MARK: SIGKILL our fluxond once MARK is there, then killed.I
	wait_for "$1" || true
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null || true
	mark "killed.$I"
}
daemon_up() {	# until the module says our daemon registered
	local t
	for ((t = 0; t < 300; t++)); do
		[ "$(cat $SYSFS/daemon_pid)" = "$DPID" ] && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
logged() {	# logged PATTERN [COUNT]: the daemon log has it (COUNT times) within 20 s
	local deadline=$((SECONDS + 20))
	# by the clock: under TCG on a loaded host each grep may take a second
	while :; do
		[ "$(grep -c -- "$1" "$LOG" || true)" -ge "${2:-1}" ] && return 0
		[ "$SECONDS" -lt "$deadline" ] || break
		sleep 0.1
	done
	diag "not in the log: $1"
	tail -n 20 "$LOG" | sed 's/^/#   /' | while read -r l; do out "$l"; done
	return 1
}
stat_of() { cat "$SYSFS/$1"; }
stat_above() {	# stat_above NAME BASE SECONDS: the module's NAME exceeds BASE in time
	local t
	for ((t = 0; t < $3 * 10; t++)); do
		[ "$(stat_of "$1")" -gt "$2" ] && return 0
		sleep 0.1
	done
	diag "$1 stayed $(stat_of "$1") (wanted more than $2)"
	return 1
}
# cluster_json PYTHON-EXPR: fluxonctl cluster --json, the expression on it
cluster_json() {
	"$CTL" cluster --json >/tmp/cluster.json &&
		python3 -c "import json, sys
c = json.load(open('/tmp/cluster.json'))
n = {x['name']: x for x in c.get('nodes', [])}
sys.exit(0 if ($1) else 1)" || { diag "cluster view: $(cat /tmp/cluster.json)"; return 1; }
}

# get_same KEY WANT_SOURCE: the value equals $SH/val.KEY, from that source
# (a promotion lands asynchronously: "memory" may take a moment)
get_same() {
	local src try
	for try in 1 2 3 4 5; do
		if ! src=$(PYTHONPATH=$REPO/userspace/python python3 \
			   "$REPO/selftests/cluster/getcheck.py" "$1" "$SH/val.$1" 2>&1); then
			diag "get $1: $src"
			return 1
		fi
		[ "$src" = "$2" ] && return 0
		[ "$2" = memory ] || break
		sleep 0.3
	done
	diag "get $1: source '$src', wanted '$2'"
	return 1
}
misses() {	# misses KEY: exit status 3 (not found), promptly
	local rc=0 t0=$SECONDS
	"$CTL" get "$1" -o /dev/null 2>/dev/null || rc=$?
	[ "$rc" -eq 3 ] || { diag "get $1: exit $rc, wanted 3"; return 1; }
	[ $((SECONDS - t0)) -le 3 ] || { diag "get $1 took $((SECONDS - t0)) s"; return 1; }
}
put_new() {	# put_new KEY BYTES: random value, kept in $SH for the peer
	head -c "$2" /dev/urandom >"$SH/val.$1.tmp"
	mv "$SH/val.$1.tmp" "$SH/val.$1"
	"$CTL" put "$1" "$SH/val.$1" >/dev/null
}

# getloop_start SECONDS KEY...: readers in the background (getloop.py) while
# a peer dies; midtraffic then checks them: right bytes or a clean miss,
# and no get waited past the module's request timeout (8 s).
getloop_start() {
	PYTHONPATH=$REPO/userspace/python python3 "$REPO/selftests/cluster/getloop.py" \
		"$1" "$SH" "${@:2}" >/tmp/getloop.out 2>&1 &
	LOOP=$!
}
midtraffic() {
	local r
	wait "$LOOP" || { diag "getloop: $(cat /tmp/getloop.out)"; return 1; }
	r=$(tail -n 1 /tmp/getloop.out)
	diag "gets while the peer died: $r"
	[[ $r == *" wrong=0 "* ]] && [ "${r##*max_ms=}" -lt 8500 ]
}

# finish: meet the others at the end, stop, check the kernel log, unload;
# two tests; exits with the node's status.  PLAN_AT_END set: the TAP plan
# goes after the last test (a script whose count depends on its settings).
finish() {
	mark "done.$I"
	# shellcheck disable=SC2046
	check "all nodes finish" wait_for $(all_nodes done.)
	kill "$DPID" 2>/dev/null || true
	wait 2>/dev/null || true
	if dmesg | grep -E -q 'BUG|WARNING:|Oops|general protection'; then
		not_ok "no kernel splat"
		dmesg | tail -n 30 | sed 's/^/# /'
	else
		ok "no kernel splat"
	fi
	rmmod fluxonkv 2>/dev/null || true
	[ -z "${PLAN_AT_END:-}" ] || out "1..$n"
	out "# node$I: $((n - failed)) passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}
