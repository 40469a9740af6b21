#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# containerd 2.x with its CRI plugin, and the CRI's api.proto, for the
# host/cri_* tests and tests/bench/cri.sh: unpacked into /opt/cryo-containerd,
# never installed (bookworm's own containerd 1.6 stays as it is).
#
# Why not trixie's containerd 1.7.24: its CRI answers CheckpointContainer
# with "method CheckpointContainer not implemented" (the CRI checkpoint and
# the restore from a checkpoint archive came with containerd 2.0). Debian
# testing ("forky" here) ships containerd 2.1, whose binary package needs
# nothing but libc6 >= 2.34 (bookworm has 2.36) and runc.
#
# The packages come through a private apt configuration in $CACHE/apt:
# its own sources list naming only $SUITE main, its own lists, cache and
# (empty) dpkg status (Dir::Etc::SourceParts, Dir::State::Lists, Dir::Cache): the host's apt
# sources are never changed, nothing is installed with dpkg. `apt-get
# download` + `dpkg-deb -x`, then the files this project uses are copied to
#
#   $PREFIX/bin/containerd, ctr, containerd-shim-runc-v2
#   $PREFIX/share/cri-api/api.proto     (golang-github-kubernetes-cri-api-dev)
#   $PREFIX/VERSIONS                    (the two packages' versions)
#
# Idempotent: does nothing when $PREFIX already holds the versions apt
# offers (or, offline, whatever it holds). Exits non-zero when it cannot
# provide them; tests/check.sh goes on, and the cri tests skip saying why.
set -euo pipefail

PREFIX=${CRYO_CRI_PREFIX:-/opt/cryo-containerd}
CACHE=${CRYO_CRI_CACHE:-/var/cache/cryo-cri}
SUITE=${CRYO_CRI_SUITE:-forky}
PKGS=(containerd golang-github-kubernetes-cri-api-dev)

t0=$SECONDS
. "$(dirname "$0")/lib/setup-apt.sh"
need_root_for "writes $PREFIX and $CACHE"

# the suite's binary packages, through an apt of our own
A=$CACHE/apt
private_apt "$A" deb "$SUITE"
mkdir -p "$A/debs"

# name=version of what the private index offers (empty when it has no index)
offered() {
	local p v
	for p in "${PKGS[@]}"; do
		v=$(apt-cache "${APT[@]}" show "$p" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
		[ -n "$v" ] || return 1
		echo "$p=$v"
	done
}

if ! apt-get "${APT[@]}" update -qq >"$A/update.log" 2>&1; then
	say "apt-get update of $SUITE failed: $(tail -2 "$A/update.log" | tr '\n' ' ')"
fi
want=$(offered || true)
if [ -z "$want" ]; then
	[ -x "$PREFIX/bin/containerd" ] && [ -s "$PREFIX/VERSIONS" ] || die "no index of Debian $SUITE and nothing in $PREFIX: cannot provide containerd 2.x"
	say "offline: keeping $PREFIX ($(tr '\n' ' ' <"$PREFIX/VERSIONS"))"
	exit 0
fi
if [ -x "$PREFIX/bin/containerd" ] && [ "$(cat "$PREFIX/VERSIONS" 2>/dev/null)" = "$want" ]; then
	say "$PREFIX already holds $(echo $want)"
	exit 0
fi

say "downloading $(echo $want) from Debian $SUITE"
rm -f "$A/debs"/*.deb
# shellcheck disable=SC2086 # one name=version a word
(cd "$A/debs" && apt-get "${APT[@]}" download -qq $want >"$A/download.log" 2>&1) ||
	die "apt-get download failed: $(tail -3 "$A/download.log" | tr '\n' ' ')"

work=$(mktemp -d /tmp/cryo-setup-cri.XXXXXX)
trap 'rm -rf "$work"' EXIT
for d in "$A/debs"/*.deb; do
	dpkg-deb -x "$d" "$work/x"
done
api=$work/x/usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto
for f in containerd ctr containerd-shim-runc-v2; do
	[ -x "$work/x/usr/bin/$f" ] || die "the containerd package has no usr/bin/$f"
done
[ -s "$api" ] || die "golang-github-kubernetes-cri-api-dev has no api.proto"
"$work/x/usr/bin/containerd" --version >"$work/version" 2>&1 || die "the downloaded containerd does not run here: $(cat "$work/version")"
case $(cat "$work/version") in *" v2."* | *" 2."*) ;; *) die "not containerd 2.x: $(cat "$work/version")" ;; esac

mkdir -p "$work/p/bin" "$work/p/share/cri-api"
cp -p "$work/x/usr/bin/containerd" "$work/x/usr/bin/ctr" "$work/x/usr/bin/containerd-shim-runc-v2" "$work/p/bin/"
cp "$api" "$work/p/share/cri-api/api.proto"
echo "$want" >"$work/p/VERSIONS"
# replace the prefix as a whole: a half-copied one never passes the check above
rm -rf "$PREFIX.new"
mkdir -p "$(dirname "$PREFIX")"
cp -a "$work/p" "$PREFIX.new"
rm -rf "$PREFIX.old"
[ -e "$PREFIX" ] && mv "$PREFIX" "$PREFIX.old"
mv "$PREFIX.new" "$PREFIX"
rm -rf "$PREFIX.old"
say "installed $(cat "$work/version") into $PREFIX in $((SECONDS - t0)) s"
