#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Install every Debian package cryo needs to build, test and demo, plus the
# VM harness kernel. Idempotent: a second run installs nothing new.
set -euo pipefail

PKGS=(
	# build
	build-essential cmake pkg-config git python3
	libcap-dev libseccomp-dev libnl-3-dev libnl-route-3-dev
	libprotobuf-c-dev protobuf-c-compiler criu libcgroup-dev
	libjson-c-dev libcmocka-dev libssl-dev
	# quality
	clang-tidy cppcheck valgrind
	# packaging: man pages, .deb lint, completion tests (tests/host/package_*.sh)
	scdoc lintian zsh fish
	# runtime + tests on this host
	jq busybox-static e2fsprogs xfsprogs btrfs-progs util-linux iproute2 iputils-ping procps kmod
	# CRIU locks the network of --tcp-established dumps with iptables-restore (runc needs it too)
	iptables
	# peers for benchmarks
	runc crun hyperfine
	# VM harness
	qemu-system-x86 cpio
)

if [ "$(id -u)" != 0 ]; then
	echo "setup.sh: run as root (it installs Debian packages)" >&2
	exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done

# The VM harness kernel: bookworm's current linux-headers for its
# linux-image-amd64 (the version changes over time; ask apt).
need_update=1
if [ ${#missing[@]} -gt 0 ] || ! ls -d /usr/src/linux-headers-6.1.*-amd64 >/dev/null 2>&1; then
	apt-get update -qq
	need_update=0
fi
kver=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(6\.1\.[^ ]*-amd64\)$/\1/p' | head -1)
if [ -z "$kver" ] && [ $need_update = 1 ]; then
	apt-get update -qq
	kver=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: linux-image-\(6\.1\.[^ ]*-amd64\)$/\1/p' | head -1)
fi
if [ -z "$kver" ]; then
	echo "setup.sh: cannot find the version of Debian's linux-image-amd64" >&2
	exit 1
fi
dpkg-query -W -f='${Status}\n' "linux-headers-$kver" 2>/dev/null | grep -q '^install ok installed$' \
	|| missing+=("linux-headers-$kver")

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup.sh: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The kernel image and modules are unpacked into a cache, never installed
# on the host (the host boots its own kernel; /boot stays untouched).
"$(dirname "$0")/vm/fetch-kernel" "$kver" >/dev/null
# checkpatch.pl for tests/lint.sh, from Debian's linux-source (cached).
"$(dirname "$0")/vm/fetch-checkpatch" >/dev/null
echo "setup.sh: all dependencies present (VM kernel $kver)"
