#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# docs/runtime-contract.md is what cryo promises its clients, command by
# command: every command and option it names must be in `cryo --help` /
# `cryo COMMAND --help`, every test it names must exist (in runc's suite
# or tests/host) and use that option (or run that command), and the
# exceptions are few and explained (tests/lib/contract.py). Runs no
# container; it needs runc's suite for the test names (CI sets it up with
# tests/setup-runc-bats.sh).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/runc-bats.sh"
rb_ready || skip "runc's suite is not set up in $RB_DIR (run tests/setup-runc-bats.sh)"
out=$(python3 "$CRYO_SRC/tests/lib/contract.py" check "$CRYO_BIN" "$RB_DIR/src/tests/integration" "$CRYO_SRC/tests/host") ||
	fail "docs/runtime-contract.md and cryo disagree:
$out"
printf '%s\n' "$out" | tail -1
echo "ok"
