#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `cryo migrate ... ssh://host` over real OpenSSH: Debian's sshd runs as
# the destination host of tests/lib/migrate.sh (its network, cgroup and
# mount namespaces) with a host key made here; the source runs the real
# ssh(1) with a key pair made here and a known_hosts holding that host
# key, StrictHostKeyChecking=yes. cryo runs `ssh ... cryo receive --stdio`
# (runtime/transport.c); `--ssh` names a two-line wrapper that only adds
# `-F <this test's ssh_config>` (cryo has no option for ssh's own
# options, and root's ~/.ssh is not the test's to change).
#
#  - a host key other than the known one, and an unknown host: ssh
#    refuses before authenticating (sshd logs no accepted key, no
#    session), the source never froze and runs on;
#  - a client key sshd does not accept: refused the same way;
#  - the remote cryo missing: the source runs on;
#  - the remote cryo failing after the source froze and sent its image
#    (CRYO_FAULT=receive:restore there), and killed (SIGKILL, no word)
#    after its transfer: the source resumes, the destination keeps nothing;
#  - the link cut mid-transfer (traffic slowed with tbf so that the image
#    is on its way): the veth set down (no FIN, no RST: only the timeouts
#    of both ends can tell), and the ssh client killed (the channel ends):
#    the source resumes, the destination keeps nothing;
#  - a signed migration: the self-checking counter goes on counting
#    there with its memory and records, the source is stopped.
#
# A host test (not a VM one): sshd runs in a network namespace of its own
# here as well as in the VM, and a host dump is seconds, not minutes of
# TCG. Needs CRIU that works on this host (CRYO_CRIU or /opt/cryo-criu4)
# and openssh-server (tests/setup.sh).
. "$(dirname "$0")/../lib/common.sh"
need_root
. "$CRYO_SRC/tests/lib/bundle.sh"
export CRYO_CRIU=${CRYO_CRIU:-/opt/cryo-criu4/sbin/criu}
[ -x "$CRYO_CRIU" ] || skip "no working CRIU: $CRYO_CRIU missing (tests/setup-criu4.sh)"
"$CRYO_BIN" check >"$T/check.out" 2>&1 || skip "\`cryo check\` fails: $(tail -1 "$T/check.out")"
need_cmd ssh
need_cmd ssh-keygen
SSHD=/usr/sbin/sshd
[ -x "$SSHD" ] || skip "needs sshd (openssh-server, tests/setup.sh)"
. "$CRYO_SRC/tests/lib/workload.sh"
. "$CRYO_SRC/tests/lib/migrate.sh"
file "$WL_BIN" | grep -q 'statically linked' || skip "cryo-test-counter is not static (sanitizer build?)"

mig_hosts_setup
K=$T/ssh
mkdir -m 0700 "$K"
for k in host_key other_host_key id other_id; do
	ssh-keygen -q -t ed25519 -N '' -C "cryo-test-$k" -f "$K/$k" || fail "ssh-keygen $k"
done
cp "$K/id.pub" "$K/authorized_keys"
echo "$MIG_IP_DST $(cut -d' ' -f1,2 "$K/host_key.pub")" >"$K/known_hosts"
echo "$MIG_IP_DST $(cut -d' ' -f1,2 "$K/other_host_key.pub")" >"$K/known_hosts.wrong"
: >"$K/known_hosts.empty"

# sshd: privilege separation wants /run/sshd (the ssh service makes it at boot)
if [ ! -d /run/sshd ]; then
	mkdir -m 0755 /run/sshd || fail "mkdir /run/sshd"
	at_exit "rmdir /run/sshd"
fi
# StrictModes no: the key files are under /tmp, whose mode sshd's check refuses
cat >"$K/sshd_config" <<EOF
ListenAddress $MIG_IP_DST:22
HostKey $K/host_key
PidFile $K/sshd.pid
AuthorizedKeysFile $K/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel VERBOSE
EOF
"$SSHD" -t -f "$K/sshd_config" || fail "sshd rejects the test's config"
# sshd runs the remote command with root's shell, which reads ~/.bashrc:
# not this host's (a pyenv there once waited 60 s for a stale lock in
# each session, and every --timeout ran out): an empty one, in the dest
# host's own mount namespace
on_dest sh -c '[ ! -e "$HOME/.bashrc" ] || mount --bind /dev/null "$HOME/.bashrc"; exec "$@"' sshd \
	"$SSHD" -D -e -f "$K/sshd_config" 2>"$T/sshd.log" &
at_exit "[ -s '$K/sshd.pid' ] && kill \$(cat '$K/sshd.pid') 2>/dev/null"
for _ in $(seq 100); do
	[ -s "$K/sshd.pid" ] && ip netns exec "$MIG_NS" ss -ltn | grep -q "$MIG_IP_DST:22 " && break
	sleep 0.05
done
ip netns exec "$MIG_NS" ss -ltn | grep -q "$MIG_IP_DST:22 " || fail "sshd does not listen: $(cat "$T/sshd.log")"

# ssh_config KNOWN_HOSTS IDENTITY: one per case, a wrapper for --ssh each
mk_ssh() {
	cat >"$K/config.$1" <<EOF
Host *
	User root
	IdentityFile $K/$3
	IdentitiesOnly yes
	UserKnownHostsFile $K/$2
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	UpdateHostKeys no
	ConnectTimeout 10
EOF
	printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$K/config.$1" >"$K/ssh.$1"
	chmod +x "$K/ssh.$1"
}
mk_ssh ok known_hosts id
mk_ssh wrong known_hosts.wrong id
mk_ssh unknown known_hosts.empty id
mk_ssh nokey known_hosts other_id
# the remote command really runs as the dest host: it answers from there
out=$("$K/ssh.ok" -T -o BatchMode=yes "$MIG_IP_DST" -- "ip -br addr show; cat /proc/self/cgroup" 2>&1) ||
	fail "ssh to the dest host: $out / sshd: $(cat "$T/sshd.log")"
echo "$out" | grep -q "$MIG_IP_DST" || fail "the remote command does not run in the dest's netns: $out"

openssl rand -out "$K/mig.key" 32
chmod 600 "$K/mig.key"
REMOTE="env CRYO_CRIU=$CRYO_CRIU $CRYO_BIN --root $MIG_ROOT_DST"
OPTS="--bundle-dir $MIG_BUNDLES --verify-key $K/mig.key"
DEST=ssh://$MIG_IP_DST
# mig_ssh CASE [MIGRATE OPTS...] (the remote command may be replaced: REMOTE_CMD)
mig_ssh() {
	local how=$1
	shift
	rt migrate --ssh "$K/ssh.$how" --remote-cryo "${REMOTE_CMD:-$REMOTE}" --remote-opts "${REMOTE_OPTS:-$OPTS}" \
		--sign-key "$K/mig.key" "$@" "$id" "$DEST"
}

id=mssh-$$
B=$T/$id
mig_counter_run "$B" "$id" 4
S=$B/rootfs-dir/status
D=$MIG_BUNDLES/$id/rootfs-dir/status
wl_wait_above "$S" 20
t_start=$(now_ms)

# the source runs as before, nothing of the attempt is left on either side
assert_back() { mig_assert_back "$1" "$id" "$S"; }
# what sshd logged since a mark
sshd_log_mark() { SSHD_MARK=$(wc -l <"$T/sshd.log"); }
sshd_log_since() { tail -n +"$((SSHD_MARK + 1))" "$T/sshd.log"; }

# --- trust: a changed host key, an unknown host, a key sshd does not know
for how in wrong unknown nokey; do
	sshd_log_mark
	c0=$(wl_count "$S")
	expect_fail 1 mig_ssh "$how"
	case $how in
	wrong) expect_output 'REMOTE HOST IDENTIFICATION HAS CHANGED' "changed host key" ;;
	unknown) expect_output 'Host key verification failed' "unknown host" ;;
	nokey) expect_output 'Permission denied (publickey)' "unauthorized client key" ;;
	esac
	expect_output -E 'failed at (connect|preflight)' "$how: refused before the freeze"
	echo "$LAST_OUTPUT" | grep -q 'failed at freeze\|failed at checkpoint\|failed at transfer' &&
		fail "$how: got past the preflight: $LAST_OUTPUT"
	sleep 0.2
	if sshd_log_since | grep -q 'Accepted publickey\|session opened\|Starting session'; then
		fail "$how: sshd let it in: $(sshd_log_since)"
	fi
	# the container ran all along: its count went on across the attempt
	[ "$(wl_count "$S")" -gt "$c0" ] || fail "$how: the source stopped counting"
	assert_back "$how"
	log "$how: refused by ssh ($(echo "$LAST_OUTPUT" | grep -m1 -o 'REMOTE HOST IDENTIFICATION HAS CHANGED\|Host key verification failed\|Permission denied (publickey)'));" \
		"sshd: $(sshd_log_since | grep -m1 -o 'Connection closed by .*\[preauth\]\|Connection reset.*\|Disconnected.*' || echo nothing)"
done

# --- the remote cryo is missing
REMOTE_CMD="/nonexistent/cryo --root $MIG_ROOT_DST" expect_fail 1 mig_ssh ok
expect_output 'not found\|No such file' "missing remote cryo"
expect_output -E 'failed at (connect|preflight)' "missing remote cryo"
assert_back "missing remote cryo"
log "remote cryo missing: $(echo "$LAST_OUTPUT" | grep -m1 '^cryo:')"

# --- the remote cryo fails after the source froze, dumped and sent its image
REMOTE_CMD="env CRYO_FAULT=receive:restore $REMOTE" expect_fail 1 mig_ssh ok
expect_output 'the destination at restore' "remote fault at restore"
expect_output 'injected fault' "remote fault at restore"
assert_back "remote fault at restore"
log "remote cryo failing at its restore: the source resumed"

# --- the remote cryo dies without a word after its transfer (SIGKILL)
REMOTE_CMD="env CRYO_PAUSE_AT=receive:verify $REMOTE" mig_ssh ok >"$T/m.out" 2>&1 &
mpid=$!
rpid=""
for _ in $(seq 600); do
	for p in $(pgrep -f -- "--root $MIG_ROOT_DST receive --stdio"); do
		[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = T ] && rpid=$p
	done
	[ -n "$rpid" ] && break
	kill -0 "$mpid" 2>/dev/null || break
	sleep 0.1
done
[ -n "$rpid" ] || fail "the remote receive did not stop at its verify: $(cat "$T/m.out")"
[ "$(rt freezer-state "$id")" = FROZEN ] || fail "remote killed: the source was not frozen while the destination verified"
kill -9 "$rpid"
wait "$mpid" && mrc=0 || mrc=$?
[ "$mrc" = 1 ] || fail "remote killed: migrate exited $mrc: $(cat "$T/m.out")"
# its staged images are journalled: `cryo recover` there removes them
check rt_dst recover
assert_back "remote killed after its transfer"
log "remote cryo killed after its transfer: migrate exited $mrc, the source resumed ($(grep -m1 '^cryo:' "$T/m.out"))"

# --- the link cut mid-transfer. Traffic to the destination is slowed to
# 16 Mbit/s (tbf on the source's veth) so that the image (about 10 MiB) is
# on its way for seconds; once 1 MiB of it is staged there the link goes.
SRC_IF=vm$MIG_N
tc qdisc add dev "$SRC_IF" root tbf rate 16mbit burst 32kbit latency 400ms || fail "tc tbf on $SRC_IF"
staged_bytes() { du -sb "$MIG_ROOT_DST/.migrate-in" 2>/dev/null | awk '{ print $1 }'; }
wait_staged() {  # MIN: until the destination staged MIN bytes, while migrate runs
	local b
	for _ in $(seq 400); do
		b=$(staged_bytes)
		[ "${b:-0}" -ge "$1" ] && return 0
		kill -0 "$mpid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
wait_migrate() {  # SEC: migrate's exit status in mrc, or fail
	local i
	for i in $(seq $(($1 * 10))); do
		kill -0 "$mpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$mpid" 2>/dev/null && fail "$2: migrate still runs $1 s after the cut: $(cat "$T/m.out")"
	wait "$mpid" && mrc=0 || mrc=$?
}
remote_gone() {  # the remote receive ended: its own timeout, or its channel closed
	for _ in $(seq 300); do
		pgrep -f -- "--root $MIG_ROOT_DST receive --stdio" >/dev/null || return 0
		sleep 0.1
	done
	fail "$1: the remote receive still runs 30 s after the cut"
}

# the veth goes down: both ends only have their --timeout (3 s here) to tell
REMOTE_OPTS="$OPTS --timeout 3000" mig_ssh ok --timeout 3000 >"$T/m.out" 2>&1 &
mpid=$!
wait_staged 1048576 || fail "link down: nothing staged there before migrate ended: $(cat "$T/m.out")"
t_cut=$(now_ms)
ip link set "$SRC_IF" down
wait_migrate 30 "link down"
took=$(( $(now_ms) - t_cut ))
ip link set "$SRC_IF" up
[ "$mrc" = 1 ] || fail "link down: migrate exited $mrc: $(cat "$T/m.out")"
# its --timeout, not TCP's or ssh's own: nothing is said over the dead link, ssh is not waited for
[ "$took" -lt 8000 ] || fail "link down: migrate ended $took ms after the cut, with --timeout 3000: $(cat "$T/m.out")"
grep -Eq 'failed at (checkpoint|transfer)' "$T/m.out" || fail "link down: no failed phase named: $(cat "$T/m.out")"
remote_gone "link down"
assert_back "link down mid-transfer"
log "link down mid-transfer: migrate gave up $took ms after the cut, the source resumed, the destination kept nothing: $(grep -m1 "^cryo:" "$T/m.out")"

# the ssh client dies: the channel ends at once, no timeout to wait for
mig_ssh ok >"$T/m.out" 2>&1 &
mpid=$!
wait_staged 1048576 || fail "ssh killed: nothing staged there before migrate ended: $(cat "$T/m.out")"
spid=$(pgrep -f -- "^ssh -F $K/config.ok") || fail "ssh killed: no ssh client running"
t_cut=$(now_ms)
kill -9 $spid
wait_migrate 30 "ssh killed"
took=$(( $(now_ms) - t_cut ))
[ "$mrc" = 1 ] || fail "ssh killed: migrate exited $mrc: $(cat "$T/m.out")"
grep -Eq 'failed at (checkpoint|transfer)' "$T/m.out" || fail "ssh killed: no failed phase named: $(cat "$T/m.out")"
remote_gone "ssh killed"
assert_back "ssh client killed mid-transfer"
log "ssh client killed mid-transfer: migrate failed $took ms after ($(grep -m1 -o 'failed at [^;]*' "$T/m.out")), the source resumed, the destination kept nothing"
tc qdisc del dev "$SRC_IF" root || fail "tc: remove the tbf"

# --- the migration: the counter goes on counting there
before=$(wl_count "$S")
sshd_log_mark
mig_ssh ok >"$T/m.out" 2>&1 || fail "migrate over ssh: $(cat "$T/m.out") / sshd: $(sshd_log_since)"
grep '^migrated' "$T/m.out" | sed 's/^/# /'
sshd_log_since | grep -q "Accepted publickey for root from $MIG_IP_SRC" || fail "sshd did not log the key login: $(sshd_log_since)"
rt state "$id" | grep -q '"status":"stopped"' || fail "the source is not stopped: $(rt state "$id")"
rt_dst state "$id" | grep -q '"status":"running"' || fail "not running on the destination: $(rt_dst state "$id")"
rt_dst state "$id" | grep -q '"org.cryo.migrate.downtime_usec":"[0-9]*"' || fail "no downtime stored: $(rt_dst state "$id")"
# where the downtime went: both hosts' steps printed, the source's own
# back to back from the freeze to the confirmation (they add up to the
# downtime), the destination's CRIU restore among them and kept in its state
python3 - "$T/m.out" "$(rt_dst state "$id")" <<'PY' || fail "downtime steps: $(cat "$T/m.out")"
import json, re, sys
out = open(sys.argv[1]).read()
# the source's own line (the destination's stderr, relayed, has one too)
down = float(re.search(r"^migrated .*: downtime ([0-9.]+) ms", out, re.M).group(1))
steps = re.findall(r"^ +(-?[0-9.]+) +([0-9.]+)  (here|there) +([a-z-]+):([a-z-]+)$", out, re.M)
top = [(float(a), float(t)) for a, t, h, tab, s in steps if h == "here" and tab == "migrate"]
names = {(h, tab, s) for a, t, h, tab, s in steps}
for want in (("here", "checkpoint", "criu-dump"), ("there", "restore", "criu-restore"), ("there", "receive", "commit")):
    assert want in names, want
total = sum(t for a, t in top)
assert 0.9 * down <= total <= down + 1, (total, down)
ann = json.loads(sys.argv[2])["annotations"]["org.cryo.migrate.downtime_steps"]
kept = {s["step"] for s in json.loads(ann)}
assert {"restore:criu-restore", "receive:commit"} <= kept, kept
print("# downtime %.1f ms: the source's steps add up to %.1f; criu-dump %s, criu-restore there %s" % (down, total,
      [t for a, t, h, tab, s in steps if s == "criu-dump"][0], [t for a, t, h, tab, s in steps if s == "criu-restore"][0]))
PY
wl_wait_above "$D" $((before + 50))
wl_status "$D" | grep -q ' ok ' || fail "after migration: $(wl_status "$D")"
[ -z "$(ls -A "$RTROOT/.migrate-out" 2>/dev/null)" ] || fail "the source's image was left"
[ -z "$(ls -A "$MIG_ROOT_DST/.migrate-in" 2>/dev/null)" ] || fail "the destination's staging was left"
log "migrated over ssh: count $before here, $(wl_count "$D") there; the workload's checks pass"
log "took $(( ($(now_ms) - t_start) / 1000 )) s"
echo "PASS migrate_ssh"
