# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by the setup scripts that install what a test needs
# (tests/setup-criu4.sh, setup-cri.sh, setup-runc-bats.sh), under their
# `set -euo pipefail`:
#
#   say MSG / die MSG            MSG prefixed with the script's name (die: on
#                                stderr, exit 1)
#   need_root_for WHY            die unless root, saying why it must be
#   apt_install_missing NOTE PKG...
#                                install those of PKG... that are not yet,
#                                from the host's own sources, saying which
#                                (NOTE after the list)
#   debian_mirror                the http mirror of the host's own Debian
#                                sources, else deb.debian.org
#   private_apt DIR TYPE SUITE   an apt of its own in DIR (TYPE is deb or
#                                deb-src; SUITE's main, from that mirror):
#                                its options in APT. The host's sources are
#                                not touched, nor read.

say() { echo "${0##*/}: $*"; }
die() { echo "${0##*/}: $*" >&2; exit 1; }

need_root_for() { [ "$(id -u)" = 0 ] || die "run as root ($1)"; }

apt_install_missing() {
	local note=$1 p missing=()
	shift
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	say "installing ${missing[*]}${note:+ $note}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

debian_mirror() {
	local uri
	uri=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
	[ -n "$uri" ] || uri=$(sed -n 's/^deb \(http[^ ]*\/debian\)\/* bookworm .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1)
	[ -n "$uri" ] || uri=http://deb.debian.org/debian
	echo "$uri"
}

# Its own lists, cache and preferences, and an empty dpkg status: what the
# host has installed is none of this apt's business
private_apt() {
	local a=$1
	mkdir -p "$a/etc/sources.list.d" "$a/etc/preferences.d" "$a/lists/partial" "$a/cache/archives/partial"
	: >"$a/status"
	printf '%s [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' "$2" "$(debian_mirror)" "$3" \
		>"$a/etc/sources.list"
	# shellcheck disable=SC2034 # for the caller
	APT=(-o "Dir::Etc::SourceList=$a/etc/sources.list" -o "Dir::Etc::SourceParts=$a/etc/sources.list.d"
		-o "Dir::Etc::Preferences=$a/etc/preferences" -o "Dir::Etc::PreferencesParts=$a/etc/preferences.d"
		-o "Dir::State::Lists=$a/lists" -o "Dir::State::status=$a/status" -o "Dir::Cache=$a/cache"
		-o "APT::Sandbox::User=root")
}
