#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `cryo exec`: the new process is in every namespace and the cgroup of the
# container, gets the config's process with runc's changes (-u, -g, -e,
# --cwd, --cap, --no-new-privs) or a whole --process JSON, its seccomp
# profile, rlimits and NNP; exit codes propagate (128+n for signals);
# --detach/--pid-file, --preserve-fds; a paused or stopped container is
# refused and no runtime fd or host binary reaches the container.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for ex-basic sh -c 'echo $$ > /tmp/init.pid; while :; do sleep 0.2; done'
# a seccomp profile (mkdir fails with EPERM), NNP off, an rlimit, inheritable caps
bundle_set "$B" '
c["process"]["noNewPrivileges"] = False
c["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "hard": 777, "soft": 555}]
c["process"]["capabilities"]["inheritable"] = ["CAP_KILL"]
c["process"]["env"].append("FROMCONFIG=1")
c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
    {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
'
rt run -d --bundle "$B" --pid-file "$T/init.pid" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
init=$(cat "$T/init.pid")

# exit codes
expect_fail 0 rt exec "$id" true
expect_fail 7 rt exec "$id" sh -c 'exit 7'
expect_fail 8 rt exec "$id" -- sh -c 'exit 8'
expect_fail 137 rt exec "$id" sh -c 'kill -9 $$'
expect_fail 255 rt exec "$id" no-such-binary
expect_output "no-such-binary. not found" "missing binary"
expect_fail 255 rt exec --cwd /no/such/dir "$id" true
expect_output "chdir .*/no/such/dir" "missing cwd"

# every namespace of the init (its /proc/1 inside the container)
out=$(rt exec "$id" sh -c 'for n in mnt net ipc uts pid cgroup user; do [ "$(readlink /proc/self/ns/$n)" = "$(readlink /proc/1/ns/$n)" ] || echo "differs: $n"; done; echo pid=$$') \
	|| fail "exec failed: $out"
echo "$out" | grep differs && fail "namespaces: $out"
p=$(echo "$out" | sed -n 's/^pid=//p')
[ -n "$p" ] && [ "$p" -gt 1 ] && [ "$p" -lt 1000 ] || fail "pid inside the container's pid namespace: \`$p\`"
for n in mnt net ipc uts pid cgroup; do
	[ "$(readlink /proc/$init/ns/$n)" != "$(readlink /proc/self/ns/$n)" ] || fail "the container shares the host's $n namespace"
done
out=$(rt exec "$id" cat /tmp/init.pid) || fail "exec cat: $out"
[ "$out" = 1 ] || fail "/tmp of the container's rootfs: init.pid is \`$out\`"

# the cgroup, in v2 and in the v1 hierarchies
rt exec -d --pid-file "$T/x.pid" "$id" sleep 30 </dev/null >/dev/null 2>&1 || fail "exec -d failed"
xp=$(cat "$T/x.pid")
[ -d "/proc/$xp" ] || fail "exec -d: pid $xp is not running"
for h in unified memory pids freezer; do
	f=/sys/fs/cgroup/$h/$CGPARENT/$id/cgroup.procs
	[ -e "$f" ] || continue
	grep -qx "$xp" "$f" || fail "exec'd pid $xp is not in $f"
done
# detached: not cryo's child any more, and no runtime fd got in
[ "$(awk '{print $4}' /proc/$xp/stat)" != "$$" ] || fail "exec -d: still our child?"
fds=$(ls /proc/$xp/fd | sort -n | tr '\n' ' ')
[ "$fds" = "0 1 2 " ] || fail "fds of the exec'd process: $fds"
case "$(readlink /proc/$xp/exe)" in */sleep|*/busybox) ;; *) fail "exec'd process runs $(readlink /proc/$xp/exe)" ;; esac
kill "$xp"

# the config's process with the flags
out=$(rt exec -u 1000:1001 -g 1002 -e FOO=bar -e FROMCONFIG=2 --cwd /tmp "$id" sh -c 'id -u; id -g; id -G; echo $FOO $FROMCONFIG; pwd; ulimit -n; ulimit -Hn') \
	|| fail "exec with flags: $out"
[ "$(echo $out)" = "1000 1001 1001 1002 bar 2 /tmp 555 777" ] || fail "exec with flags: \`$(echo $out)\`"
st() { rt exec "$@" sh -c 'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status' | tr '\t\n' ' '; }
s0=$(st "$id")
ie=$(grep '^CapEff' /proc/$init/status | cut -f2)
echo "$s0" | grep -q "CapEff: $ie " || fail "caps differ from the init's ($ie): $s0"
echo "$s0" | grep -q "NoNewPrivs: 0 " || fail "NNP set without asking: $s0"
echo "$s0" | grep -q "Seccomp: 2 " || fail "no seccomp filter: $s0"
s1=$(st --cap CAP_SYS_ADMIN --no-new-privs "$id")
e1=$(echo "$s1" | sed -n 's/.*CapEff: \([0-9a-f]*\).*/\1/p')
(( (0x$e1 & (1 << 21)) != 0 )) || fail "--cap CAP_SYS_ADMIN not effective: $s1"
echo "$s1" | grep -q "NoNewPrivs: 1 " || fail "--no-new-privs: $s1"
out=$(rt exec "$id" mkdir /tmp/x 2>&1) && fail "seccomp profile not applied: mkdir succeeded"
echo "$out" | grep -qi "not permitted" || fail "mkdir under seccomp: $out"
check rt exec --apparmor unconfined --process-label x "$id" true

# --process: a whole OCI process JSON, the flags are not mixed in
cat >"$T/proc.json" <<'EOF'
{"terminal": false, "user": {"uid": 33, "gid": 34}, "args": ["sh", "-c", "echo $(id -u):$(id -g) $ONLY $(pwd); exit 3"],
 "env": ["PATH=/bin:/usr/bin", "ONLY=yes"], "cwd": "/etc", "noNewPrivileges": true,
 "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"], "permitted": ["CAP_KILL"]}}
EOF
expect_fail 3 rt exec --process "$T/proc.json" "$id"
[ "$LAST_OUTPUT" = "33:34 yes /etc" ] || fail "--process: $LAST_OUTPUT"
echo '{"args": []}' >"$T/bad.json"
expect_fail 255 rt exec --process "$T/bad.json" "$id"
expect_output "process.args" "bad --process"
expect_fail 2 rt exec --process "$T/proc.json" "$id" true

# --preserve-fds: fd 3 gets through, fd 4 does not
echo preserved >"$T/fd3"
out=$(rt exec --preserve-fds 1 "$id" sh -c 'cat <&3; for f in 3 4 5 6 7 8 9; do [ -e /proc/$$/fd/$f ] && echo fd$f; done; true' 3<"$T/fd3" 4<"$T/fd3") \
	|| fail "preserve-fds: $out"
[ "$(echo $out)" = "preserved fd3" ] || fail "--preserve-fds 1: \`$(echo $out)\`"
expect_fail 255 rt exec --preserve-fds 5 "$id" true 3</dev/null
expect_output "fd 4 is not open" "preserve-fds of closed fds"

# signals to a foreground exec go to the process
timeout 30 "$CRYO_BIN" --root "$RTROOT" exec "$id" sh -c 'trap "exit 42" TERM; while :; do sleep 0.1; done' </dev/null &
ep=$!
sleep 0.5
kill -TERM $ep
wait $ep && rc=0 || rc=$?
[ $rc = 42 ] || fail "SIGTERM forwarded: exec returned $rc, expected 42"

# the host binary is never what the container sees
rt exec -d --pid-file "$T/y.pid" "$id" sleep 30 </dev/null >/dev/null 2>&1 || fail "exec -d failed"
sum=$(sha256sum "$CRYO_BIN" | cut -d' ' -f1)
rt exec "$id" sh -c 'echo x > /proc/self/exe' >/dev/null 2>&1 || true
[ "$(sha256sum "$CRYO_BIN" | cut -d' ' -f1)" = "$sum" ] || fail "the cryo binary changed"
kill "$(cat "$T/y.pid")"

# memcheck over the exec paths: an immutable copy of cryo skips the sealed
# re-exec (which would leave valgrind), the forked child is not followed
if command -v valgrind >/dev/null && [ "${CRYO_SANITIZE:-0}" != 1 ] && cp "$CRYO_BIN" "$T/cryo-imm" &&
	chattr +i "$T/cryo-imm" 2>/dev/null; then
	at_exit "chattr -i $T/cryo-imm"
	vg() {
		local want=$1 rc
		shift
		valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
			--errors-for-leak-kinds=definite,indirect --child-silent-after-fork=yes \
			"$T/cryo-imm" --root "$RTROOT" "$@" </dev/null >"$T/vg.out" 2>&1 && rc=0 || rc=$?
		[ $rc != 99 ] || fail "valgrind found errors in \`cryo $*\`: $(cat "$T/vg.out")"
		[ $rc = "$want" ] || fail "\`cryo $*\` exited $rc under valgrind, expected $want: $(cat "$T/vg.out")"
	}
	vg 3 exec --process "$T/proc.json" "$id"
	# the config's process with the flags: valgrind lowers the hard RLIMIT_NOFILE for
	# itself, so the config's rlimit fails in the child, an error path worth the check too
	vg 255 exec -u 1000:1000 -g 7 -e A=b -c CAP_CHOWN --cwd /tmp "$id" sh -c 'exit 5'
	grep -q "RLIMIT_NOFILE" "$T/vg.out" || fail "exec with flags under valgrind: $(cat "$T/vg.out")"
	vg 255 exec "$id" no-such-binary
	vg 255 exec --process "$T/bad.json" "$id"
	vg 2 exec -u x "$id" true
	vg 255 exec no-such-ctr-$$ true
else
	log "valgrind part skipped (no valgrind, a sanitizer build, or no chattr +i here)"
fi

# paused: refused with a clear message; resumed: fine again
check rt pause "$id"
expect_fail 255 rt exec "$id" true
expect_output "paused" "exec into a paused container"
check rt resume "$id"
check rt exec "$id" true

# stopped, missing
check rt kill "$id" KILL
for _ in $(seq 100); do rt state "$id" 2>/dev/null | grep -q '"status":"stopped"' && break; sleep 0.05; done
expect_fail 255 rt exec "$id" true
expect_output "stopped" "exec into a stopped container"
expect_fail 255 rt exec no-such-ctr-$$ true
expect_fail 2 rt exec "$id"
echo ok
