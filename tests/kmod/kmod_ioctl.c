// SPDX-License-Identifier: GPL-2.0-only
/*
 * kselftest-style (TAP) test of every cryo_freezer ioctl against the real
 * kernel objects: a loop-mounted filesystem and cgroups with a live counter
 * task. Run by tests/vm/kmod_ioctl.vmtest inside the VM with the module
 * loaded; the environment names the objects it may freeze:
 *
 *   CRYO_KMOD_MNT   mount point of a scratch filesystem that can freeze
 *   CRYO_KMOD_NOFRZ a directory on a filesystem that cannot (tmpfs)
 *   CRYO_KMOD_CG2   a scratch cgroup2 directory (children are made in it)
 *   CRYO_KMOD_CG1   a scratch cgroup v1 freezer directory (optional)
 *
 * Exit 0 all passed, 1 a failure, 77 nothing could run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/fs.h>

#include "cryo_freezer.h"
#include "kmod.h"
#include "util.h"

#define STATUS_FILE "/sys/kernel/debug/cryo_freezer/holds"
#define SKIP 77

static const char *mnt, *nofrz, *cg2, *cg1;
static pid_t children[64];
static int nr_children;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("#   %s:%d: `%s` failed: ", __FILE__, __LINE__, \
			       #cond);                                     \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			return -1;                                         \
		}                                                          \
	} while (0)

#define CHECK_ERR(expr, want)                                                  \
	do {                                                                   \
		int _r = (expr);                                               \
		CHECK(_r == (want), "got %d (%s), want %d (%s)", _r,            \
		      _r < 0 ? strerror(-_r) : "ok", (want),                   \
		      (want) < 0 ? strerror(-(want)) : "ok");                  \
	} while (0)

/*
 * Helper children must not inherit the holders' fds: a holder file is only
 * released - and its holds thawed - when its last reference goes away.
 */
static void close_inherited(void)
{
	syscall(SYS_close_range, 3U, ~0U, 0U);
}

static void track(pid_t pid)
{
	if (nr_children < (int)ARRAY_SIZE(children))
		children[nr_children++] = pid;
}

/*
 * After a test: holders are closed (everything thawed), reap the helpers.
 * A writer that is still blocked means a test failed with the fs frozen:
 * FITHAW it rather than hang in waitpid() forever.
 */
static void reap_children(void)
{
	int i, j;

	for (i = 0; i < nr_children; i++) {
		kill(children[i], SIGKILL);
		for (j = 0; j < 300; j++) {
			if (waitpid(children[i], NULL, WNOHANG) == children[i])
				break;
			cryo_sleep_ms(10);
		}
		if (j == 300) {
			_cleanup_close_ int fs = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			printf("# child %d stuck: emergency FITHAW of %s: %d\n", (int)children[i],
			       mnt, ioctl(fs, FITHAW, 0));
			waitpid(children[i], NULL, 0);
		}
	}
	nr_children = 0;
}

static int holder(void)
{
	int fd = -1;
	struct cryo_error err = CRYO_ERROR_INIT;

	if (cryo_kmod_open(&fd, &err) < 0) {
		printf("#   %s\n", err.msg ? err.msg : "cannot open the device");
		cryo_error_clear(&err);
		return -1;
	}
	return fd;
}

/* Raw ioctl with a full argument (the timeout in seconds): returns 0 or -errno. */
static int raw(int kfd, unsigned long cmd, int fd, uint32_t flags, uint64_t sec)
{
	struct cryo_freezer_hold h = { .fd = fd, .flags = flags, .timeout_ms = sec * 1000 };

	return ioctl(kfd, cmd, &h) < 0 ? -errno : 0;
}

/* The same with the reserved words set: must be refused. */
static int raw_reserved(int kfd, unsigned long cmd, int fd, uint64_t word)
{
	struct cryo_freezer_hold h = { .fd = fd, .timeout_ms = 1000, .reserved = { 0, word } };

	return ioctl(kfd, cmd, &h) < 0 ? -errno : 0;
}

static int open_dir(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* ------------------------------------------------------------ filesystem */

/* A child that creates and writes a file on mnt: it blocks while frozen. */
static pid_t start_writer(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		char p[4096];
		int fd;

		close_inherited();
		snprintf(p, sizeof(p), "%s/writer.%d", mnt, (int)getpid());
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, "x", 1) != 1 || fsync(fd) < 0)
			_exit(1);
		unlink(p);
		_exit(0);
	}
	if (pid > 0)
		track(pid);
	return pid;
}

/* 1 if pid exited within ms milliseconds. */
static int exited_within(pid_t pid, int ms)
{
	int64_t end = cryo_now_ms() + ms;
	int i, st;

	do {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			for (i = 0; i < nr_children; i++)
				if (children[i] == pid)
					children[i] = children[--nr_children];
			return 1;
		}
		cryo_sleep_ms(20);
	} while (cryo_now_ms() < end);
	return 0;
}

/* The fs is frozen iff a writer started now stays blocked for ms. */
static int fs_frozen(int ms, pid_t *ret_writer)
{
	pid_t w = start_writer();

	if (w < 0)
		return -1;
	if (exited_within(w, ms))
		return 0;
	*ret_writer = w;
	return 1;
}

static int status_has(const char *needle)
{
	_cleanup_free_ char *s = NULL;

	if (cryo_read_file_at(AT_FDCWD, STATUS_FILE, 1 << 20, &s, NULL) < 0)
		return -1;
	return strstr(s, needle) != NULL;
}

static int t_version(void)
{
	_cleanup_close_ int k = holder();
	uint32_t v = 0;

	CHECK(k >= 0, "open");
	CHECK(cryo_kmod_version(k, &v, NULL) == 0, "version");
	CHECK(v == CRYO_FREEZER_ABI_VERSION, "version %u", v);
	return 0;
}

static int t_unknown_ioctl(void)
{
	_cleanup_close_ int k = holder();
	char buf[64] = "";

	CHECK(k >= 0, "open");
	CHECK(ioctl(k, _IO(CRYO_FREEZER_IOC_MAGIC, 99)) < 0 && errno == ENOTTY, "errno %d", errno);
	/* a known number with the wrong size is another command */
	CHECK(ioctl(k, _IOW(CRYO_FREEZER_IOC_MAGIC, 1, __u32), buf) < 0 && errno == ENOTTY,
	      "errno %d", errno);
	return 0;
}

static int t_bad_args(void)
{
	_cleanup_close_ int k = holder();
	_cleanup_close_ int fs = open_dir(mnt);
	_cleanup_close_ int nf = open_dir(nofrz);
	_cleanup_close_ int c2 = cg2 ? open_dir(cg2) : -1;
	_cleanup_close_ int root2 = -1;
	_cleanup_close_ int reg = -1;
	int p[2];

	CHECK(k >= 0 && fs >= 0 && nf >= 0, "open");
	reg = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	CHECK(reg >= 0, "open /proc/self/status");

	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, -1, 0, 0), -EBADF);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, 1000000, 0, 0), -EBADF);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, 1, 0), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, 0, CRYO_FREEZER_TIMEOUT_MAX_MS / 1000 + 1ULL), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, 0, UINT64_MAX), -EINVAL);
	CHECK_ERR(raw_reserved(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, 1), -EINVAL);
	CHECK_ERR(raw_reserved(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, fs, 1ULL << 63), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, nf, 0, 0), -EOPNOTSUPP);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, reg, 0, 0), -EOPNOTSUPP);
	CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe");
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, p[0], 0, 0), -EOPNOTSUPP);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, p[0], 0, 0), -ENOTDIR);
	close(p[0]);
	close(p[1]);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, k, 0, 0), -EOPNOTSUPP);
	CHECK(ioctl(k, CRYO_FREEZER_IOC_FS_FREEZE, NULL) < 0 && errno == EFAULT, "errno %d", errno);
	CHECK(ioctl(k, CRYO_FREEZER_IOC_VERSION, NULL) < 0 && errno == EFAULT, "errno %d", errno);

	/* THAW and RESET of what is not held */
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_THAW, fs, 0, 0), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_THAW, fs, 0, 5), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_RESET_TIMEOUT, fs, 0, 5), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_THAW, -1, 0, 0), -EBADF);

	/* cgroup calls on things that are not cgroups */
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, reg, 0, 0), -ENOTDIR);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, fs, 0, 0), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, -1, 0, 0), -EBADF);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_THAW, fs, 0, 0), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_RESET_TIMEOUT, reg, 0, 1), -ENOTDIR);
	if (c2 >= 0) {
		char root[4096];
		char *slash;

		CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, c2, 2, 0), -EINVAL);
		CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_THAW, c2, 0, 0), -EINVAL);
		CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_RESET_TIMEOUT, c2, 0, 1), -EINVAL);
		/* the cgroup2 root has no cgroup.freeze */
		snprintf(root, sizeof(root), "%s", cg2);
		while ((slash = strrchr(root, '/')) && access(root, F_OK) == 0) {
			char f[4200];

			snprintf(f, sizeof(f), "%s/cgroup.freeze", root);
			if (access(f, F_OK) != 0)
				break;
			*slash = '\0';
		}
		root2 = open_dir(root);
		CHECK(root2 >= 0, "open %s", root);
		CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, root2, 0, 0), -EOPNOTSUPP);
	}
	return 0;
}

static int t_eperm(void)
{
	pid_t pid = fork();
	int st;

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int k = holder();
		int fs = open_dir(mnt);
		cap_t caps = cap_get_proc();
		cap_value_t v = CAP_SYS_ADMIN;
		uint32_t ver;

		if (k < 0 || fs < 0 || !caps ||
		    cap_set_flag(caps, CAP_EFFECTIVE, 1, &v, CAP_CLEAR) < 0 ||
		    cap_set_proc(caps) < 0)
			_exit(2);
		if (raw(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, 0, 0) != -EPERM)
			_exit(3);
		if (raw(k, CRYO_FREEZER_IOC_FS_THAW, fs, 0, 0) != -EPERM)
			_exit(4);
		if (raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, fs, 0, 0) != -EPERM)
			_exit(5);
		if (cryo_kmod_version(k, &ver, NULL) != 0)
			_exit(6);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	return 0;
}

static int t_fs_freeze_thaw(void)
{
	_cleanup_close_ int k = holder();
	_cleanup_close_ int k2 = holder();
	_cleanup_close_ int fs = open_dir(mnt);
	_cleanup_close_ int fs2 = open_dir(mnt);
	pid_t w = -1;

	CHECK(k >= 0 && k2 >= 0 && fs >= 0 && fs2 >= 0, "open");
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs, 0, NULL), 0);
	CHECK(status_has("fs state=held") == 1, "status lists the hold");
	CHECK(fs_frozen(300, &w) == 1, "writer not blocked");
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs2, 0, NULL), -EBUSY);
	CHECK_ERR(cryo_kmod_fs_freeze(k2, fs, 0, NULL), -EBUSY);
	CHECK(ioctl(fs, FIFREEZE, 0) < 0 && errno == EBUSY, "FIFREEZE on a held fs: errno %d", errno);
	CHECK_ERR(cryo_kmod_fs_thaw(k2, fs, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_fs_reset(k2, fs, 1000, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_fs_thaw(k, fs2, NULL), 0);
	CHECK(exited_within(w, 2000), "writer still blocked after THAW");
	CHECK_ERR(cryo_kmod_fs_thaw(k, fs, NULL), -EINVAL);
	CHECK(fs_frozen(300, &w) == 0, "fs still frozen");

	/* frozen by someone else: FIFREEZE */
	CHECK(ioctl(fs, FIFREEZE, 0) == 0, "FIFREEZE: %s", strerror(errno));
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs, 0, NULL), -EBUSY);
	CHECK(ioctl(fs, FITHAW, 0) == 0, "FITHAW: %s", strerror(errno));

	/* the largest timeout is accepted */
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, 0, CRYO_FREEZER_TIMEOUT_MAX_MS / 1000), 0);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_RESET_TIMEOUT, fs, 0, CRYO_FREEZER_TIMEOUT_MAX_MS / 1000 + 1ULL),
		  -EINVAL);
	CHECK_ERR(cryo_kmod_fs_thaw(k, fs, NULL), 0);
	return 0;
}

static int t_fs_deadline(void)
{
	_cleanup_close_ int k = holder();
	_cleanup_close_ int fs = open_dir(mnt);
	int64_t t0;
	pid_t w = -1;

	CHECK(k >= 0 && fs >= 0, "open");
	t0 = cryo_now_ms();
	/* milliseconds (ABI 3): 1200 ms, not rounded up to whole seconds */
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs, 1200, NULL), 0);
	CHECK(fs_frozen(300, &w) == 1, "writer not blocked");
	CHECK(exited_within(w, 3000), "deadline did not thaw the fs");
	printf("#   deadline 1200 ms: writer unblocked after %" PRId64 " ms\n", cryo_now_ms() - t0);
	CHECK(cryo_now_ms() - t0 >= 1150, "thawed early");
	CHECK(cryo_now_ms() - t0 < 1990, "deadline rounded up to seconds");
	CHECK(status_has("fired=1") == 1, "status shows fired=1");
	/* the seed: RESET_TIMEOUT after the timeout thawed it → EINVAL */
	CHECK_ERR(cryo_kmod_fs_reset(k, fs, 1000, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_fs_reset(k, fs, 1000, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_fs_thaw(k, fs, NULL), -EINVAL);
	CHECK(status_has("fired=1") == 0, "fired hold still listed after THAW");

	/* a fired hold is replaced by a new freeze of the same fs */
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs, 1000, NULL), 0);
	cryo_sleep_ms(2000);
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs, 0, NULL), 0);
	CHECK(fs_frozen(300, &w) == 1, "writer not blocked");
	CHECK_ERR(cryo_kmod_fs_thaw(k, fs, NULL), 0);
	CHECK(exited_within(w, 2000), "writer still blocked");
	return 0;
}

static int t_fs_reset(void)
{
	_cleanup_close_ int k = holder();
	_cleanup_close_ int fs = open_dir(mnt);
	pid_t w = -1;

	CHECK(k >= 0 && fs >= 0, "open");
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs, 1000, NULL), 0);
	cryo_sleep_ms(500);
	CHECK_ERR(cryo_kmod_fs_reset(k, fs, 3000, NULL), 0);
	/* past the first deadline, before the new one */
	CHECK(fs_frozen(1500, &w) == 1, "thawed by the old deadline");
	CHECK_ERR(cryo_kmod_fs_reset(k, fs, 0, NULL), 0);
	cryo_sleep_ms(2500);
	CHECK(!exited_within(w, 0), "RESET to 0 did not remove the deadline");
	CHECK_ERR(cryo_kmod_fs_reset(k, fs, 1000, NULL), 0);
	CHECK(exited_within(w, 3000), "the reset deadline did not fire");
	CHECK_ERR(cryo_kmod_fs_reset(k, fs, 1000, NULL), -EINVAL);
	return 0;
}

static int t_fs_close(void)
{
	int k = holder();
	_cleanup_close_ int fs = open_dir(mnt);
	pid_t w = -1;

	CHECK(k >= 0 && fs >= 0, "open");
	CHECK_ERR(cryo_kmod_fs_freeze(k, fs, 0, NULL), 0);
	CHECK(fs_frozen(300, &w) == 1, "writer not blocked");
	close(k);
	CHECK(exited_within(w, 2000), "close of the holder did not thaw");
	return 0;
}

/* ---------------------------------------------------------------- cgroup */

static volatile uint64_t *counter;

/* A child counting in shared memory, moved into the given cgroups. */
static pid_t start_counter(const char *const *cgs)
{
	char pid_s[32];
	pid_t pid;
	int i;

	*counter = 0;
	pid = fork();
	if (pid == 0) {
		close_inherited();
		for (;;) {
			(*counter)++;
			usleep(1000);
		}
	}
	if (pid < 0)
		return pid;
	track(pid);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
	for (i = 0; cgs[i]; i++) {
		_cleanup_close_ int d = open_dir(cgs[i]);

		if (d < 0 || cryo_write_file_at(d, "cgroup.procs", pid_s) < 0)
			return -1;
	}
	return pid;
}

/* 1 if the counter stands still over ms, 0 if it advances. */
static int counter_stopped(int ms)
{
	uint64_t a = *counter;

	cryo_sleep_ms(ms);
	return *counter == a;
}

/* Wait until the cgroup reports frozen (1) or thawed (0). */
static int cg_wait(int dirfd, int v1, int frozen, int ms)
{
	int64_t end = cryo_now_ms() + ms;

	do {
		_cleanup_free_ char *s = NULL;
		int is;

		if (cryo_read_file_at(dirfd, v1 ? "freezer.state" : "cgroup.events", 4096, &s, NULL) < 0)
			return -1;
		is = v1 ? strncmp(s, "FROZEN", 6) == 0 : strstr(s, "frozen 1") != NULL;
		if (is == frozen)
			return 0;
		cryo_sleep_ms(20);
	} while (cryo_now_ms() < end);
	return -1;
}

static int cg_test(const char *cg, int v1)
{
	const char *cgs[] = { cg, NULL };
	const char *ctl = v1 ? "freezer.state" : "cgroup.freeze";
	_cleanup_close_ int k = holder();
	_cleanup_close_ int k2 = holder();
	_cleanup_close_ int d = open_dir(cg);
	int64_t t0;

	CHECK(k >= 0 && k2 >= 0 && d >= 0, "open %s", cg);
	CHECK(start_counter(cgs) > 0, "counter");
	CHECK(!counter_stopped(100), "counter does not run");

	CHECK_ERR(cryo_kmod_cgroup_freeze(k, d, 0, NULL), 0);
	CHECK(cg_wait(d, v1, 1, 3000) == 0, "cgroup did not freeze");
	CHECK(counter_stopped(300), "counter runs in a frozen cgroup");
	CHECK_ERR(cryo_kmod_cgroup_freeze(k, d, 0, NULL), -EBUSY);
	CHECK_ERR(cryo_kmod_cgroup_freeze(k2, d, 0, NULL), -EBUSY);
	CHECK_ERR(cryo_kmod_cgroup_thaw(k2, d, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_fs_thaw(k, d, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_cgroup_thaw(k, d, NULL), 0);
	CHECK(cg_wait(d, v1, 0, 3000) == 0, "cgroup did not thaw");
	CHECK(!counter_stopped(300), "counter stopped after THAW");
	CHECK_ERR(cryo_kmod_cgroup_thaw(k, d, NULL), -EINVAL);

	/* frozen by someone else */
	CHECK(cryo_write_file_at(d, ctl, v1 ? "FROZEN" : "1") == 0, "write %s", ctl);
	CHECK_ERR(cryo_kmod_cgroup_freeze(k, d, 0, NULL), -EBUSY);
	CHECK(cryo_write_file_at(d, ctl, v1 ? "THAWED" : "0") == 0, "write %s", ctl);

	/* deadline */
	t0 = cryo_now_ms();
	CHECK_ERR(cryo_kmod_cgroup_freeze(k, d, 1000, NULL), 0);
	CHECK(cg_wait(d, v1, 1, 3000) == 0, "cgroup did not freeze");
	CHECK(cg_wait(d, v1, 0, 3000) == 0, "deadline did not thaw the cgroup");
	printf("#   deadline 1000 ms: %s thawed after %" PRId64 " ms\n", cg, cryo_now_ms() - t0);
	CHECK(cryo_now_ms() - t0 >= 950, "thawed early");
	CHECK(!counter_stopped(300), "counter stopped after the deadline");
	CHECK_ERR(cryo_kmod_cgroup_reset(k, d, 1000, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_cgroup_thaw(k, d, NULL), -EINVAL);

	/* reset extends */
	CHECK_ERR(cryo_kmod_cgroup_freeze(k, d, 1000, NULL), 0);
	cryo_sleep_ms(500);
	CHECK_ERR(cryo_kmod_cgroup_reset(k, d, 3000, NULL), 0);
	cryo_sleep_ms(1000);
	CHECK(counter_stopped(300), "thawed by the old deadline");

	/* close thaws */
	close(TAKE_FD(k));
	CHECK(cg_wait(d, v1, 0, 3000) == 0, "close did not thaw");
	CHECK(!counter_stopped(300), "counter stopped after close");
	return 0;
}

static int t_cgroup2(void)
{
	if (!cg2)
		return SKIP;
	return cg_test(cg2, 0);
}

static int t_cgroup1(void)
{
	if (!cg1) {
		printf("#   no cgroup v1 freezer hierarchy (CRYO_KMOD_CG1 unset)\n");
		return SKIP;
	}
	return cg_test(cg1, 1);
}

/* The holder is killed with SIGKILL: fs and cgroup thawed at once. */
static int t_kill9(void)
{
	const char *cgs[] = { cg2, cg1, NULL };
	_cleanup_close_ int d = -1;
	int sync_pipe[2];
	pid_t h, w = -1;
	int64_t t0;
	char c;

	if (!cg2)
		return SKIP;
	d = open_dir(cg2);
	CHECK(d >= 0, "open");
	CHECK(start_counter(cgs) > 0, "counter");
	CHECK(pipe2(sync_pipe, O_CLOEXEC) == 0, "pipe");
	h = fork();
	CHECK(h >= 0, "fork");
	if (h == 0) {
		int k = holder();
		int fs = open_dir(mnt);
		int c2 = open_dir(cg2);
		int c1 = cg1 ? open_dir(cg1) : -1;

		if (cryo_kmod_fs_freeze(k, fs, 0, NULL) < 0 ||
		    cryo_kmod_cgroup_freeze(k, c2, 0, NULL) < 0 ||
		    (c1 >= 0 && cryo_kmod_cgroup_freeze(k, c1, 0, NULL) < 0))
			_exit(1);
		if (write(sync_pipe[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	track(h);
	close(sync_pipe[1]);
	CHECK(read(sync_pipe[0], &c, 1) == 1, "holder failed");
	close(sync_pipe[0]);
	CHECK(cg_wait(d, 0, 1, 3000) == 0, "cgroup did not freeze");
	CHECK(fs_frozen(300, &w) == 1, "writer not blocked");
	CHECK(counter_stopped(300), "counter runs");
	t0 = cryo_now_ms();
	kill(h, SIGKILL);
	CHECK(exited_within(h, 2000), "holder did not die");
	CHECK(exited_within(w, 2000), "writer still blocked after kill -9 of the holder");
	CHECK(cg_wait(d, 0, 0, 2000) == 0, "cgroup still frozen after kill -9 of the holder");
	CHECK(!counter_stopped(300), "counter still stopped");
	printf("#   kill -9: writer and counter running again %" PRId64 " ms after the kill\n",
	       cryo_now_ms() - t0 - 300);
	return 0;
}

/* CRYO_FREEZER_MAX_HOLDS per holder, then ENOSPC. */
static int t_enospc(void)
{
	_cleanup_close_ int k = holder();
	_cleanup_close_ int d = -1;
	char name[32];
	int i, r, ret = 0;

	if (!cg2)
		return SKIP;
	d = open_dir(cg2);
	CHECK(k >= 0 && d >= 0, "open");
	for (i = 0; i <= CRYO_FREEZER_MAX_HOLDS; i++) {
		_cleanup_close_ int c = -1;

		snprintf(name, sizeof(name), "h%d", i);
		if (mkdirat(d, name, 0755) < 0 && errno != EEXIST) {
			printf("#   mkdir %s: %s\n", name, strerror(errno));
			ret = -1;
			break;
		}
		c = openat(d, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = cryo_kmod_cgroup_freeze(k, c, 0, NULL);
		if (r != (i < CRYO_FREEZER_MAX_HOLDS ? 0 : -ENOSPC)) {
			printf("#   hold %d: %d\n", i, r);
			ret = -1;
			break;
		}
	}
	close(TAKE_FD(k));
	for (i = 0; i <= CRYO_FREEZER_MAX_HOLDS; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		unlinkat(d, name, AT_REMOVEDIR);
	}
	return ret;
}

/* ------------------------------------------------------- detached holds */

static int t_detached_einval(void)
{
	_cleanup_close_ int k = holder();
	_cleanup_close_ int fs = open_dir(mnt);
	_cleanup_close_ int c2 = cg2 ? open_dir(cg2) : -1;

	CHECK(k >= 0 && fs >= 0, "open");
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, CRYO_FREEZER_HOLD_DETACHED, 0), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_FREEZE, fs, CRYO_FREEZER_HOLD_DETACHED | 2, 5), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_THAW, fs, CRYO_FREEZER_HOLD_DETACHED, 0), -EINVAL);
	CHECK_ERR(raw(k, CRYO_FREEZER_IOC_FS_RESET_TIMEOUT, fs, CRYO_FREEZER_HOLD_DETACHED, 5), -EINVAL);
	CHECK_ERR(cryo_kmod_fs_freeze_detached(k, fs, 0, NULL), -EINVAL);
	if (c2 >= 0) {
		CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, c2, CRYO_FREEZER_HOLD_DETACHED, 0), -EINVAL);
		CHECK_ERR(raw(k, CRYO_FREEZER_IOC_CGROUP_FREEZE, c2, CRYO_FREEZER_HOLD_DETACHED,
			      CRYO_FREEZER_TIMEOUT_MAX_MS / 1000 + 1ULL), -EINVAL);
	}
	CHECK(status_has("owner=detached") == 0, "a refused detached hold is listed");
	return 0;
}

/*
 * A detached fs hold outlives the file that made it, blocks others like
 * any hold, and is thawed through another open file.
 */
static int t_detached_fs(void)
{
	int k = holder();
	_cleanup_close_ int k2 = holder();
	_cleanup_close_ int fs = open_dir(mnt);
	pid_t w = -1;

	CHECK(k >= 0 && k2 >= 0 && fs >= 0, "open");
	CHECK_ERR(cryo_kmod_fs_freeze_detached(k, fs, 30000, NULL), 0);
	close(k);
	CHECK(status_has("fs state=held owner=detached") == 1, "status does not list the detached hold");
	CHECK(fs_frozen(300, &w) == 1, "writer not blocked after the creator closed its file");
	CHECK_ERR(cryo_kmod_fs_freeze(k2, fs, 0, NULL), -EBUSY);
	CHECK(ioctl(fs, FIFREEZE, 0) < 0 && errno == EBUSY, "FIFREEZE on a held fs: errno %d", errno);
	/* a detached hold keeps a deadline */
	CHECK_ERR(cryo_kmod_fs_reset(k2, fs, 0, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_fs_reset(k2, fs, 20000, NULL), 0);
	CHECK(!exited_within(w, 100), "writer finished while held");
	CHECK_ERR(cryo_kmod_fs_thaw(k2, fs, NULL), 0);
	CHECK(exited_within(w, 2000), "writer still blocked after THAW from a second file");
	CHECK_ERR(cryo_kmod_fs_thaw(k2, fs, NULL), -EINVAL);
	CHECK(status_has("owner=detached") == 0, "thawed detached hold still listed");
	return 0;
}

/* A detached cgroup hold whose creator exited fires at its deadline. */
static int t_detached_cgroup_deadline(void)
{
	const char *cgs[] = { cg2, NULL };
	_cleanup_close_ int d = -1, k2 = -1;
	int64_t t0;
	pid_t h;
	int st;

	if (!cg2)
		return SKIP;
	d = open_dir(cg2);
	k2 = holder();
	CHECK(d >= 0 && k2 >= 0, "open");
	CHECK(start_counter(cgs) > 0, "counter");
	t0 = cryo_now_ms();
	h = fork();
	CHECK(h >= 0, "fork");
	if (h == 0) {
		int k = holder();

		_exit(k >= 0 && cryo_kmod_cgroup_freeze_detached(k, d, 1500, NULL) == 0 ? 0 : 1);
	}
	CHECK(waitpid(h, &st, 0) == h && WIFEXITED(st) && WEXITSTATUS(st) == 0, "creator failed: %#x", st);
	CHECK(cg_wait(d, 0, 1, 1000) == 0, "cgroup not frozen after its creator exited");
	CHECK(counter_stopped(300), "counter runs");
	CHECK(status_has("cgroup2 state=held owner=detached") == 1, "status does not list the detached hold");
	CHECK(cg_wait(d, 0, 0, 4000) == 0, "deadline did not thaw the cgroup");
	printf("#   detached deadline 1500 ms (2 s in the kernel): thawed after %" PRId64 " ms\n", cryo_now_ms() - t0);
	CHECK(cryo_now_ms() - t0 >= 1450, "thawed early");
	CHECK(!counter_stopped(300), "counter stopped after the deadline");
	CHECK(status_has("state=fired owner=detached") == 1, "status does not show the fired hold");
	CHECK_ERR(cryo_kmod_cgroup_reset(k2, d, 1000, NULL), -EINVAL);
	CHECK_ERR(cryo_kmod_cgroup_thaw(k2, d, NULL), -EINVAL);
	CHECK(status_has("owner=detached") == 0, "fired detached hold still listed after THAW");
	return 0;
}

/*
 * kmod_ioctl hold SECONDS fs=PATH|cg=PATH...: freeze them all in one
 * holder, print "held" and wait to be killed. For the shell tests (PM,
 * rmmod, load/unload loops). "hold-detached" makes detached holds, prints
 * "held" and exits.
 */
static int hold_mode(int argc, char **argv)
{
	bool detached = strcmp(argv[1], "hold-detached") == 0;

	struct cryo_error err = CRYO_ERROR_INIT;
	uint64_t sec;
	int k, i;

	if (argc < 4 || cryo_parse_u64(argv[2], UINT64_MAX / 1000, &sec) < 0) {
		fprintf(stderr, "usage: kmod_ioctl hold|hold-detached SECONDS fs=PATH|cg=PATH...\n");
		return 2;
	}
	k = holder();
	if (k < 0)
		return 1;
	for (i = 3; i < argc; i++) {
		int fd = open(argv[i] + 3, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int r;

		if (fd < 0) {
			fprintf(stderr, "open %s: %s\n", argv[i] + 3, strerror(errno));
			return 1;
		}
		if (strncmp(argv[i], "fs=", 3) == 0)
			r = detached ? cryo_kmod_fs_freeze_detached(k, fd, sec * 1000, &err)
				     : cryo_kmod_fs_freeze(k, fd, sec * 1000, &err);
		else
			r = detached ? cryo_kmod_cgroup_freeze_detached(k, fd, sec * 1000, &err)
				     : cryo_kmod_cgroup_freeze(k, fd, sec * 1000, &err);
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], err.msg);
			return 1;
		}
	}
	printf("held\n");
	if (detached)
		return 0;
	for (;;)
		pause();
}

struct test {
	const char *name;
	int (*fn)(void);
};

static const struct test tests[] = {
	{ "version", t_version },
	{ "unknown_ioctl_enotty", t_unknown_ioctl },
	{ "bad_arguments", t_bad_args },
	{ "eperm_without_cap_sys_admin", t_eperm },
	{ "fs_freeze_thaw_ebusy", t_fs_freeze_thaw },
	{ "fs_deadline_fires_reset_einval", t_fs_deadline },
	{ "fs_reset_timeout", t_fs_reset },
	{ "fs_close_thaws", t_fs_close },
	{ "cgroup2_freeze_thaw_deadline", t_cgroup2 },
	{ "cgroup1_freeze_thaw_deadline", t_cgroup1 },
	{ "kill9_holder_thaws_everything", t_kill9 },
	{ "enospc_after_max_holds", t_enospc },
	{ "detached_needs_timeout_einval", t_detached_einval },
	{ "detached_fs_survives_close_thaw_from_other_file", t_detached_fs },
	{ "detached_cgroup_deadline_fires", t_detached_cgroup_deadline },
};

int main(int argc, char **argv)
{
	int pass = 0, fail = 0, skip = 0;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && (strcmp(argv[1], "hold") == 0 || strcmp(argv[1], "hold-detached") == 0))
		return hold_mode(argc, argv);
	mnt = getenv("CRYO_KMOD_MNT");
	nofrz = getenv("CRYO_KMOD_NOFRZ");
	cg2 = getenv("CRYO_KMOD_CG2");
	cg1 = getenv("CRYO_KMOD_CG1");
	if (cg1 && !*cg1)
		cg1 = NULL;
	if (!cryo_kmod_available() || !mnt || !nofrz) {
		printf("1..0 # SKIP needs %s and CRYO_KMOD_MNT/CRYO_KMOD_NOFRZ (run tests/vm/kmod_ioctl.vmtest)\n",
		       CRYO_KMOD_DEVICE);
		return SKIP;
	}
	counter = mmap(NULL, sizeof(*counter), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counter == MAP_FAILED)
		return 1;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		int r;

		if (argc > 1 && !strstr(tests[i].name, argv[1])) {
			printf("ok %zu %s # SKIP not selected\n", i + 1, tests[i].name);
			skip++;
			continue;
		}
		r = tests[i].fn();
		reap_children();
		if (r == SKIP) {
			printf("ok %zu %s # SKIP\n", i + 1, tests[i].name);
			skip++;
		} else if (r == 0) {
			printf("ok %zu %s\n", i + 1, tests[i].name);
			pass++;
		} else {
			printf("not ok %zu %s\n", i + 1, tests[i].name);
			fail++;
		}
	}
	printf("# totals: pass:%d fail:%d skip:%d\n", pass, fail, skip);
	munmap((void *)counter, sizeof(*counter));
	return fail ? 1 : (pass ? 0 : SKIP);
}
