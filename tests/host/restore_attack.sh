#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# An image is untrusted data (issue 11.1). Crafted images, sealed so they
# pass the digest check (tests/tools/cryo-test-image.c), try to make
# `cryo restore` write, mount or extract on the host outside the bundle
# given with --bundle: a manifest whose bundle is `/` and whose config has
# root.path = a host dir or `/`, a snapshot "from" a host file, a bundle
# file or dir that is a symlink to the host, a snapshot file that is a
# symlink, an unknown fs type, tars with absolute names, `..`, a symlink
# then a write through it, a hard link out and a device node; a FIFO as
# manifest.pb; an image dir another user can write. Each is refused (or,
# where the image's word is simply not used, goes no further than the
# bundle) and afterwards the host dir, `/`, the bundle and the state root
# are as before. Restore stops at the cgroup step (CRYO_FAULT=restore:cgroup)
# so no CRIU is needed; everything before it is undone.
. "$(dirname "$0")/../lib/common.sh"
need_root
need_cmd python3
need_cmd mkfs.ext4
TOOL=$CRYO_BUILD/tests/tools/cryo-test-image
[ -x "$TOOL" ] || fail "build $TOOL first"

id=rs-atk-$$
R=$T/root
H=$T/host           # the host files an attacker wants
B=$T/bundle         # the bundle restore is given
I=$T/img
mkdir -p "$H" "$B/rootfs" "$R"
echo HOST >"$H/victim.img"
echo MARK >"$H/marker"
echo orig >"$B/rootfs/orig"
(cd "$B" && "$CRYO_BIN" spec) || fail "cryo spec"
python3 - "$B/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["root"]["readonly"] = False
# `cryo spec` gives a terminal (as `runc spec`); a detached restore of one needs a console socket
c["process"]["terminal"] = False
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
touch "/tmp/.cryo-attack-probe-$$"; rm -f "/tmp/.cryo-attack-probe-$$"
at_exit "mountpoint -q '$B/rootfs' && umount -l '$B/rootfs'"

# a small real ext4 for the image snapshots, so they get as far as the mount
truncate -s 4M "$T/snap.img"
mkfs.ext4 -q -F "$T/snap.img" || fail "mkfs.ext4"

host_state() {
	{
		find "$H" "$B" -printf '%p %y %s %m %l\n' 2>/dev/null | sort
		sha256sum "$H"/* "$B/config.json" 2>/dev/null
		ls -d /rootfs /rootfs.img /cryo-attack-$$ /etc/cryo-attack-$$ 2>/dev/null
		findmnt -n -o TARGET,SOURCE / 2>/dev/null
		ls "$R" 2>/dev/null
	}
}
host_state >"$T/before"

# image config: the bundle's own, edited by PY (c bound to it)
img_config() {
	python3 - "$B/config.json" "$T/imgconfig.json" "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"))
PY
}

new_image() { rm -rf "$I"; mkdir -m 0700 "$I"; echo core >"$I/core-1.img"; chmod 600 "$I/core-1.img"; }

# tar NAME PY: a tar built by python's tarfile; PY adds members to `t`
mk_tar() {
	python3 - "$I/$1" "$2" "$H" <<'PY'
import io, sys, tarfile
out, code, H = sys.argv[1], sys.argv[2], sys.argv[3]
t = tarfile.open(out, "w", format=tarfile.GNU_FORMAT)
def add(name, data=b"pwned\n", **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    if ti.type == tarfile.REGTYPE:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)
def d(name):
    add(name, type=tarfile.DIRTYPE, mode=0o755)
exec(code)
t.close()
PY
	chmod 600 "$I/$1"
}

seal() { check "$TOOL" seal "$I" "$id" "$T/imgconfig.json" "$@"; }

restore() {  # expected rc, extra args...
	local want=$1
	shift
	CRYO_FAULT=restore:cgroup expect_fail "$want" timeout 20 "$CRYO_BIN" --root "$R" restore -d --image-path "$I" "$@" "$id"
}

unchanged() {  # what
	host_state >"$T/after"
	diff -u "$T/before" "$T/after" >"$T/diff" || fail "$1: the host changed: $(cat "$T/diff")"
	! mountpoint -q "$B/rootfs" || fail "$1: the bundle's rootfs is still mounted"
	[ ! -e "$R/$id" ] || fail "$1: a container state was left"
	log "$1: ok"
}

refused() {  # what, expected text
	restore 1 --bundle "$B"
	expect_output "$2" "$1: unexpected outcome"
	echo "$LAST_OUTPUT" | grep -q "injected fault" && fail "$1: was not refused: $LAST_OUTPUT"
	unchanged "$1"
}

not_used() {  # what: the image's word is ignored, restore goes on to the (faulted) cgroup step
	restore 1 --bundle "$B"
	expect_output "restore \`$id\`: cgroup: injected fault" "$1: unexpected outcome"
	unchanged "$1"
}

# --- the bundle and rootfs come from --bundle, never from the image
new_image; cp "$T/snap.img" "$I/rootfs.img"; chmod 600 "$I/rootfs.img"
img_config "c['root']['path'] = '$H'"
seal / copy rootfs.img "$H/victim.img" ext4
not_used "image bundle \`/\`, root.path = a host dir, snapshot from a host file"
expect_output "root.path is \`rootfs\` in the bundle, \`$H\` in the image" "no warning about root.path"

new_image
img_config "c['root']['path'] = '/'"
mk_tar rootfs.tar "d('./'); d('./etc/'); add('./etc/cryo-attack-$$')"
seal / tar rootfs.tar / none
not_used "image bundle \`/\`, root.path = \`/\`, a tar snapshot"

new_image; cp "$T/snap.img" "$I/rootfs.img"; chmod 600 "$I/rootfs.img"
img_config ""
seal "$T/old" copy rootfs.img "$T/old/../host/victim.img" ext4
not_used "snapshot source with \`..\`"

# --- nothing in the bundle is followed out of it
ln -s "$H/victim.img" "$B/rootfs.img"
host_state >"$T/before"
refused "bundle rootfs.img is a symlink to a host file" "\`rootfs.img\` in the bundle exists and is not a regular file"
rm "$B/rootfs.img"
ln -s "$H" "$B/sub"
host_state >"$T/before"
seal "$T/old" copy rootfs.img "$T/old/sub/rootfs.img" ext4
refused "bundle dir of the image file is a symlink" "open \`sub\` in the bundle (a symlink: refused)"
rm "$B/sub"
host_state >"$T/before"

# --- the image's own files: regular files only
new_image; ln -s "$H/victim.img" "$I/rootfs.img"
seal / copy rootfs.img "$H/victim.img" ext4
refused "snapshot file is a symlink" "\`rootfs.img\` is a symlink (to"
new_image; ln -s "$H/victim.img" "$I/pages-1.img"
seal /
refused "a CRIU image file is a symlink to a host file" "\`pages-1.img\` is a symlink (to \`$H/victim.img\`)"
new_image; ln -s "$H" "$I/parent"
seal /
refused "the parent image is a host dir" "parent image: .*manifest.pb"
new_image; cp "$T/snap.img" "$I/rootfs.img"; chmod 600 "$I/rootfs.img"
seal / copy rootfs.img "$H/victim.img" proc
refused "snapshot fs type not allowed" "filesystem type \`proc\` is not one cryo mounts"

# --- tar snapshots are extracted in the rootfs only, and refused when they try more
tar_refused() {  # what, tar code, expected text
	new_image
	mk_tar rootfs.tar "$2"
	seal / tar rootfs.tar / none
	refused "$1" "$3"
	[ ! -e "$H/pwned" ] || fail "$1: wrote $H/pwned"
}
tar_refused "tar: absolute name" "d('./'); add('$H/pwned')" "absolute or \`..\` names are refused"
tar_refused "tar: \`..\`" "d('./'); add('../../host/pwned')" "absolute or \`..\` names are refused"
tar_refused "tar: symlink then a write through it" \
	"d('./'); add('evil', type=tarfile.SYMTYPE, linkname='$H'); add('evil/pwned')" "symlink"
tar_refused "tar: hard link out" "d('./'); add('hl', type=tarfile.LNKTYPE, linkname='../../host/victim.img')" "hard link to"
tar_refused "tar: absolute hard link" "d('./'); add('hl', type=tarfile.LNKTYPE, linkname='$H/victim.img')" "hard link to"
tar_refused "tar: device node" "d('./'); add('kmem', type=tarfile.CHRTYPE, devmajor=1, devminor=2)" "device nodes are refused"

# a clean tar goes as far as the cgroup step; the undo puts the old rootfs back
new_image
mk_tar rootfs.tar "d('./'); add('./new', b'new\n')"
seal / tar rootfs.tar / none
not_used "a clean tar snapshot"
[ "$(cat "$B/rootfs/orig")" = orig ] && [ ! -e "$B/rootfs/new" ] || fail "the undo did not put the old rootfs back"

# --- the image's config.json is compared, not used
new_image; img_config "c['linux']['namespaces'] = [n for n in c['linux']['namespaces'] if n['type'] != 'network']"
seal /
refused "image config without a network namespace" "has a network namespace, the image's does not"
new_image; img_config "c['mounts'][0]['destination'] = '/host'"
seal /
refused "image config with another mount" "refusing a different container"

# --- --bundle defaults to the cwd, as runc
new_image; img_config ""; seal /
(cd "$B" && CRYO_FAULT=restore:cgroup "$CRYO_BIN" --root "$R" restore -d --image-path "$I" "$id") >"$T/out" 2>&1
grep -q "cgroup: injected fault" "$T/out" || fail "restore from the bundle dir without --bundle: $(cat "$T/out")"
(cd "$H" && "$CRYO_BIN" --root "$R" restore -d --image-path "$I" "$id") >"$T/out" 2>&1 && fail "restore from a dir without config.json worked"
grep -q "check-bundle: .*config.json" "$T/out" || fail "restore without a bundle: $(cat "$T/out")"
unchanged "--bundle defaults to the cwd"

# --- a FIFO as manifest.pb neither hangs inspect nor restore
new_image; mkfifo "$I/manifest.pb"
expect_fail 1 timeout 10 "$CRYO_BIN" inspect "$I"
expect_output "manifest.pb\`: not a regular file" "inspect of a FIFO manifest"
refused "FIFO manifest.pb" "manifest.pb\`: not a regular file"

# --- an image dir another user can write is refused
new_image; img_config ""; seal /
chmod 0777 "$I"
refused "world-writable image dir" "writable by everyone (mode 0777)"
chmod 0770 "$I"
refused "group-writable image dir" "writable by its group"
chmod 0700 "$I"; chown 65534 "$I"
refused "image dir of another user" "is owned by uid 65534"
chown 0 "$I"
echo "PASS restore_attack"
