#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0
#
# fluxonctl against the real module and daemon, every subcommand and its
# exit codes.  Run as root where modules load (the guest):
#   tools/vm/run -- sh -c 'FLUXONKV_KO=$PWD/kmod/fluxonkv.ko \
#       FLUXOND=$PWD/build/fluxond FLUXONCTL=$PWD/build/fluxonctl \
#       bats --tap selftests/fluxonctl.bats'
# The last tests stop the daemon, then unload the module: keep them last.

bats_require_minimum_version 1.5.0

SYSFS=/sys/kernel/fluxonkv

setup_file() {
	local repo
	repo=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	export FLUXONKV_KO=${FLUXONKV_KO:-$repo/kmod/fluxonkv.ko}
	export FLUXOND=${FLUXOND:-$repo/build/fluxond}
	export FLUXONCTL=${FLUXONCTL:-$repo/build/fluxonctl}
	# bats 1.8 cannot skip from setup_file: setup() skips every test
	export FLUXONCTL_BATS_SKIP=
	if [ "$(id -u)" -ne 0 ]; then
		FLUXONCTL_BATS_SKIP="needs root (insmod)"
	elif [ ! -f "$FLUXONKV_KO" ]; then
		FLUXONCTL_BATS_SKIP="no module at $FLUXONKV_KO"
	elif [ ! -x "$FLUXOND" ] || [ ! -x "$FLUXONCTL" ]; then
		FLUXONCTL_BATS_SKIP="fluxond/fluxonctl not built"
	elif [ -d /sys/module/fluxonkv ] && ! rmmod fluxonkv; then
		FLUXONCTL_BATS_SKIP="fluxonkv is loaded and busy"
	elif ! insmod "$FLUXONKV_KO" segment_mb=32; then
		FLUXONCTL_BATS_SKIP="cannot load $FLUXONKV_KO here"
	else
		start_daemon
	fi
}

setup() {
	[ -z "$FLUXONCTL_BATS_SKIP" ] || skip "$FLUXONCTL_BATS_SKIP"
}

teardown_file() {
	[ -z "$FLUXONCTL_BATS_SKIP" ] || return 0
	stop_daemon
	if [ -d /sys/module/fluxonkv ]; then
		rmmod fluxonkv
	fi
	return 0
}

# --- helpers -----------------------------------------------------------

# Wait up to 10 s for daemon_pid to become non-zero (or, with "gone", zero).
wait_daemon() {
	local i pid
	for i in $(seq 100); do
		pid=$(cat "$SYSFS/daemon_pid")
		if [ "${1:-up}" = gone ]; then
			[ "$pid" = 0 ] && return 0
		else
			[ "$pid" != 0 ] && return 0
		fi
		sleep 0.1
	done
	echo "daemon_pid stayed $pid" >&2
	return 1
}

start_daemon() {
	# fd 3 closed: bats waits for every holder of it
	"$FLUXOND" --foreground >>"$BATS_FILE_TMPDIR/fluxond.log" 2>&1 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/fluxond.pid"
	wait_daemon up
}

stop_daemon() {
	local pid
	pid=$(cat "$BATS_FILE_TMPDIR/fluxond.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null && wait_daemon gone
	rm -f "$BATS_FILE_TMPDIR/fluxond.pid"
}

# A file of $1 KiB of random bytes at $2.
random_file() {
	head -c "$(($1 * 1024))" /dev/urandom >"$2"
}

# json_check [@FILE | EXPR]...: each EXPR, a Python expression on `d` (the
# JSON document of the last @FILE), must be true.  One interpreter for all:
# python starts slowly in the guest.
json_check() {
	python3 - "$@" <<'EOF'
import json, sys
d, bad = None, 0
for a in sys.argv[1:]:
    if a.startswith('@'):
        d = json.load(open(a[1:]))
    elif not eval(a):
        print('json_check: false:', a, 'for', json.dumps(d))
        bad = 1
sys.exit(bad)
EOF
}

# Prometheus text format checks that need no promtool: every sample's metric
# has a # TYPE before it, names are valid, values are numbers, counters end
# in _total.  A histogram's samples are its _bucket (le increasing up to
# +Inf, counts cumulative), _sum and _count (== the +Inf bucket), per label
# set.  Prints what is wrong; fails if anything is.
prom_check() {
	awk '
	/^# TYPE / { type[$3] = $4; next }
	/^#/ || /^$/ { next }
	{
		name = $1
		sub(/\{.*/, "", name)
		labels = ""
		if (match($1, /\{.*\}/)) labels = substr($1, RSTART + 1, RLENGTH - 2)
		base = name
		if (!(name in type)) {
			b = name
			if (sub(/_(bucket|sum|count)$/, "", b) && type[b] == "histogram")
				base = b
		}
		if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) { print "bad name: " $0; bad = 1 }
		if (!(base in type)) { print "no # TYPE before: " $0; bad = 1 }
		if ($NF !~ /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$/ &&
		    $NF !~ /^([-+]Inf|NaN)$/) { print "bad value: " $0; bad = 1 }
		if (type[base] == "counter" && name !~ /_total$/) { print "counter without _total: " $0; bad = 1 }
		if (type[base] == "histogram") {
			if (name == base) { print "histogram sample without a suffix: " $0; bad = 1 }
			le = ""
			if (match(labels, /(^|,)le="[^"]*"/)) {
				le = substr(labels, RSTART, RLENGTH)
				sub(/^,?le="/, "", le)
				sub(/"$/, "", le)
				sub(/(^|,)le="[^"]*"/, "", labels)
				sub(/^,/, "", labels)
			}
			key = base "{" labels "}"
			if (name ~ /_bucket$/) {
				if (le == "") { print "bucket without le: " $0; bad = 1 }
				if (key in inf) { print "bucket after +Inf: " $0; bad = 1 }
				if ((key in cum) && $NF + 0 < cum[key]) { print "buckets not cumulative: " $0; bad = 1 }
				if (le != "+Inf" && (key in lastle) && le + 0 <= lastle[key]) { print "le not increasing: " $0; bad = 1 }
				cum[key] = $NF + 0
				lastle[key] = le + 0
				if (le == "+Inf") inf[key] = $NF + 0
			} else if (name ~ /_count$/) {
				if (!(key in inf)) { print "_count without a +Inf bucket: " $0; bad = 1 }
				else if (inf[key] != $NF + 0) { print "_count is not the +Inf bucket: " $0; bad = 1 }
				counted[key] = 1
			}
		}
		n++
	}
	END {
		for (k in inf) if (!(k in counted)) { print "no _count for " k; bad = 1 }
		if (!n) { print "no samples"; bad = 1 }
		exit bad
	}'
}

# The value of the Prometheus sample $1 (name{labels}, exactly) on stdin.
prom_value() {
	awk -v s="$1" '$1 == s { print $2; found = 1 } END { exit !found }'
}

# --- put / get / delete -----------------------------------------------------

@test "put, get and delete round-trip values byte for byte; missing keys exit 3" {
	local t=$BATS_TEST_TMPDIR put_id
	random_file 1024 "$t/in"
	run -0 "$FLUXONCTL" put roundtrip/a "$t/in"
	run -0 "$FLUXONCTL" get roundtrip/a -o "$t/out"
	cmp "$t/in" "$t/out"
	"$FLUXONCTL" get roundtrip/a >"$t/stdout"
	cmp "$t/in" "$t/stdout"

	printf 'from stdin' | "$FLUXONCTL" put stdin/key
	run -0 "$FLUXONCTL" get stdin/key
	[ "$output" = "from stdin" ]
	put_id=$("$FLUXONCTL" put -v --value hello value/key)
	[[ "$put_id" =~ ^[0-9]+$ ]]
	"$FLUXONCTL" get --info --json value/key >"$t/info.json"
	# --info is for scripts too: stdout, nothing on stderr
	run -0 --separate-stderr "$FLUXONCTL" get --info value/key
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "key:"*"value/key" ]]
	[[ "$output" == *"len:"*"5 "* ]]
	[[ "$output" == *"put_id:"*"$put_id"* ]]
	[[ "$output" == *"source:"*"memory"* ]]
	# the global -j is get --info --json
	"$FLUXONCTL" -j get value/key >"$t/info-global.json"
	json_check "@$t/info-global.json" "d['put_id'] == $put_id" "d['len'] == 5"
	run -0 "$FLUXONCTL" put -x 00ff10 --value binary
	run -0 "$FLUXONCTL" get -x 00ff10
	[ "$output" = binary ]

	run -0 "$FLUXONCTL" delete roundtrip/a
	run -3 --separate-stderr "$FLUXONCTL" get roundtrip/a
	[ -z "$output" ]
	[[ "$stderr" == *"roundtrip/a"*"not found"* ]]
	run -3 --separate-stderr "$FLUXONCTL" delete roundtrip/a
	[[ "$stderr" == *"not found"* ]]
	run -3 "$FLUXONCTL" get -x 00ff11

	# an empty value is refused, never stored
	run -2 "$FLUXONCTL" put empty/key --value ''
	: >"$t/empty"
	run -1 "$FLUXONCTL" put empty/key "$t/empty"
	run -3 "$FLUXONCTL" get empty/key

	json_check "@$t/info.json" "d['put_id'] == $put_id" "d['len'] == 5" \
		"d['source'] == 'memory'" "d['key'] == 'value/key'"
}

# --- status / stats -------------------------------------------------------------

@test "status and stats report the module, the daemon and every counter" {
	local t=$BATS_TEST_TMPDIR pid f exprs=()
	pid=$(cat "$SYSFS/daemon_pid")
	"$FLUXONCTL" put stats/key --value v

	run -0 "$FLUXONCTL" status
	[[ "$output" == *"module:    loaded, version 0.1.0"* ]]
	[[ "$output" == *"daemon:    connected (pid $pid)"* ]]
	[[ "$output" == *"of 32.0 MiB used"* ]]
	# no shard was attached: the module has an SSD tier of nothing
	[ "$(cat "$SYSFS/kv_ssd_capacity_bytes")" = 0 ]
	echo "$output" | grep -qx "ssd:       none"
	[[ "$output" == *'family "fluxonkv" reachable'* ]]
	"$FLUXONCTL" status --json >"$t/status.json"

	run -0 "$FLUXONCTL" stats
	for f in puts gets misses hits_memory hits_ssd evictions segment_used_bytes; do
		[[ "$output" == *"$f"* ]]
	done
	echo "$output" | grep -Eq "^puts +$(cat "$SYSFS/puts")\$"
	"$FLUXONCTL" stats --json >"$t/stats.json"
	for f in puts gets hits_memory hits_ssd misses deletes evictions replica_drops; do
		exprs+=("d['$f'] == $(cat "$SYSFS/$f")")
	done

	run -0 --separate-stderr "$FLUXONCTL" stats --prometheus
	echo "$output" | prom_check
	if command -v promtool >/dev/null; then
		echo "$output" | promtool check metrics
	fi
	echo "$output" | grep -qx "# TYPE fluxonkv_puts_total counter"
	echo "$output" | grep -qx "fluxonkv_puts_total $(cat "$SYSFS/puts")"
	echo "$output" | grep -qx "fluxonkv_segment_capacity_bytes 33554432"
	echo "$output" | grep -qx "fluxonkv_daemon_up 1"
	# the SSD tier: the reference's gauges, typed counters
	echo "$output" | grep -qx "# TYPE kv_ssd_capacity_bytes gauge"
	echo "$output" | grep -qx "kv_ssd_capacity_bytes 0"
	echo "$output" | grep -qx "# TYPE kv_ssd_used_bytes gauge"
	echo "$output" | grep -qx "# TYPE fluxonkv_ssd_writes_total counter"
	echo "$output" | grep -qx "fluxonkv_ssd_writes_total $(cat "$SYSFS/ssd_writes")"
	! echo "$output" | grep -q "untyped"
	run -2 "$FLUXONCTL" stats --json --prometheus

	json_check "@$t/status.json" "d['module_loaded'] is True" \
		"d['daemon_pid'] == $pid" "d['segment_capacity_bytes'] == 33554432" \
		"d['kv_ssd_capacity_bytes'] == 0" "d['kv_ssd_used_percent'] is None" \
		"d['netlink']['ok'] is True" \
		"@$t/stats.json" "d['version'] == '0.1.0'" "${exprs[@]}"
}

@test "status shows the SSD tier's use when sysfs has one" {
	local s=$BATS_TEST_TMPDIR/sysfs
	cp -r "$SYSFS" "$s"
	echo 4294967296 >"$s/kv_ssd_capacity_bytes"
	echo 1073741824 >"$s/kv_ssd_used_bytes"
	run -0 env FLUXONKV_SYSFS="$s" "$FLUXONCTL" status
	echo "$output" | grep -qx "ssd:       1.0 GiB of 4.0 GiB used (25.0%)"
	run -0 env FLUXONKV_SYSFS="$s" "$FLUXONCTL" stats
	echo "$output" | grep -Eq '^kv_ssd_used_bytes +1073741824 \(1\.0 GiB, 25\.0%\)$'
}

@test "stats show operation latency; the histogram counts the gets done" {
	local t=$BATS_TEST_TMPDIR before miss_before after miss_after inf i
	"$FLUXONCTL" put latency/key --value v
	"$FLUXONCTL" stats --prometheus >"$t/before"
	before=$(prom_value 'fluxonkv_op_latency_seconds_count{op="get_memory"}' <"$t/before")
	miss_before=$(prom_value 'fluxonkv_op_latency_seconds_count{op="get_miss"}' <"$t/before")
	for i in 1 2 3 4 5 6 7; do
		"$FLUXONCTL" get latency/key >/dev/null
	done
	run -3 "$FLUXONCTL" get latency/missing

	run -0 --separate-stderr "$FLUXONCTL" stats --prometheus
	echo "$output" | prom_check
	if command -v promtool >/dev/null; then
		echo "$output" | promtool check metrics
	fi
	echo "$output" | grep -qx "# TYPE fluxonkv_op_latency_seconds histogram"
	after=$(echo "$output" | prom_value 'fluxonkv_op_latency_seconds_count{op="get_memory"}')
	miss_after=$(echo "$output" | prom_value 'fluxonkv_op_latency_seconds_count{op="get_miss"}')
	inf=$(echo "$output" | prom_value 'fluxonkv_op_latency_seconds_bucket{op="get_memory",le="+Inf"}')
	echo "get_memory $before -> $after, get_miss $miss_before -> $miss_after"
	# every get of a present key is one get_memory, the missing one a get_miss
	[ "$((after - before))" -eq 7 ]
	[ "$((miss_after - miss_before))" -eq 1 ]
	[ "$inf" = "$after" ]
	for op in put get_memory get_ssd get_miss delete; do
		echo "$output" | grep -q "^fluxonkv_op_latency_seconds_sum{op=\"$op\"} "
	done

	run -0 "$FLUXONCTL" stats
	echo "$output" | grep -Eq '^latency \(pNN: upper bound'
	echo "$output" | grep -Eq "^get_memory +$after +[0-9.]+ [num]?s "
	"$FLUXONCTL" stats --json >"$t/stats.json"
	json_check "@$t/stats.json" \
		"d['latency']['get_memory']['count'] >= $after" \
		"d['latency']['get_memory']['p50_ns'] <= d['latency']['get_memory']['p99_ns']" \
		"d['latency']['get_ssd']['count'] == 0" \
		"d['latency']['get_ssd']['p50_ns'] is None"
}

@test "stats without a readable latency file still exit 0 and say so" {
	local t=$BATS_TEST_TMPDIR
	run -0 --separate-stderr env FLUXONKV_DEBUGFS="$t/none" "$FLUXONCTL" stats
	[[ "$output" == *"latency: unavailable ($t/none/latency: No such file or directory"* ]]
	echo "$output" | grep -Eq "^puts +[0-9]+\$"
	env FLUXONKV_DEBUGFS="$t/none" "$FLUXONCTL" stats --json >"$t/stats.json"
	json_check "@$t/stats.json" "d['latency'] is None" "d['puts'] >= 1"
	run -0 --separate-stderr env FLUXONKV_DEBUGFS="$t/none" "$FLUXONCTL" stats --prometheus
	echo "$output" | prom_check
	! echo "$output" | grep -q latency
	# not root: debugfs refuses, sysfs does not
	if command -v setpriv >/dev/null &&
	   setpriv --reuid=65534 --regid=65534 --clear-groups "$FLUXONCTL" --version >/dev/null; then
		run -0 setpriv --reuid=65534 --regid=65534 --clear-groups "$FLUXONCTL" stats
		[[ "$output" == *"latency: unavailable ("*"Permission denied; debugfs is readable by root only)"* ]]
	fi
}

# --- dump -------------------------------------------------------------------------

@test "dump replicas lists the keys put, control bytes escaped" {
	local t=$BATS_TEST_TMPDIR put_id
	put_id=$("$FLUXONCTL" put -v dump/visible --value 'twelve bytes')
	"$FLUXONCTL" put -x 1b5b324a7878 --value esc	# ESC [ 2 J x x
	run -0 "$FLUXONCTL" dump replicas
	[[ "${lines[0]}" =~ ^handle\ +put_id\ +offset\ +len\ +refs\ +indexed\ +key$ ]]
	echo "$output" | grep -Eq "^0x[0-9a-f]+ +$put_id +[0-9]+ +12 +[0-9]+ +1 +dump/visible\$"
	[[ "$output" == *' \x1b[2Jxx'* ]]
	[ "$(printf '%s' "$output" | grep -c $'\x1b')" = 0 ]

	"$FLUXONCTL" dump --json replicas >"$t/replicas.json"
	json_check "@$t/replicas.json" \
		"[r['put_id'] for r in d['replicas'] if r['key'] == 'dump/visible'] == [$put_id]" \
		"[r['len'] for r in d['replicas'] if r['key'] == '\\\\x1b[2Jxx'] == [3]" \
		"len(d['replicas']) == $(cat "$SYSFS/replicas")"
}

@test "dump holders shows the reader pinning a value until it lets go" {
	local t=$BATS_TEST_TMPDIR reader i
	random_file 1024 "$t/big"
	"$FLUXONCTL" put dump/held "$t/big"
	# get writes into a pipe nobody reads: it blocks holding the holder
	mkfifo "$t/pipe"
	exec 4<>"$t/pipe"
	"$FLUXONCTL" get dump/held >"$t/pipe" 2>/dev/null 3>&- 4>&- &
	reader=$!
	for i in $(seq 50); do
		[ "$(cat "$SYSFS/holders")" -ge 1 ] && break
		sleep 0.1
	done
	run -0 "$FLUXONCTL" dump holders
	[[ "${lines[0]}" =~ ^\ *pid\ +holder\ +offset\ +len\ +refs$ ]]
	echo "$output" | grep -Eq "^ *$reader +[0-9]+ +[0-9]+ +1048576 +[0-9]+\$"
	run -0 "$FLUXONCTL" dump --json holders
	[[ "$output" == '{"holders":[{"pid":'"$reader"',"holder":'*',"len":1048576,'*'}]}' ]]

	kill "$reader"
	wait "$reader" || true
	exec 4>&-
	for i in $(seq 50); do
		[ "$(cat "$SYSFS/holders")" = 0 ] && break
		sleep 0.1
	done
	run -0 "$FLUXONCTL" dump --json holders
	[ "$output" = '{"holders":[]}' ]
}

@test "dump rings and latency print the module's text; they have no JSON form" {
	run -0 "$FLUXONCTL" dump latency
	[[ "$output" == op$'\t'count$'\t'sum_ns* ]]
	echo "$output" | grep -q '^get_memory'$'\t'
	run -0 "$FLUXONCTL" dump rings
	# no SSD attached in this file's setup: no device, no shard lines
	[ -z "$(echo "$output" | grep -E '^(device|shard) ')" ]
	run -2 "$FLUXONCTL" dump --json rings
	[[ "$output" == *"no JSON form"* ]]
}

@test "dump segment and pending describe the segment and the registered daemon" {
	local pid
	pid=$(cat "$SYSFS/daemon_pid")
	run -0 "$FLUXONCTL" dump segment
	echo "$output" | grep -Eq '^size +33554432$'
	echo "$output" | grep -Eq '^pages +8192$'
	run -0 "$FLUXONCTL" dump --json segment
	[[ "$output" == '{"size":33554432,"used":'[1-9]*',"pages":8192,"chunks":'[1-9]*'}' ]]

	run -0 "$FLUXONCTL" dump pending
	echo "$output" | grep -Eq "^daemon_pid +$pid\$"
	[ "${lines[-1]}" = "req  cmd  name" ]
	run -0 "$FLUXONCTL" dump --json pending
	[[ "$output" == '{"daemon_port":'[1-9]*',"daemon_pid":'"$pid"',"upcalls":[]}' ]]
}

@test "dump: a bad WHAT exits 2, a malformed dump 1, no dump or no debugfs 4" {
	local d=$BATS_TEST_TMPDIR/dbg
	run -2 "$FLUXONCTL" dump
	run -2 --separate-stderr "$FLUXONCTL" dump everything
	[[ "$stderr" == *"unknown dump 'everything'"* ]]
	run -2 "$FLUXONCTL" dump replicas holders

	mkdir "$d"
	printf 'size\t4096\nused\t0\n' >"$d/segment"
	run -0 env FLUXONKV_DEBUGFS="$d" "$FLUXONCTL" dump --json segment
	[ "$output" = '{"size":4096,"used":0}' ]
	printf 'handle\tput_id\n0x1\t1\textra\n' >"$d/replicas"
	run -1 --separate-stderr env FLUXONKV_DEBUGFS="$d" "$FLUXONCTL" dump replicas
	[[ "$stderr" == *"line 2"* ]]
	run -4 env FLUXONKV_DEBUGFS="$d" "$FLUXONCTL" dump holders

	if [ -n "${FLUXON_VM:-}" ]; then	# only the guest's debugfs is ours to unmount
		umount /sys/kernel/debug
		run -4 --separate-stderr "$FLUXONCTL" dump replicas
		mount -t debugfs debugfs /sys/kernel/debug
		[[ "$stderr" == *"debugfs is not mounted"*"mount -t debugfs"* ]]
	fi
}

# --- top ------------------------------------------------------------------------------

@test "top prints plain frames with the rate of the puts made between them" {
	local t=$BATS_TEST_TMPDIR top i
	"$FLUXONCTL" top --iterations 2 --interval 1 >"$t/top" 3>&- &
	top=$!
	sleep 0.1
	for i in 1 2 3; do
		"$FLUXONCTL" put "top/$i" --value "$i"
	done
	wait "$top"
	run cat "$t/top"
	[ "$(echo "$output" | grep -c '^fluxonkv 0.1.0 ')" = 2 ]
	[ "$(echo "$output" | grep -c '^DRAM  \[[#.]*\] .* / 32.0 MiB')" = 2 ]
	# an SSD line only where the module has the files, "none" without a tier
	if [ -e "$SYSFS/kv_ssd_capacity_bytes" ]; then
		[ "$(echo "$output" | grep -cx 'SSD   none')" = 2 ]
	else
		[ "$(echo "$output" | grep -c '^SSD')" = 0 ]
	fi
	[ "$(printf '%s' "$output" | grep -c $'\x1b')" = 0 ]
	# first frame: no rates yet; second: the puts made in between (up to
	# 3 in 1 s; a loaded host may push some past the second frame, so
	# the rate is positive and at most 3/s, not exactly 3)
	[ "$(echo "$output" | grep -cE '^puts +- +[0-9]+$')" = 1 ]
	echo "$output" | grep -E '^puts +[0-9]' |
		awk '{ exit !($2 > 0 && $2 <= 3.05) }'
}

@test "top redraws a terminal, shows an SSD bar if sysfs has one, rejects bad options" {
	local s=$BATS_TEST_TMPDIR/sysfs
	if command -v script >/dev/null; then
		run -0 script -qec "$FLUXONCTL top -n 2 --interval 0.1" /dev/null
		[ "$(printf '%s' "$output" | grep -o $'\x1b\\[H\x1b\\[2J' | wc -l)" = 2 ]
	fi

	cp -r "$SYSFS" "$s"
	echo 4294967296 >"$s/kv_ssd_capacity_bytes"
	echo 1073741824 >"$s/kv_ssd_used_bytes"
	run -0 env FLUXONKV_SYSFS="$s" "$FLUXONCTL" top -n 1
	echo "$output" | grep -Eq '^SSD   \[#{10}\.{30}\] +1\.0 GiB / 4\.0 GiB +25\.0%$'

	run -2 "$FLUXONCTL" top --interval 0
	run -2 "$FLUXONCTL" top --interval soon
	run -2 "$FLUXONCTL" top --iterations 0
	run -2 "$FLUXONCTL" top -n -1
}

# --- help and usage -------------------------------------------------------------------

@test "--help of every subcommand exits 0; an unknown subcommand exits 2" {
	local cmd
	for cmd in put get delete clear status stats dump top; do
		run -0 "$FLUXONCTL" "$cmd" --help
		[[ "${lines[0]}" == "Usage: fluxonctl $cmd"* ]]
	done
	run -0 "$FLUXONCTL" help dump
	[[ "${lines[0]}" == "Usage: fluxonctl dump"* ]]
	run -0 "$FLUXONCTL" --help
	[[ "$output" == *"dump WHAT"* ]]
	[[ "$output" == *"top "* ]]
	run -0 "$FLUXONCTL" --version
	[[ "$output" =~ ^fluxonctl\ [0-9]+\.[0-9]+\.[0-9]+\ \(fluxonkv\ ABI\ [0-9]+\)$ ]]
	[ "$(echo "$output" | cut -d' ' -f2)" = "$(cat "$SYSFS/version")" ]

	run -2 --separate-stderr "$FLUXONCTL" frobnicate
	[[ "$stderr" == *"unknown command 'frobnicate'"* ]]
	run -2 "$FLUXONCTL"
	run -2 "$FLUXONCTL" get
}

# --- without the daemon, without the module (keep last) ------------------------------

@test "with the daemon killed, put and get exit 4 and status says so" {
	stop_daemon
	run -4 --separate-stderr "$FLUXONCTL" put nodaemon/key --value v
	[[ "$stderr" == *"no fluxond daemon"* ]]
	run -4 "$FLUXONCTL" get stdin/key
	run -0 "$FLUXONCTL" status
	[[ "$output" == *"daemon:    not connected"* ]]
	run -0 "$FLUXONCTL" stats --prometheus
	echo "$output" | grep -qx "fluxonkv_daemon_up 0"
}

@test "with the module unloaded, status, stats, dump, top and put exit 4" {
	stop_daemon
	rmmod fluxonkv
	run -4 "$FLUXONCTL" status
	[[ "$output" == *"module:    not loaded"* ]]
	run -4 "$FLUXONCTL" status --json
	[ "$output" = '{"module_loaded":false}' ]
	run -4 "$FLUXONCTL" stats
	run -4 --separate-stderr "$FLUXONCTL" dump replicas
	[[ "$stderr" == *"module not loaded"* ]]
	run -4 --separate-stderr "$FLUXONCTL" top -n 1
	[[ "$stderr" == *"module not loaded"* ]]
	run -4 --separate-stderr "$FLUXONCTL" put unloaded/key --value v
	[[ "$stderr" == *"module loaded"* ]]
}
