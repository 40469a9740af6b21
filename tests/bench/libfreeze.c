// SPDX-License-Identifier: GPL-2.0-only
/*
 * libcryo's freeze as the CLI runs it, timed in-process (no exec): the
 * counterpart of bench_rawfreeze --print-us, so the benchmark can tell
 * cryo's own overhead from process start-up.
 * Usage: bench_libfreeze CGROUP_DIR   (prints microseconds, leaves it FROZEN)
 */
#include <stdio.h>

#include "freezer.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_freezer *f = NULL;
	int64_t t0;
	int r;

	if (argc != 2)
		return 2;
	t0 = cryo_now_us();
	r = cryo_freezer_open_path(argv[1], &f, &err);
	if (r == 0)
		r = cryo_freezer_freeze(f, 10000, CRYO_FREEZER_STRICT, &err);
	if (r < 0) {
		fprintf(stderr, "%s\n", err.msg);
		cryo_error_clear(&err);
		cryo_freezer_close(f);
		return 1;
	}
	printf("%lld\n", (long long)(cryo_now_us() - t0));
	cryo_freezer_close(f);
	return 0;
}
