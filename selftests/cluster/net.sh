#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Smoke test of the guests' network, run in every guest by tools/vm/cluster:
#   tools/vm/cluster --nodes 2 --results DIR -- selftests/cluster/net.sh
# Each node checks its address, meets the others through $FLUXON_SHARED,
# pings every peer, receives a TCP stream from every higher node and sends
# one to every lower node (64 MiB node2 -> node1, 16 MiB otherwise; each
# checked byte-exact by sha256), and measures node2 -> node1 with iperf3
# (with 3+ nodes also node3 -> node2, which crosses node1's hub).  TAP 13 on
# stdout and in $FLUXON_RESULTS/net-<N>n-node<I>.tap (helpers: lib.sh); exit 0,
# or 1 if a test failed.
set -euo pipefail

TAP_NAME=net-${FLUXON_NODES:-0}n
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
PORT0=5300		# node J streams to node I on PORT0 + J
size_of() { if [ "$1" -eq 1 ] && [ "$2" -eq 2 ]; then echo 64; else echo 16; fi; }	# MiB, pair (lo, hi)

# The plan: address, meeting, a ping per peer, a stream per peer, iperf3
# runs, the closing meeting.
plan=$((1 + 1 + (N - 1) + (N - 1) + 1))
[ "$I" -ne 2 ] || plan=$((plan + 1))
[ "$I" -ne 3 ] || plan=$((plan + 1))
out "TAP version 13"
out "1..$plan"

has_addr() {
	local addrs
	addrs=$(ip -4 -o addr show dev eth0)
	[[ $addrs == *" inet $FLUXON_NODE_IP/24 "* ]] && [ "$(hostname)" = "node$I" ]
}
check "eth0 has $FLUXON_NODE_IP/24, hostname node$I" has_addr

# Servers first: one receiver per higher node, iperf3 for its client.
receiver() {	# receiver FROM: count and hash one TCP stream into $SH/rx.FROM.I
	/usr/bin/python3 - "$((PORT0 + $1))" "$SH/rx.$1.$I" <<-'EOF'
	import hashlib, os, socket, sys
	port, path = int(sys.argv[1]), sys.argv[2]
	s = socket.socket()
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("0.0.0.0", port))
	s.listen(1)
	s.settimeout(300)
	c, _ = s.accept()
	h, total = hashlib.sha256(), 0
	while True:
	    b = c.recv(1 << 20)
	    if not b:
	        break
	    h.update(b)
	    total += len(b)
	with open(path + ".tmp", "w") as f:
	    f.write("%d %s\n" % (total, h.hexdigest()))
	os.rename(path + ".tmp", path)
	EOF
}
pids=()
ports=()
for ((j = I + 1; j <= N; j++)); do
	receiver "$j" &
	pids+=($!)
	ports+=($((PORT0 + j)))
done
have_iperf=""
command -v iperf3 >/dev/null && have_iperf=1
if [ -n "$have_iperf" ] && { [ "$I" -eq 1 ] || { [ "$I" -eq 2 ] && [ "$N" -ge 3 ]; }; }; then
	iperf3 -s -1 >/tmp/iperf3-server.log 2>&1 &
	pids+=($!)
	ports+=(5201)
fi
# Every listener binds before the others hear this node is up.
for p in ${ports[@]+"${ports[@]}"}; do
	for ((t = 0; t < 300; t++)); do
		[ -z "$(ss -Hltn "sport = :$p")" ] || break
		sleep 0.1
	done
done
mark "up.$I"
# shellcheck disable=SC2046 # the marker names have no spaces
check "meets all $N nodes through the shared directory" wait_for $(all_nodes up.)

pings() { busybox ping -q -c 3 -W 10 "$1" >/dev/null; }
for ((j = 1; j <= N; j++)); do
	[ "$j" -ne "$I" ] || continue
	check "reaches node$j at $(ip_of "$j") (ping)" pings "$(ip_of "$j")"
done

# Streams to lower nodes: random data, sent through bash's /dev/tcp.
send_to() {	# send_to J: stream to node J, compare with what J hashed
	local j=$1 mib want got
	mib=$(size_of "$j" "$I")
	head -c "${mib}M" /dev/urandom >/tmp/blob
	want="$((mib << 20)) $(sha256sum </tmp/blob | cut -d' ' -f1)"
	if ! cat /tmp/blob >"/dev/tcp/$(ip_of "$j")/$((PORT0 + I))"; then
		diag "sending to node$j failed"
		return 1
	fi
	rm -f /tmp/blob
	wait_for "rx.$I.$j" || return 1
	got=$(cat "$SH/rx.$I.$j")
	[ "$got" = "$want" ] || { diag "sent '$want', node$j got '$got'"; return 1; }
}
for ((j = 1; j < I; j++)); do
	check "sends $(size_of "$j" "$I") MiB to node$j over TCP, byte-exact (sha256)" send_to "$j"
done
received() {	# received J: node J's stream arrived whole
	local j=$1 got
	wait_for "rx.$j.$I" || return 1
	got=$(cat "$SH/rx.$j.$I")
	[ "${got%% *}" -eq "$(($(size_of "$I" "$j") << 20))" ] || { diag "from node$j: $got"; return 1; }
}
for ((j = I + 1; j <= N; j++)); do
	check "receives $(size_of "$I" "$j") MiB from node$j" received "$j"
done

# Throughput, one run at a time: node2 -> node1, then node3 -> node2.
iperf_to() {	# iperf_to J NAME
	local j=$1 name=$2 mbit
	if [ -z "$have_iperf" ]; then
		skip "$name" "iperf3 not installed"
		return
	fi
	if ! iperf3 -c "$(ip_of "$j")" -t 3 -J >/tmp/iperf3.json 2>&1; then
		diag "$(tail -n 5 /tmp/iperf3.json)"
		not_ok "$name"
		return
	fi
	mbit=$(/usr/bin/python3 -c 'import json, sys
print(round(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' /tmp/iperf3.json)
	ok "$name"
	diag "link $mbit Mbit/s (node$I -> node$j, MTU $(cat /sys/class/net/eth0/mtu))"
}
if [ "$I" -eq 2 ]; then
	iperf_to 1 "iperf3 to node1"
	mark "iperf.2"
fi
if [ "$I" -eq 3 ]; then
	if wait_for "iperf.2"; then
		iperf_to 2 "iperf3 to node2 (through node1's hub)"
	else
		not_ok "iperf3 to node2 (node2 never finished its run)"
	fi
fi

# Stay up (servers, the hub in node1's qemu) until everyone is through.
mark "done.$I"
# shellcheck disable=SC2046
check "all $N nodes finish" wait_for $(all_nodes done.)
for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
out "# node$I: $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
