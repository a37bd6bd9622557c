# SPDX-License-Identifier: GPL-2.0
# Helpers the cluster tests share (sourced, not run): TAP output into
# $FLUXON_RESULTS/<name>-node<I>.tap, and meeting the other guests through
# marker files in $FLUXON_SHARED.  Set TAP_NAME before sourcing.
: "${FLUXON_NODE:?run me through tools/vm/cluster}" "${FLUXON_NODES:?}" \
	"${FLUXON_SHARED:?}" "${FLUXON_NODE_IPS:?}" "${FLUXON_NODE_IP:?}"
I=$FLUXON_NODE
N=$FLUXON_NODES
SH=$FLUXON_SHARED
read -r -a IPS <<<"$FLUXON_NODE_IPS"
ip_of() { echo "${IPS[$1 - 1]}"; }
WAIT=${CLUSTER_WAIT:-120}	# seconds any node waits for another

tap=""
if [ -n "${FLUXON_RESULTS:-}" ] && [ -d "$FLUXON_RESULTS" ]; then
	tap=$FLUXON_RESULTS/${TAP_NAME:?}-node$I.tap
	: >"$tap"
fi
out() {
	printf '%s\n' "$*"
	[ -z "$tap" ] || printf '%s\n' "$*" >>"$tap"
}
n=0
failed=0
ok() { n=$((n + 1)); out "ok $n node$I: $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); out "not ok $n node$I: $*"; }
skip() { n=$((n + 1)); out "ok $n node$I: $1 # SKIP $2"; }
diag() { out "# $*"; }
check() {	# check NAME CMD...: one test from CMD's status
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# wait_for FILE...: until every FILE exists in $SH (or $WAIT seconds pass).
wait_for() {
	local deadline=$((SECONDS + WAIT)) f
	for f in "$@"; do
		until [ -e "$SH/$f" ]; do
			[ "$SECONDS" -lt "$deadline" ] || { diag "timed out waiting for $f"; return 1; }
			sleep 0.2
		done
	done
}
mark() { : >"$SH/$1.tmp"; mv "$SH/$1.tmp" "$SH/$1"; }
all_nodes() { local j; for ((j = 1; j <= N; j++)); do printf '%s%s ' "$1" "$j"; done; }
