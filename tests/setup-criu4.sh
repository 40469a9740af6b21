#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build a CRIU 4.x for hosts whose kernel is too new for bookworm's criu 3.17
# (its `criu check` fails there) and install it as /opt/cryo-criu4/sbin/criu,
# beside Debian's /usr/sbin/criu, which the VM tests keep using.
#
# The source is the upstream tarball of the criu source package of Debian
# testing ($CRYO_CRIU4_SUITE, default forky: CRIU 4.2, whose socket dump
# works on kernels >= 6.16, where 4.1's fails on every inet socket with
# "Can't get 1:16 opt": the kernel refuses SO_PASSCRED there). apt reads it
# through a private configuration in $CACHE/apt (its own deb-src list,
# lists, cache and an empty dpkg status): the host's apt sources are not
# touched. Only the criu binary is built: no docs, no plugins, no crit, no
# libcriu. Build dependencies come from bookworm only. Idempotent: does
# nothing when the installed binary already reports the version of the
# tarball.
#
# Takes about a minute on a fresh Debian 12 machine with 2 cores (measured
# for 4.1.1: 60 s, of which apt 15 s, download 1 s, `make -j2 criu` 43 s);
# it prints its own times.
#
# On VMs where compel gets no hardware breakpoints, run the binary with
# CRIU_FAULT=130 (its no-breakpoints path) or dump/restore fails.
# runc takes it as `runc --criu /opt/cryo-criu4/sbin/criu checkpoint ...`;
# a container with its own network namespace additionally needs
# iptables-restore on the host for CRIU's network lock.
set -euo pipefail

PREFIX=${CRYO_CRIU4_PREFIX:-/opt/cryo-criu4}
CACHE=${CRYO_CRIU4_CACHE:-/var/cache/cryo-criu4}
SUITE=${CRYO_CRIU4_SUITE:-forky}

# The minimal set on top of what tests/setup.sh installs that links the
# criu binary: libprotobuf-dev only for google/protobuf/descriptor.proto,
# libnet1-dev and uuid-dev because criu links -lnet -luuid unconditionally;
# protobuf-compiler: 4.2 compiles its images' .proto with protoc too.
PKGS=(
	build-essential pkg-config
	libprotobuf-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
	libnl-3-dev libnet1-dev libcap-dev uuid-dev
)

t0=$SECONDS
. "$(dirname "$0")/lib/setup-apt.sh"
need_root_for "installs packages into / and $PREFIX"

# The deb-src line for the suite's criu source, in apt's private config.
A=$CACHE/apt
private_apt "$A" deb-src "$SUITE"
# what earlier versions of this script added to the host's own sources
OLD_LIST=/etc/apt/sources.list.d/cryo-trixie-src.sources
if [ -f "$OLD_LIST" ] && grep -qx 'Types: deb-src' "$OLD_LIST" && grep -qx 'Suites: trixie' "$OLD_LIST"; then
	say "removing $OLD_LIST (the source now comes through $A)"
	rm -f "$OLD_LIST"
fi

apt_install_missing "(bookworm)" "${PKGS[@]}"

# What apt says the orig tarball is (name + sha256); empty when apt has no
# source index of the suite (offline): then the cached tarball is taken as is.
orig_uri() {
	(cd / && apt-get "${APT[@]}" source --print-uris criu 2>/dev/null) \
		| sed -n "s/^'[^']*' \(criu_[^ ]*\.orig\.tar\.[a-z0-9]*\) [0-9]* SHA256:\([0-9a-f]*\)$/\1 \2/p" \
		| head -1
}

mkdir -p "$CACHE"
read -r tarname sha < <(orig_uri || true; echo) || true
if [ -z "${tarname:-}" ]; then
	apt-get "${APT[@]}" update -qq || true
	read -r tarname sha < <(orig_uri || true; echo) || true
fi
if [ -z "${tarname:-}" ]; then
	tarname=
	for f in "$CACHE"/criu_4.*.orig.tar.*; do
		[ -e "$f" ] && tarname=$(printf '%s\n%s\n' "$tarname" "${f##*/}" | sort -V | tail -1)
	done
	[ -n "$tarname" ] || die "apt knows no criu source and $CACHE holds no tarball"
	sha=
fi
version=${tarname#criu_}
version=${version%.orig.tar.*}
case $version in 4.*) ;; *) die "apt's criu source is $version, not 4.x (Debian $SUITE)" ;; esac

if [ -x "$PREFIX/sbin/criu" ] && [ "$("$PREFIX/sbin/criu" --version 2>/dev/null | sed -n 's/^Version: //p')" = "$version" ]; then
	say "$PREFIX/sbin/criu $version already installed"
	exit 0
fi

if [ ! -s "$CACHE/$tarname" ]; then
	say "downloading $tarname"
	# The .dsc of this source is not downloadable here, so apt-get exits
	# non-zero after fetching the tarball: judge by the file, not the status.
	(cd "$CACHE" && apt-get "${APT[@]}" source --download-only criu >/dev/null 2>&1) || true
	[ -s "$CACHE/$tarname" ] || die "apt-get source did not fetch $tarname"
fi
if [ -n "$sha" ]; then
	echo "$sha  $CACHE/$tarname" | sha256sum -c --quiet - \
		|| die "$CACHE/$tarname does not match apt's sha256; delete it and rerun"
fi

work=$(mktemp -d /tmp/cryo-criu4-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf "$CACHE/$tarname"
src=$(echo "$work"/criu-*)
[ -d "$src" ] || die "$tarname did not unpack to criu-*/"

# NO_GNUTLS: TLS page transfer is of no use to cryo and would add a
# dependency that only happens to be installed; other optional features
# (libbsd, nftables, selinux, bpf) stay whatever pkg-config finds.
say "building criu $version in $src (make -j2 criu)"
start=$(date +%s)
if ! make -C "$src" -j2 NO_GNUTLS=1 criu >"$work/build.log" 2>&1; then
	tail -30 "$work/build.log" >&2
	die "build failed"
fi
end=$(date +%s)
grep -E '^(Note|Warn):' "$work/build.log" | sed 's/^/setup-criu4.sh:   /' || true

install -D -m 0755 "$src/criu/criu" "$PREFIX/sbin/criu"
say "installed $PREFIX/sbin/criu $("$PREFIX/sbin/criu" --version | sed -n 's/^Version: //p'), build took $((end - start)) s, $((SECONDS - t0)) s in all"
