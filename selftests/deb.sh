#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages as a new user meets them, in a fresh guest:
#   tools/vm/run --cpus 1 --disk debssd:512M --results DIR -- \
#       selftests/deb.sh [--prebuilt TARBALL] [--quick] DEBDIR BUILD
#
# Without --prebuilt (`make deb-test-full`) the package's postinst compiles
# the module in the guest, which under TCG takes ~5 minutes.  With it
# (`make deb-test`, part of `make check`) TARBALL is the same dkms build
# done natively beforehand (selftests/deb-prebuild.sh: dkms add + build +
# mktarball of the .deb's source against the same headers), put where the
# Debian dkms postinst looks for a prebuilt one
# (/usr/share/fluxonkv-dkms/fluxonkv-VERSION.dkms.tar.gz): the postinst
# then runs dkms ldtarball and dkms install instead of compiling.
# --quick leaves out the last test, dpkg --purge (its dkms remove and
# depmod cost about a minute under TCG).
#
# The guest's root is the host's, read-only over 9p: the packages go into
# an overlay of it (upper layer on tmpfs), chrooted into, so nothing is
# ever installed on the host.  In that root: dpkg -i the .debs (no
# network: their dependencies are the host's), whose postinst runs the
# real dkms add/build/install (or ldtarball/install, above) of
# fluxonkv-dkms for the guest kernel;
# modprobe loads the DKMS-built module with the packaged modprobe.d
# options; one YAML declares DRAM + an SSD tier (ext4 on a virtio disk);
# fluxond starts the way fluxond.service starts it (see start_service: the
# guest has no systemd as PID 1); the demo's load (fkvload) passes; a
# second load is cut by kill -9 of fluxond mid-put; fluxond restarts the
# same way and every value put before the kill is served, byte for byte;
# the packaged Python module works from the installed location.
#
# TAP on stdout and in $FLUXON_RESULTS/deb.tap; dpkg's output (a
# timestamp per line), dkms's make.log, fluxond's logs and the loads'
# summaries next to it.
set -uo pipefail
# shellcheck disable=SC2317 # the steps run through check()

PREBUILT=""
QUICK=""
while [ $# -gt 0 ]; do
	case "$1" in
	--prebuilt) PREBUILT=${2:?--prebuilt wants a dkms tarball}; shift 2 ;;
	--quick) QUICK=1; shift ;;
	*) break ;;
	esac
done
DEBS=${1:?usage: selftests/deb.sh [--prebuilt TARBALL] [--quick] DEBDIR BUILD}
BUILD=${2:?usage: selftests/deb.sh [--prebuilt TARBALL] [--quick] DEBDIR BUILD}
if [ "${FLUXON_VM:-}" != 1 ]; then
	echo "deb.sh: installs packages, so it only runs in the guest (tools/vm/run)" >&2
	exit 125
fi
DEBS=$(cd "$DEBS" && pwd) && BUILD=$(cd "$BUILD" && pwd) || exit 125
[ -z "$PREBUILT" ] || [ -f "$PREBUILT" ] || { echo "deb.sh: no $PREBUILT" >&2; exit 125; }
RES=${FLUXON_RESULTS:-/tmp}
TAP=$RES/deb.tap
: >"$TAP"
OVL=/tmp/debroot
R=$OVL/merged			# the root the packages go into
SSD_DEV=/dev/disk/by-id/virtio-debssd
SSD_DIR=/srv/fluxonkv-ssd	# inside $R
KVER=$(uname -r)
SEG_MB=64
KEYS_A=80			# the demo's dataset: 1.25 x DRAM, so the SSD tier serves too
KEYS_B=96

out() { printf '%s\n' "$*"; printf '%s\n' "$*" >>"$TAP"; }
n=0
failed=0
last=0		# the status of the last test
ok() { n=$((n + 1)); last=0; out "ok $n $*"; }
not_ok() { n=$((n + 1)); last=1; failed=$((failed + 1)); out "not ok $n $*"; }
diag() { out "# $*"; }
# check NAME CMD...: one test from CMD's status
check() {
	local name=$1 t0=$SECONDS
	shift
	if "$@"; then ok "$name ($((SECONDS - t0)) s)"; else not_ok "$name"; fi
}
# After a step the rest needs: if it failed, the remaining tests are
# reported as not run (failed), and the script ends.
PLAN=18
[ -z "$QUICK" ] || PLAN=17
need() {
	[ "$last" -eq 0 ] && return 0
	while [ "$n" -lt "$PLAN" ]; do
		not_ok "not run: an earlier step failed # $*"
	done
	finish
}
finish() {
	stop_daemon
	[ -z "${mounted:-}" ] || teardown
	diag "total $SECONDS s"
	exit $((failed ? 1 : 0))
}

# in_root CMD...: CMD in the package root, with the environment a service
# or a login there would have.
in_root() {
	chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

setup_root() {
	modprobe overlay || return 1
	mkdir -p "$OVL/upper" "$OVL/work" "$R" || return 1
	# lower: the guest's / (the host root over 9p); overlayfs does not
	# descend into the guest's own tmpfs mounts, which come back below
	mount -t overlay overlay \
		-o "lowerdir=/,upperdir=$OVL/upper,workdir=$OVL/work,index=off,xino=off" "$R" ||
		return 1
	mounted=1
	mount -t proc proc "$R/proc" &&
		mount --rbind /sys "$R/sys" &&
		mount --rbind /dev "$R/dev" || return 1
	# a fresh /run: no /run/systemd/system, so maintainer scripts know
	# systemd is not running; fresh /tmp and /var/tmp, not the host's
	for d in run tmp var/tmp root; do
		mount -t tmpfs -o mode=1777 tmpfs "$R/$d" || return 1
	done
	chmod 0700 "$R/root"
	# the SSD tier: ext4 on the scratch disk (tmpfs has no O_DIRECT)
	mkfs.ext4 -q -F "$SSD_DEV" && mkdir -p "$R$SSD_DIR" &&
		mount "$SSD_DEV" "$R$SSD_DIR" || return 1
	if [ -n "$PREBUILT" ]; then
		mkdir -p "$R/usr/share/fluxonkv-dkms" &&
			cp "$PREBUILT" "$R/usr/share/fluxonkv-dkms/" || return 1
	fi
	mkdir -p "$R/tmp/debs" && cp "$DEBS"/*.deb "$R/tmp/debs/" &&
		rm -f "$R"/tmp/debs/*-dbgsym_*.deb &&
		cp "$BUILD/fkvload" "$R/tmp/fkvload" || return 1
	# dpkg runs the man-db trigger unless this file exists: a full mandb
	# pass over the host's pages under TCG costs minutes and tests nothing
	# of ours
	rm -f "$R/var/lib/man-db/auto-update"
	# the host has none of our packages: the guest root starts clean
	! in_root dpkg-query -W fluxonkv-tools >/dev/null 2>&1
}

teardown() {
	rmmod fluxonkv 2>/dev/null
	umount "$R$SSD_DIR" 2>/dev/null
	umount -R "$R" 2>/dev/null || umount -l "$R" 2>/dev/null
	mounted=""
}

install_debs() {
	local rc=0
	# each line with the seconds since the start: where the time goes
	in_root sh -c 'dpkg -i /tmp/debs/*.deb 2>&1; echo "dpkg-rc=$?"' |
		while IFS= read -r line; do echo "[$SECONDS] $line"; done >"$RES/dpkg.log"
	rc=$(sed -n 's/.*dpkg-rc=\([0-9]*\)$/\1/p' "$RES/dpkg.log")
	cat "$R"/var/lib/dkms/fluxonkv/*/"$KVER"/*/log/make.log >"$RES/dkms-make.log" 2>/dev/null
	grep -E 'Building|Installing|Setting up|Loading|DKMS|dkms|rror|depmod|Processing' "$RES/dpkg.log" | sed 's/^/# /'
	[ "$rc" = 0 ] || { tail -n 40 "$RES/dpkg.log"; return 1; }
	for p in fluxonkv-dkms libfluxonkv1 libfluxonkv-dev fluxonkv-tools python3-fluxonkv python3-fluxonkv-mooncake; do
		[ "$(in_root dpkg-query -W -f='${Status}' "$p")" = "install ok installed" ] ||
			{ echo "$p is not installed"; return 1; }
	done
}

dkms_built_it() {
	local ko
	in_root dkms status fluxonkv | tee /dev/stderr | grep -q "fluxonkv/.*, $KVER, .*: installed" ||
		return 1
	ko=$(in_root modinfo -k "$KVER" -n fluxonkv) || return 1
	echo "# $ko"
	# DKMS's own build, in the package root, for the running kernel
	case "$ko" in /lib/modules/"$KVER"/updates/dkms/fluxonkv.ko*) ;; *) return 1 ;; esac
	[ "$(in_root modinfo -k "$KVER" -F vermagic fluxonkv | cut -d' ' -f1)" = "$KVER" ] || return 1
	if [ -n "$PREBUILT" ]; then
		# the postinst took the prebuilt binaries: loaded, not compiled
		! grep -q 'Building initial module' "$RES/dpkg.log" &&
			cmp "$(dirname "$PREBUILT")/fluxonkv.ko" "$R$ko"
	else
		grep -q "Building initial module for $KVER" "$RES/dpkg.log" &&
			[ -s "$RES/dkms-make.log" ]
	fi
}

load_module() {
	# the packaged modprobe.d file, with its documented line uncommented
	sed -i "s/^#options fluxonkv .*/options fluxonkv segment_mb=$SEG_MB/" \
		"$R/etc/modprobe.d/fluxonkv.conf" || return 1
	grep -qx "options fluxonkv segment_mb=$SEG_MB" "$R/etc/modprobe.d/fluxonkv.conf" || return 1
	rmmod fluxonkv 2>/dev/null
	in_root modprobe fluxonkv || return 1
	[ "$(cat /sys/module/fluxonkv/parameters/segment_mb)" = "$SEG_MB" ] &&
		[ -c /dev/fluxonkv ] &&
		[ "$(in_root getent group fluxonkv | cut -d: -f1)" = fluxonkv ]	# sysusers ran
}

write_config() {
	cat >"$R/etc/fluxonkv/fluxonkv.yaml" <<EOF
# written by selftests/deb.sh: DRAM + one SSD directory
fluxonkv_spec:
  cluster_name: debtest
  instance: guest
  large_file_paths: [$SSD_DIR]
  large_limit_size: ["256MB"]
  policy: s3fifo
  log_level: info
EOF
	in_root fluxonctl config check /etc/fluxonkv/fluxonkv.yaml
}

# ---- fluxond the way fluxond.service runs it ---------------------------------
# No systemd as PID 1 in the guest: read the installed unit and do what
# systemd does with it -- Environment= into the environment, each
# ExecStartPre= ("+": full privileges, which is what we have; "-": failure
# ignored), then ExecStart= with $VAR expanded, with NOTIFY_SOCKET set (Type=
# notify: the start is complete at READY=1).  The sandbox lines cannot be
# applied without systemd; systemd-analyze verify checks them
# (selftests/install.bats).
UNIT=/lib/systemd/system/fluxond.service
DPID=""
unit_lines() { sed -n "s/^$1=//p" "$R$UNIT"; }
# $VAR and ${VAR} of the unit's Environment= (in $envs) expanded, as systemd does
expand() {
	local s=$1 kv k v
	for kv in "${envs[@]}"; do
		k=${kv%%=*} v=${kv#*=}
		s=${s//"\${$k}"/$v}
		s=${s//"\$$k"/$v}
	done
	printf '%s\n' "$s"
}
start_service() {
	local log=$1 envs=() line cmd ignore
	grep -qx 'Type=notify' "$R$UNIT" || { echo "unit is not Type=notify"; return 1; }
	while IFS= read -r line; do envs+=("$line"); done < <(unit_lines Environment)
	while IFS= read -r line; do
		ignore=""
		while :; do
			case "$line" in
			-*) ignore=1; line=${line#-} ;;
			+*|!*|@*|:*) line=${line#?} ;;
			*) break ;;
			esac
		done
		cmd=$(expand "$line")
		echo "# ExecStartPre: $cmd"
		# shellcheck disable=SC2086 # the unit's words
		in_root env "${envs[@]}" $cmd >>"$log" 2>&1 || [ -n "$ignore" ] ||
			{ echo "ExecStartPre failed: $cmd"; cat "$log"; return 1; }
	done < <(unit_lines ExecStartPre)
	cmd=$(unit_lines ExecStart)
	cmd=$(expand "$cmd")
	echo "# ExecStart: $cmd"
	rm -f "$R/run/notify.sock" "$R/run/notify.msgs"
	# the notify socket systemd would listen on, inside the root
	in_root python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/notify.sock")
s.settimeout(120)
with open("/run/notify.msgs", "a") as f:
    while True:
        m = s.recv(4096).decode()
        f.write(m + "\n"); f.flush()
        if "READY=1" in m.split("\n"):
            sys.exit(0)
' &
	local lpid=$!
	for _ in $(seq 50); do [ -S "$R/run/notify.sock" ] && break; sleep 0.1; done
	# a simple command, so that $! is fluxond itself (chroot and env exec)
	# shellcheck disable=SC2086 # the unit's words
	chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		"${envs[@]}" NOTIFY_SOCKET=/run/notify.sock $cmd >>"$log" 2>&1 &
	DPID=$!
	if ! wait "$lpid"; then
		echo "no READY=1 from fluxond"; cat "$log"; return 1
	fi
	sed 's/^/# notify: /' "$R/run/notify.msgs"
	# READY came from the daemon the module knows
	[ "$(cat /sys/kernel/fluxonkv/daemon_pid)" != 0 ] && kill -0 "$DPID"
}
stop_daemon() {
	[ -n "$DPID" ] || return 0
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=""
}

ssd_attached() {
	local cap
	cap=$(cat /sys/kernel/fluxonkv/kv_ssd_capacity_bytes)
	echo "# SSD tier: $((cap >> 20)) MiB"
	[ "$cap" -ge $((200 << 20)) ] &&
		ls "$R$SSD_DIR"/debtest_cluster_kv_ssd_storage/guest/ >/dev/null
}

demo_load() {
	in_root /tmp/fkvload --keys $KEYS_A --procs 2 --gets 100 --prefix a- \
		>"$RES/fkvload-a.txt" 2>&1
	local rc=$?
	sed 's/^/# /' "$RES/fkvload-a.txt"
	# the dataset is bigger than DRAM: the SSD tier must have served some
	[ "$rc" -eq 0 ] && grep -Eq 'hits .*SSD [1-9]' "$RES/fkvload-a.txt"
}

# A second load in the background; fluxond killed -9 once a quarter of its
# puts are in.  PUT_B: how many of its puts succeeded before the kill.
PUT_B=0
kill_mid_load() {
	local log=$RES/fkvload-b.txt lpid p0 p t
	: >"$log"
	read -r p0 </sys/kernel/fluxonkv/puts
	in_root /tmp/fkvload --keys $KEYS_B --procs 1 --gets 50 --prefix b- >"$log" 2>&1 &
	lpid=$!
	# Local puts need no daemon until it is gone: kill it a few puts in,
	# watched with builtins only (a load of ~100 puts/s outruns a loop
	# that forks grep).
	for ((t = 0; t < 600000; t++)); do
		read -r p </sys/kernel/fluxonkv/puts
		[ "$p" -lt $((p0 + 8)) ] || break
		((t % 1000)) || kill -0 "$lpid" 2>/dev/null || break
	done
	kill -9 "$DPID" || return 1
	wait "$DPID" 2>/dev/null
	DPID=""
	diag "fluxond killed -9 at: $(grep '^put ' "$log" | tail -n 1)"
	wait "$lpid"
	local rc=$?
	sed 's/^/# /' "$log"
	# the last progress line counts the puts that returned success
	PUT_B=$(sed -n "s|^put \([0-9]*\)/$KEYS_B\$|\1|p" "$log" | tail -n 1)
	[ -n "$PUT_B" ] || return 1
	diag "$PUT_B of $KEYS_B puts of the cut load succeeded"
	# it really was cut mid-put: a put failed, the load did not finish
	[ "$rc" -ne 0 ] && [ "$PUT_B" -gt 0 ] && [ "$PUT_B" -lt "$KEYS_B" ] &&
		grep -q '^fkvload: put b-' "$log"
}

restart_adopts() {
	start_service "$RES/fluxond-2.log" || return 1
	grep -E 'warm restart|adopt' "$RES/fluxond-2.log" | sed 's/^/# /'
	grep -q 'warm restart (single node): adopted' "$RES/fluxond-2.log"
}

verify() {	# verify PREFIX KEYS
	in_root /tmp/fkvload --verify --keys "$2" --prefix "$1" >"$RES/verify-$1.txt" 2>&1
	local rc=$?
	sed 's/^/# /' "$RES/verify-$1.txt"
	[ "$rc" -eq 0 ] && grep -q "^fkvload verify: $2/$2 values intact" "$RES/verify-$1.txt" && return 0
	# what the restarted master says it holds and did, for whoever reads this
	grep -E 'adopted|stats:' "$RES/fluxond-2.log" | sed 's/^/# /'
	return 1
}

after_restart_put_get() {
	in_root fluxonctl put after/restart --value "served by the restarted daemon" &&
		[ "$(in_root fluxonctl get after/restart)" = "served by the restarted daemon" ] &&
		in_root fluxonctl get --info after/restart | grep -q '^source: *memory'
}

tools_report() {
	local v
	v=$(in_root fluxonctl --version) || return 1
	echo "# $v"
	[ "$(echo "$v" | cut -d' ' -f2)" = "$(cat /sys/kernel/fluxonkv/version)" ] &&
		in_root fluxonctl -j status | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d else 1)' &&
		in_root bash -c '. /usr/share/bash-completion/completions/fluxonctl;
			COMP_WORDS=(fluxonctl dump r); COMP_CWORD=2; _fluxonctl;
			[ "${COMPREPLY[*]}" = "replicas rings" ]'
}

python_binding() {
	# a 1 MiB value put by C just before (the loads' oldest values may
	# have left both tiers by now: the SSD ring wraps)
	head -c 1048448 /dev/urandom >"$R/tmp/py-c.bin" &&
		in_root fluxonctl put py/c /tmp/py-c.bin || return 1
	# from / so that only the installed package can be imported
	in_root sh -c 'cd / && python3 -c "
import fluxonkv, fluxonkv._native, sys
for m in (fluxonkv, fluxonkv._native):
    assert m.__file__.startswith(\"/usr/lib/python3/dist-packages/fluxonkv/\"), m.__file__
with fluxonkv.Store() as kv:
    kv.put(\"py/key\", b\"from python3-fluxonkv\")
    with kv.get(\"py/key\") as h:
        got = bytes(memoryview(h))	# the buffer protocol, zero copy until bytes()
    assert got == b\"from python3-fluxonkv\", got
    with kv.get(\"py/c\") as h:	# the value fluxonctl (C) put
        assert bytes(memoryview(h)) == open(\"/tmp/py-c.bin\", \"rb\").read()
print(\"# python3-fluxonkv:\", fluxonkv._native.__file__)
" 2>&1' >"$RES/python.log" || { sed 's/^/# /' "$RES/python.log"; return 1; }
	local got needed
	got=$(in_root fluxonctl get py/key) ||
		{ diag "fluxonctl get py/key failed"; return 1; }
	[ "$got" = "from python3-fluxonkv" ] ||
		{ diag "fluxonctl get py/key gave '$got'"; return 1; }
	# the extension links the packaged shared library (its import above
	# found it): DT_NEEDED, not a copy of the static archive
	needed=$(in_root sh -c 'readelf -d /usr/lib/python3/dist-packages/fluxonkv/_native*.so' |
		grep NEEDED)
	echo "$needed" | grep -q 'Shared library: \[libfluxonkv.so.1\]' ||
		{ echo "$needed" | sed 's/^/# /'; return 1; }
}

mooncake_shim() {
	# what SGLang, vLLM and LMCache import, from the opt-in package
	in_root sh -c 'cd / && python3 -c "
import mooncake, mooncake.store as ms, fluxonkv.mooncake as fm
assert ms.__file__.startswith(\"/usr/lib/python3/dist-packages/mooncake/\"), ms.__file__
assert ms.MooncakeDistributedStore is fm.MooncakeDistributedStore and mooncake.FLUXONKV
s = ms.MooncakeDistributedStore()
assert s.setup(\"node\", \"P2PHANDSHAKE\", 1 << 30, 1 << 20, \"tcp\", \"\", \"127.0.0.1:50051\") == 0
assert s.put(\"py/shim\", b\"through mooncake.store\", ms.ReplicateConfig()) == 0
assert s.is_exist(\"py/shim\") == 1 and s.get(\"py/shim\") == b\"through mooncake.store\"
assert s.close() == 0
" 2>&1' >"$RES/mooncake.log" || { sed 's/^/# /' "$RES/mooncake.log"; return 1; }
	[ "$(in_root fluxonctl get py/shim)" = "through mooncake.store" ]
}

remove_purge() {
	stop_daemon
	rmmod fluxonkv || return 1
	in_root sh -c 'dpkg --purge python3-fluxonkv-mooncake python3-fluxonkv fluxonkv-tools libfluxonkv-dev libfluxonkv1 fluxonkv-dkms 2>&1; echo "dpkg-rc=$?"' |
		while IFS= read -r line; do echo "[$SECONDS] $line"; done >"$RES/dpkg-purge.log"
	grep -q 'dpkg-rc=0$' "$RES/dpkg-purge.log" || { cat "$RES/dpkg-purge.log"; return 1; }
	# dkms removed what it built, and the package files are gone
	[ -z "$(in_root dkms status fluxonkv 2>/dev/null)" ] &&
		[ ! -e "$R/lib/modules/$KVER/updates/dkms/fluxonkv.ko" ] &&
		[ ! -e "$R/usr/sbin/fluxond" ] && [ ! -e "$R/usr/src/fluxonkv-0.1.0" ]
}

out "TAP version 13"
out "1..$PLAN"
diag "kernel $KVER, $(nproc) CPU(s); packages from $DEBS"
check "an overlay of the read-only root to install into" setup_root
need "setup"
if [ -n "$PREBUILT" ]; then
	check "dpkg -i the .debs (dkms ldtarball of the native build, dkms install for $KVER)" install_debs
else
	check "dpkg -i the .debs (dkms add, build and install for $KVER)" install_debs
fi
need "install"
check "dkms ${PREBUILT:+(natively) }built fluxonkv.ko against $KVER's headers and installed it" dkms_built_it
need "dkms"
check "modprobe loads the DKMS module with the packaged modprobe.d options; sysusers made the group" load_module
need "module"
check "one YAML (DRAM + SSD) passes fluxonctl config check" write_config
check "fluxond starts as fluxond.service does (ExecStartPre attach, READY=1)" start_service "$RES/fluxond-1.log"
need "fluxond"
check "the SSD tier the YAML declares is attached (shards under $SSD_DIR)" ssd_attached
check "fluxonctl --version, -j status and bash completion from the package" tools_report
check "the demo's load (fkvload, $KEYS_A x 1 MiB into $SEG_MB MiB DRAM + SSD) passes" demo_load
check "kill -9 of fluxond in the middle of a second load's puts" kill_mid_load
check "fluxond restarts the same way and adopts the module's replicas" restart_adopts
need "restart"
check "every value of the first load is still served, byte for byte" verify a- $KEYS_A
check "every value the cut load put before the kill is still served" verify b- "$PUT_B"
check "puts and gets work again after the restart" after_restart_put_get
check "python3-fluxonkv puts and gets from its installed location" python_binding
check "python3-fluxonkv-mooncake: 'from mooncake.store import MooncakeDistributedStore' runs on fluxonkv" mooncake_shim
check "the daemon's logs have no error lines" eval '! grep "fluxond: error" "$RES"/fluxond-*.log'
[ -n "$QUICK" ] || check "dpkg --purge removes everything, dkms included" remove_purge
finish
