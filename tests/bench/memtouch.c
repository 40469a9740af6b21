// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_memtouch MIB [STEP_MIB]: the raw kernel operation under every
 * image copy, as a rate: map MIB of fresh anonymous memory and write it,
 * STEP_MIB (default 512) at a time, printing "MiB_so_far GB/s" per step.
 *
 * On a VM whose balloon reports free pages to its host (this one), only
 * the memory the host still backs is fast to touch; past it every first
 * touch is the host's fault to serve, several times slower. The steps
 * show where that starts: how much new memory a run can take before its
 * copies slow down, whatever the runtime does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t total, step, off;
	char *p;

	if (argc < 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: %s MIB [STEP_MIB]\n", argv[0]);
		return 2;
	}
	total = (size_t)atol(argv[1]) << 20;
	step = (size_t)(argc > 2 && atol(argv[2]) > 0 ? atol(argv[2]) : 512) << 20;
	p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (off = 0; off < total; off += step) {
		size_t len = total - off < step ? total - off : step;
		double t = now_s();

		memset(p + off, 1, len);
		printf("%zu %.2f\n", (off + len) >> 20, (double)len / (now_s() - t) / 1e9);
		fflush(stdout);
	}
	munmap(p, total);
	return 0;
}
