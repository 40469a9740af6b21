#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `cryo check` tells the user exactly what to run when CRIU is too old for
# the kernel (CRIU < 4 on kernels >= 6.13): the setup-criu4 script of this
# tree (an installed cryo names /usr/libexec/cryo/setup-criu4: see
# package_deb.sh) under CRYO_CRIU4_PREFIX, or, when CRIU 4 is already
# there, the CRYO_CRIU setting that uses it; the same without any criu.
. "$(dirname "$0")/../lib/common.sh"
need_root
rel=$(uname -r)
IFS=. read -r maj min _ <<<"$rel"
[ "$maj" -gt 6 ] || { [ "$maj" = 6 ] && [ "$min" -ge 13 ]; } || skip "kernel $rel < 6.13: CRIU 3 works here"

# No criu at all: still the CRIU 4 how-to.
out=$(CRYO_CRIU=$T/no-criu CRYO_CRIU4_PREFIX=$T/none "$CRYO_BIN" check 2>/dev/null) && fail "cryo check passed without criu: $out"
grep -qxF "    sudo CRYO_CRIU4_PREFIX=$T/none bash $CRYO_SRC/tests/setup-criu4.sh" <<<"$out" \
	|| fail "without criu, cryo check does not name tests/setup-criu4.sh: $out"
grep -qxF "    sudo CRYO_CRIU=$T/none/sbin/criu cryo check" <<<"$out" || fail "cryo check does not say how to use the new criu: $out"

# Debian's CRIU 3.x: the same, and with CRIU 4 present under the prefix, how to use it.
[ -x /usr/sbin/criu ] || skip "no /usr/sbin/criu"
v=$(/usr/sbin/criu --version 2>/dev/null | sed -n 's/^Version: //p')
case $v in 3.*) ;; *) skip "/usr/sbin/criu is $v, not 3.x" ;; esac
out=$(CRYO_CRIU=/usr/sbin/criu CRYO_CRIU4_PREFIX=$T/none "$CRYO_BIN" check 2>/dev/null) && fail "cryo check passed with CRIU $v on $rel"
grep -qxF "    sudo CRYO_CRIU4_PREFIX=$T/none bash $CRYO_SRC/tests/setup-criu4.sh" <<<"$out" \
	|| fail "with CRIU $v, cryo check does not name tests/setup-criu4.sh: $out"
mkdir -p "$T/c4/sbin"
printf '#!/bin/sh\nexit 0\n' >"$T/c4/sbin/criu"
chmod +x "$T/c4/sbin/criu"
out=$(CRYO_CRIU=/usr/sbin/criu CRYO_CRIU4_PREFIX=$T/c4 "$CRYO_BIN" check 2>/dev/null) && fail "cryo check passed with CRIU $v"
grep -qxF "  CRIU 4 is installed at $T/c4/sbin/criu; run cryo with it:" <<<"$out" \
	&& grep -qxF "    sudo CRYO_CRIU=$T/c4/sbin/criu cryo check" <<<"$out" \
	|| fail "with CRIU 4 under the prefix, cryo check does not say to use it: $out"
log "cryo check names setup-criu4 and CRYO_CRIU"
