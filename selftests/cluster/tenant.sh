#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Tenants across two nodes (issue 30): run in both guests by tools/vm/cluster:
#   tools/vm/cluster --nodes 2 --results DIR -- selftests/cluster/tenant.sh
# Both nodes configure the same `tenants:` (alpha = 1, beta = 2); node1 runs
# the master.  node2 puts the same key K in tenant 0, alpha and beta (2 MiB
# each, different bytes) and a key only alpha has; node1 reads each tenant's
# K byte-exact (pulled from node2: the prefixed key crosses the wire as it
# is), beta misses alpha's own key.
# `fluxonctl tenants --json` on the master counts alpha's puts;
# `fluxonctl clear --tenant alpha` on node1 removes alpha's keys on both
# nodes and nothing of beta's or tenant 0's.  TAP in
# $FLUXON_RESULTS/tenant-node<I>.tap.
set -euo pipefail

TAP_NAME=tenant
# shellcheck source=selftests/cluster/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/cluster/node.sh
. "$(dirname "$0")/node.sh"

out "TAP version 13"
if [ "$N" -ne 2 ]; then
	out "1..0 # SKIP tenant.sh runs on exactly 2 nodes"
	exit 0
fi
if [ "$I" -eq 1 ]; then out "1..8"; else out "1..5"; fi

rmmod fluxonkv 2>/dev/null || true
check "module loads" insmod "$KO" segment_mb=64 request_timeout_ms=8000
config /tmp/fkv.yaml "$SECRET"
cat >>/tmp/fkv.yaml <<-EOC
  tenants:
    - {name: alpha, id: 1, uids: [0]}
    - {name: beta, id: 2, uids: [0]}
EOC
[ -z "${FLUXON_RESULTS:-}" ] || LOG=$FLUXON_RESULTS/fluxond-node$I.log
: >"$LOG"
start_daemon /tmp/fkv.yaml
check "fluxond registers and loads the tenant table" daemon_up
check "the segment is isolated" \
	grep -q '^isolated	1' /sys/kernel/debug/fluxonkv/tenants

# py CODE: run CODE with fluxonkv imported and the values' pattern at hand
py() {
	PYTHONPATH=$REPO/userspace/python python3 -c "
import hashlib, sys, fluxonkv
def val(tag, n=2 << 20):
    seed = hashlib.sha256(tag.encode()).digest()
    return (seed * (n // len(seed) + 1))[:n]
def store(t=None):
    return fluxonkv.Store(tenant=t)
$1"
}

if [ "$I" -eq 2 ]; then
	mark up.2
	wait_for up.1
	check "puts K in tenant 0, alpha and beta, and alpha's own key" py "
store().put('K', val('default'))
store('alpha').put('K', val('alpha'))
store('beta').put('K', val('beta'))
store('alpha').put('only-alpha', val('only'))"
	mark put.2
	wait_for cleared.1
	check "after alpha's clear: alpha's keys gone here too, beta's and tenant 0's K kept" py "
a, b, d = store('alpha'), store('beta'), store()
assert a.get('K') is None and a.get('only-alpha') is None
assert bytes(b.get('K')) == val('beta') and bytes(d.get('K')) == val('default')"
	mark checked.2
	wait_for done.1
else
	mark up.1
	wait_for up.2 put.2
	check "each tenant's K read byte-exact from node2" py "
for t, tag in ((None, 'default'), ('alpha', 'alpha'), ('beta', 'beta')):
    got = store(t).get('K')
    assert got is not None and bytes(got) == val(tag), t"
	check "beta misses alpha's own key; alpha reads it" py "
assert store('beta').get('only-alpha') is None
assert bytes(store('alpha').get('only-alpha')) == val('only')"
	check "the master counts alpha's puts" bash -c \
		"'$CTL' tenants --json | python3 -c \"import json, sys
t = {x['name']: x for x in json.load(sys.stdin)['tenants']}
assert t['alpha']['puts'] >= 2 and t['beta']['puts'] >= 1, t\""
	check "fluxonctl clear --tenant alpha" "$CTL" clear --tenant alpha
	mark cleared.1
	wait_for checked.2
	check "alpha's keys gone on node1, beta's K kept" py "
assert store('alpha').get('K') is None
assert bytes(store('beta').get('K')) == val('beta')"
	mark done.1
fi
kill "$DPID" 2>/dev/null || true
wait "$DPID" 2>/dev/null || true
[ "$failed" -eq 0 ]
