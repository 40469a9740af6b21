#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# No runtime fd leaks into the container; the container can't reach the
# cryo binary through /proc/PID/exe (CVE-2019-5736); masked and read-only
# paths, default devices (bind-mounted, host nodes untouched), /dev links.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

id=rt-sec-$$
B=$T/$id
bundle_new "$B"

# inside: ls is pid 1, so /proc/self/fd is what cryo handed over plus ls's own dir fd (3)
bundle_set "$B" 'c["process"]["args"] = ["ls", "/proc/self/fd"]'
out=$(rt_timed --log "$T/log" run --bundle "$B" "$id" </dev/null 2>&1 3</dev/null 4</dev/null 9</dev/null) \
	|| fail "run: $out"
[ "$(echo $out)" = "0 1 2 3" ] || fail "fds open in the container: \`$(echo $out)\` (expected \`0 1 2 3\`, 3 being ls's own)"
# outside: the running init has exactly 0 1 2, even with more fds open in the caller
bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]'
rt --log "$T/log" run -d --pid-file "$T/pid" --bundle "$B" "$id" </dev/null >/dev/null 2>&1 3</dev/null 7</dev/null || fail "run -d failed"
out=$(ls "/proc/$(cat "$T/pid")/fd")
[ "$(echo $out)" = "0 1 2" ] || fail "fds of the container's init: \`$(echo $out)\`"
check rt delete --force "$id"

# CVE-2019-5736: the init's exe is a sealed memfd, not the host binary
sum=$(sha256sum "$CRYO_BIN" | cut -d' ' -f1)
bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]'
rt create --bundle "$B" --pid-file "$T/pid" "$id" </dev/null >/dev/null 2>&1 || fail "create failed"
pid=$(cat "$T/pid")
exe=$(readlink "/proc/$pid/exe")
case "$exe" in /memfd:cryo*) ;; *) fail "the container init runs from \`$exe\`, not a sealed memfd" ;; esac
if (echo x > "/proc/$pid/exe") 2>/dev/null; then fail "/proc/$pid/exe of the init could be opened for writing"; fi
check rt delete --force "$id"
# an entrypoint that execs /proc/self/exe runs the memfd copy, never the host file
bundle_set "$B" 'c["process"]["args"] = ["/proc/self/exe"]'
rt_timed run --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || true
[ "$(sha256sum "$CRYO_BIN" | cut -d' ' -f1)" = "$sum" ] || fail "the cryo binary changed"
rt delete --force "$id" >/dev/null 2>&1 || true
# an immutable binary can't be written at all: cryo then skips the copy
cp "$CRYO_BIN" "$T/cryo-imm"
if chattr +i "$T/cryo-imm" 2>/dev/null; then
	at_exit "chattr -i $T/cryo-imm"
	bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]'
	"$T/cryo-imm" --root "$RTROOT" create --bundle "$B" --pid-file "$T/pid" "$id" </dev/null >/dev/null 2>&1 || fail "create (immutable binary) failed"
	[ "$(readlink "/proc/$(cat "$T/pid")/exe")" = "$T/cryo-imm" ] || fail "immutable binary: init runs $(readlink "/proc/$(cat "$T/pid")/exe")"
	if (echo x > "/proc/$(cat "$T/pid")/exe") 2>/dev/null; then fail "the immutable binary was writable"; fi
	check rt delete --force "$id"
	chattr -i "$T/cryo-imm"
fi

# masked / read-only paths, devices, links
bundle_set "$B" '
c["process"]["args"] = ["sh", "-c", """
set -u
[ -z "$(cat /proc/timer_list 2>&1 | head -c 1)" ] && echo timer_list-masked
[ -z "$(ls /proc/acpi 2>/dev/null)" ] && echo acpi-masked
(echo 1 > /proc/sys/kernel/ns_last_pid) 2>/dev/null || echo procsys-ro
(echo x > /sys/kernel/foo) 2>/dev/null || echo sys-ro
head -c 4 /dev/zero | wc -c | tr -d " " | sed s/^/zero=/
echo hi > /dev/null && echo null-ok
[ -L /dev/fd ] && [ -L /dev/stdin ] && echo links-ok
[ -c /dev/pts/ptmx ] && [ -L /dev/ptmx ] && echo pts-ok
[ -d /dev/shm ] && [ -d /dev/mqueue ] && echo shm-ok
touch /ro-root-test 2>/dev/null || echo root-ro
grep -q " / " /proc/mounts && echo has-root
[ ! -e /tmp/rtprobe-host-only ] && echo isolated
"""]
c["root"]["readonly"] = True
c["linux"]["devices"] = [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229, "fileMode": 438, "uid": 0, "gid": 0}]
'
before=$(stat -c '%U %G %a' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run: $out"
for want in timer_list-masked acpi-masked procsys-ro sys-ro zero=4 null-ok links-ok pts-ok shm-ok root-ro has-root isolated; do
	echo "$out" | grep -qx "$want" || fail "expected \`$want\` in: $out"
done
[ "$(stat -c '%U %G %a' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)" = "$before" ] \
	|| fail "host device nodes changed"
# nothing the container mounted is visible on the host
! grep -q "$B/rootfs/" /proc/self/mountinfo || fail "container mounts leaked to the host: $(grep "$B/rootfs/" /proc/self/mountinfo)"
echo ok
