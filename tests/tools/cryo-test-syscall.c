// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo-test-syscall NR...: make each raw syscall NR (no arguments) and
 * print `NR=RESULT`, RESULT being the return value or -errno. Static,
 * to run as a container's only process under a seccomp profile
 * (tests/host/lifecycle_spec.sh: -ENOSYS above the profile's syscalls).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		long nr = strtol(argv[i], NULL, 0), r;

		errno = 0;
		r = syscall(nr, 0, 0, 0, 0, 0, 0);
		printf("%s=%ld\n", argv[i], r < 0 ? -(long)errno : r > 0 ? 1 : 0);
	}
	return 0;
}
