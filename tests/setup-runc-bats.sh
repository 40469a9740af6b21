#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Prepare runc's own integration suite (tests/integration/*.bats) to run
# against any OCI runtime: tests/bench/runc-bats.sh runs it on cryo, runc
# and crun, tests/host/runc_bats.sh runs a slice of it on cryo in CI.
#
#   tests/setup-runc-bats.sh [DIR]    (DIR default: $CRYO_RUNC_BATS, else build/runc-bats
#                                      of the tree, whichever build dir the tests use)
#
# * The suite is the one of the runc Debian ships (bookworm: 1.1.5), from
#   Debian's `runc` source package of the installed runc's version,
#   fetched with `apt-get source --download-only` through a private apt
#   configuration (a deb-src line of bookworm in $CACHE/apt; the host's
#   own sources are not touched) and unpacked with Debian's patches into
#   DIR/src. Nothing of runc is kept in the project.
# * Its helpers recvtty, sd-helper and seccompagent are built from that
#   source with Debian's Go and golang-*-dev packages (GOPATH mode, no
#   network). The tests that use one that cannot be built start with a
#   `skip`, for every runtime alike, as does the one test that downloads
#   (spec.bats's "spec validator"); DIR/skipped lists them with reasons.
# * The suite's busybox and debian images are made here from
#   busybox-static (the debian one adds the host's static ldconfig, all
#   that hooks.bats asks of it): nothing is downloaded.
#
# Idempotent: a second run with the same runc version does nothing but
# check. Prints its own times.
set -euo pipefail

: "${CRYO_SRC:=$(cd "$(dirname "$0")/.." && pwd)}"
DIR=${1:-${CRYO_RUNC_BATS:-$CRYO_SRC/build/runc-bats}}
CACHE=${CRYO_RUNC_BATS_CACHE:-/var/cache/cryo-runc-bats}

PKGS=(
	# the suite and what its helpers.bash calls
	bats jq gawk busybox-static xz-utils iproute2 util-linux procps gcc libc6-dev
	# the peers it is compared with, and dpkg-source to unpack runc's source
	runc crun dpkg-dev
	# the helpers: Debian's Go and the golang-*-dev packages runc's source imports
	golang-go libseccomp-dev
	golang-dbus-dev golang-github-checkpoint-restore-go-criu-dev golang-github-cilium-ebpf-dev
	golang-github-containerd-console-dev golang-github-coreos-go-systemd-dev
	golang-github-cyphar-filepath-securejoin-dev golang-github-docker-go-units-dev
	golang-github-moby-sys-dev golang-github-mrunalp-fileutils-dev
	golang-github-opencontainers-selinux-dev golang-github-opencontainers-specs-dev
	golang-github-seccomp-libseccomp-golang-dev golang-github-sirupsen-logrus-dev
	golang-github-urfave-cli-dev golang-github-vishvananda-netlink-dev golang-gocapability-dev
	golang-golang-x-net-dev golang-golang-x-sys-dev golang-google-protobuf-dev
)
HELPERS=(recvtty sd-helper seccompagent)

t0=$SECONDS
. "$CRYO_SRC/tests/lib/setup-apt.sh"
need_root_for "installs packages"
apt_install_missing "" "${PKGS[@]}"

# --- the source: the installed runc's own version, through a private apt config ---
version=$(dpkg-query -W -f='${Version}' runc)
upstream=${version#*:}
upstream=${upstream%%-*}
src=$DIR/src
if [ ! -e "$DIR/.version" ] || [ "$(cat "$DIR/.version")" != "$version" ]; then
	apt_dir=$CACHE/apt
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$CACHE/src"
	# the mirror the host's own bookworm sources use
	uri=$(debian_mirror)
	cat >"$apt_dir/sources.list" <<-EOF
		deb-src $uri bookworm main
		deb-src $uri bookworm-updates main
		deb-src ${uri}-security bookworm-security main
	EOF
	apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
	dsc=$CACHE/src/runc_${version#*:}.dsc
	if [ ! -s "$dsc" ]; then
		say "fetching Debian's runc source $version (private apt config: $apt_dir)"
		apt-get "${apt_opts[@]}" update -qq || die "apt-get update of $apt_dir/sources.list failed"
		(cd "$CACHE/src" && apt-get "${apt_opts[@]}" source --download-only "runc=$version" >/dev/null) ||
			die "apt-get source --download-only runc=$version failed"
	fi
	[ -s "$dsc" ] || die "apt-get source did not fetch $dsc"
	rm -rf "$DIR"
	mkdir -p "$DIR"
	# dpkg-source checks the .dsc's checksums of the tarballs (the signature
	# can't be: no Debian developer keyring here; apt checked the Release file)
	dpkg-source -q -x "$dsc" "$src" >"$DIR/dpkg-source.log" 2>&1 || { cat "$DIR/dpkg-source.log" >&2; die "dpkg-source -x $dsc failed"; }
	echo "$version" >"$DIR/.version"
	say "unpacked runc $version in $src"
fi
[ -d "$src/tests/integration" ] || die "$src/tests/integration is missing"

# --- the helpers, with Debian's Go packages (GOPATH mode: /usr/share/gocode) ---
gopath=$DIR/gopath
mkdir -p "$gopath/src/github.com/opencontainers"
ln -sfn "$src" "$gopath/src/github.com/opencontainers/runc"
missing_helpers=()
for h in "${HELPERS[@]}"; do
	bin=$src/contrib/cmd/$h/$h
	[ -x "$bin" ] && continue
	if ! (cd "$gopath/src/github.com/opencontainers/runc" &&
		GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$DIR/.gocache" GOPROXY=off GOFLAGS= \
			GOTOOLCHAIN=local go build -tags seccomp -o "$bin" "./contrib/cmd/$h") >"$DIR/build-$h.log" 2>&1; then
		say "cannot build $h (see $DIR/build-$h.log): the tests that use it are skipped for every runtime"
		missing_helpers+=("$h")
	fi
done

# --- setup_recvtty starts recvtty in the background and returns at once: a
# runtime started right after may find no socket yet (on a loaded host:
# "connect to console socket ...: No such file"). It waits for the socket
# here (5 s at most), for every runtime alike.
helpers=$src/tests/integration/helpers.bash
if ! grep -q 'cryo-setup: wait for the socket' "$helpers"; then
	sed -i '/("\$RECVTTY" --pid-file "\$dir\/pid" --mode null "\$CONSOLE_SOCKET" &) &/a\
	# cryo-setup: wait for the socket\
	for _ in $(seq 100); do [ -S "$CONSOLE_SOCKET" ] \&\& break; sleep 0.05; done' "$helpers"
	grep -q 'cryo-setup: wait for the socket' "$helpers" || die "could not make setup_recvtty wait for its socket in $helpers"
fi

# --- tests no runtime can pass here: a `skip` as their first line, for every runtime alike ---
# Each run starts again from runc's own files (*.bats.orig), so a helper
# built later gets its tests back. DIR/skipped lists what was skipped.
suite=$src/tests/integration
for f in "$suite"/*.bats; do
	[ -e "$f.orig" ] || cp -p "$f" "$f.orig"
done
{
	# FILE<TAB>TEST NAME<TAB>reason
	printf 'spec.bats\tspec validator\tit clones the runtime-spec repository and go-gets gojsonschema from GitHub: nothing is downloaded here\n'
	for h in "${missing_helpers[@]}"; do
		case $h in
		recvtty) re='RECVTTY|setup_recvtty|CONSOLE_SOCKET' ;;
		sd-helper) re='SD_HELPER|create_parent|remove_parent|set_cgroups_path [^ ]' ;;
		seccompagent) re='SECCOMP_AGENT|setup_seccompagent' ;;
		esac
		for f in "$suite"/*.bats.orig; do
			# a test uses the helper when its body or the file's setup() names it
			awk -v re="$re" -v file="$(basename "$f" .orig)" -v why="needs $h, which could not be built here" '
				/^function setup\(\)/ { insetup = 1 }
				insetup && $0 ~ re { all = 1 }
				insetup && /^}/ { insetup = 0 }
				/^@test / { name = $0; sub(/^@test "/, "", name); sub(/" \{$/, "", name); body = "" }
				name != "" { body = body $0 "\n" }
				name != "" && /^}/ { if (all || body ~ re) print file "\t" name "\t" why; name = "" }
			' "$f"
		done
	done
} >"$DIR/skipped"
for f in "$suite"/*.bats; do
	awk -F'\t' -v file="$(basename "$f")" '
		FNR == NR { if ($1 == file) { n++; name[n] = $2; why[n] = $3 } next }
		{ print }
		/^@test "/ {
			t = $0; sub(/^@test "/, "", t); sub(/" \{$/, "", t)
			for (i = 1; i <= n; i++)
				if (t == name[i]) { gsub(/"/, "\\\"", why[i]); print "\tskip \"" why[i] "\""; break }
		}
	' "$DIR/skipped" "$f.orig" >"$f.new"
	mv "$f.new" "$f"
done
[ ! -s "$DIR/skipped" ] || say "skipped for every runtime: $(cut -f1,2 "$DIR/skipped" | sed 's/\t/: /' | paste -sd ';')"

# --- the images the suite names (tests/integration/get-images.sh finds them in testdata/) ---
arch=$(go env GOARCH)
testdata=$src/tests/integration/testdata
make_rootfs() { # DIR: busybox with every applet linked, the files of docker's busybox image
	local r=$1 a
	mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,root,home,var/spool/mail,var/www,dev,proc,sys,tmp}
	chmod 1777 "$r/tmp"
	chmod 700 "$r/root"
	cp /bin/busybox "$r/bin/busybox"
	for a in $(/bin/busybox --list-full); do
		[ -e "$r/$a" ] || ln "$r/bin/busybox" "$r/$a"
	done
	cat >"$r/etc/passwd" <<-EOF
		root:x:0:0:root:/root:/bin/sh
		daemon:x:1:1:daemon:/usr/sbin:/bin/false
		bin:x:2:2:bin:/bin:/bin/false
		sys:x:3:3:sys:/dev:/bin/false
		sync:x:4:100:sync:/bin:/bin/sync
		mail:x:8:8:mail:/var/spool/mail:/bin/false
		www-data:x:33:33:www-data:/var/www:/bin/false
		operator:x:37:37:Operator:/var:/bin/false
		nobody:x:65534:65534:nobody:/home:/bin/false
	EOF
	cat >"$r/etc/group" <<-EOF
		root:x:0:
		daemon:x:1:
		bin:x:2:
		sys:x:3:
		adm:x:4:
		tty:x:5:
		disk:x:6:
		wheel:x:10:root
		mail:x:12:
		www-data:x:33:
		operator:x:37:
		users:x:100:
		nogroup:x:65534:
	EOF
}
if [ ! -s "$testdata/busybox-$arch.tar.xz" ] || [ ! -s "$testdata/debian-$arch.tar.xz" ]; then
	work=$(mktemp -d /tmp/cryo-runc-images.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	make_rootfs "$work/busybox"
	tar -C "$work/busybox" --numeric-owner -cJf "$testdata/busybox-$arch.tar.xz" .
	# "debian": what hooks.bats runs in it is ldconfig (Debian's is static)
	make_rootfs "$work/debian"
	mkdir -p "$work/debian/lib" "$work/debian/usr/lib" "$work/debian/etc/ld.so.conf.d"
	cp /sbin/ldconfig "$work/debian/sbin/ldconfig"
	echo 'include /etc/ld.so.conf.d/*.conf' >"$work/debian/etc/ld.so.conf"
	tar -C "$work/debian" --numeric-owner -cJf "$testdata/debian-$arch.tar.xz" .
	say "made the busybox and debian images from busybox-static in $testdata"
fi
say "runc $upstream's integration suite ready in $src/tests/integration ($((SECONDS - t0)) s)"
