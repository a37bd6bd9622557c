#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0
#
# fluxond owns its configuration (--config): the SSD tier attached at
# start (once: a restarted fluxond finds it attached), policy, watermarks
# and log level from the file unless a flag says otherwise, SIGHUP reading
# the file again (watermarks and log level live; the rest: a clear
# message).  Needs root and the module (runs in the guest, selftests/run_tests).

setup_file() {
	local repo
	repo=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	export FLUXONKV_KO=${FLUXONKV_KO:-$repo/kmod/fluxonkv.ko}
	export FLUXOND=${FLUXOND:-$repo/build/fluxond}
	export FLUXONCTL=${FLUXONCTL:-$repo/build/fluxonctl}
	export FLUXOND_BATS_SKIP=
	if [ "$(id -u)" -ne 0 ]; then
		FLUXOND_BATS_SKIP="needs root (insmod)"
	elif [ ! -f "$FLUXONKV_KO" ] || [ ! -x "$FLUXOND" ]; then
		FLUXOND_BATS_SKIP="nothing built"
	elif [ -d /sys/module/fluxonkv ] && ! rmmod fluxonkv; then
		FLUXOND_BATS_SKIP="fluxonkv is loaded and busy"
	elif ! insmod "$FLUXONKV_KO" segment_mb=32; then
		FLUXOND_BATS_SKIP="cannot load $FLUXONKV_KO here"
	else
		modprobe loop 2>/dev/null || true
		truncate -s 80M "$BATS_FILE_TMPDIR/ssd.img"
		losetup --find --show "$BATS_FILE_TMPDIR/ssd.img" >"$BATS_FILE_TMPDIR/loop"
	fi
}

teardown_file() {
	[ -z "$FLUXOND_BATS_SKIP" ] || return 0
	stop_daemon
	rmmod fluxonkv 2>/dev/null || true
	losetup -d "$(cat "$BATS_FILE_TMPDIR/loop")" 2>/dev/null || true
}

setup() {
	[ -z "$FLUXOND_BATS_SKIP" ] || skip "$FLUXOND_BATS_SKIP"
	CFG=$BATS_FILE_TMPDIR/fluxonkv.yaml
	LOG=$BATS_FILE_TMPDIR/fluxond.log
}

# config HIGH LOW [more lines]: the node's file, SSD tier on the loop device
config() {
	{
		echo "fluxonkv_spec:"
		echo "  large_file_paths: [$(cat "$BATS_FILE_TMPDIR/loop")]"
		echo "  large_limit_size: [\"64MB\"]"
		echo "  high_watermark: $1"
		echo "  low_watermark: $2"
		shift 2
		for l in "$@"; do echo "  $l"; done
	} >"$CFG"
}

start_daemon() {
	: >"$LOG"
	# fd 3 closed: bats waits for every holder of it
	"$FLUXOND" --foreground --config "$CFG" "$@" >>"$LOG" 2>&1 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/fluxond.pid"
	local t
	for ((t = 0; t < 100; t++)); do
		[ "$(cat /sys/kernel/fluxonkv/daemon_pid)" = "$!" ] && return 0
		sleep 0.1
	done
	cat "$LOG" >&2
	return 1
}

stop_daemon() {
	local pid t
	pid=$(cat "$BATS_FILE_TMPDIR/fluxond.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || true
	for ((t = 0; t < 100; t++)); do
		[ "$(cat /sys/kernel/fluxonkv/daemon_pid)" = 0 ] && break
		sleep 0.1
	done
	rm -f "$BATS_FILE_TMPDIR/fluxond.pid"
}

# logged PATTERN: in the daemon's log within 5 s
logged() {
	local t
	for ((t = 0; t < 50; t++)); do
		grep -q -- "$1" "$LOG" && return 0
		sleep 0.1
	done
	echo "not in the log: $1" >&2
	cat "$LOG" >&2
	return 1
}

# mstat NAME: the master's counter from fluxonctl cluster --json
mstat() {
	"$FLUXONCTL" cluster --json | python3 -c "import json, sys; print(json.load(sys.stdin)['stats']['$1'])"
}

@test "fluxond attaches the configured SSD tier at start, and only once" {
	[ "$(cat /sys/kernel/fluxonkv/kv_ssd_capacity_bytes)" = 0 ]
	config 90 80 "policy: lru"
	start_daemon
	logged "SSD tier: 1 shards, 64 MiB"
	[ "$(cat /sys/kernel/fluxonkv/kv_ssd_capacity_bytes)" -gt 0 ]
	logged "policy lru, watermarks 90%/80%"
	stop_daemon
	# restarted: the module still has its tier
	start_daemon
	logged "SSD tier already attached (.* MiB): .* not applied again"
	[ "$(cat /sys/kernel/fluxonkv/kv_ssd_capacity_bytes)" -gt 0 ]
	stop_daemon
}

@test "flags win over the file, setting by setting" {
	config 90 80 "policy: lru"
	start_daemon --high-watermark 97 --policy s3fifo
	logged "policy s3fifo, watermarks 97%/80%"
	[ "$(mstat master_high_bytes)" -eq $((32 * 1048576 * 97 / 100)) ]
	[ "$(mstat master_low_bytes)" -eq $((32 * 1048576 * 80 / 100)) ]
	stop_daemon
}

@test "an invalid file stops fluxond at start with every problem" {
	printf 'fluxonkv_spec:\n  policy: fifo\n  low_watermark: 99\n' >"$CFG"
	run "$FLUXOND" --foreground --config "$CFG"
	[ "$status" -eq 1 ]
	[[ "$output" == *'policy: "fifo": must be one of s3fifo, lru'* ]]
	[[ "$output" == *"low_watermark 99% is above high_watermark 98%"* ]]
	[ "$(cat /sys/kernel/fluxonkv/daemon_pid)" = 0 ]
}

@test "SIGHUP applies new watermarks and log level; policy and tier need a restart; a bad file changes nothing" {
	config 90 80
	start_daemon
	[ "$(mstat master_high_bytes)" -eq $((32 * 1048576 * 90 / 100)) ]
	pid=$(cat "$BATS_FILE_TMPDIR/fluxond.pid")

	config 70 60 "log_level: debug"
	kill -HUP "$pid"
	logged "SIGHUP: watermarks 90%/80% -> 70%/60%"
	[ "$(mstat master_high_bytes)" -eq $((32 * 1048576 * 70 / 100)) ]
	[ "$(mstat master_low_bytes)" -eq $((32 * 1048576 * 60 / 100)) ]
	logged "SIGHUP: log level debug"

	config 70 60 "policy: lru"
	kill -HUP "$pid"
	logged "SIGHUP: policy s3fifo -> lru needs a restart of fluxond (kept s3fifo)"

	printf 'fluxonkv_spec:\n  high_watermark: 101\n' >"$CFG"
	kill -HUP "$pid"
	logged 'high_watermark: "101": must be an integer from 1 to 100'
	logged "nothing changed"
	[ "$(mstat master_high_bytes)" -eq $((32 * 1048576 * 70 / 100)) ]
	kill -0 "$pid"
	stop_daemon
}

@test "a restarted fluxond adopts what the module kept: no cached value is lost" {
	local v=$BATS_TEST_TMPDIR/v
	config 98 95
	start_daemon
	head -c 300000 /dev/urandom >"$v"
	"$FLUXONCTL" put warm "$v" >/dev/null
	"$FLUXONCTL" put gone "$v" >/dev/null
	"$FLUXONCTL" delete gone
	pid=$(cat "$BATS_FILE_TMPDIR/fluxond.pid")
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for ((t = 0; t < 50; t++)); do
		[ "$(cat /sys/kernel/fluxonkv/daemon_pid)" = 0 ] && break
		sleep 0.1
	done
	# no daemon: a get fails fast with "no daemon" (exit 4)
	run "$FLUXONCTL" get warm -o /dev/null
	[ "$status" -eq 4 ]
	[ "$(cat /sys/kernel/fluxonkv/replicas)" -ge 1 ]
	start_daemon
	logged "warm restart (single node): adopted 1 DRAM replicas (300000 bytes)"
	"$FLUXONCTL" get warm -o "$BATS_TEST_TMPDIR/got"
	cmp "$v" "$BATS_TEST_TMPDIR/got"
	run "$FLUXONCTL" get gone -o /dev/null
	[ "$status" -eq 3 ]
	[ "$(mstat master_adopted)" -ge 1 ]
	stop_daemon
}

# ssd_commits N: the module's published SSD commits reach N within 10 s
ssd_commits() {
	local t
	for ((t = 0; t < 100; t++)); do
		[ "$(cat /sys/kernel/fluxonkv/ssd_commits_published)" -ge "$1" ] && return 0
		sleep 0.1
	done
	echo "ssd_commits_published $(cat /sys/kernel/fluxonkv/ssd_commits_published), wanted $1" >&2
	return 1
}

@test "clear removes keys with their SSD copies; --regex only the keys it matches" {
	local v=$BATS_TEST_TMPDIR/v c0
	config 98 95
	start_daemon
	# what earlier tests kept goes first: the counts below are exact
	run "$FLUXONCTL" clear
	[ "$status" -eq 0 ]
	[[ "$output" == "removed "*" key"* ]]
	head -c 1000000 /dev/urandom >"$v"
	c0=$(cat /sys/kernel/fluxonkv/ssd_commits_published)
	for k in clr-a1 clr-a2 clr-b1 keep-1; do
		"$FLUXONCTL" put "$k" "$v" >/dev/null
	done
	ssd_commits $((c0 + 4))
	# Every copy goes: the DRAM replica, and the SSD copy the module
	# would otherwise still serve a miss from (local routes).
	run "$FLUXONCTL" clear --regex '^clr-a'
	[ "$status" -eq 0 ]
	[ "$output" = "removed 2 keys" ]
	for k in clr-a1 clr-a2; do
		run "$FLUXONCTL" get "$k" -o /dev/null
		[ "$status" -eq 3 ]
	done
	"$FLUXONCTL" get clr-b1 -o "$BATS_TEST_TMPDIR/got"
	cmp "$v" "$BATS_TEST_TMPDIR/got"
	[ "$(cat /sys/kernel/fluxonkv/ssd_unrouted)" -ge 2 ]
	run "$FLUXONCTL" clear --regex '('
	[ "$status" -eq 1 ]
	[[ "$output" == *"not a POSIX extended regular expression"* ]]
	run "$FLUXONCTL" --json clear
	[ "$status" -eq 0 ]
	[ "$output" = '{"removed":2}' ]
	for k in clr-b1 keep-1; do
		run "$FLUXONCTL" get "$k" -o /dev/null
		[ "$status" -eq 3 ]
	done
	run "$FLUXONCTL" clear --regex ''
	[ "$status" -eq 2 ]
	stop_daemon
	run "$FLUXONCTL" clear
	[ "$status" -eq 4 ]
}
