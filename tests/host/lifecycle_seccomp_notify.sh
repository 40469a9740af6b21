#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# seccomp user notification (linux.seccomp.listenerPath, SCMP_ACT_NOTIFY):
# the agent (tests/tools/cryo-test-seccomp-agent) gets the container process
# state and the notify fd, the container's mkdir calls are answered by it
# (an errno, a faked success, the real call), the startContainer hook runs
# under the filter, `exec` sends its own fd, the fd never shows up in the
# container; a profile without a listener, or a listenerPath that is no
# socket, fails create and leaves nothing behind.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

AGENT=$CRYO_BUILD/tests/tools/cryo-test-seccomp-agent
[ -x "$AGENT" ] || skip "no $AGENT (build the tests)"
# the kernel side: SECCOMP_FILTER_FLAG_NEW_LISTENER (5.0) and USER_NOTIF_FLAG_CONTINUE (5.5)
kv=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
[ "$kv" -ge 5005 ] || skip "kernel $(uname -r) has no seccomp user notification with CONTINUE"

bundle_for rt-scn
SOCK=$T/agent.sock
mkdir "$T/agent"
"$AGENT" "$SOCK" "$T/agent" 2>"$T/agent.err" &
agent=$!
at_exit "kill $agent"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || fail "the agent did not listen: $(cat "$T/agent.err")"

META='cryo test; "quoted" \ and ünïcode'
# the agent answers mkdir of *agent-errno with EXDEV, *agent-fake with a success that made nothing
profile() { # $1: listenerPath (python expression)
	bundle_set "$B" "
c['linux']['seccomp'] = {
  'defaultAction': 'SCMP_ACT_ALLOW',
  'listenerPath': $1,
  'listenerMetadata': '''$META''',
  'architectures': ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'],
  'syscalls': [{'names': ['mkdir', 'mkdirat'], 'action': 'SCMP_ACT_NOTIFY'}],
}"
}
profile "'$SOCK'"
bundle_set "$B" '
c["root"]["readonly"] = False
c["process"]["args"] = ["sh", "-c", """
mkdir /d-agent-errno 2>/dev/null; echo errno=$?
mkdir /d-agent-fake; echo fake=$?
[ -d /d-agent-fake ] && echo fake-made || echo fake-absent
mkdir /d-plain && [ -d /d-plain ] && echo plain-made
echo fds: $(ls /proc/self/fd)
echo done
exec sleep 100
"""]
c.setdefault("hooks", {})["startContainer"] = [{"path": "/bin/sh",
  "args": ["sh", "-c", "mkdir /hook-agent-errno 2>/hook.out; echo rc=$? >>/hook.out; exit 0"]}]'

# n: the number of the agent's connection for this container's init (exec's is n + 1)
scenario() {
	local nnp=$1 n=$2 pid out fds
	log "noNewPrivileges: $nnp (the filter loaded $([ "$nnp" = True ] && echo last || echo before the caps and the user))"
	bundle_set "$B" "c['process']['noNewPrivileges'] = $nnp"
	rm -f "$B/rootfs/hook.out"
	rm -rf "$B/rootfs/d-plain"
	: >"$T/agent/log"
	rt create --bundle "$B" --pid-file "$T/pid" "$id" </dev/null >"$T/out" 2>&1 || fail "create: $(cat "$T/out")"
	pid=$(cat "$T/pid")
	# the filter is loaded at start (process.h): nothing sent yet
	[ ! -e "$T/agent/state.$n.json" ] || fail "the agent got a state before start"
	check rt start "$id"
	for _ in $(seq 100); do grep -q '^done' "$T/out" && break; sleep 0.05; done
	grep -q '^done' "$T/out" || fail "the container did not finish its checks: $(cat "$T/out"; cat "$T/agent.err")"
	out=$(cat "$T/out")
	log "container: $(echo $out)"
	echo "$out" | grep -qx 'errno=1' || fail "mkdir answered with EXDEV by the agent should fail: $out"
	echo "$out" | grep -qx 'fake=0' || fail "the faked mkdir should succeed: $out"
	echo "$out" | grep -qx 'fake-absent' || fail "the faked mkdir made a directory: $out"
	echo "$out" | grep -qx 'plain-made' || fail "a mkdir the agent let through did not happen: $out"
	# the notify fd went to the agent only: sh has 0 1 2 and ls's own dir fd
	echo "$out" | grep -qx 'fds: 0 1 2 3' || fail "fds in the container: $out"
	fds=$(ls "/proc/$pid/fd")
	[ "$(echo $fds)" = "0 1 2" ] || fail "fds of the container's process: $(echo $fds)"
	ls -l "/proc/$pid/fd" | grep -q 'anon_inode:seccomp' && fail "the notify fd leaked into the container"
	grep -q ' /d-agent-errno errno$' "$T/agent/log" || fail "agent log: $(cat "$T/agent/log")"
	grep -q ' /d-agent-fake fake$' "$T/agent/log" || fail "agent log: $(cat "$T/agent/log")"
	grep -q ' /d-plain continue$' "$T/agent/log" || fail "agent log: $(cat "$T/agent/log")"

	# the startContainer hook ran under the filter: its mkdir was the agent's to answer
	grep -q 'Invalid cross-device link' "$B/rootfs/hook.out" \
		|| fail "the startContainer hook's mkdir did not go to the agent: $(cat "$B/rootfs/hook.out" 2>&1)"
	grep -q ' /hook-agent-errno errno$' "$T/agent/log" || fail "agent log has no hook mkdir: $(cat "$T/agent/log")"

	# the container process state (runtime-spec config-linux.md)
	[ "$(cat "$T/agent/fds.$n")" = 1 ] || fail "fds sent with the state: $(cat "$T/agent/fds.$n")"
	python3 - "$T/agent/state.$n.json" "$pid" "$id" "$B" "$META" <<-'PY' || fail "state sent to the agent: $(cat "$T/agent/state.$n.json")"
	import json, sys
	p, pid, cid, bundle, meta = sys.argv[1:]
	s = json.load(open(p))
	assert s["fds"] == ["seccompFd"], s["fds"]
	assert s["pid"] == int(pid), (s["pid"], pid)
	assert s["metadata"] == meta, (s["metadata"], meta)
	assert s["ociVersion"], s
	st = s["state"]
	assert st["id"] == cid and st["pid"] == int(pid) and st["bundle"] == bundle, st
	assert st["status"] == "creating", st
	PY

	# exec: the process gets the container's filter, its fd goes to the agent too, with its own pid
	expect_fail ! rt exec "$id" mkdir /e-agent-errno
	expect_output 'Invalid cross-device link' "exec mkdir under the agent"
	[ -e "$T/agent/state.$((n + 1)).json" ] || fail "exec sent no state to the agent"
	python3 - "$T/agent/state.$((n + 1)).json" "$pid" "$id" <<-'PY' || fail "exec's state: $(cat "$T/agent/state.$((n + 1)).json")"
	import json, sys
	p, pid, cid = sys.argv[1:]
	s = json.load(open(p))
	assert s["fds"] == ["seccompFd"] and s["pid"] > 0 and s["pid"] != int(pid), s
	assert s["state"]["id"] == cid and s["state"]["pid"] == int(pid) and s["state"]["status"] == "running", s
	PY
	grep -q "^$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$T/agent/state.$((n + 1)).json") mkdir /e-agent-errno errno$" "$T/agent/log" \
		|| fail "the agent's answer to exec's mkdir, by exec's pid: $(cat "$T/agent/log")"

	# checkpoint is refused before anything freezes: a restore would bring the filter back without its agent
	expect_fail ! rt checkpoint --image-path "$T/img" "$id"
	expect_output 'hands syscalls to an agent (linux.seccomp.listenerPath' "checkpoint with a notify listener"
	[ "$(rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = running ] ||
		fail "after the refused checkpoint: $(rt state "$id")"
	grep -q '^State:[[:space:]]*[RS]' "/proc/$pid/status" || fail "the init is not running: $(grep State "/proc/$pid/status")"
	[ ! -e "$T/img" ] || fail "the refused checkpoint left an image dir"

	# migrate refuses it at its preflight, before it freezes or sends anything
	stand_in_ssh
	expect_fail 1 rt migrate --ssh "$T/fake-ssh" "$id" ssh://dst
	expect_output "failed at preflight" "migrate with a notify listener"
	expect_output 'hands syscalls to an agent (linux.seccomp.listenerPath' "migrate with a notify listener"
	[ "$(rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = running ] ||
		fail "after the refused migrate: $(rt state "$id")"
	stand_in_dst_empty "migrate with a notify listener"
	check rt delete --force "$id"
}
scenario True 1
scenario False 3

# nothing left behind by a create that fails
gone() {
	[ ! -e "$RTROOT/$id" ] || fail "$1: state dir left: $(ls "$RTROOT/$id")"
	for d in /sys/fs/cgroup/*/"$CGPARENT/$id"; do
		[ ! -d "$d" ] || fail "$1: cgroup left: $d"
	done
}
bad_create() { # $1: what, $2: pattern of the error
	expect_fail ! rt create --bundle "$B" "$id"
	expect_output "$2" "$1"
	gone "$1"
}
touch "$T/plain"
profile "'$T/plain'"
bad_create "listenerPath is a regular file" "listenerPath: \`$T/plain\` is not a socket"
profile "'$T/none.sock'"
bad_create "listenerPath missing" "listenerPath: failed to connect with seccomp agent \`$T/none.sock\`: No such file or directory"
# a socket file nobody listens on
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/stale.sock"
profile "'$T/stale.sock'"
bad_create "nobody listens" "failed to connect with seccomp agent \`$T/stale.sock\`: Connection refused"
bundle_set "$B" 'del c["linux"]["seccomp"]["listenerPath"]; del c["linux"]["seccomp"]["listenerMetadata"]'
bad_create "SCMP_ACT_NOTIFY without listenerPath" "SCMP_ACT_NOTIFY needs linux.seccomp.listenerPath"
bundle_set "$B" 'c["linux"]["seccomp"]["syscalls"][0]["names"] = ["sendmsg"]; c["linux"]["seccomp"]["listenerPath"] = "/x"'
bad_create "SCMP_ACT_NOTIFY on sendmsg" "SCMP_ACT_NOTIFY on \`sendmsg\`"
bundle_set "$B" 'c["linux"]["seccomp"]["syscalls"][0]["names"] = ["write"]'
bad_create "SCMP_ACT_NOTIFY on write" "SCMP_ACT_NOTIFY cannot be used for the write syscall"

# the agent goes away between create and start: the init can't hand over the fd, so the
# process never runs (a filter whose notifications nobody answers); its stderr says why
mkdir "$T/agent2"
"$AGENT" "$T/agent2.sock" "$T/agent2" 2>/dev/null &
agent2=$!
at_exit "kill $agent2"
for _ in $(seq 100); do [ -S "$T/agent2.sock" ] && break; sleep 0.05; done
bundle_set "$B" "
c['linux']['seccomp'] = {'defaultAction': 'SCMP_ACT_ALLOW', 'listenerPath': '$T/agent2.sock',
  'syscalls': [{'names': ['mkdir', 'mkdirat'], 'action': 'SCMP_ACT_NOTIFY'}]}
c['process']['args'] = ['/bin/touch', '/proc-ran']
del c['hooks']['startContainer']"
rm -f "$B/rootfs/proc-ran"
rt create --bundle "$B" "$id" </dev/null >"$T/out3" 2>&1 || fail "create (agent2): $(cat "$T/out3")"
kill "$agent2"
wait "$agent2" 2>/dev/null
# start fails, and says why itself (the init hands its reason back through the exec fifo)
rt start "$id" >"$T/start3" 2>&1 && fail "start succeeded with its agent gone: $(cat "$T/start3")"
grep -q "failed before its process ran: .*send the notify fd to linux.seccomp.listenerPath" "$T/start3" ||
	fail "start does not name the lost agent: $(cat "$T/start3")"
for _ in $(seq 100); do grep -q 'container init' "$T/out3" && break; sleep 0.05; done
grep -q 'send the notify fd to linux.seccomp.listenerPath' "$T/out3" || fail "a lost agent is not reported: $(cat "$T/out3")"
[ "$(rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = stopped ] ||
	fail "after the failed start the container is not stopped: $(rt state "$id")"
[ ! -e "$B/rootfs/proc-ran" ] || fail "the process ran without its agent"
check rt delete --force "$id"

# a filter that blocks execve blocks the startContainer hook too (as with runc and crun):
# start fails naming the hook, the container's stderr names it too, the process never runs
bundle_set "$B" '
c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [{"names": ["execve", "execveat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]}
c["process"]["args"] = ["/bin/touch", "/proc-ran"]
c["hooks"]["startContainer"] = [{"path": "/bin/touch", "args": ["touch", "/hook-ran"]}]'
rm -f "$B/rootfs/hook-ran" "$B/rootfs/proc-ran"
rt create --bundle "$B" "$id" </dev/null >"$T/out2" 2>&1 || fail "create (execve blocked): $(cat "$T/out2")"
rt start "$id" >"$T/start2" 2>&1 && fail "start succeeded with its startContainer hook refused: $(cat "$T/start2")"
grep -q 'failed before its process ran: .*startContainer\[0\] `/bin/touch`' "$T/start2" ||
	fail "start does not name the failed hook: $(cat "$T/start2")"
for _ in $(seq 100); do grep -q 'container init' "$T/out2" && break; sleep 0.05; done
grep -q 'startContainer\[0\] `/bin/touch`' "$T/out2" || fail "the hook's failure is not reported: $(cat "$T/out2")"
grep -q 'Permission denied' "$T/out2" || fail "the hook's execve was not the filter's to refuse: $(cat "$T/out2")"
[ ! -e "$B/rootfs/hook-ran" ] || fail "the startContainer hook ran past a filter that blocks execve"
[ ! -e "$B/rootfs/proc-ran" ] || fail "the container process ran after its startContainer hook failed"
check rt delete --force "$id"
echo "PASS $TEST_NAME"
