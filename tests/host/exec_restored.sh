#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# exec into a restored container: it is just a container whose init pid
# (a new one, from CRIU) is in the state. The exec'd process sees the
# restored init as pid 1, the state the init kept in memory, and joins the
# restored cgroup; a detached exec'd process does not stop a checkpoint.
# Needs CRIU that works on this host (CRYO_CRIU or /opt/cryo-criu4).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

export CRYO_CRIU=${CRYO_CRIU:-/opt/cryo-criu4/sbin/criu}
[ -x "$CRYO_CRIU" ] || skip "no working CRIU: $CRYO_CRIU missing (tests/setup-criu4.sh)"
"$CRYO_BIN" check >"$T/check.out" 2>&1 || skip "\`cryo check\` fails: $(tail -1 "$T/check.out")"

bundle_for ex-rst sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.05; done'
rt run -d --bundle "$B" --pid-file "$T/pid1" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
sleep 0.5
# a long-running exec'd process with a session of its own is dumped with the rest
rt exec -d "$id" sh -c 'while :; do sleep 1; done' </dev/null >/dev/null 2>&1 || fail "exec -d failed"
before=$(rt exec "$id" cat /tmp/count) || fail "exec before checkpoint: $before"

out=$(rt checkpoint --image-path "$T/img" --work-path "$T/work" "$id" 2>&1) || fail "checkpoint: $out"
out=$(rt restore -d --image-path "$T/img" --bundle "$B" --pid-file "$T/pid2" "$id" </dev/null 2>&1) || fail "restore: $out"
[ "$(cat "$T/pid2")" != "$(cat "$T/pid1")" ] || log "CRIU restored the init with its old host pid"

after=$(rt exec "$id" cat /tmp/count) || fail "exec after restore: $after"
[ "$after" -ge "$before" ] || fail "counter went back: $before -> $after"
out=$(rt exec "$id" sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; ps -o comm | grep -c "^sleep\|^sh"') || fail "exec: $out"
echo "$out" | head -1 | grep -q "while" || fail "pid 1 seen by exec is not the restored init: $out"
pid2=$(cat "$T/pid2")
for n in mnt pid net; do
	rt exec "$id" readlink /proc/self/ns/$n >"$T/ns" || fail "exec readlink"
	[ "$(cat "$T/ns")" = "$(readlink /proc/$pid2/ns/$n)" ] || fail "exec'd process not in the restored init's $n namespace"
done
rt exec -d --pid-file "$T/x" "$id" sleep 30 </dev/null >/dev/null 2>&1 || fail "exec -d after restore"
f=/sys/fs/cgroup/unified/$CGPARENT/$id/cgroup.procs
[ ! -e "$f" ] || grep -qx "$(cat "$T/x")" "$f" || fail "exec'd pid not in the restored container's cgroup $f"
expect_fail 3 rt exec "$id" sh -c 'exit 3'
check rt delete --force "$id"
echo ok
