#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Socket-level fuzzing of a live `cryo receive`, over --stdio and over
# mutual TLS: what a real source sent is recorded (a signed migration, a
# signed one with two pre-copy rounds, an unsigned one), then mutated
# streams of it (tests/soak/fuzz_frames.py: frames dropped, repeated,
# reordered, spliced from another session; bytes flipped or cut, lengths
# that lie, hostile file names, streams cut short) are fed to one fresh
# receiver after another until the time is up. Each must end within its
# --timeout with a clear refusal (or take a stream that lost nothing of
# substance), with no crash, no sanitizer report and nothing left in its
# dirs. The receivers run in a mount namespace where everything but their
# own dir is read-only: a write anywhere else fails and shows as "Read-only
# file system", which counts as a finding too. The verified streams reach
# the restore (its rootfs extraction runs), stopped before CRIU
# (CRYO_FAULT=restore:criu-restore).
#
#   CRYO_SOAK_SECONDS=S   fuzzing time, split between --stdio and TLS (default 30)
#   CRYO_SOAK_SEED=N      the mutations' seed (default: random, printed)
# The frame decoder's libFuzzer target is tests/fuzz/fuzz_migrate_frame.c.
# Needs a CRIU that works here (the recording migrates), CRYO_CRIU.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/soak.sh"
soak_begin
SECONDS_ALL=${CRYO_SOAK_SECONDS:-30}
[ "$SECONDS_ALL" -gt 0 ] || SECONDS_ALL=30
CRYO_SOAK_SECONDS=0  # (the fuzzer keeps the time itself)

mig_hosts_setup
mig_tls_certs "$T/pki"
openssl rand -out "$T/sign.key" 32
chmod 600 "$T/sign.key"

# --- record what real sources send: a receive (failing at its restore) behind a tee
id=fz-$$
mig_counter_run "$T/$id" "$id" 1
wl_wait_above "$T/$id/rootfs-dir/status" 20
{
	echo '#!/usr/bin/env bash'
	declare -p MIG_MOUNTS MIG_CG MIG_NS MIG_CGNS
	declare -f on_dest
	echo 'while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done; shift'
	echo 'on_dest bash -c "tee \"$REC\" | env CRYO_FAULT=restore:criu-restore $1"'
} >"$T/rec-ssh"
chmod +x "$T/rec-ssh"
record() {  # NAME MIGRATE-OPTS...: a session recorded into $T/rec/NAME.stream
	local name=$1
	shift
	mkdir -p "$T/rec"
	REC=$T/rec/$name.stream rt migrate --ssh "$T/rec-ssh" --remote-cryo "$CRYO_BIN --root $MIG_ROOT_DST" \
		--remote-opts "--bundle-dir $MIG_BUNDLES ${RECV_OPTS:---verify-key $T/sign.key}" "$@" "$id" ssh://dest \
		>"$T/rec.out" 2>&1 && fail "recording $name: the migration went through"
	grep -q 'the destination at restore\|failed at restore' "$T/rec.out" || fail "recording $name: $(cat "$T/rec.out")"
	[ -s "$T/rec/$name.stream" ] || fail "recording $name: nothing recorded"
	why=$(mig_dst_clean "$id") || fail "recording $name: $why"
}
export REC
record signed --sign-key "$T/sign.key"
# (pre-copy where the kernel tracks dirty pages: the 6.18 host has no soft-dirty)
if has_soft_dirty; then
	record precopy --sign-key "$T/sign.key" --pre-copy 2
else
	log "no soft-dirty page tracking on this kernel (cryo check): no pre-copy session recorded"
fi
RECV_OPTS=--allow-unsigned record unsigned
log "recorded: $(cd "$T/rec" && for f in *.stream; do printf '%s %s bytes; ' "$f" "$(stat -c %s "$f")"; done)"
# the source goes: the image's cgroup is free for the receivers' restores
rt delete --force "$id" >/dev/null 2>&1

# --- a server certificate for 127.0.0.1, from the test's CA
(
	cd "$MIG_PKI" || exit 1
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=fuzz" -keyout lo.key -out lo.csr 2>/dev/null &&
		printf 'subjectAltName=IP:127.0.0.1\n' >lo.ext &&
		openssl x509 -req -in lo.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile lo.ext -out lo.crt 2>/dev/null
) || fail "openssl: the 127.0.0.1 certificate"

# --- fuzz: everything but D read-only
D=$T/fz
mkdir -p "$D"
chmod 700 "$D"
PORT=$((30000 + $$ % 20000))
half=$((SECONDS_ALL / 2))
fuzz() {  # MODE: stdio or tls
	local extra=()
	[ "$1" = tls ] && extra=(--tls "127.0.0.1:$PORT" --cert "$MIG_PKI/lo.crt" --key "$MIG_PKI/lo.key" --ca "$MIG_PKI/ca.crt"
		--ccert "$MIG_PKI/client.crt" --ckey "$MIG_PKI/client.key")
	unshare -m --propagation private bash -c '
		mount --bind "$1" "$1" && mount -o remount,bind,ro / || exit 3
		shift
		exec python3 "$@"' fuzz "$D" "$CRYO_SRC/tests/soak/fuzz_frames.py" --cryo "$CRYO_BIN" --dir "$D/$1" \
		--seconds "$2" --out "$D/figures" --verify-key "$T/sign.key" ${CRYO_SOAK_SEED:+--seed "$CRYO_SOAK_SEED"} \
		"${extra[@]}" "$T"/rec/*.stream >"$T/fuzz.$1.out" 2>&1
}
mkdir -p "$D/stdio" "$D/tls"
fuzz stdio "$half" || rc_stdio=$?
fuzz tls $((SECONDS_ALL - half)) || rc_tls=$?
cat "$T/fuzz.stdio.out" "$T/fuzz.tls.out" | grep -v '^{' | head -20
python3 - "$D/figures" <<'PY' >"$T/sum" || fail "no figures from the fuzzer: $(cat "$T/fuzz.stdio.out" "$T/fuzz.tls.out" | tail -20)"
import json, sys
tot = {}
for line in open(sys.argv[1]):
    for k, v in json.loads(line).items():
        if k != "seed":
            tot[k] = tot.get(k, 0) + v
print(" ".join(f"{k}={v}" for k, v in sorted(tot.items())))
PY
for kv in $(cat "$T/sum"); do soak_count "fuzz.${kv%%=*}" "${kv#*=}"; done
log "fuzzed: $(cat "$T/sum")"
grep -h '"seed"' "$T/fuzz.stdio.out" "$T/fuzz.tls.out" | sed 's/^/# /'
[ "${rc_stdio:-0}" = 0 ] && [ "${rc_tls:-0}" = 0 ] || {
	mkdir -p "${CRYO_SOAK_FINDINGS:-/tmp}/cryo-fuzz-findings.$$"
	cp -a "$D"/*/findings "${CRYO_SOAK_FINDINGS:-/tmp}/cryo-fuzz-findings.$$/" 2>/dev/null
	fail "the fuzzer found something (inputs kept in ${CRYO_SOAK_FINDINGS:-/tmp}/cryo-fuzz-findings.$$): $(cat "$T/sum")"
}
runs=$(sed -n 's/.*\bruns=\([0-9]*\).*/\1/p' "$T/sum")
[ "${runs:-0}" -ge 10 ] || fail "only ${runs:-0} runs: the fuzzer did not get going"
echo "PASS fuzz_receive"
