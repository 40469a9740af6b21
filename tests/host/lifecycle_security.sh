#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# No runtime fd leaks into the container; the container can't reach the
# cryo binary through /proc/PID/exe (CVE-2019-5736); masked and read-only
# paths, default devices (bind-mounted, host nodes untouched), /dev links.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-sec

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

# CVE-2019-5736: the container init runs the cryo binary through a
# read-only bind mount that is in no mount table (default), or from a sealed
# memfd copy (CRYO_SEALEXE=memfd, the fallback without open_tree/mount_setattr)
sum=$(sha256sum "$CRYO_BIN" | cut -d' ' -f1)
bin_mounted() { awk -v b="$(realpath "$CRYO_BIN")" '$5 == b || $4 == b' "$1"; }
bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]'
cat > "$T/attack.py" <<'PY'
# a container's root in its own user namespace holds the init's exe open
# (O_PATH), and writes it after cryo is gone (the CVE's race, made certain)
import ctypes, errno, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
pid, ready = sys.argv[1], sys.argv[2]
fd = os.open(f"/proc/{pid}/exe", os.O_PATH | os.O_CLOEXEC)
attr = ctypes.create_string_buffer(struct.pack("QQQQ", 0, 1, 0, 0), 32)  # attr_clr = RDONLY
def unwrap(who):  # mount_setattr(AT_EMPTY_PATH): only a dissolved tree refuses even root
    if libc.syscall(442, fd, b"", 0x1000, attr, 32) == 0:
        print(who, "made the mount writable")
unwrap("host root")
if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
    sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
unwrap("userns root")
open(ready, "w").close()
while os.path.exists(f"/proc/{pid}"):
    time.sleep(0.05)
for _ in range(200):  # like the exploit, retry while the file is still being executed
    try:
        os.close(os.open(f"/proc/self/fd/{fd}", os.O_WRONLY))
        print("write-opened")
        break
    except OSError as e:
        if e.errno != errno.ETXTBSY:
            print("write-refused", os.strerror(e.errno))
            break
        time.sleep(0.05)
else:
    print("write-refused", os.strerror(errno.ETXTBSY), "(for 10 s)")
PY
for how in bind memfd; do
	rm -f "$T/log" "$T/ready"
	CRYO_SEALEXE=$how rt --debug --log "$T/log" create --bundle "$B" --pid-file "$T/pid" "$id" </dev/null >/dev/null 2>&1 \
		|| fail "create ($how) failed: $(tail -3 "$T/log")"
	pid=$(cat "$T/pid")
	exe=$(readlink "/proc/$pid/exe")
	case "$how:$exe" in bind:/ | memfd:/memfd:cryo*) ;; *) fail "$how: the container init runs from \`$exe\`" ;; esac
	grep -q "sealexe: re-executing from a $([ $how = bind ] && echo read-only || echo sealed)" "$T/log" \
		|| fail "$how: --debug does not say how cryo re-executed: $(grep sealexe "$T/log")"
	# from inside the container (its mount and pid namespaces, its root): the init's exe
	out=$(nsenter -t "$pid" -m -p -r -w sh -c 'echo x > /proc/1/exe && echo written' 2>&1) || true
	case "$out" in *written*) fail "$how: /proc/1/exe could be written from inside the container" ;; esac
	[ -z "$(bin_mounted "/proc/$pid/mountinfo")$(bin_mounted /proc/self/mountinfo)" ] \
		|| fail "$how: the cryo binary is in a mount table: $(bin_mounted "/proc/$pid/mountinfo")"
	if (echo x > "/proc/$pid/exe") 2>/dev/null; then fail "$how: /proc/$pid/exe of the init could be opened for writing"; fi
	if [ $how = bind ]; then
		echo "$out" | grep -q "Read-only file system" || fail "bind: writing /proc/1/exe: \`$out\` (expected EROFS)"
		python3 "$T/attack.py" "$pid" "$T/ready" > "$T/attack.out" 2>&1 &
		apid=$!
		for _ in $(seq 100); do [ -e "$T/ready" ] || ! kill -0 $apid 2>/dev/null && break; sleep 0.1; done
		[ -e "$T/ready" ] || fail "the attack script did not start: $(cat "$T/attack.out")"
	fi
	check rt delete --force "$id"
	if [ $how = bind ]; then
		wait $apid || fail "the attack script failed: $(cat "$T/attack.out")"
		[ "$(cat "$T/attack.out")" = "write-refused Read-only file system" ] \
			|| fail "bind: the kept exe, after cryo exited: $(cat "$T/attack.out")"
	fi
	[ "$(sha256sum "$CRYO_BIN" | cut -d' ' -f1)" = "$sum" ] || fail "$how: the cryo binary changed"
done
# `cryo exec` re-executes the same way before it enters the container
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
rm -f "$T/log"
out=$(rt --debug --log "$T/log" exec "$id" true 2>&1) || fail "exec: $out"
grep -q "sealexe: re-executing from a read-only detached bind mount" "$T/log" \
	|| fail "exec: --debug does not show the bind mount: $(grep sealexe "$T/log")"
check rt delete --force "$id"
# the detached mount is in no mount table (the host check sees the rest)
[ -z "$(bin_mounted /proc/self/mountinfo)" ] || fail "the cryo binary is mounted: $(bin_mounted /proc/self/mountinfo)"
# an entrypoint that execs /proc/self/exe runs cryo read-only, never writable
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
