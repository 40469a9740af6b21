#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The CLI's global surface: --version, --help, unknown commands, bad
# global options, features JSON.
. "$(dirname "$0")/../lib/common.sh"

out=$(cryo --version) || fail "--version failed"
echo "$out" | grep -q '^cryo version [0-9]' || fail "--version printed: $out"

out=$(cryo --help) || fail "--help failed"
echo "$out" | grep -q 'features' || fail "--help does not list the features command: $out"
# commands are listed in groups, each under its heading
for g in 'Container lifecycle (OCI):create' 'Freezer:freeze' 'Filesystem freeze:fsfreeze' 'Checkpoint/restore:checkpoint'; do
	echo "$out" | grep -A1 -xF "${g%%:*}:" | grep -q "^  ${g#*:} " || fail "--help does not list \`${g#*:}\` under \`${g%%:*}\`: $out"
done

expect_fail 2 cryo no-such-command
expect_output "unknown command \`no-such-command\`" "unknown command message"

expect_fail 2 cryo --log-format xml features
expect_output 'must be `text` or `json`' "bad --log-format message"

expect_fail 2 cryo

out=$(cryo features) || fail "features failed"
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "org.cryo" in d and "freezer" in d["org.cryo"], d' \
	|| fail "features is not the expected JSON: $out"
echo "ok"
