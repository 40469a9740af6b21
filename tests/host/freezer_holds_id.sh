#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# cryo's own dirs are out of the container-id namespace (issue 11.4): the
# hold journal is <root>/.holds, which no id can name, so a container
# called `holds` is a container like any other: `create holds` and
# `delete holds` leave a live hold's journal entry (and its watchdog)
# alone. An old root's `holds/` journal (no state.json in it) is moved to
# `.holds` the first time cryo looks; `recover` cleans half-written entries.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

id=hid-$$
B=$T/b
bundle_new "$B" sh -c 'while true; do sleep 0.05; done'
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run $id failed"
H=$T/holds
bundle_new "$H" true

check rt freeze --deadline 60000 "$id"
entry=$RTROOT/.holds/$id.json
[ -f "$entry" ] || fail "no journal entry $entry: $(ls -a "$RTROOT")"
[ "$(rt freezer-state "$id")" = FROZEN ] || fail "not frozen"

# `holds` is an ordinary id now
rt create --bundle "$H" holds </dev/null >/dev/null 2>&1 || fail "create holds failed"
rt list -q | grep -qx holds || fail "\`cryo list\` does not show the container \`holds\`"
check rt delete --force holds
[ -f "$entry" ] || fail "delete holds removed the journal entry"
expect_fail 1 rt delete holds   # no such container any more: the journal is not it
[ -f "$entry" ] || fail "a failed delete holds removed the journal entry"
out=$(rt recover 2>&1) || fail "recover failed: $out"
echo "$out" | grep -q "^kept cgroup-thaw" || fail "recover did not keep the live hold: $out"
# half-written entries of a killed writer go
echo '{' > "$RTROOT/.holds/.x.json.tmp"
out=$(rt recover 2>&1) || fail "recover failed: $out"
[ ! -e "$RTROOT/.holds/.x.json.tmp" ] || fail "recover left a half-written entry"
check rt thaw "$id"
[ "$(rt freezer-state "$id")" = RUNNING ] || fail "thaw did not thaw"
[ ! -f "$entry" ] || fail "thaw left the journal entry"

# an old root: its journal `holds/` moves to `.holds` (a live hold keeps working)
check rt freeze --deadline 60000 "$id"
mv "$RTROOT/.holds" "$RTROOT/holds"
out=$(rt recover 2>&1) || fail "recover of an old root failed: $out"
echo "$out" | grep -q "^kept cgroup-thaw" || fail "recover did not find the old journal's hold: $out"
[ -f "$entry" ] && [ ! -e "$RTROOT/holds" ] || fail "the old journal was not moved: $(ls -a "$RTROOT")"
check rt thaw "$id"
[ ! -f "$entry" ] || fail "thaw left the journal entry"
# ... but a container called `holds` is never taken for an old journal
rt create --bundle "$H" holds </dev/null >/dev/null 2>&1 || fail "create holds failed"
rmdir "$RTROOT/.holds" 2>/dev/null
check rt freeze --deadline 60000 "$id"
[ -d "$RTROOT/holds" ] && [ -f "$RTROOT/holds/state.json" ] || fail "the container holds was moved"
check rt thaw "$id"
check rt delete --force holds
echo "PASS freezer_holds_id"
