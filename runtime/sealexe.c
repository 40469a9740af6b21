// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sealexe.h"
#include "util.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

#define SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

bool cryo_sealexe_is_sealed(void)
{
	_cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int seals;

	if (fd < 0)
		return false;
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 && (seals & SEALS) == SEALS;
}

/* argv of this process: /proc/self/cmdline split at NULs */
static char **self_argv(char **ret_buf)
{
	char *buf = NULL, *p, **v;
	size_t len = 0, n = 0, i = 0;

	if (cryo_read_file_at(AT_FDCWD, "/proc/self/cmdline", 1 << 20, &buf, &len) < 0)
		return NULL;
	for (p = buf; p < buf + len; p += strlen(p) + 1)
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		free(buf);
		return NULL;
	}
	for (p = buf; p < buf + len; p += strlen(p) + 1)
		v[i++] = p;
	*ret_buf = buf;
	return v;
}

int cryo_sealexe_ensure(char **envp, struct cryo_error *err)
{
	_cleanup_close_ int exe = -1, mfd = -1;
	_cleanup_free_ char *argbuf = NULL;
	_cleanup_free_ char **argv = NULL;
	struct stat st;
	off_t off = 0;

	if (cryo_sealexe_is_sealed())
		return 0;
	argv = self_argv(&argbuf);
	if (!argv)
		return cryo_error_set(err, ENOMEM, "read /proc/self/cmdline");
	exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (exe < 0)
		return cryo_error_set(err, errno, "open /proc/self/exe");
	if (fstat(exe, &st) < 0)
		return cryo_error_set(err, errno, "stat /proc/self/exe");
	mfd = memfd_create("cryo", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (mfd < 0 && errno == EINVAL)  /* kernels before 6.3 don't know MFD_EXEC */
		mfd = memfd_create("cryo", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return cryo_error_set(err, errno, "memfd_create");
	while (off < st.st_size) {
		ssize_t n = sendfile(mfd, exe, NULL, (size_t)(st.st_size - off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return cryo_error_set(err, n < 0 ? errno : EIO, "copy the cryo binary into a memfd");
		off += n;
	}
	if (fcntl(mfd, F_ADD_SEALS, SEALS) < 0)
		return cryo_error_set(err, errno, "seal the memfd copy of cryo");
	/* MFD_CLOEXEC + AT_EMPTY_PATH works: the kernel keeps the file open across exec */
	syscall(SYS_execveat, mfd, "", argv, envp, AT_EMPTY_PATH);
	return cryo_error_set(err, errno, "re-execute cryo from its sealed copy");
}
