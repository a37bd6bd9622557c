#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0
# The main job (make demo) at a small size, with an SSD tier on a loop
# device: it must pass its own content checks and its summary must add up.

setup() {
	[ "$(id -u)" = 0 ] || skip "needs root (runs in the VM)"
	[ -f "${FLUXONKV_KO:-}" ] || skip "FLUXONKV_KO not built"
	build=${FLUXONKV_BUILD:?}
	work=$(mktemp -d /tmp/demo-bats.XXXXXX)
}

teardown() {
	[ -n "${mnt:-}" ] && umount "$mnt" 2>/dev/null
	[ -n "${loopdev:-}" ] && losetup -d "$loopdev" 2>/dev/null
	rm -rf "$work"
}

@test "demo at a small size passes its content checks and its summary adds up" {
	modprobe loop 2>/dev/null || true
	truncate -s 160M "$work/ssd.img"
	loopdev=$(losetup --find --show "$work/ssd.img")
	mkfs.ext4 -q "$loopdev"
	mnt=$work/mnt
	mkdir -p "$mnt"
	mount "$loopdev" "$mnt"

	FLUXON_VM=1 FLUXON_DEMO_SEGMENT_MB=16 FLUXON_DEMO_SSD_MB=96 \
	FLUXON_DEMO_KEYS=20 FLUXON_DEMO_PROCS=2 FLUXON_DEMO_GETS=40 \
	FLUXON_DEMO_JSON=$work/summary.json \
		run tools/demo "$build" "$mnt"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"demo OK"* ]]

	python3 - "$work/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["gets"] == 2 * 40, s
assert s["hits"] + s["misses"] == s["gets"], s
assert s["hits_memory"] + s["hits_ssd"] == s["hits"], s
assert s["errors"] == 0 and s["content_errors"] == 0, s
# 20 MiB of data over a 16 MiB segment with an SSD tier: nothing is lost.
assert s["misses"] == 0, s
assert 0 < s["segment_used_bytes"] <= s["segment_capacity_bytes"], s
PY
}
