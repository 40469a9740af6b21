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
	# the image digest: BLAKE3's reference C sources (Debian ships them only in the Rust crate)
	librust-blake3-dev
	# restore extracts rootfs tar snapshots with libarchive (static: also libacl)
	libarchive-dev libacl1-dev
	# quality (clang + its runtime libraries: libFuzzer for tests/fuzz)
	clang-tidy cppcheck valgrind clang libclang-rt-dev
	# packaging: man pages, .deb lint, completion tests (tests/host/package_*.sh)
	scdoc lintian zsh fish
	# runtime + tests on this host
	jq busybox-static e2fsprogs xfsprogs btrfs-progs util-linux iproute2 iputils-ping procps kmod
	# host/checkpoint_kill_criu wakes a task that lost its wakeup (a ptrace attach)
	strace
	# migrate over ssh:// against a real sshd (tests/host/migrate_ssh.sh starts its own; the service is not started)
	openssh-client openssh-server
	# tests/soak/faults.sh: I/O errors on demand from a FUSE filesystem (tests/tools/cryo-test-faultfs.c)
	libfuse3-dev
	# CRIU locks the network of --tcp-established dumps with iptables-restore (runc needs it too)
	iptables
	# peers for benchmarks
	runc crun hyperfine
	# tests/bench/oci-validation.sh builds the runtime-tools suite (offline, vendored)
	golang-go
	# containerd_cryo.sh: a private containerd drives cryo through its runc shim v2
	containerd
	# a client driving cryo as its runtime (tests/host/podman_cryo.sh); script(1) for pty tests is util-linux
	podman conmon golang-github-containers-common containernetworking-plugins
	# host/cri_*: containerd's CRI (tests/setup-cri.sh) driven by tests/cri/cri.py over gRPC,
	# pods on CNI bridges, images pulled from a private registry (the CRI restore pulls the base image)
	python3-grpcio python3-grpc-tools docker-registry
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
	# the tests start their own sshd, containerd and podman where they need
	# them: no package may start a service on this host (policy-rc.d, for
	# the install only, unless the host has one of its own)
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	if [ -n "$policy" ]; then
		rm -f "$policy"
		trap - EXIT
	fi
fi

# A newer kernel's headers, only to compile kmod/compat.h's >= 6.6 branch
# (kmod/CMakeLists.txt): bookworm ships 6.12 ones (+deb12). The newest a
# mirror lists may not be there yet: the first that installs.
install_newer_headers() {
	local h
	for h in $(apt-cache pkgnames linux-headers-6.12 | grep -E '^linux-headers-6\.12\.[0-9]+\+deb12-amd64$' | sort -Vr | head -n 4); do
		if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$h" >/dev/null 2>&1; then
			echo "setup.sh: installed $h (kmod compat build)"
			return 0
		fi
	done
	return 1
}
if ! ls -d /usr/src/linux-headers-6.12.*+deb12-amd64 >/dev/null 2>&1; then
	if ! install_newer_headers && ! { apt-get update -qq && install_newer_headers; }; then
		echo "setup.sh: no linux-headers-6.12.*+deb12-amd64 could be installed (kmod compat build)" >&2
		exit 1
	fi
fi

# The kernel image and modules are unpacked into a cache, never installed
# on the host (the host boots its own kernel; /boot stays untouched).
"$(dirname "$0")/vm/fetch-kernel" "$kver" >/dev/null
# checkpatch.pl for tests/lint.sh, from Debian's linux-source (cached).
"$(dirname "$0")/vm/fetch-checkpatch" >/dev/null
echo "setup.sh: all dependencies present (VM kernel $kver)"
