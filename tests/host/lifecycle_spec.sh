#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The process settings through the spec modules, seen from inside a real
# container: capabilities really dropped (CapEff/CapBnd), seccomp really
# enforced (a denied syscall fails), rlimits, noNewPrivileges, OOM score;
# OCI hooks in order with the state on stdin, and their failures;
# a terminal through --console-socket.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-spec
runit() { rt_timed run --bundle "$B" "$id" </dev/null 2>&1; }

# -- no mount namespace: the runtime's, chrooted into root.path; no mount is made anywhere
cp "$B/config.json" "$T/pristine.json"
rootfs_mounts() { awk -v r="$B/rootfs" '$5 == r || index($5, r "/") == 1' /proc/self/mountinfo | wc -l; }
mnt_before=$(rootfs_mounts)
bundle_set "$B" '
c["process"]["args"] = ["sh", "-c", "readlink /proc/$$/ns/mnt 2>/dev/null || echo no-proc; cat /inroot"]
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "mount"]
'
echo in-the-rootfs >"$B/rootfs/inroot"
out=$(runit) || fail "run without a mount namespace: $out"
# exec joins it in the same root
bundle_set "$B" 'c["process"]["args"] = ["sleep", "30"]'
rt_timed run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d without a mount namespace"
xout=$(rt_timed exec "$id" cat /inroot 2>&1) || fail "exec without a mount namespace: $xout"
[ "$xout" = in-the-rootfs ] || fail "exec without a mount namespace: not in root.path: $xout"
rt delete --force "$id" >/dev/null 2>&1
rm -f "$B/rootfs/inroot"
echo "$out" | grep -qx no-proc || fail "no mount namespace: /proc was mounted: $out"
echo "$out" | grep -qx in-the-rootfs || fail "no mount namespace: not chrooted into root.path: $out"
[ "$(rootfs_mounts)" = "$mnt_before" ] || fail "no mount namespace: mounts were made under the rootfs on the host"
cp "$T/pristine.json" "$B/config.json"

# -- rootfsPropagation shared / unbindable: set on the container's own root, after pivot_root
cat >"$B/rootfs/prop.sh" <<'SH'
awk '$5 == "/" { print $7 }' /proc/self/mountinfo
SH
for prop in shared unbindable; do
	bundle_set "$B" "c['process']['args'] = ['sh', '/prop.sh']; c['linux']['rootfsPropagation'] = '$prop'"
	out=$(runit) || fail "rootfsPropagation $prop: $out"
	case $prop in
	shared) echo "$out" | grep -q '^shared:' || fail "rootfsPropagation shared: root mount is \`$out\`" ;;
	unbindable) echo "$out" | grep -qx unbindable || fail "rootfsPropagation unbindable: root mount is \`$out\`" ;;
	esac
done
rm -f "$B/rootfs/prop.sh"
cp "$T/pristine.json" "$B/config.json"

# -- capabilities, seccomp, rlimits, NNP, OOM score
bundle_set "$B" '
c["process"]["args"] = ["sh", "-c", """
grep -E "^(CapEff|CapBnd|CapPrm|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\\t" " "
mkdir /tmp/denied 2>/dev/null && echo mkdir-allowed || echo mkdir-denied
hostname other 2>/dev/null && echo sethostname-allowed || echo sethostname-denied
echo nofile=$(ulimit -n):$(ulimit -Hn)
echo oom=$(cat /proc/self/oom_score_adj)
"""]
c["process"]["capabilities"] = {"bounding": ["CAP_KILL", "CAP_NET_BIND_SERVICE"],
  "effective": ["CAP_KILL", "CAP_NET_BIND_SERVICE"], "permitted": ["CAP_KILL", "CAP_NET_BIND_SERVICE"]}
c["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "soft": 321, "hard": 654}]
c["process"]["oomScoreAdj"] = 123
c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
'
out=$(runit) || fail "run: $out"
for want in "CapEff: 0000000000000420" "CapBnd: 0000000000000420" "CapPrm: 0000000000000420" "NoNewPrivs: 1" \
	"Seccomp: 2" mkdir-denied sethostname-denied nofile=321:654 oom=123; do
	echo "$out" | grep -qx "$want" || fail "expected \`$want\` in: $out"
done
[ ! -e "$B/rootfs/tmp/denied" ] || fail "the denied mkdir happened"

# a deny-default profile: a syscall newer than the ones it names gets -ENOSYS (a libc then falls
# back to the old call), one it doesn't name below them the default errno (runc's stub; its bats
# "seccomp -ENOSYS handling"). cryo-test-syscall makes raw syscalls: 110 getppid (not named),
# 39 getpid (allowed), 435 clone3 and 1000 (above rseq, 334, the highest named)
cp "$CRYO_BUILD/tests/tools/cryo-test-syscall" "$B/rootfs/cryo-test-syscall"
bundle_set "$B" '
c["process"]["args"] = ["/cryo-test-syscall", "110", "39", "435", "1000"]
c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
  "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"],
  "syscalls": [{"action": "SCMP_ACT_ALLOW", "names": ["execve", "brk", "arch_prctl", "set_tid_address",
    "set_robust_list", "rseq", "prlimit64", "readlink", "readlinkat", "getrandom", "mprotect", "mmap", "munmap",
    "newfstatat", "fstat", "ioctl", "uname", "write", "writev", "exit", "exit_group", "getpid"]}]}
'
out=$(runit) || fail "run under a deny-default profile: $out"
for want in 110=-1 39=1 435=-38 1000=-38; do
	echo "$out" | grep -qx "$want" || fail "expected \`$want\` under a deny-default profile in: $out"
done
# a non-root user with ambient capabilities, no NNP
bundle_set "$B" '
c["process"]["args"] = ["sh", "-c", "grep -E \"^Cap(Eff|Amb):\" /proc/self/status | tr -s \"\\t\" \" \"; id -u"]
c["process"]["user"] = {"uid": 1000, "gid": 1000}
c["process"]["noNewPrivileges"] = False
c["process"]["capabilities"] = {"bounding": ["CAP_NET_BIND_SERVICE"], "effective": ["CAP_NET_BIND_SERVICE"],
  "permitted": ["CAP_NET_BIND_SERVICE"], "inheritable": ["CAP_NET_BIND_SERVICE"], "ambient": ["CAP_NET_BIND_SERVICE"]}
del c["linux"]["seccomp"]
'
out=$(runit) || fail "run: $out"
for want in "CapEff: 0000000000000400" "CapAmb: 0000000000000400" 1000; do
	echo "$out" | grep -qx "$want" || fail "expected \`$want\` in: $out"
done

# a bad capability name is a config error naming the field
bundle_set "$B" 'c["process"]["capabilities"]["bounding"] = ["CAP_NOPE"]'
expect_fail 1 rt create --bundle "$B" "$id"
expect_output "config.json: process.capabilities.bounding\[0\]: unknown capability" "bad cap"
[ ! -e "$RTROOT/$id" ] || fail "bad cap left a state dir"

# a capability the runtime itself can't hold (not in its bounding set) fails create, not the container after start
bundle_set "$B" 'c["process"]["capabilities"] = {"bounding": ["CAP_SYSLOG"], "effective": ["CAP_SYSLOG"], "permitted": ["CAP_SYSLOG"]}'
expect_fail 1 setpriv --bounding-set -syslog "$CRYO_BIN" --root "$RTROOT" create --bundle "$B" "$id"
echo "$LAST_OUTPUT" | grep -q "process.capabilities.effective: CAP_SYSLOG is not in the runtime's bounding set" ||
	fail "ungrantable cap: $LAST_OUTPUT"
[ ! -e "$RTROOT/$id" ] || fail "ungrantable cap left a state dir"

# -- hooks: order, state on stdin, where they run
cat > "$B/rootfs/hook.sh" <<'SH'
#!/bin/sh
read -r state
st=$(echo "$state" | grep -o '"status":"[a-z]*"')
echo "$1 $st $(echo "$state" | grep -o '"id":"[^"]*"') cwd=$(pwd)" >> "$2"
exit "${3:-0}"
SH
chmod 755 "$B/rootfs/hook.sh"
H=$B/rootfs/hook.sh L=$B/rootfs/hooks.log
bundle_set "$B" "
c['process']['args'] = ['sleep', '100']
c['process']['user'] = {'uid': 0, 'gid': 0}
c['process']['capabilities'] = {}
h = lambda kind, path, log, *rest: {'path': path, 'args': ['hook', kind, log] + list(rest), 'timeout': 10}
c['hooks'] = {
  'prestart': [h('prestart', '$H', '$L')],
  'createRuntime': [h('createRuntime', '$H', '$L')],
  'createContainer': [h('createContainer', '$H', '$L')],
  'startContainer': [h('startContainer', '/hook.sh', '/hooks.log')],
  'poststart': [h('poststart', '$H', '$L')],
  'poststop': [h('poststop', '$H', '$L')],
}
"
rm -f "$L"
rt create --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "create with hooks failed"
check rt start "$id"
for _ in $(seq 50); do grep -q poststart "$L" 2>/dev/null && break; sleep 0.1; done
check rt delete --force "$id"
got=$(cut -d' ' -f1,2 "$L" | tr '\n' ';')
want='prestart "status":"created";createRuntime "status":"created";createContainer "status":"creating";startContainer "status":"creating";poststart "status":"running";poststop "status":"stopped";'
[ "$got" = "$want" ] || fail "hooks order/state: $got"
grep -c "\"id\":\"$id\"" "$L" | grep -qx 6 || fail "hooks did not all get the container id: $(cat "$L")"
# createContainer runs in the rootfs (runc's hooks.bats: `touch ./lib/...` there), before pivot_root
grep -qx "createContainer .* cwd=$B/rootfs" "$L" || fail "createContainer did not run in the rootfs: $(grep createContainer "$L")"

# a failing poststart / poststop hook is a warning: start and delete succeed, the next hook still runs
bundle_set "$B" "
h = lambda kind, path, log, *rest: {'path': path, 'args': ['hook', kind, log] + list(rest), 'timeout': 10}
c['hooks'] = {k: [h(k + '-fails', '$H', '$L', '3'), h(k + '-after', '$H', '$L')] for k in ('poststart', 'poststop')}
"
rm -f "$L"
rt create --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "create with failing poststart hooks failed"
check rt start "$id"
for _ in $(seq 50); do grep -q poststart-after "$L" 2>/dev/null && break; sleep 0.1; done
check rt delete --force "$id"
got=$(cut -d' ' -f1 "$L" | tr '\n' ';')
[ "$got" = "poststart-fails;poststart-after;poststop-fails;poststop-after;" ] || fail "failing post hooks: $got"

# a failing createRuntime hook fails create and leaves nothing
bundle_set "$B" "
h = lambda kind, path, log, *rest: {'path': path, 'args': ['hook', kind, log] + list(rest), 'timeout': 10}
c['hooks'] = {'createRuntime': [h('createRuntime', '$H', '$L', '3')]}
"
expect_fail 1 rt create --bundle "$B" "$id"
expect_output "createRuntime" "failing hook"
expect_output "status 3" "failing hook status"
[ ! -e "$RTROOT/$id" ] || fail "failing hook left a state dir"
[ ! -e "/sys/fs/cgroup/unified/$CGPARENT/$id" ] || fail "failing hook left a cgroup"
# a hook over its timeout is killed, and fails create
bundle_set "$B" "c['hooks']['createRuntime'] = [{'path': '/bin/sleep', 'args': ['sleep', '30'], 'timeout': 1}]"
expect_fail 1 timeout 20 "$CRYO_BIN" --root "$RTROOT" create --bundle "$B" "$id"
expect_output "timed out" "hook timeout"
[ ! -e "$RTROOT/$id" ] || fail "timed-out hook left a state dir"

# -- terminal through --console-socket
RECVTTY=$CRYO_BUILD/tests/tools/recvtty
if [ -x "$RECVTTY" ]; then
	bundle_set "$B" "
del c['hooks']
c['process']['terminal'] = True
c['process']['args'] = ['sh', '-c', 'tty; [ -t 0 ] && [ -t 1 ] && echo is-a-tty; stty size']
c['process']['consoleSize'] = {'height': 33, 'width': 111}
"
	expect_fail 1 rt create --bundle "$B" "$id"
	expect_output "needs --console-socket" "terminal without socket"
	"$RECVTTY" --no-stdin --ready "$T/ready" "$T/console.sock" > "$T/tty.out" 2>&1 &
	rpid=$!
	at_exit "kill $rpid"
	for _ in $(seq 50); do [ -e "$T/ready" ] && break; sleep 0.1; done
	rt run -d --console-socket "$T/console.sock" --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run with a console socket failed"
	wait $rpid
	grep -q "^/dev/pts/0" "$T/tty.out" || fail "the container's stdio is not its pty: $(cat "$T/tty.out")"
	grep -q "is-a-tty" "$T/tty.out" || fail "stdin/stdout are not a tty: $(cat "$T/tty.out")"
	grep -q "^33 111" "$T/tty.out" || fail "process.consoleSize not applied: $(cat "$T/tty.out")"
	rt delete --force "$id" >/dev/null 2>&1
else
	echo "# console part skipped: $RECVTTY not built"
fi
echo ok
