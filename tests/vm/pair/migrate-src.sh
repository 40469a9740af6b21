#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The source guest of tests/vm/migrate_2vm.vmpair: SHARE is the scratch
# dir both guests see (pki/, sign.key; src.boot written here).
source "$(dirname "$0")/lib.sh"
. "$CRYO_SRC/tests/lib/migrate.sh"
cat /proc/sys/kernel/random/boot_id >"$S/src.boot"

id=m2vm
B=$T/$id
mig_counter_run "$B" "$id" 8
wl_wait_above "$B/rootfs-dir/status" 20

# the other guest may still be booting: until its receive listens
ok=0
for _ in $(seq 120); do
	if rt migrate --cert "$S/pki/client.crt" --key "$S/pki/client.key" --ca "$S/pki/ca.crt" --sign-key "$S/sign.key" \
		"$id" tls://10.200.0.2:7443 >"$T/m.out" 2>&1; then
		ok=1
		break
	fi
	grep -q "failed at connect" "$T/m.out" || fail "migrate: $(cat "$T/m.out")"
	[ "$(rt freezer-state "$id")" = RUNNING ] || fail "a refused connect left the container $(rt freezer-state "$id")"
	sleep 1
done
[ $ok = 1 ] || fail "the destination never answered: $(cat "$T/m.out")"
cat "$T/m.out"
rt state "$id" | grep -q '"status":"stopped"' || fail "the source is not stopped: $(rt state "$id")"
check rt delete "$id"
echo "PASS source"
