#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The cluster benchmark: remote gets between two fluxonkv guests, with the
# link and the disk measured in the same boot (Documentation/fluxonkv/bench.md,
# "Cluster").  Figures, not tests: nothing here asserts a time.
#
# On the host (make bench-cluster, make bench-cluster-rdma):
#   tools/bench/cluster.sh [--build DIR] [--out DIR] [--mem SIZE] [--cpus N]
#                          [--timeout S] [--slub-debug] [--n4 N] [--n1 N]
#                          [--n16 N] [--n4s N] [--transport tcp|rdma]
#                          [--link stream|dgram|unix] (tools/vm/cluster --link)
# boots two guests with tools/vm/cluster (--nodes 2 --disk ssd0:1G, kernel
# command line "slub_debug=-" unless --slub-debug), runs this script in both,
# then writes DIR/summary.txt and DIR/results.json (tools/bench/cluster.py
# summary) and prints the summary.  DIR defaults to
# BUILD/bench-cluster/<timestamp>/ (<timestamp>-rdma/ with --transport
# rdma).  Exit status: tools/vm/cluster's, else 1 if a get had the wrong
# source or content, else 0.
#
# --transport rdma (default tcp): both guests bring up Soft-RoCE (rdma_rxe:
# rxe0 on eth0, as selftests/cluster/rdma.sh) before fluxond starts, and
# both fluxonds run with "transport: rdma": node1 moves the bytes by RDMA
# READ from node2's segment (DRAM pulls; SSD pushes READ staged chunks).
# The RDMA link is measured in the same boot with perftest, right after the
# first iperf3 and again after the last (port 18515, one case at a time):
# ib_read_bw with node1 as the client (it READs node2's buffer) and
# ib_write_bw with node2 as the client (it WRITEs into node1's), at 4 MiB
# (20 iterations) and 16 MiB (5), and at the start ib_read_bw 4 MiB with
# one READ at a time (-o 1).  The summary judges the gets against those
# (and says whether node1's rdma_pulls / rdma_bytes grew by what each phase
# moved, with no rdma_fallbacks).
#
# In each guest (FLUXON_NODE set by tools/vm/cluster): node1 is the master
# and the reader, node2 the data source with an SSD tier on the raw disk
# virtio-ssd0.  In order, each step one at a time:
#   1. iperf3 node2 -> node1, 5 s (the link); with rdma, perftest after it
#   2. node2 puts N4 values of 4 MiB; node1 gets each once (a pull from
#      node2's DRAM: source "remote"), timed, checked; node2 deletes them
#   3. the same with 4 readers at once (N4 more values of 4 MiB), then
#      serially with N1 values of 1 MiB
#   4. node2 puts N16 values of 16 MiB and N4S of 4 MiB, waits until they
#      are on its SSD, puts fillers until their DRAM copies are evicted,
#      deletes the fillers
#   5. node2: O_DIRECT reads of 16 MiB and of 4 MiB on its raw disk (the
#      disk)
#   6. node1 <- node2: 16 MiB ... 4 KiB request/response over one TCP
#      connection (what "send it all" costs; the small sizes show the
#      round trip's floor), then N16 requests that node2 answers by
#      reading 16 MiB from its disk (O_DIRECT) and then sending it: "read
#      it all, then send it all", measured
#   7. node1 gets each 16 MiB value once (pushed from node2's SSD:
#      "remote-ssd"), timed, checked; right after each get, the same
#      read-then-send request and a 16 MiB send (paired baselines); then
#      each 4 MiB SSD value once (no paired baseline)
#   8. both guests' CPU over 3 quiet seconds (the background), then
#      iperf3 again (the link's drift over the run); with rdma, perftest
# CPU: around each timed loop (around each get alone where paired) node1
# reads /proc/stat and fluxond's /proc/PID/stat here and asks node2's
# (cluster.py cpuserve, port 7601) for its own: the summary gives each
# guest's non-idle CPU seconds (and fluxond's) per GiB moved.
# Segments: node1 512 MiB (keeps every pulled copy), node2 160 MiB (one
# phase's values at a time): N4 x 4, N1 x 1 and N16 x 16 + N4S x 4 MiB must
# stay within 144 MiB (defaults 32, 64, 8, 4).
# Files in DIR: command.txt, host-load.txt (the host once a second: other
# qemu processes, CPU used by others), summary.txt, results.json, and from
# the guests ($FLUXON_RESULTS): iperf-{start,end}.json,
# get-{mem4,mem4c4,mem1,ssd16,ssd4}.json (node1's timed gets with module
# and daemon snapshots before and after, and the CPU), disk-node2.json,
# disk4-node2.json, tcp-node1.json, cpu-idle.json, snap-node2-*.json,
# meta-node*.json, fill-node2.json, fluxond-node*.log, latency-node*.txt
# (the module's debugfs latency table at the end), cluster-node*.json,
# node*.log (consoles); with rdma perf-<case>-{start,end}.json (perftest's
# output and figure, client side) and perf-*-server.txt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$here/../.." && pwd)

# ---------------------------------------------------------------- host ----
if [ -z "${FLUXON_NODE:-}" ]; then
	argv="$*"
	build=build out="" mem=1536M cpus=1 timeout_s=900 slub=""
	n4=32 n1=64 n16=8 n4s=4 transport=tcp link=
	while [ $# -gt 0 ]; do
		case "$1" in
		--build) build=$2; shift 2 ;;
		--out) out=$2; shift 2 ;;
		--mem) mem=$2; shift 2 ;;
		--cpus) cpus=$2; shift 2 ;;
		--timeout) timeout_s=$2; shift 2 ;;
		--slub-debug) slub=1; shift ;;
		--n4) n4=$2; shift 2 ;;
		--n1) n1=$2; shift 2 ;;
		--n16) n16=$2; shift 2 ;;
		--n4s) n4s=$2; shift 2 ;;
		--transport) transport=$2; shift 2 ;;
		--link) link=$2; shift 2 ;;
		-h|--help) sed -n '3,/^set -e/{/^set -e/d;p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) echo "bench/cluster: unknown option '$1' (try --help)" >&2; exit 2 ;;
		esac
	done
	for n in "$n4:4" "$n1:1" "$n16:16"; do
		if ! [[ ${n%%:*} =~ ^[1-9][0-9]*$ ]] || [ $((${n%%:*} * ${n#*:})) -gt 144 ]; then
			echo "bench/cluster: --n4/--n1/--n16: 1.. values, at most 144 MiB a phase" >&2
			exit 2
		fi
	done
	if ! [[ $n4s =~ ^[0-9]+$ ]] || [ $((n16 * 16 + n4s * 4)) -gt 144 ]; then
		echo "bench/cluster: --n4s: 0.. values, N16 x 16 + N4S x 4 MiB at most 144 MiB" >&2
		exit 2
	fi
	case "$transport" in
	tcp|rdma) ;;
	*) echo "bench/cluster: --transport tcp or rdma" >&2; exit 2 ;;
	esac
	# TCP over a UDP link: no host TCP stream (Nagle, delayed ACK) under
	# the guests' own; RDMA keeps the stream link, Soft-RoCE suffers the
	# UDP link's losses (bench.md, "The guests' link").
	[ -n "$link" ] || link=$([ "$transport" = tcp ] && echo dgram || echo stream)
	cd "$REPO"
	for f in kmod/fluxonkv.ko "$build/fluxond" "$build/fluxonctl" "$build/libfluxonkv.so"; do
		[ -e "$f" ] || { echo "bench/cluster: $f missing: run 'make module userspace'" >&2; exit 2; }
	done
	[ -n "$out" ] || out=$build/bench-cluster/$(date +%Y%m%d-%H%M%S)$([ "$transport" = tcp ] || echo "-$transport")
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	append="slub_debug=-"
	[ -z "$slub" ] || append=""
	vm=(tools/vm/cluster --nodes 2 --mem "$mem" --cpus "$cpus" --disk ssd0:1G
	    --timeout "$timeout_s" --results "$out" --link "$link")
	[ -z "$append" ] || vm+=(--append "$append")
	vm+=(-- env "FKV_BUILD=$build" "FKV_N4=$n4" "FKV_N1=$n1" "FKV_N16=$n16"
	     "FKV_N4S=$n4s" "FKV_TRANSPORT=$transport" "FKV_MEM=$mem" "FKV_CPUS=$cpus"
	     tools/bench/cluster.sh)
	t0=$(date +%s)
	{
		echo "host command: $0 $argv"
		echo "vm command: ${vm[*]}"
		echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- kmod userspace 2>/dev/null || echo ' + local changes in kmod/ or userspace/')"
		echo "binaries (sha256, mtime):"
		for f in kmod/fluxonkv.ko "$build/fluxond" "$build/fluxonctl" "$build/libfluxonkv.so"; do
			echo "  $(sha256sum "$f" | cut -c1-16) $(date -r "$f" -Is) $f"
		done
		echo "start: $(date -Is)"
	} >"$out/command.txt"
	# Other guests (or builds) on this host skew every figure: sample the
	# host once a second while we run (host-load.txt; the summary says
	# which measured steps shared the host).
	python3 tools/bench/cluster.py hostmon --root $$ --out "$out/host-load.txt" &
	sampler=$!
	echo "bench/cluster: results in $out"
	echo "bench/cluster: ${vm[*]}"
	rc=0
	"${vm[@]}" || rc=$?
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	src=0
	python3 tools/bench/cluster.py summary "$out" || src=$?
	{
		echo "end: $(date -Is)"
		echo "wall: $(($(date +%s) - t0)) s"
		echo "exit: cluster $rc, summary $src"
	} >>"$out/command.txt"
	echo "bench/cluster: summary in $out/summary.txt"
	[ "$rc" -eq 0 ] || exit "$rc"
	[ "$src" -eq 0 ] || exit 1
	exit 0
fi

# --------------------------------------------------------------- guest ----
# shellcheck disable=SC2034 # lib.sh reads it
TAP_NAME=bench-cluster
# shellcheck source=selftests/cluster/lib.sh
. "$REPO/selftests/cluster/lib.sh"
[ "$N" -eq 2 ] || { echo "bench/cluster: exactly 2 nodes" >&2; exit 2; }
BUILD=$REPO/${FKV_BUILD:-build}
KO=$REPO/kmod/fluxonkv.ko
FLUXOND=$BUILD/fluxond
CTL=$BUILD/fluxonctl
PY=(env "PYTHONPATH=$REPO/userspace/python" "FLUXONKV_LIB=$BUILD/libfluxonkv.so"
    /usr/bin/python3 "$REPO/tools/bench/cluster.py")
R=${FLUXON_RESULTS:?}
SYSFS=/sys/kernel/fluxonkv
DEV=/dev/disk/by-id/virtio-ssd0
SECRET=bench-cluster-secret-0123456789
LOG=$R/fluxond-node$I.log
N4=${FKV_N4:-32} N1=${FKV_N1:-64} N16=${FKV_N16:-8} N4S=${FKV_N4S:-4}
TRANSPORT=${FKV_TRANSPORT:-tcp}
WAIT=600	# lib.sh's wait_for: the slow steps take minutes under TCG
T0=$SECONDS

say() { printf '# node%s +%ss %s\n' "$I" "$((SECONDS - T0))" "$*"; }
die() { say "FAILED: $*"; mark "failed.$I"; exit 1; }
# wait_on FILE: wait_for, but give up at once when the other node failed
wait_on() {
	local deadline=$((SECONDS + WAIT))
	until [ -e "$SH/$1" ]; do
		[ ! -e "$SH/failed.$((3 - I))" ] || die "node$((3 - I)) failed"
		[ "$SECONDS" -lt "$deadline" ] || die "timed out waiting for $1"
		sleep 0.2
	done
}
stat_of() { cat "$SYSFS/$1"; }

config() {
	cat >/tmp/fkv.yaml <<-EOC
	fluxonkv_spec:
	  instance: node$I
	  cluster:
	    node_name: node$I
	    role: $([ "$I" -eq 1 ] && echo master || echo node)
	    master: $(ip_of 1):7470
	    listen: 0.0.0.0:7471
	    advertise: $FLUXON_NODE_IP:7471
	    transport: $TRANSPORT
	    secret: "$SECRET"
	    heartbeat_ms: 500
	    dead_after_ms: 10000
	    state_dir: /var/tmp/fluxonkv
	EOC
	if [ "$I" -eq 2 ]; then
		cat >>/tmp/fkv.yaml <<-EOC
		  large_file_paths: [$DEV]
		  large_limit_size: ["960MB"]
		EOC
	fi
}
start_daemon() {
	"$FLUXOND" --config /tmp/fkv.yaml --log-level info >>"$LOG" 2>&1 &
	DPID=$!
	local t
	for ((t = 0; t < 300; t++)); do
		[ "$(stat_of daemon_pid)" = "$DPID" ] && return 0
		kill -0 "$DPID" 2>/dev/null || die "fluxond exited (see $LOG)"
		sleep 0.1
	done
	die "fluxond never registered"
}
rdma_registered() {	# fluxond registered its segment on rxe0 (a warning if not)
	local t
	for ((t = 0; t < 200; t++)); do
		grep -q "RDMA on rxe0" "$LOG" && return 0
		sleep 0.1
	done
	say "WARNING: no 'RDMA on rxe0' in $LOG"
}
# settle: the SSD writes stop (ssd_writes and commits unchanged for 1.5 s)
settle() {
	local last="" now same=0 t
	for ((t = 0; t < 1200; t++)); do
		now="$(stat_of ssd_writes) $(stat_of ssd_commits_published)"
		if [ "$now" = "$last" ]; then
			same=$((same + 1))
			[ "$same" -lt 6 ] || return 0
		else
			same=0
			last=$now
		fi
		sleep 0.25
	done
	say "SSD writes did not settle: $now"
}
committed() {	# committed N: commits_published reached N
	local t
	for ((t = 0; t < 1200; t++)); do
		[ "$(stat_of ssd_commits_published)" -ge "$1" ] && return 0
		sleep 0.25
	done
	die "ssd_commits_published $(stat_of ssd_commits_published), wanted $1"
}
slub_state() {
	local f=/sys/kernel/slab/kmalloc-1k
	if [ -r $f/sanity_checks ]; then
		echo "sanity_checks=$(cat $f/sanity_checks) red_zone=$(cat $f/red_zone) poison=$(cat $f/poison) store_user=$(cat $f/store_user)"
	else
		echo unknown
	fi
}
meta() {
	local sl
	sl=$(slub_state)
	cat >"$R/meta-node$I.json" <<-EOM
	{"node": $I, "cpus": $(nproc), "mem_mb": $(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024)),
	 "segment_mb": $SEG_MB, "kernel": "$(uname -r)",
	 "cmdline": "$(sed 's/ fluxon\.cmd=[^ ]*//' /proc/cmdline)",
	 "slub_debug": "$([[ $sl == *sanity_checks=0*red_zone=0*poison=0* ]] && echo off || echo "on ($sl)")",
	 "slub_state": "$sl", "n4": $N4, "n1": $N1, "n16": $N16, "n4s": $N4S,
	 "transport": "$TRANSPORT"}
	EOM
}
iperf_server() {	# iperf_server MARK: one-off iperf3 server, then MARK
	iperf3 -s -1 >/tmp/iperf3-server.log 2>&1 &
	IPERF=$!
	local t
	for ((t = 0; t < 300; t++)); do
		[ -z "$(ss -Hltn "sport = :5201")" ] || break
		sleep 0.1
	done
	mark "$1"
}
iperf_client() {	# iperf_client NAME
	iperf3 -c "$(ip_of 1)" -t 5 -J >"$R/iperf-$1.json" 2>/tmp/iperf3.err ||
		say "iperf3 failed: $(cat /tmp/iperf3.err)"
	say "link ($1): $(python3 -c "import json,sys; print('%.0f Mbit/s' % (json.load(open(sys.argv[1]))['end']['sum_received']['bits_per_second'] / 1e6))" "$R/iperf-$1.json" 2>/dev/null || echo '?')"
}

# soft_roce: rxe0 on eth0, ACTIVE (as selftests/cluster/rdma.sh)
soft_roce() {
	modprobe crc32_generic 2>/dev/null || true
	modprobe rdma_rxe || return 1
	modprobe rdma_ucm || return 1	# librdmacm's /dev/infiniband/rdma_cm
	rdma link add rxe0 type rxe netdev eth0 || return 1
	rdma link show rxe0/1 | grep -q "state ACTIVE"
}
# perf_one NAME VERB SIZE ITERS SERVER [ARGS...]: one perftest case between
# the two guests: ib_VERB_bw on node SERVER as the server, the other node
# the client (the requester: ib_read_bw's client READs the server's buffer,
# ib_write_bw's client WRITEs into it); the client's figure in
# $R/perf-NAME.json.  Port 18515 (perftest's own exchange), one at a time.
perf_one() {
	local name=$1 verb=$2 size=$3 iters=$4 srv=$5 t p
	shift 5
	local cmd=("ib_${verb}_bw" -d rxe0 -s "$size" -n "$iters" -F "$@")
	if [ "$I" -eq "$srv" ]; then
		"${PY[@]}" linkstat --out "$R/perf-$name-server-link-before.json"
		timeout 150 "${cmd[@]}" >"$R/perf-$name-server.txt" 2>&1 &
		p=$!
		for ((t = 0; t < 300; t++)); do
			[ -z "$(ss -Hltn "sport = :18515")" ] || break
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		mark "perf-$name.srv"
		wait_on "perf-$name.cli"
		for ((t = 0; t < 100; t++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill "$p" 2>/dev/null && say "perftest server $name: still running, killed"
		wait "$p" 2>/dev/null || true
		"${PY[@]}" linkstat --out "$R/perf-$name-server-link-after.json"
	else
		wait_on "perf-$name.srv"
		"${PY[@]}" perf --name "$name" --size "$size" --timeout 120 \
			--out "$R/perf-$name.json" -- "${cmd[@]}" "$(ip_of "$srv")" |
			sed "s/^/# node$I perftest /" || true
		mark "perf-$name.cli"
	fi
}
# perf_round start|end: the RDMA link in both directions the data moves
# (node2 -> node1), at 4 and 16 MiB; ~80 MiB a case
perf_round() {
	say "RDMA link ($1): perftest"
	perf_one "read-4M-$1" read 4194304 20 2
	perf_one "read-16M-$1" read 16777216 5 2
	perf_one "write-4M-$1" write 4194304 20 1
	perf_one "write-16M-$1" write 16777216 5 1
	[ "$1" != start ] || perf_one "read-4M-serial-$1" read 4194304 10 2 -o 1
}

SEG_MB=512
[ "$I" -eq 1 ] || SEG_MB=160
if [ "$TRANSPORT" = rdma ]; then
	soft_roce || die "Soft-RoCE: rxe0 on eth0 ($(rdma link show 2>&1 | tr '\n' ' '))"
	say "Soft-RoCE rxe0 on eth0: $(rdma link show rxe0/1 | grep -o 'state [A-Z]*')"
fi
rmmod fluxonkv 2>/dev/null || true
insmod "$KO" segment_mb=$SEG_MB request_timeout_ms=20000 || die "insmod"
config
: >"$LOG"
meta
say "module loaded ($SEG_MB MiB segment), $(slub_state | cut -c1-40)"
rc=0

if [ "$I" -eq 1 ]; then
	start_daemon
	[ "$TRANSPORT" != rdma ] || rdma_registered
	mark master-up
	wait_on up.2
	say "node2 joined"

	iperf_server iperf1.ready
	wait_on iperf1.done
	wait "$IPERF" 2>/dev/null || true
	[ "$TRANSPORT" != rdma ] || perf_round start

	for ph in mem4 mem4c4 mem1; do
		wait_on "ready.$ph"
		thr=1
		[ "$ph" != mem4c4 ] || thr=4
		say "$ph: timed gets ($thr reader(s))"
		"${PY[@]}" get --manifest "$SH/man-$ph.json" --phase "$ph" --want-source remote \
			--threads "$thr" --cpu-host "$(ip_of 2)" --ctl "$CTL" \
			--out "$R/get-$ph.json" || rc=1
		mark "got.$ph"
	done

	wait_on tcp.ready
	say "TCP request/response baseline"
	"${PY[@]}" tcpget --host "$(ip_of 2)" --plan 16Mx6,4Mx8,1Mx8,256Kx8,64Kx8,4Kx16 \
		--disk-plan "16Mx$N16" --disk-offsets-mb "$(seq -s, 0 16 $(((N16 - 1) * 16)))" \
		--out "$R/tcp-node1.json" || rc=1
	mark tcp.done

	wait_on ready.ssd16
	say "ssd16: timed gets"
	"${PY[@]}" get --manifest "$SH/man-ssd16.json" --phase ssd16 --want-source remote-ssd \
		--pair-host "$(ip_of 2)" --pair-disk-offsets-mb "$(seq -s, 0 16 $(((N16 - 1) * 16)))" \
		--cpu-host "$(ip_of 2)" --ctl "$CTL" --out "$R/get-ssd16.json" || rc=1
	mark got.ssd16

	if [ "$N4S" -gt 0 ]; then
		wait_on ready.ssd4
		say "ssd4: timed gets"
		"${PY[@]}" get --manifest "$SH/man-ssd4.json" --phase ssd4 --want-source remote-ssd \
			--cpu-host "$(ip_of 2)" --ctl "$CTL" --out "$R/get-ssd4.json" || rc=1
		mark got.ssd4
	fi

	# the background CPU a phase's window pays too, both guests quiet
	wait_on quiet.2
	"${PY[@]}" cpuidle --host "$(ip_of 2)" --seconds 3 --out "$R/cpu-idle.json" ||
		say "cpuidle failed"

	iperf_server iperf2.ready
	wait_on iperf2.done
	wait "$IPERF" 2>/dev/null || true
	[ "$TRANSPORT" != rdma ] || perf_round end
else
	wait_on master-up
	[ -e "$DEV" ] || die "no $DEV (tools/vm/cluster --disk ssd0:1G)"
	"$CTL" config attach /tmp/fkv.yaml >/dev/null || die "SSD attach"
	start_daemon
	[ "$TRANSPORT" != rdma ] || rdma_registered
	# node1 samples our CPU counters right around its timed loops
	rm -f /tmp/cpu.ready
	"${PY[@]}" cpuserve --ready /tmp/cpu.ready &
	CPUSRV=$!
	for ((t = 0; t < 300; t++)); do
		[ ! -e /tmp/cpu.ready ] || break
		sleep 0.1
	done
	joined=""
	for ((t = 0; t < 300; t++)); do
		if "$CTL" cluster --json 2>/dev/null | grep -q '"joined": *1'; then
			joined=1
			break
		fi
		sleep 0.2
	done
	[ -n "$joined" ] || die "never joined the master (see $LOG)"
	mark up.2

	wait_on iperf1.ready
	iperf_client start
	mark iperf1.done
	[ "$TRANSPORT" != rdma ] || perf_round start

	phase_put() {	# phase_put PHASE PREFIX COUNT SIZE
		local c0
		c0=$(stat_of ssd_commits_published)
		say "$1: putting $3 x $4"
		"${PY[@]}" put --prefix "$2" --count "$3" --size "$4" --manifest "$SH/man-$1.json.tmp" ||
			die "$1: puts"
		committed $((c0 + $3))
		settle
	}
	# A cluster put's latency: one round trip to the master (PUT), timed
	# while node1 waits for the first phase (nothing else on the link).
	ot0=$(stat_of puts_one_trip)
	say "put4k: 64 timed 4 KiB puts"
	"${PY[@]}" put --prefix p --count 64 --size 4K --manifest "$R/put-node2.json" ||
		die "put4k: puts"
	echo "{\"puts_one_trip\": $(($(stat_of puts_one_trip) - ot0))}" >"$R/put-node2-trips.json"
	"${PY[@]}" delete "$R/put-node2.json" || die "put4k: delete"
	for spec in mem4:a:$N4:4M mem4c4:c:$N4:4M mem1:b:$N1:1M; do
		IFS=: read -r ph pre cnt sz <<<"$spec"
		phase_put "$ph" "$pre" "$cnt" "$sz"
		mv "$SH/man-$ph.json.tmp" "$SH/man-$ph.json"
		"${PY[@]}" snap --ctl "$CTL" --out "$R/snap-node2-$ph-before.json"
		mark "ready.$ph"
		wait_on "got.$ph"
		"${PY[@]}" snap --ctl "$CTL" --out "$R/snap-node2-$ph-after.json"
		"${PY[@]}" delete "$SH/man-$ph.json" || die "delete"
	done

	phase_put ssd16 s "$N16" 16M
	fillman=(--manifest "$SH/man-ssd16.json.tmp")
	if [ "$N4S" -gt 0 ]; then
		phase_put ssd4 t "$N4S" 4M
		fillman+=(--manifest "$SH/man-ssd4.json.tmp")
	fi
	"${PY[@]}" fill "${fillman[@]}" --prefix f --size 8M --max 64 \
		--out "$R/fill-node2.json" || die "fillers did not evict the SSD phases' values"
	"${PY[@]}" delete "$R/fill-node2.json" || die "delete fillers"
	settle
	say "disk baseline"
	offs=$(seq -s, 0 16 $(((N16 - 1) * 16)))
	"${PY[@]}" diskread --dev "$DEV" --size 16M --offsets-mb "$offs" --out "$R/disk-node2.json" ||
		die "diskread"
	if [ "$N4S" -gt 0 ]; then
		"${PY[@]}" diskread --dev "$DEV" --size 4M --out "$R/disk4-node2.json" \
			--offsets-mb "$(seq -s, 0 4 $(((N4S - 1) * 4)))" || die "diskread 4M"
	fi
	"${PY[@]}" tcpserve --dev "$DEV" --ready "$SH/tcp.ready" &
	srv=$!
	wait_on tcp.done
	wait "$srv" || say "tcpserve: exit $?"
	mv "$SH/man-ssd16.json.tmp" "$SH/man-ssd16.json"
	"${PY[@]}" snap --ctl "$CTL" --out "$R/snap-node2-ssd16-before.json"
	# the paired baseline node1 times right after each get
	"${PY[@]}" tcpserve --port 7600 --dev "$DEV" --ready /tmp/pair.ready &
	srv=$!
	while [ ! -e /tmp/pair.ready ]; do sleep 0.1; done
	mark ready.ssd16
	wait_on got.ssd16
	wait "$srv" || say "tcpserve: exit $?"
	"${PY[@]}" snap --ctl "$CTL" --out "$R/snap-node2-ssd16-after.json"
	if [ "$N4S" -gt 0 ]; then
		mv "$SH/man-ssd4.json.tmp" "$SH/man-ssd4.json"
		cp "$R/snap-node2-ssd16-after.json" "$R/snap-node2-ssd4-before.json"
		mark ready.ssd4
		wait_on got.ssd4
		"${PY[@]}" snap --ctl "$CTL" --out "$R/snap-node2-ssd4-after.json"
	fi
	mark quiet.2

	wait_on iperf2.ready
	iperf_client end
	mark iperf2.done
	[ "$TRANSPORT" != rdma ] || perf_round end
fi

cat /sys/kernel/debug/fluxonkv/latency >"$R/latency-node$I.txt" 2>/dev/null || true
"$CTL" cluster --json >"$R/cluster-node$I.json" 2>/dev/null || true
mark "done.$I"
wait_on "done.$((3 - I))"
kill "$DPID" 2>/dev/null || true
wait "$DPID" 2>/dev/null || true
if [ -n "${CPUSRV:-}" ]; then
	kill "$CPUSRV" 2>/dev/null || true
	wait "$CPUSRV" 2>/dev/null || true
fi
if dmesg | grep -E -q 'BUG|WARNING:|Oops|general protection'; then
	say "kernel splat:"
	dmesg | tail -n 30 | sed 's/^/# /'
	rc=1
fi
rmmod fluxonkv 2>/dev/null || true
say "done (exit $rc)"
exit "$rc"
