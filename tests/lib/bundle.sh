# SPDX-License-Identifier: GPL-2.0-only
# Sourced after common.sh by tests that run containers.
#
#   bundle_new DIR [CMD...]   busybox bundle on its own ext4 image (torn down at exit),
#                             cgroupsPath under this test's own parent cgroup
#   bundle_for PREFIX [CMD...]
#                             the test's container: id=PREFIX-<pid>, its bundle
#                             B=$T/$id made by bundle_new
#   bundle_set DIR PY         edit DIR/config.json: PY runs with `c` bound to the config
#   bundle_counting DIR       bundle_new DIR whose process writes a count to /count every 50 ms
#   bundle_count DIR          the count it wrote last (0 before the first)
#   bundle_count_above DIR N [TRIES]
#                             until that count passes N, TRIES x 50 ms at most (60);
#                             false if it did not
#   rt_run_quiet DIR ID       run -d with stdio on /dev/null (CRIU cannot dump a file on a
#                             host mount); on failure, fail with what a second try says
#   rt_freezer_cgroup ID      the dir of ID's freezer cgroup (v1, or v2), from its
#                             state.json: read without the state lock a stopped cryo holds
#   cgroup_parent             the parent cgroup every container of this test lives in
#   rt                        cryo with --root in $T
#   rt_timed                  rt under a 60 s timeout, for a foreground `run` that could hang
#   stand_in_ssh              $T/fake-ssh: for `rt migrate --ssh`, a receive here in a root of its own
#   stand_in_dst_empty WHAT   fail unless that receive made no bundle and staged nothing
need_root
need_cmd busybox
need_cmd mkfs.ext4
need_cmd python3

CGPARENT="cryo-test-runtime-$$"
RTROOT="$T/root"

rt() { "$CRYO_BIN" --root "$RTROOT" "$@"; }

# need_host_criu: a CRIU that works on this host (CRYO_CRIU, else the one
# tests/setup-criu4.sh installs), as `cryo check` says; or skip
need_host_criu() {
	if [ -z "${CRYO_CRIU:-}" ] && [ -x /opt/cryo-criu4/sbin/criu ]; then
		export CRYO_CRIU=/opt/cryo-criu4/sbin/criu
	fi
	"$CRYO_BIN" check >"$T/check.out" 2>&1 ||
		skip "CRIU does not work on this host (run tests/setup-criu4.sh): $(tail -1 "$T/check.out")"
}
rt_timed() { timeout 60 "$CRYO_BIN" --root "$RTROOT" "$@"; }

# A stand-in for ssh(1): the destination's `receive --stdio`, on this
# host, with its root in $T/dst-root, its bundles in $T/dst-bundles and
# its stderr in $T/dst.err. For the migrations refused before the transfer.
stand_in_ssh() {
	mkdir -p "$T/dst-root" "$T/dst-bundles"
	printf '#!/bin/sh\nexec "%s" --root "%s" receive --stdio --bundle-dir "%s" --allow-unsigned 2>>"%s"\n' \
		"$CRYO_BIN" "$T/dst-root" "$T/dst-bundles" "$T/dst.err" >"$T/fake-ssh"
	chmod +x "$T/fake-ssh"
}

stand_in_dst_empty() {
	[ -z "$(ls -A "$T/dst-bundles")" ] || fail "$1: the destination made a bundle: $(ls -A "$T/dst-bundles")"
	[ -z "$(ls -A "$T/dst-root/.migrate-in" 2>/dev/null)" ] || fail "$1: the destination staged something"
}

_cgparent_cleanup() {
	local d
	for d in /sys/fs/cgroup/*/"$CGPARENT"; do
		[ -d "$d" ] || continue
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
		rmdir "$d" 2>/dev/null
	done
}
at_exit _cgparent_cleanup

_rt_cleanup() {
	local id
	for id in $(rt list -q 2>/dev/null); do
		rt delete --force "$id" >/dev/null 2>&1
	done
}

bundle_new() {
	local dir=$1 id
	shift
	id=$(basename "$dir")
	"$CRYO_SRC/examples/mkbundle.sh" --size 32 --cgroups-path "/$CGPARENT/$id" "$dir" "$@" >/dev/null \
		|| fail "mkbundle.sh $dir failed"
	at_exit "\"$CRYO_SRC/examples/mkbundle.sh\" --teardown \"$dir\""
	# containers go before their bundles
	at_exit _rt_cleanup
}

bundle_for() {
	id=$1-$$
	B=$T/$id
	shift
	bundle_new "$B" "$@"
}

bundle_counting() {
	bundle_new "$1" sh -c 'i=0; while true; do i=$((i+1)); echo $i > /count; sleep 0.05; done'
}

# (the workload's `echo > /count` truncates, then writes: a read in between
# sees nothing, and is read again)
bundle_count() {
	local c
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		c=$(cat "$1/rootfs/count" 2>/dev/null)
		[ -n "$c" ] && break
		sleep 0.01
	done
	echo "${c:-0}"
}

bundle_count_above() {
	for _ in $(seq "${3:-60}"); do
		[ "$(bundle_count "$1")" -gt "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

rt_run_quiet() {
	rt run -d --bundle "$1" "$2" </dev/null >/dev/null 2>&1 ||
		fail "run failed (again: $(rt run -d --bundle "$1" "$2-x" 2>&1 </dev/null))"
}

rt_freezer_cgroup() {
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))
print(s["cgroupV1Freezer"] if s.get("freezerBackend") == "v1" or not s.get("cgroupV2") else s["cgroupV2"])' "$RTROOT/$1/state.json" ||
		fail "no cgroup in the state of $1"
}

bundle_set() {
	python3 - "$1/config.json" "$2" <<'PY' || fail "editing $1/config.json failed"
import json, sys
p, code = sys.argv[1], sys.argv[2]
c = json.load(open(p))
exec(code)
json.dump(c, open(p, "w"), indent=1)
PY
}

# cgroup file of a container in a v1 hierarchy or "unified"
cgfile() { cat "/sys/fs/cgroup/$1/$CGPARENT/$2/$3"; }
