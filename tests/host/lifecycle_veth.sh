#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A host veth name belongs to whoever holds it now (issue 11.5): a create
# that fails, or the delete of a container whose pair is already gone,
# never deletes another container's interface of the same name.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd ip

hostif=cv$$
hostif=${hostif:0:15}
A=$T/rt-va-$$
B=$T/rt-vb-$$
bundle_new "$A" sleep 600
bundle_new "$B" true
for b in "$A" "$B"; do
	bundle_set "$b" 'c["annotations"]["org.cryo.network"] = "veth:'"$hostif"':10.77.0.2/24"'
done
at_exit "ip link del $hostif"
ifindex() { cat "/sys/class/net/$hostif/ifindex" 2>/dev/null; }

# A holds the name; B asks for it too and fails: A's pair stays
rt create --bundle "$A" a </dev/null >/dev/null 2>&1 || fail "create a: $(rt create --bundle "$A" a 2>&1 </dev/null >/dev/null)"
idx=$(ifindex)
[ -n "$idx" ] || fail "create a made no $hostif"
rt create --bundle "$B" b </dev/null >"$T/b.out" 2>&1 && fail "create b with a taken veth name succeeded"
grep -q "create veth pair \`$hostif\`" "$T/b.out" || fail "create b: $(cat "$T/b.out")"
[ "$(ifindex)" = "$idx" ] || fail "the failed create of b deleted a's $hostif"
[ ! -e "$RTROOT/b" ] || fail "the failed create of b left its state dir"
check rt delete a
[ -z "$(ifindex)" ] || fail "delete a left $hostif"

# b runs and exits (its netns, and the pair, go with it); a takes the name;
# then delete of b must leave a's interface alone
rt create --bundle "$B" b </dev/null >/dev/null 2>&1 || fail "create b failed"
check rt start b
for _ in $(seq 100); do rt state b | grep -q '"status":"stopped"' && break; sleep 0.05; done
rt state b | grep -q '"status":"stopped"' || fail "b did not stop"
for _ in $(seq 100); do [ -z "$(ifindex)" ] && break; sleep 0.05; done
rt create --bundle "$A" a </dev/null >/dev/null 2>&1 || fail "create a again failed"
idx=$(ifindex)
[ -n "$idx" ] || fail "create a made no $hostif"
check rt delete b
[ "$(ifindex)" = "$idx" ] || fail "delete of b deleted a's $hostif"
check rt delete --force a
[ -z "$(ifindex)" ] || fail "delete a left $hostif"
echo ok
