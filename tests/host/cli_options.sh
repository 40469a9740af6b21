#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# runc's option conventions, which containerd's shim relies on: every long
# option with one dash or two, short options and clusters where a command
# has them; usage errors (exit 2) and failures reach --log in the format
# asked; delete --force of a missing container is a success; --debug and
# --version in runc's forms.
. "$(dirname "$0")/../lib/common.sh"

R="$T/root"
mkdir -p "$R"
c() { "$CRYO_BIN" "$@"; }

log "global options, both forms"
for form in -- -; do
	out=$(c ${form}root "$R" ${form}log "$T/g.log" ${form}log-format json list -q) || fail "${form}root/${form}log: $out"
	out=$(c ${form}version) || fail "${form}version failed"
	[ "$(echo "$out" | head -1)" = "cryo version $(echo "$out" | sed -n '1s/^cryo version //p')" ] &&
		echo "$out" | head -1 | grep -q '^cryo version [0-9]' || fail "${form}version first line: $out"
	echo "$out" | grep -q '^spec: 1\.[0-9]*\.[0-9]*' || fail "${form}version has no spec line: $out"
done
check c --rootless=false --root "$R" list -q
check c -rootless false -systemd-cgroup --root "$R" list -q

log "subcommand long options, both forms"
for form in -- -; do
	out=$(c --root "$R" list ${form}format json) || fail "list ${form}format: $out"
	[ "$out" = "[]" ] || echo "$out" | python3 -c 'import json,sys; assert json.load(sys.stdin) == []' ||
		fail "list ${form}format json printed: $out"
	check c --root "$R" delete ${form}force nosuch-$$
	expect_fail 1 c --root "$R" state ${form}help-not-an-option-$$ 2>/dev/null || true
	# options shared with the shim's restore call: parsed (the image is what is missing)
	expect_fail 1 c --root "$R" restore ${form}image-path "$T/none" ${form}work-path "$T/w" ${form}detach \
		${form}no-subreaper ${form}no-pivot ${form}empty-ns network ${form}auto-dedup \
		${form}manage-cgroups-mode soft ${form}bundle "$T" r$$
	echo "$LAST_OUTPUT" | grep -qi "option" && fail "restore ${form}options not all accepted: $LAST_OUTPUT"
	expect_fail 1 c --root "$R" checkpoint ${form}image-path "$T/img" ${form}work-path "$T/w" ${form}leave-running \
		${form}file-locks ${form}tcp-established ${form}ext-unix-sk ${form}shell-job ${form}status-fd 2 nosuch-$$
	echo "$LAST_OUTPUT" | grep -qi "option" && fail "checkpoint ${form}options not all accepted: $LAST_OUTPUT"
	# exec (the shim's `ctr task exec`), migrate and receive take both forms too; exec's own
	# failures (no such container) exit 255, as runc's
	expect_fail 255 c --root "$R" exec ${form}detach ${form}cwd / ${form}env A=b ${form}pid-file "$T/p" nosuch-$$ true
	echo "$LAST_OUTPUT" | grep -qi "option" && fail "exec ${form}options not all accepted: $LAST_OUTPUT"
	[ "$(c migrate ${form}list-steps | head -1)" = connect ] || fail "migrate ${form}list-steps"
	[ "$(c receive ${form}list-steps | head -1)" = accept ] || fail "receive ${form}list-steps"
	expect_fail 1 c --root "$R" freeze ${form}timeout 100 nosuch-$$
	expect_output "nosuch-$$" "freeze ${form}timeout"
	expect_fail 1 c --root "$R" fsfreeze ${form}path "$T/nope" ${form}timeout 5
	echo "$LAST_OUTPUT" | grep -qi "option" && fail "fsfreeze ${form}path: $LAST_OUTPUT"
done

log "short options and clusters stay short"
out=$(c --root "$R" list -qf json) || fail "list -qf json: $out"
[ "$out" = "[]" ] || echo "$out" | python3 -c 'import json,sys; assert json.load(sys.stdin) == []' || fail "list -qf json printed: $out"
check c --root "$R" delete -f nosuch-$$
expect_fail 2 c --root "$R" list -f
expect_output "option \`-f\` needs an argument" "list -f"

log "flags of the other command are refused, unsupported ones clearly"
expect_fail 2 c --root "$R" checkpoint -no-subreaper x
expect_output "restore only" "checkpoint -no-subreaper"
expect_fail 2 c --root "$R" restore --status-fd 2 x
expect_fail 2 c --root "$R" restore --empty-ns pid x
expect_output "only \`network\`" "--empty-ns pid"
expect_fail 1 c --root "$R" checkpoint --lazy-pages x
expect_output "lazy-pages is not supported" "--lazy-pages"
expect_fail 1 c --root "$R" checkpoint -page-server 10.0.0.1:27 x
expect_output "page-server is not supported" "--page-server"
# post-copy does not take pre-copy rounds: refused before anything is touched (no container, no peer
# needed); where CRIU's lazy pages don't work, --lazy is refused at preflight (host/migrate_hostile.sh)
expect_fail 2 c --root "$R" migrate --lazy --pre-copy 2 x tls://127.0.0.1:9
expect_output "exclude each other" "migrate --lazy --pre-copy"
expect_fail 2 c --root "$R" checkpoint --status-fd 999 x
expect_output "status-fd 999" "--status-fd of a closed fd"

log "errors reach --log: usage (exit 2) and failures (exit 1), JSON and text"
rm -f "$T/j.log"
expect_fail 2 c --root "$R" --log "$T/j.log" --log-format json delete -bogus x
expect_fail 2 c --root "$R" -log "$T/j.log" -log-format json -no-such-global list
expect_fail 2 c --root "$R" --log "$T/j.log" --log-format json no-such-command
expect_fail 2 c --root "$R" --log "$T/j.log" --log-format json restore -detach
expect_fail 1 c --root "$R" --log "$T/j.log" --log-format json delete nosuch-$$
python3 - "$T/j.log" <<'EOF' || fail "JSON log: $(cat "$T/j.log")"
import datetime, json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]
assert len(objs) == 5, objs
for o in objs:
    assert set(o) == {"level", "msg", "time"}, o
    assert o["level"] == "error", o
    datetime.datetime.strptime(o["time"][:19], "%Y-%m-%dT%H:%M:%S")
msgs = [o["msg"] for o in objs]
assert "-bogus" in msgs[0], msgs
assert "-no-such-global" in msgs[1], msgs
assert "no-such-command" in msgs[2], msgs
assert "container id" in msgs[3], msgs
assert "does not exist" in msgs[4], msgs
EOF
expect_fail 2 c --root "$R" --log "$T/t.log" delete --bogus x
grep -q '^time="[0-9T:.-]*Z" level=error msg="delete: unknown or ambiguous option `--bogus`"$' "$T/t.log" ||
	fail "text log: $(cat "$T/t.log")"
# one message on stderr, not two
n=$(c --root "$R" delete --bogus x 2>&1 | grep -c bogus)
[ "$n" = 1 ] || fail "the usage error was printed $n times: $(c --root "$R" delete --bogus x 2>&1)"
n=$(c --root "$R" delete nosuch-$$ 2>&1 | grep -c "does not exist")
[ "$n" = 1 ] || fail "the error was printed $n times without --log"

log "--debug: runc's level=debug lines"
out=$(c --root "$R" --debug list -q 2>&1 >/dev/null)
echo "$out" | grep -q '^time="[^"]*" level=debug msg="' || fail "--debug printed: $out"
out=$(c --root "$R" list -q 2>&1 >/dev/null)
[ -z "$out" ] || fail "without --debug: $out"
log "--criu: the criu that checkpoint, restore and check run"
out=$(c --criu "$T/no-such-criu" check 2>&1) && fail "check with --criu of a missing binary succeeded: $out"
echo "$out" | grep -q '^criu: not found' || fail "--criu of a missing binary: check printed: $out"
real=$(command -v criu || true)
[ -x /opt/cryo-criu4/sbin/criu ] && real=/opt/cryo-criu4/sbin/criu
if [ -n "$real" ]; then
	out=$(c --criu "$real" check 2>&1 || true)
	echo "$out" | grep -q '^criu: not found' && fail "--criu $real: check did not find it: $out"
fi
echo "ok"
