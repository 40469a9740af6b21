#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian packages: configure and build the tree in a temp dir, `cpack -G
# DEB`, check the control fields, install `cryo` with `dpkg --root` into an
# empty root (the host's dpkg database is never touched), check what landed
# (binaries, man pages, completions, hooks.d JSON and system-sleep hook with
# the installed paths), run the installed `cryo --version`, `cryo check`
# and a container. `cryo-dkms` is unpacked and its dkms.conf's MAKE line
# builds the module against the VM kernel's headers when they are there.
# lintian, when installed, must report no errors; its warnings are printed.
. "$(dirname "$0")/../lib/common.sh"
need_root
need_cmd cpack
need_cmd dpkg-deb
need_cmd dpkg-shlibdeps

B=$T/build
log "configure + build in $B"
cmake -S "$CRYO_SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DCRYO_SANITIZE=OFF \
	-DCRYO_KDIR=/nonexistent >"$T/cmake.log" 2>&1 || { cat "$T/cmake.log"; fail "cmake configure"; }
targets=(cryo_cli cryo-hook)
command -v scdoc >/dev/null && targets+=(man)
cmake --build "$B" -j2 --target "${targets[@]}" >"$T/build.log" 2>&1 || { tail -30 "$T/build.log"; fail "build"; }
(cd "$B" && cpack -G DEB -B "$T/pkg") >"$T/cpack.log" 2>&1 || { cat "$T/cpack.log"; fail "cpack"; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$B/CMakeCache.txt")
deb=$T/pkg/cryo_${version}_amd64.deb
dkms=$T/pkg/cryo-dkms_${version}_all.deb
[ -s "$deb" ] && [ -s "$dkms" ] || fail "cpack made $(ls "$T/pkg"), expected cryo_${version}_amd64.deb and cryo-dkms_${version}_all.deb"

# control fields: Depends from the binaries' shared libraries
field() { dpkg-deb -f "$1" "$2"; }
deps=$(field "$deb" Depends)
for lib in libc6 libjson-c5; do
	[[ $deps == *"$lib "* ]] || fail "cryo Depends lacks $lib: $deps"
done
for f in $("$B/cryo" --version >/dev/null; ldd "$B/cryo" "$B/cryo-hook" | awk '/=>/ { print $3 }' | sort -u); do
	pkg=$(dpkg -S "$(readlink -f "$f")" 2>/dev/null | cut -d: -f1 | head -1)
	[ -z "$pkg" ] || [[ $deps == *"$pkg"* ]] || fail "cryo links $f ($pkg) but Depends is: $deps"
done
[ "$(field "$dkms" Depends)" = dkms ] || fail "cryo-dkms Depends: $(field "$dkms" Depends), expected dkms"
[ "$(field "$dkms" Architecture)" = all ] || fail "cryo-dkms is not Architecture: all"
dpkg-deb -I "$dkms" postinst >/dev/null && dpkg-deb -I "$dkms" prerm >/dev/null || fail "cryo-dkms lacks postinst/prerm"

# install into an empty root
R=$T/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
touch "$R/var/lib/dpkg/status"
dpkg --root="$R" --log=/dev/null --force-depends --force-bad-path -i "$deb" >"$T/dpkg.log" 2>&1 \
	|| { cat "$T/dpkg.log"; fail "dpkg --root -i cryo"; }
dpkg --root="$R" -s cryo 2>/dev/null | grep -q '^Status: install ok installed' || fail "dpkg does not show cryo installed in $R"
for f in usr/bin/cryo usr/libexec/cryo/cryo-hook usr/libexec/cryo/setup-criu4 \
	usr/share/bash-completion/completions/cryo usr/share/zsh/vendor-completions/_cryo \
	usr/share/fish/vendor_completions.d/cryo.fish usr/lib/systemd/system-sleep/cryo \
	usr/share/containers/oci/hooks.d/cryo.json usr/share/containers/oci/hooks.d/cryo-poststop.json \
	usr/share/doc/cryo/copyright; do
	[ -e "$R/$f" ] || fail "the package does not install /$f"
done
grep -q '"path": "/usr/libexec/cryo/cryo-hook"' "$R/usr/share/containers/oci/hooks.d/cryo.json" \
	|| fail "hooks.d/cryo.json does not name /usr/libexec/cryo/cryo-hook: $(cat "$R/usr/share/containers/oci/hooks.d/cryo.json")"
grep -q 'CRYO:-/usr/bin/cryo}' "$R/usr/lib/systemd/system-sleep/cryo" || fail "the system-sleep hook does not run /usr/bin/cryo"
if command -v scdoc >/dev/null; then
	for p in "$CRYO_SRC"/runtime/cli/man/*.scd; do
		[ -s "$R/usr/share/man/man8/$(basename "$p" .scd).gz" ] || fail "the package lacks the man page $(basename "$p" .scd)"
	done
	[ -L "$R/usr/share/man/man8/cryo-pause.8.gz" ] && [ -e "$R/usr/share/man/man8/cryo-pause.8.gz" ] \
		|| fail "cryo-pause.8.gz is not a working symlink"
	man -l "$R/usr/share/man/man8/cryo-run.8.gz" 2>&1 | grep -q -- '--bundle' || fail "man -l cryo-run.8.gz does not render"
fi

# the installed binaries
C=$R/usr/bin/cryo
out=$("$C" --version) || fail "installed cryo --version failed"
[[ $out == "cryo version $version"* ]] || fail "installed cryo --version: $out"
"$R/usr/libexec/cryo/cryo-hook" --help | grep -q register || fail "installed cryo-hook --help"
out=$(CRYO_CRIU4_PREFIX=$T/no-criu4 "$C" check 2>&1) && rc=0 || rc=$?
log "installed cryo check: exit $rc"
[ $rc = 0 ] || [ $rc = 1 ] || fail "installed cryo check exited $rc: $out"
grep -q '^criu: \|^criu: not found' <<<"$out" || fail "cryo check printed no criu line: $out"
if grep -q '^criu: 3\.' <<<"$out" && [ $rc = 1 ]; then
	# too old for this kernel: it must name the installed setup script
	grep -qF "sudo CRYO_CRIU4_PREFIX=$T/no-criu4 $R/usr/bin/../libexec/cryo/setup-criu4" <<<"$out" \
		|| fail "cryo check does not name the installed setup-criu4: $out"
fi

CRYO_BIN=$C
. "$CRYO_SRC/tests/lib/bundle.sh"
bundle_new "$T/bundle" sh -c 'echo hello-from-the-package; exit 3'
id=pkg-$$
at_exit "'$C' --root '$RTROOT' delete --force $id"
out=$(rt_timed run --bundle "$T/bundle" "$id" </dev/null 2>&1) && rc=0 || rc=$?
[ $rc = 3 ] || fail "installed cryo run: exit $rc, expected 3: $out"
[[ $out == *hello-from-the-package* ]] || fail "installed cryo run: no output from the container: $out"
log "installed cryo ran a container"

# cryo-dkms: the module source and a dkms.conf whose MAKE line builds it
D=$T/dkms
dpkg-deb -x "$dkms" "$D"
src=$D/usr/src/cryo-freezer-$version
[ -s "$src/dkms.conf" ] || fail "cryo-dkms has no /usr/src/cryo-freezer-$version/dkms.conf"
[ -s "$D/usr/include/cryo/cryo_freezer.h" ] || fail "cryo-dkms has no /usr/include/cryo/cryo_freezer.h"
(
	set +u   # dkms.conf refers to DKMS's own variables
	# shellcheck disable=SC1091
	. "$src/dkms.conf"
	[ "$PACKAGE_NAME-$PACKAGE_VERSION" = "cryo-freezer-$version" ] || exit 1
	grep -qx "obj-m += ${BUILT_MODULE_NAME[0]}.o" "$src/Kbuild" || exit 2
) || fail "dkms.conf does not match the directory name or the Kbuild module"
kdir=${CRYO_KDIR:-}
[ -n "$kdir" ] || kdir=$(ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | sort -V | tail -1)
if [ -n "$kdir" ] && [ -e "$kdir/Makefile" ]; then
	cp -a "$src" "$T/dkms-build"
	make_line=$(kernel_source_dir=$kdir bash -c ". '$src/dkms.conf'; echo \"\${MAKE[0]}\"")
	(cd "$T/dkms-build" && eval "$make_line") >"$T/kbuild.log" 2>&1 \
		|| { tail -20 "$T/kbuild.log"; fail "dkms.conf's MAKE ($make_line) failed"; }
	[ -s "$T/dkms-build/cryo_freezer.ko" ] || fail "dkms.conf's MAKE made no cryo_freezer.ko"
	log "dkms.conf builds cryo_freezer.ko against $kdir"
else
	log "no kernel headers (/usr/src/linux-headers-6.1.*-amd64): module build from the dkms source not tried"
fi

if command -v lintian >/dev/null; then
	# the default maintainer address is a placeholder (-DCRYO_DEB_MAINTAINER=...)
	lintian --suppress-tags bogus-mail-host,bogus-mail-host-in-debian-changelog "$deb" "$dkms" >"$T/lintian.log" 2>&1
	sed -n 's/^/# lintian: /p' "$T/lintian.log" | grep -v 'running with root privileges' || true
	! grep -q '^E: ' "$T/lintian.log" || fail "lintian reports errors (above)"
	log "lintian: $(grep -c '^W: ' "$T/lintian.log") warnings, no errors"
else
	log "lintian not installed: packages not linted"
fi
