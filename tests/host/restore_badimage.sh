#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `cryo restore` verifies the image before it does anything: a flipped
# byte, a truncated file, a missing file, an extra file, a manifest from a
# newer cryo and a damaged manifest are each refused with the file named,
# and no container state, cgroup or process appears. `cryo inspect` shows
# the manifest and says whether it verifies. (No CRIU needed: nothing
# gets that far.)
. "$(dirname "$0")/../lib/common.sh"
need_root
TOOL=$CRYO_BUILD/tests/tools/cryo-test-criu
[ -x "$TOOL" ] || fail "build $TOOL first"
R=$T/root
id=rs-bad-$$

mkimg() { sealed_image "$T/img" "$id"; }

mkimg
check cryo inspect "$T/img" >"$T/inspect.out"
grep -q "^container: *$id" "$T/inspect.out" || fail "inspect: $(cat "$T/inspect.out")"
grep -q '^verified: *yes' "$T/inspect.out" || fail "inspect does not verify: $(cat "$T/inspect.out")"
cryo inspect --json "$T/img" | python3 -c 'import json,sys; m=json.load(sys.stdin); assert m["verified"] and len(m["files"]) == 2 and m["container_id"], m' \
	|| fail "inspect --json"

refused() {  # name, damage, expected text
	mkimg
	eval "$2"
	expect_fail 1 cryo --root "$R" restore -d --image-path "$T/img" "$id"
	expect_output "$3" "$1: unexpected error"
	expect_output "restore \`$id\`: verify: image \`$T/img\`" "$1: error does not name the image"
	[ ! -e "$R/$id" ] || fail "$1: container state was created"
	log "$1: $LAST_OUTPUT"
}
refused "flipped byte" "printf 'Z' | dd of=\$T/img/pages-1.img bs=1 seek=5000 conv=notrunc status=none" "file \`pages-1.img\` is corrupted"
refused "truncated" "truncate -s 99999 \$T/img/pages-1.img" "(truncated)"
refused "missing" "rm \$T/img/core-1.img" "core-1.img\` listed in the manifest is missing"
refused "extra" "echo x > \$T/img/pages-2.img" "unexpected file \`pages-2.img\`"
refused "future manifest" "\"\$TOOL\" set-version \$T/img 99" "version 99 is newer than this cryo understands"
refused "damaged manifest" "printf 'Z' | dd of=\$T/img/manifest.pb bs=1 seek=50 conv=notrunc status=none" "is corrupted"
refused "no manifest" "rm \$T/img/manifest.pb" "read \`manifest.pb\`"

mkimg
printf 'Z' | dd of="$T/img/pages-1.img" bs=1 seek=5 conv=notrunc status=none
expect_fail 1 cryo inspect "$T/img"
grep -q . <<<"$LAST_OUTPUT"
expect_output '^verified: *file `pages-1.img` is corrupted' "inspect of a damaged image"
echo "PASS restore_badimage"
