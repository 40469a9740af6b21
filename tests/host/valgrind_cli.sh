#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# No leaks and no memory errors on the CLI paths: every command below runs
# under valgrind (memcheck, full leak check); a definite or indirect leak,
# an invalid access or an uninitialised read fails the test. Each path's
# own exit status is checked too, so a crash is not mistaken for an error.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/fsimg.sh"
need_root
need_cmd valgrind
# valgrind and ASan cannot share a process; the plain build runs this test
[ "${CRYO_SANITIZE:-0}" = 1 ] && skip "cryo is built with ASan+UBSan (valgrind runs in the plain build)"

R=$T/root
VG=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
	--errors-for-leak-kinds=definite,indirect --child-silent-after-fork=yes --track-fds=no)
n=0

# vg WANT_RC ARGS...: run `cryo ARGS` under valgrind, expect exit WANT_RC
vg() {
	local want=$1 rc
	shift
	"${VG[@]}" "$CRYO_BIN" "$@" </dev/null >"$T/vg.out" 2>&1 && rc=0 || rc=$?
	[ $rc != 99 ] || fail "valgrind found errors in \`cryo $*\`: $(cat "$T/vg.out")"
	[ $rc = "$want" ] || fail "\`cryo $*\` exited $rc under valgrind, expected $want: $(cat "$T/vg.out")"
	grep -q '==[0-9]*==' "$T/vg.out" && fail "valgrind reported on \`cryo $*\`: $(cat "$T/vg.out")"
	n=$((n + 1))
}

vg 0 --version
vg 0 --help
vg 0 features
vg 2 no-such-command
vg 2 --log-format xml features
vg 0 --log "$T/log.json" --log-format json --debug features
vg 2 --log "$T/log.json" --log-format json delete -bogus x
vg 0 --root "$R" delete -force nosuch
mkdir "$T/spec"
vg 0 spec -rootless -bundle "$T/spec"
vg 1 --root "$R" events --stats nosuch
vg 1 --root "$R" update --memory 1m nosuch
vg 1 --root "$R" restore -no-subreaper -lazy-pages x

fsimg_mount ext4 fs 64M
vg 0 --root "$R" fsfreeze --path "$T/fs" --timeout 60
vg 1 --root "$R" fsfreeze --path "$T/fs" --timeout 60   # already held by this owner
vg 0 --root "$R" fsfreeze --reset-timeout 30 --path "$T/fs"
vg 0 --root "$R" fsthaw --path "$T/fs"
vg 1 --root "$R" fsthaw --path "$T/fs"                  # not frozen
vg 1 --root "$R" fsfreeze --path /tmp                   # tmpfs or the host's /: refused
vg 1 --root "$R" fsfreeze ../etc                        # bad id
echo "ok: $n CLI paths clean under valgrind"
