#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The layers of runtime/ (tests/lint-layers.py), clang-tidy and cppcheck on
# runtime/ and hooks/; checkpatch.pl on kmod/ when the kernel tree's script
# is available.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
rc=0

srcs=$(git ls-files 'runtime/*.c' 'hooks/*.c' 2>/dev/null)
incs=()
for d in runtime/*/; do
	incs+=("-I${d%/}")
done

echo "-- layers"
python3 tests/lint-layers.py . "$BUILD" || rc=1

# unknownMacro: cppcheck is not fed system headers, so it does not know
# library macros such as json_object_object_foreach.
echo "-- cppcheck"
if ! cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	--inline-suppr --std=c11 -D_GNU_SOURCE "${incs[@]}" -I"$BUILD/runtime/base" -Ikmod/uapi \
	--suppress=missingIncludeSystem --suppress=unknownMacro $srcs; then
	rc=1
fi

echo "-- clang-tidy"
# one file per run, as many at once as there are cores
if ! printf '%s\n' $srcs | xargs -P "$(nproc)" -n 1 clang-tidy --quiet -p "$BUILD" --warnings-as-errors='*' 2>/dev/null; then
	rc=1
fi

echo "-- checkpatch (kmod/)"
cp=$(bash tests/vm/fetch-checkpatch 2>/dev/null) || cp=""
if [ -n "$cp" ]; then
	for f in kmod/*.c kmod/*.h kmod/uapi/*.h; do
		[ -e "$f" ] || continue
		# compat.h exists to key on LINUX_VERSION_CODE (an out-of-tree
		# module builds for several kernels); nowhere else.
		ign=SPDX_LICENSE_TAG
		[ "$f" = kmod/compat.h ] && ign+=,LINUX_VERSION_CODE
		"$cp" --no-tree -q --ignore "$ign" -f "$f" || rc=1
	done
else
	echo "checkpatch.pl is not available: FAILED to check kmod/" >&2
	rc=1
fi
[ $rc = 0 ] && echo "lint: clean"
exit $rc
