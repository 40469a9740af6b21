// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "hold.h"
#include "proc.h"
#include "kmod.h"
#include "log.h"
#include "state.h"
#include "util.h"
#include "watchdog.h"

#define STAGING_TAG ".staging-"
#define LEGACY_LOCK_FILE ".lock"
#define READY_TIMEOUT_MS 5000

struct cryo_hold {
	char *root;
	struct cryo_hold_rec *rec;
	int watchdog_pidfd;
};

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

void cryo_hold_free(struct cryo_hold *h)
{
	if (!h)
		return;
	if (h->watchdog_pidfd >= 0)
		close(h->watchdog_pidfd);
	cryo_hold_rec_free(h->rec);
	free(h->root);
	free(h);
}

/* A zombie is dead for us: PID 1 of a sandbox may reap orphans late. */
static bool pid_is_zombie(pid_t pid)
{
	_cleanup_free_ char *buf = NULL;
	char path[64], *p;
	size_t len = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (cryo_read_file_at(AT_FDCWD, path, 4096, &buf, &len) < 0)
		return true;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

static bool pid_matches(pid_t pid, uint64_t start)
{
	uint64_t now = 0;

	if (pid <= 0)
		return false;
	if (cryo_pid_start_time(pid, &now) < 0 || now != start)
		return false;
	return !pid_is_zombie(pid);
}

static bool same_boot(const struct cryo_hold_rec *rec)
{
	char *boot = cryo_hold_boot_id();
	bool same = boot && strcmp(boot, rec->boot_id) == 0;

	free(boot);
	return same;
}

/* The helper of rec (a dump's CRIU) is still the process that was journaled, and not a zombie. */
static bool helper_alive(const struct cryo_hold_rec *rec)
{
	return rec->helper_pid > 0 && pid_matches(rec->helper_pid, rec->helper_start);
}

/*
 * A pidfd of rec's helper while it is alive, or -1. Opened first, then
 * checked: the pidfd names the journaled process only if the pid's start
 * time still matches after it was opened.
 */
static int helper_pidfd(const struct cryo_hold_rec *rec)
{
	int fd;

	if (rec->helper_pid <= 0)
		return -1;
	fd = pidfd_open_(rec->helper_pid);
	if (fd >= 0 && !helper_alive(rec)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* How long a command waits for the helper of a dead holder: its deadline (then it is killed), else 60 s. */
static int64_t helper_wait_until(const struct cryo_hold_rec *rec)
{
	return rec->deadline_ms > 0 ? rec->deadline_ms + 3000 : cryo_now_ms() + 60000;
}

/* Wait, with no lock held, for the helper of rec (whose holder died) to end, up to helper_wait_until(). */
static void wait_helper(const char *name, const struct cryo_hold_rec *rec)
{
	struct pollfd p = { .fd = helper_pidfd(rec), .events = POLLIN };
	int64_t left = helper_wait_until(rec) - cryo_now_ms();

	if (p.fd < 0)
		return;
	cryo_info("hold `%s`: waiting for pid %d, which its dead holder %d started, to end", name, rec->helper_pid,
		  rec->holder_pid);
	if (left > 0)
		(void)poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
	close(p.fd);
}

/*
 * A hold whose helper outlived it is undone now (its deadline passed):
 * the helper goes first, or it would act on the target after the undo
 * (CRIU puts the cgroup's freezer back as it found it, frozen, when its
 * dump ends). Waits up to 2 s for it to be gone.
 */
static void stop_helper(const struct cryo_hold_rec *rec)
{
	struct pollfd p = { .fd = helper_pidfd(rec), .events = POLLIN };
	bool group;

	if (p.fd < 0)
		return;
	/* a helper that leads its own group (CRIU) goes with its children: one may be stopped, traced by it */
	group = getpgid(rec->helper_pid) == rec->helper_pid;
	cryo_warn("hold `%s`: its deadline passed while pid %d still works on it: killing it", rec->name,
		  rec->helper_pid);
	if (pidfd_signal(p.fd, SIGKILL) == 0) {
		if (group)
			(void)kill(-rec->helper_pid, SIGKILL);
		(void)poll(&p, 1, 2000);
	}
	close(p.fd);
}

bool cryo_hold_is_live(const struct cryo_hold_rec *rec)
{
	if ((rec->flags & CRYO_HOLD_ENDED) || !same_boot(rec))
		return false;
	/* an unload of the module thawed all it held */
	if ((rec->flags & CRYO_HOLD_KMOD) && !cryo_kmod_available())
		return false;
	if (!(rec->flags & (CRYO_HOLD_KMOD | CRYO_HOLD_NO_WATCHDOG)) &&
	    !pid_matches(rec->watchdog_pid, rec->watchdog_start))
		return false;
	/* its helper (a dump's CRIU) holds it on after the holder died */
	if ((rec->flags & CRYO_HOLD_UNDO_ON_EXIT) && !pid_matches(rec->holder_pid, rec->holder_start) &&
	    !helper_alive(rec))
		return false;
	if (rec->deadline_ms > 0 && cryo_now_ms() >= rec->deadline_ms)
		return false;
	return true;
}

/*
 * The watchdog, started through cryo_watchdog_spawn() (watchdog.c: double
 * fork, setsid, stdio on /dev/null, only the holds dir fd kept). It is a
 * fork of the holder, so rec and undo are valid here; it adds the
 * holder's pidfd and a signalfd.
 */
struct watchdog_args {
	const struct cryo_hold_rec *rec;
	cryo_hold_undo_fn undo;
	int dfd;
};

/* Our entry as the journal has it now (its exit delay, its helper), or NULL if it is gone or another's. */
static struct cryo_hold_rec *load_own(const struct watchdog_args *a)
{
	struct cryo_hold_rec *cur = NULL;

	if (cryo_hold_load_at(a->dfd, a->rec->name, &cur, NULL) < 0 || !cur)
		return NULL;
	if (strcmp(cur->nonce, a->rec->nonce) != 0) {
		cryo_hold_rec_free(cur);
		return NULL;
	}
	return cur;
}

/*
 * The holder died and its entry names a helper that lives on: a pidfd
 * to wait on, or -1 (none, or gone already).
 */
static int own_helper_pidfd(const struct watchdog_args *a)
{
	struct cryo_hold_rec *cur = load_own(a);
	int fd = cur ? helper_pidfd(cur) : -1;

	cryo_hold_rec_free(cur);
	return fd;
}

/* Stop the helper and undo, if the entry is still ours: true when undone. */
static bool fire_undo(struct watchdog_args *a)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hold_rec *cur = load_own(a);
	bool done = false;

	if (cur) {
		stop_helper(cur);
		done = a->undo(a->rec, &err) == 0;
		/* on failure the entry stays for `cryo recover` */
		cryo_error_clear(&err);
	}
	cryo_hold_rec_free(cur);
	return done;
}

/*
 * How long the watchdog waits for the journal's lock before it undoes
 * without it. Commands take the lock for a few ms; one that holds it
 * longer is stopped (SIGSTOP, a debugger) inside it, maybe with the
 * container just frozen, and must not keep it frozen past its deadline.
 */
#define FIRE_LOCK_MS 300

/* Fire: undo under the lock, unless the hold was released meanwhile. */
static void watchdog_fire(struct watchdog_args *a)
{
	char file[PATH_MAX];
	int lfd;

	lfd = cryo_hold_dir_lock_for(a->dfd, FIRE_LOCK_MS);
	if (lfd == -EBUSY) {
		/*
		 * Undo now, and tidy the journal once the lock is ours: the holder
		 * that has it fails its next hold check (the deadline passed), and
		 * a second undo of a thawed target changes nothing.
		 */
		(void)fire_undo(a);
		lfd = cryo_hold_dir_lock(a->dfd);
	}
	if (fire_undo(a)) {
		snprintf(file, sizeof(file), "%s.json", a->rec->name);
		unlinkat(a->dfd, file, 0);
	}
	if (lfd >= 0)
		close(lfd);
}

static void hold_watchdog_main(void *data, int ready_fd)
{
	struct watchdog_args *a = data;
	int64_t deadline = a->rec->deadline_ms, exit_delay = 0;
	bool waiting_helper = false;
	int holder = -1, sfd;
	sigset_t mask;

	/* release (SIGUSR1) and SIGTERM only wake it to look at the journal */
	signal(SIGUSR1, SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_SETMASK, &mask, NULL);

	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		cryo_watchdog_ready(ready_fd, errno, "signalfd failed");
		_exit(1);
	}
	if (a->rec->flags & CRYO_HOLD_UNDO_ON_EXIT) {
		holder = pidfd_open_(a->rec->holder_pid);
		if (holder < 0) {
			cryo_watchdog_ready(ready_fd, errno, "pidfd_open of the holder failed");
			_exit(1);
		}
	}
	cryo_watchdog_ready(ready_fd, 0, NULL);

	for (;;) {
		struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = holder, .events = POLLIN } };
		int64_t left = deadline > 0 ? deadline - cryo_now_ms() : -1;
		int r;

		if (deadline > 0 && left <= 0) {
			watchdog_fire(a);
			_exit(0);
		}
		r = poll(p, holder >= 0 ? 2 : 1, left < 0 ? -1 : (left > INT32_MAX ? INT32_MAX : (int)left));
		if (r < 0 && errno != EINTR)
			_exit(1);
		if (r > 0 && (p[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) < 0) {
				/* spurious: look at the journal anyway */
			}
			/* a release removed our entry: done; anything else (an exit delay set): keep guarding */
			if (!cryo_hold_entry_is_delay(a->dfd, a->rec->name, a->rec->nonce, &exit_delay))
				_exit(0);
		}
		if (r > 0 && holder >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
			/* (the entry, again: a delay set just before the holder died) */
			if (!cryo_hold_entry_is_delay(a->dfd, a->rec->name, a->rec->nonce, &exit_delay))
				_exit(0);
			/*
			 * Its helper (a dump's CRIU, which holds the tasks) lives on:
			 * the undo waits for it, up to the deadline. Killed, CRIU
			 * would leave a task it was working in dead; let go, it
			 * refreezes the cgroup as it found it when its dump ends.
			 */
			if (!waiting_helper) {
				int hfd = own_helper_pidfd(a);

				waiting_helper = true;
				if (hfd >= 0) {
					close(holder);
					holder = hfd;
					continue;
				}
			}
			if (exit_delay <= 0) {
				watchdog_fire(a);
				_exit(0);
			}
			/* the holder is gone: the undo waits its delay (or the deadline, if sooner) */
			if (deadline <= 0 || cryo_now_ms() + exit_delay < deadline)
				deadline = cryo_now_ms() + exit_delay;
			close(holder);
			holder = -1;
		}
	}
}

static int spawn_watchdog(struct watchdog_args *a, pid_t *ret_pid, uint64_t *ret_start, struct cryo_error *err)
{
	pid_t pid;
	int r;

	r = cryo_watchdog_spawn(hold_watchdog_main, a, &a->dfd, 1, READY_TIMEOUT_MS, &pid, err);
	if (r < 0)
		return cryo_error_prefix(err, "watchdog");
	/* it is waiting for its deadline now: its start time names it for recover */
	r = cryo_pid_start_time(pid, ret_start);
	if (r < 0)
		return cryo_error_set(err, r, "watchdog %d exited at once", (int)pid);
	*ret_pid = pid;
	return 0;
}

/*
 * Is the holder of rec verifiably dead: this boot's, and its pid gone or
 * taken by another process (start time), or a zombie? Not when /proc
 * can't say (another error than ENOENT reading it).
 */
static bool holder_dead(const struct cryo_hold_rec *rec)
{
	uint64_t start = 0;
	int r;

	if (!same_boot(rec) || rec->holder_pid <= 0)
		return false;
	r = cryo_pid_start_time(rec->holder_pid, &start);
	if (r == -ENOENT || r == -ESRCH)
		return true;
	if (r < 0)
		return false;
	return start != rec->holder_start || pid_is_zombie(rec->holder_pid);
}

/* Remove the entry of a hold that was undone; wake its watchdog, should it still look at it. */
static void remove_undone(int dfd, const struct cryo_hold_rec *rec)
{
	cryo_hold_remove_at(dfd, rec->name);
	if (pid_matches(rec->watchdog_pid, rec->watchdog_start))
		kill(rec->watchdog_pid, SIGUSR1);
}

/*
 * Under the journal lock, an entry of the name a new hold wants: a live
 * hold refuses; one the kernel already undid (kmod) or that ended goes;
 * a stale one of a holder that is verifiably dead is undone as `cryo
 * recover` would (a kubelet's retry of a checkpoint whose cryo was
 * SIGKILLed must not need a human); any other stale one refuses.
 */
static int take_over_stale(int dfd, const char *root, struct cryo_hold_rec *old, enum cryo_hold_kind kind,
			   cryo_hold_undo_fn undo, struct cryo_error *err)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	int r;

	if (cryo_hold_is_live(old)) {
		if (old->helper_pid > 0 && holder_dead(old))
			return cryo_error_setx(err, EBUSY,
					       "`%s` is still held by pid %d, which its dead holder %d started (a CRIU dump ends, or its deadline kills it)",
					       old->name, old->helper_pid, old->holder_pid);
		return cryo_error_setx(err, EEXIST, "`%s` is already held by pid %d (watchdog pid %d)", old->name,
				       old->holder_pid, old->watchdog_pid);
	}
	if (old->flags & (CRYO_HOLD_KMOD | CRYO_HOLD_ENDED)) {
		cryo_debug("hold `%s`: dropping the entry of a hold that ended", old->name);
		return 0;
	}
	if (old->kind != kind || !holder_dead(old))
		return cryo_error_setx(err, EEXIST, "a stale hold `%s` exists (its holder died); run `cryo recover` first",
				       old->name);
	old->root = strdup(root);
	if (!old->root)
		return cryo_error_set(err, ENOMEM, "hold `%s`", old->name);
	stop_helper(old);
	r = undo(old, &e);
	if (r < 0) {
		cryo_error_move(err, &e);
		return cryo_error_prefix(err, "undo the stale hold `%s` of dead pid %d", old->name, old->holder_pid);
	}
	if (r != CRYO_HOLD_UNDO_KEEP)
		remove_undone(dfd, old);
	cryo_info("recovered stale hold %s of dead pid %d", old->name, old->holder_pid);
	return 0;
}

static char *new_nonce(void)
{
	unsigned char raw[12];
	char *s = malloc(sizeof(raw) * 2 + 1);
	size_t i;

	if (!s)
		return NULL;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		uint64_t t = (uint64_t)cryo_now_us() ^ ((uint64_t)getpid() << 32);

		memcpy(raw, &t, sizeof(t));
		memset(raw + sizeof(t), 0, sizeof(raw) - sizeof(t));
	}
	for (i = 0; i < sizeof(raw); i++)
		snprintf(s + i * 2, 3, "%02x", raw[i]);
	return s;
}

int cryo_hold_acquire(const char *root, const char *name, enum cryo_hold_kind kind, const char *target,
		      const char *backend, uint64_t timeout_ms, unsigned flags, cryo_hold_undo_fn undo,
		      struct cryo_hold **ret, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1, lfd = -1;
	struct cryo_hold_rec *old = NULL;
	struct watchdog_args a;
	struct cryo_hold *h;
	int r;

	r = cryo_hold_validate_name(name, err);
	if (r < 0)
		return cryo_error_prefix(err, "hold name");
	if ((unsigned)kind >= _CRYO_HOLD_KIND_MAX || !target || !backend || !undo)
		return cryo_error_setx(err, EINVAL, "hold `%s`: invalid kind, target, backend or undo", name);
	if (timeout_ms == 0 && !(flags & CRYO_HOLD_UNDO_ON_EXIT))
		return cryo_error_setx(err, EINVAL, "hold `%s`: needs a deadline or undo-on-exit", name);
	if (timeout_ms > (uint64_t)INT64_MAX / 2)
		return cryo_error_setx(err, ERANGE, "hold `%s`: timeout too large", name);
	r = cryo_hold_dir_open(root, true, &dfd, err);
	if (r < 0)
		return r;
	lfd = cryo_hold_dir_lock(dfd);
	if (lfd < 0)
		return cryo_error_set(err, lfd, "lock `%s/%s`", root, HOLDS_DIR);
	if (cryo_hold_load_at(dfd, name, &old, NULL) == 0 && old) {
		r = take_over_stale(dfd, root, old, kind, undo, err);
		cryo_hold_rec_free(old);
		old = NULL;
		if (r < 0)
			return r;
	}

	h = calloc(1, sizeof(*h));
	if (!h)
		return cryo_error_set(err, ENOMEM, "hold `%s`", name);
	h->watchdog_pidfd = -1;
	h->root = strdup(root);
	h->rec = calloc(1, sizeof(*h->rec));
	if (!h->root || !h->rec)
		goto nomem;
	h->rec->name = strdup(name);
	h->rec->kind = kind;
	h->rec->target = strdup(target);
	h->rec->backend = strdup(backend);
	h->rec->flags = flags;
	h->rec->holder_pid = getpid();
	h->rec->boot_id = cryo_hold_boot_id();
	h->rec->nonce = new_nonce();
	h->rec->root = strdup(root);
	h->rec->deadline_ms = timeout_ms ? cryo_now_ms() + (int64_t)timeout_ms : 0;
	if (!h->rec->name || !h->rec->target || !h->rec->backend || !h->rec->boot_id || !h->rec->nonce ||
	    !h->rec->root)
		goto nomem;
	r = cryo_pid_start_time(h->rec->holder_pid, &h->rec->holder_start);
	if (r < 0) {
		r = cryo_error_set(err, r, "hold `%s`: read own start time", name);
		goto fail;
	}

	if (!(flags & (CRYO_HOLD_KMOD | CRYO_HOLD_NO_WATCHDOG))) {
		a = (struct watchdog_args){ .rec = h->rec, .undo = undo, .dfd = dfd };
		r = spawn_watchdog(&a, &h->rec->watchdog_pid, &h->rec->watchdog_start, err);
		if (r < 0) {
			cryo_error_prefix(err, "hold `%s`", name);
			goto fail;
		}
		h->watchdog_pidfd = pidfd_open_(h->rec->watchdog_pid);
	}
	if (cryo_fault("hold-journal"))
		r = -EIO;
	else
		r = cryo_hold_rec_save_at(dfd, h->rec);
	if (r < 0) {
		/* without its entry the watchdog exits at the next look */
		if (h->watchdog_pidfd >= 0)
			pidfd_signal(h->watchdog_pidfd, SIGUSR1);
		r = cryo_error_set(err, r, "hold `%s`: write journal entry", name);
		goto fail;
	}
	cryo_debug("hold `%s` on `%s` (%s), %s pid %d, deadline in %llu ms", name, target,
		   cryo_hold_kind_names[kind],
		   (flags & CRYO_HOLD_KMOD) ? "kmod, no watchdog" : (flags & CRYO_HOLD_NO_WATCHDOG) ? "journal only" : "watchdog",
		   h->rec->watchdog_pid, (unsigned long long)timeout_ms);
	*ret = h;
	return 0;

nomem:
	r = cryo_error_set(err, ENOMEM, "hold `%s`", name);
fail:
	cryo_hold_free(h);
	return r;
}

/* Remove the entry if it is still ours; -ETIME if the watchdog beat us. */
static int drop_entry(int dfd, const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	char file[PATH_MAX];
	int lfd, r = 0;

	lfd = cryo_hold_dir_lock(dfd);
	if (lfd < 0)
		return cryo_error_set(err, lfd, "lock holds of `%s`", rec->name);
	if (!cryo_hold_entry_is(dfd, rec->name, rec->nonce)) {
		r = cryo_error_setx(err, ETIME, "hold `%s` was already undone by its watchdog (deadline passed)",
				    rec->name);
	} else {
		snprintf(file, sizeof(file), "%s.json", rec->name);
		if (unlinkat(dfd, file, 0) < 0)
			r = cryo_error_set(err, errno, "remove hold `%s`", rec->name);
	}
	close(lfd);
	return r;
}

/* Write h's entry as h has it now, if the journal's is still ours; under the lock. */
static int save_own(struct cryo_hold *h, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1, lfd = -1;
	int r;

	r = cryo_hold_dir_open(h->root, false, &dfd, err);
	if (r < 0)
		return r;
	lfd = cryo_hold_dir_lock(dfd);
	if (lfd < 0)
		return cryo_error_set(err, lfd, "lock `%s/%s`", h->root, HOLDS_DIR);
	if (!cryo_hold_entry_is(dfd, h->rec->name, h->rec->nonce))
		return cryo_error_setx(err, ETIME, "hold `%s`: its watchdog undid it already", h->rec->name);
	return cryo_hold_update_at(dfd, h->rec, err);
}

int cryo_hold_set_exit_delay(struct cryo_hold *h, int64_t delay_ms, struct cryo_error *err)
{
	int r;

	if (!(h->rec->flags & CRYO_HOLD_UNDO_ON_EXIT) || (h->rec->flags & (CRYO_HOLD_KMOD | CRYO_HOLD_NO_WATCHDOG)))
		return cryo_error_setx(err, EINVAL, "hold `%s`: an exit delay needs a watchdog that undoes on exit",
				       h->rec->name);
	h->rec->exit_delay_ms = delay_ms > 0 ? delay_ms : 0;
	r = save_own(h, err);
	if (r < 0)
		return r;
	/* the watchdog reads it again (before it looks at a holder that died meanwhile) */
	if (h->watchdog_pidfd >= 0 && pidfd_signal(h->watchdog_pidfd, SIGUSR1) < 0)
		return cryo_error_set(err, errno, "hold `%s`: tell its watchdog", h->rec->name);
	return 0;
}

int cryo_hold_set_helper(struct cryo_hold *h, pid_t pid, struct cryo_error *err)
{
	uint64_t start = 0;
	int r;

	if (!h)
		return 0;
	if (!(h->rec->flags & CRYO_HOLD_UNDO_ON_EXIT) || (h->rec->flags & CRYO_HOLD_KMOD))
		return cryo_error_setx(err, EINVAL, "hold `%s`: a helper needs a hold undone on exit, not by the kernel",
				       h->rec->name);
	r = cryo_pid_start_time(pid, &start);
	if (r < 0)
		return cryo_error_set(err, r, "hold `%s`: helper pid %d", h->rec->name, (int)pid);
	h->rec->helper_pid = pid;
	h->rec->helper_start = start;
	/* (the watchdog reads the entry again when the holder dies: nothing to tell it now) */
	return save_own(h, err);
}

bool cryo_hold_is_kmod(const struct cryo_hold *h)
{
	return h && (h->rec->flags & CRYO_HOLD_KMOD);
}

int cryo_hold_release(struct cryo_hold *h, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	int r;

	if (!h)
		return 0;
	r = cryo_hold_dir_open(h->root, false, &dfd, err);
	if (r == 0)
		r = drop_entry(dfd, h->rec, err);
	if (h->watchdog_pidfd >= 0)
		pidfd_signal(h->watchdog_pidfd, SIGUSR1);
	cryo_hold_free(h);
	return r;
}

int cryo_hold_put_self(int dfd, const struct cryo_hold_rec *tmpl, bool replace, struct cryo_error *err)
{
	const char *name = tmpl->name;
	char file[PATH_MAX];
	struct cryo_hold_rec rec = {
		.name = tmpl->name,
		.kind = tmpl->kind,
		.target = tmpl->target,
		.backend = tmpl->backend,
		.flags = tmpl->flags,
		.detail = tmpl->detail,
		.holder_pid = getpid(),
		.watchdog_pid = getpid(),
	};
	_cleanup_free_ char *boot = cryo_hold_boot_id(), *nonce = new_nonce();
	int r;

	r = cryo_hold_validate_name(name, err);
	if (r < 0)
		return r;
	if (!boot || !nonce)
		return cryo_error_set(err, ENOMEM, "hold `%s`", name);
	rec.boot_id = boot;
	rec.nonce = nonce;
	r = cryo_pid_start_time(rec.holder_pid, &rec.holder_start);
	if (r < 0)
		return cryo_error_set(err, r, "hold `%s`: read own start time", name);
	rec.watchdog_start = rec.holder_start;
	snprintf(file, sizeof(file), "%s.json", name);
	if (!replace && faccessat(dfd, file, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return cryo_error_setx(err, EEXIST, "hold `%s` exists", name);
	r = cryo_hold_rec_save_at(dfd, &rec);
	if (r < 0)
		return cryo_error_set(err, r, "hold `%s`: write journal entry", name);
	return 0;
}

void cryo_hold_drop_self(int dfd, const char *name)
{
	struct cryo_hold_rec *rec = NULL;
	char file[PATH_MAX];

	if (cryo_hold_load_at(dfd, name, &rec, NULL) < 0 || !rec)
		return;
	if (rec->watchdog_pid == getpid()) {
		snprintf(file, sizeof(file), "%s.json", name);
		unlinkat(dfd, file, 0);
	}
	cryo_hold_rec_free(rec);
}

int cryo_hold_set_detail(struct cryo_hold *h, const char *detail, struct cryo_error *err)
{
	char *copy = NULL;

	if (detail && !(copy = strdup(detail)))
		return cryo_error_set(err, ENOMEM, "hold `%s`", h->rec->name);
	free(h->rec->detail);
	h->rec->detail = copy;
	return save_own(h, err);
}

int cryo_hold_check(const struct cryo_hold *h, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	int r;

	if (!h)
		return 0;
	if (h->rec->deadline_ms > 0 && cryo_now_ms() >= h->rec->deadline_ms)
		return cryo_error_setx(err, ETIME, "hold `%s` passed its deadline", h->rec->name);
	r = cryo_hold_dir_open(h->root, false, &dfd, err);
	if (r < 0)
		return r;
	if (!cryo_hold_entry_is(dfd, h->rec->name, h->rec->nonce))
		return cryo_error_setx(err, ETIME, "hold `%s` was already undone by its watchdog", h->rec->name);
	return 0;
}

int cryo_hold_release_name(const char *root, const char *name, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	struct cryo_hold_rec *rec = NULL;
	int r;

	r = cryo_hold_dir_open_for(root, name, &dfd, err);
	if (r < 0)
		return r;
	r = cryo_hold_load_at(dfd, name, &rec, err);
	if (r < 0 || !rec)
		return r < 0 ? r : -EIO;
	r = drop_entry(dfd, rec, err);
	if (r == 0 && pid_matches(rec->watchdog_pid, rec->watchdog_start))
		kill(rec->watchdog_pid, SIGUSR1);
	cryo_hold_rec_free(rec);
	return r;
}

int cryo_hold_settle(const char *root, const char *name, enum cryo_hold_kind kind, cryo_hold_undo_fn undo,
		     struct cryo_error *err)
{
	for (;;) {
		_cleanup_close_ int dfd = -1;
		struct cryo_hold_rec *rec = NULL;
		int lfd, r;

		r = cryo_hold_dir_open(root, false, &dfd, NULL);
		if (r < 0)
			return 0; /* no journal: nothing held */
		lfd = cryo_hold_dir_lock(dfd);
		if (lfd < 0)
			return cryo_error_set(err, lfd, "lock `%s/%s`", root, HOLDS_DIR);
		r = cryo_hold_load_at(dfd, name, &rec, NULL);
		if (r < 0 || !rec || rec->kind != kind || !(rec->flags & CRYO_HOLD_UNDO_ON_EXIT) || !holder_dead(rec)) {
			/* none, or not ours to judge: the acquire that follows says */
			cryo_hold_rec_free(rec);
			close(lfd);
			return 0;
		}
		if (!helper_alive(rec) || cryo_now_ms() >= helper_wait_until(rec)) {
			r = take_over_stale(dfd, root, rec, kind, undo, err);
			cryo_hold_rec_free(rec);
			close(lfd);
			return r;
		}
		/* its helper ends its work (CRIU's dump): wait, without the lock, and look again */
		close(lfd);
		wait_helper(name, rec);
		cryo_hold_rec_free(rec);
	}
}

/*
 * Recover's look at entry name before it takes the lock: a hold whose
 * holder died lives on while its helper (a dump's CRIU) ends its work;
 * wait for it (wait_helper(): up to the hold's deadline, then its
 * watchdog kills it), with no lock held, so that the other holds of the
 * root go on meanwhile. Recover then finds it done.
 */
static void wait_orphan_helper(int dfd, const char *name)
{
	struct cryo_hold_rec *rec = NULL;

	if (cryo_hold_load_at(dfd, name, &rec, NULL) == 0 && rec && (rec->flags & CRYO_HOLD_UNDO_ON_EXIT) &&
	    helper_alive(rec) && holder_dead(rec))
		wait_helper(name, rec);
	cryo_hold_rec_free(rec);
}

int cryo_hold_recover(const char *root, const cryo_hold_undo_fn undo[_CRYO_HOLD_KIND_MAX], cryo_hold_report_fn report,
		      void *userdata, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	struct cryo_error first = CRYO_ERROR_INIT;
	struct dirent *de;
	DIR *d;
	int r, ret = 0;

	r = cryo_hold_dir_open(root, false, &dfd, err);
	if (r == -ENOENT) {
		cryo_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	d = cryo_opendir_at(dfd, ".");
	if (!d)
		return cryo_error_set(err, errno, "list `%s/%s`", root, HOLDS_DIR);
	while ((de = readdir(d))) {
		struct cryo_error e = CRYO_ERROR_INIT;
		struct cryo_hold_rec *rec = NULL;
		char name[256];
		size_t len = strlen(de->d_name);
		int lfd;

		if (strcmp(de->d_name, LEGACY_LOCK_FILE) == 0) {
			/* older versions locked a file; nobody does now */
			unlinkat(dfd, de->d_name, 0);
			continue;
		}
		if (de->d_name[0] == '.' && len > 9 && strcmp(de->d_name + len - 9, ".json.tmp") == 0) {
			/* written under the lock: one that is there while we hold it was left by a killed writer */
			lfd = cryo_hold_dir_lock(dfd);
			if (unlinkat(dfd, de->d_name, 0) == 0)
				cryo_debug("removed the half-written hold entry `%s`", de->d_name);
			if (lfd >= 0)
				close(lfd);
			continue;
		}
		if (len > 5 && strcmp(de->d_name + len - 5, ".sock") == 0) {
			/* a watchdog's socket whose maker was killed before the watchdog took it over */
			lfd = cryo_hold_dir_lock(dfd);
			if (cryo_watchdog_gone(dfd, de->d_name) && unlinkat(dfd, de->d_name, 0) == 0)
				cryo_debug("removed the socket `%s` nobody listens on", de->d_name);
			if (lfd >= 0)
				close(lfd);
			continue;
		}
		if (de->d_name[0] == '.' || len <= 5 || len - 5 >= sizeof(name) ||
		    strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), de->d_name);
		wait_orphan_helper(dfd, name);
		lfd = cryo_hold_dir_lock(dfd);
		r = cryo_hold_load_at(dfd, name, &rec, &e);
		if (r == 0 && rec && !(rec->root = strdup(root)))
			r = cryo_error_set(&e, ENOMEM, "hold `%s`", name);
		if (r == -ENOENT) {
			/* undone and removed since we listed it (its watchdog, once its helper ended) */
			cryo_error_clear(&e);
			r = 0;
		} else if (r < 0 || !rec) {
			if (report)
				report(NULL, e.msg, r, userdata);
		} else if (cryo_hold_is_live(rec)) {
			if (report)
				report(rec, "held", 0, userdata);
		} else {
			/* a kmod hold that is not live was undone by the kernel */
			if (rec->flags & CRYO_HOLD_KMOD)
				r = 0;
			else if (!undo[rec->kind])
				r = cryo_error_setx(&e, EOPNOTSUPP, "no undo action for %s",
						    cryo_hold_kind_names[rec->kind]);
			else {
				stop_helper(rec);
				r = undo[rec->kind](rec, &e);
			}
			if (r == 0)
				remove_undone(dfd, rec);
			/* an ended hold is a record, not something recover did: told only when its tidying fails */
			if (report && (r < 0 || !(rec->flags & CRYO_HOLD_ENDED)))
				report(rec, r >= 0 ? "undone" : e.msg, r, userdata);
			if (r > 0)
				r = 0;
		}
		if (r < 0 && ret == 0) {
			ret = r;
			cryo_error_move(&first, &e);
			cryo_error_prefix(&first, "hold `%s`", name);
		}
		cryo_error_clear(&e);
		cryo_hold_rec_free(rec);
		if (lfd >= 0)
			close(lfd);
	}
	closedir(d);
	if (ret < 0)
		cryo_error_move(err, &first);
	return ret;
}

/* `<root>/.migrate-in` or `<root>/.migrate-out` (migrate/) */
static bool migrate_dir(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strcmp(b, CRYO_MIGRATE_IN_DIR) == 0 || strcmp(b, CRYO_MIGRATE_OUT_DIR) == 0;
}

int cryo_hold_staging_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int pfd = -1;
	const char *base, *tag;
	uint64_t pid;
	int r;

	base = strrchr(rec->target, '/');
	if (!base || base == rec->target || !base[1])
		return cryo_error_setx(err, EINVAL, "staging dir `%s` is not an absolute path", rec->target);
	base++;
	parent = strndup(rec->target, (size_t)(base - 1 - rec->target));
	if (!parent)
		return cryo_error_set(err, ENOMEM, "staging dir");
	/*
	 * only ever a dir named like the ones cryo_image_stage() makes, for
	 * this very holder, or a migration's dir of one container
	 */
	tag = strstr(base, STAGING_TAG);
	if (!(base[0] == '.' && tag && cryo_parse_u64(tag + strlen(STAGING_TAG), INT_MAX, &pid) == 0 &&
	      (pid_t)pid == rec->holder_pid) &&
	    !(migrate_dir(parent) && cryo_validate_id(base, NULL) == 0))
		return cryo_error_setx(err, EINVAL, "`%s` is not a staging dir of pid %d", rec->target,
				       (int)rec->holder_pid);
	pfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 && errno == ENOENT)
		return 0;
	if (pfd < 0)
		return cryo_error_set(err, errno, "open `%s`", parent);
	/*
	 * The holder died. A CRIU process it left, one that the parent-death
	 * signal does not reach (a helper CRIU forked), goes first: it has the
	 * dir open. The CRIU that does get that signal may still write a file
	 * or two into the dir for a moment: ENOTEMPTY then, and again, for at
	 * most 2 s
	 */
	if (cryo_proc_kill_holding("criu", rec->target) > 0)
		cryo_warn("staging dir `%s`: killed the CRIU its dead holder (pid %d) left", rec->target,
			  (int)rec->holder_pid);
	for (int i = 0;; i++) {
		r = cryo_rm_rf_at(pfd, base);
		if (r != -ENOTEMPTY || i >= 40)
			break;
		cryo_sleep_ms(50);
	}
	if (r < 0 && r != -ENOENT)
		return cryo_error_set(err, -r, "remove staging dir `%s`", rec->target);
	return 0;
}
