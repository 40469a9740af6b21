// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fsfreeze watchdog (fsfreeze-watchdog.h): the process that freezes a
 * filesystem for its owners and thaws it when the last hold ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fsfreeze-watchdog.h"
#include "hold.h"
#include "kmod.h"
#include "log.h"
#include "state.h"
#include "util.h"
#include "watchdog.h"

#define MAX_HOLDS 64
#define CALL_TIMEOUT_MS 10000

void cryo_fsfreeze_entry_name(const char *key, char *buf, size_t size)
{
	snprintf(buf, size, "fs@%s", key);
}

void cryo_fsfreeze_sock_name(const char *key, char *buf, size_t size)
{
	snprintf(buf, size, "fs@%s.sock", key);
}

struct hold {
	char owner[129];
	pid_t pid;
	int pidfd;             /* >= 0 when it thaws on its holder's exit */
	int64_t since_us;
	uint64_t timeout_ms;
	int64_t deadline_ms;   /* CLOCK_MONOTONIC, 0 = none; suspend does not count */
};

struct lost {
	char owner[129];
	char reason[64];
	int64_t after_ms;
	uint64_t timeout_ms;
};

struct wd {
	struct fsfreeze_target *t;
	int lfd;
	int sigfd;
	struct hold holds[MAX_HOLDS];
	size_t n_holds;
	struct lost lost[MAX_HOLDS];
	size_t n_lost;
	const char *state;
	const char *end_state;   /* the journal state once the last hold is lost */
	uint64_t start_time;     /* of the watchdog: tells `cryo recover` a live one from a reused pid */
	int64_t frozen_at_us;
	int64_t thawed_at_us;
	/* the first hold, from cryo_fsfreeze_freeze() */
	const char *owner;
	uint64_t timeout_ms;
	pid_t holder;
	bool thaw_on_exit;
	int kfd;                 /* /dev/cryo_freezer holder, or -1: plain FIFREEZE */
	char entry[48];          /* fs@<key> */
};

/* The entry's detail: what the journal tells owners and `cryo recover` about this filesystem. */
static char *detail_json(const struct wd *w)
{
	struct json_object *j = json_object_new_object(), *holds = json_object_new_array(),
			   *lost = json_object_new_array();
	char *s = NULL;
	size_t i;

	if (!j || !holds || !lost) {
		json_object_put(j);
		json_object_put(holds);
		json_object_put(lost);
		return NULL;
	}
	json_object_object_add(j, "device", json_object_new_string(w->t->key));
	json_object_object_add(j, "mountpoint", json_object_new_string(w->t->m.mountpoint));
	json_object_object_add(j, "fstype", json_object_new_string(w->t->m.fstype));
	json_object_object_add(j, "source", json_object_new_string(w->t->m.source));
	json_object_object_add(j, "state", json_object_new_string(w->state));
	json_object_object_add(j, "frozen_at_us", json_object_new_int64(w->frozen_at_us));
	if (w->thawed_at_us) {
		json_object_object_add(j, "thawed_at_us", json_object_new_int64(w->thawed_at_us));
		json_object_object_add(j, "frozen_us", json_object_new_int64(w->thawed_at_us - w->frozen_at_us));
	}
	for (i = 0; i < w->n_holds; i++) {
		struct json_object *h = json_object_new_object();

		json_object_object_add(h, "owner", json_object_new_string(w->holds[i].owner));
		json_object_object_add(h, "pid", json_object_new_int64(w->holds[i].pid));
		json_object_object_add(h, "since_us", json_object_new_int64(w->holds[i].since_us));
		json_object_object_add(h, "timeout_ms", json_object_new_int64((int64_t)w->holds[i].timeout_ms));
		json_object_object_add(h, "deadline_ms", json_object_new_int64(w->holds[i].deadline_ms));
		json_object_array_add(holds, h);
	}
	json_object_object_add(j, "holds", holds);
	for (i = 0; i < w->n_lost; i++) {
		struct json_object *l = json_object_new_object();

		json_object_object_add(l, "owner", json_object_new_string(w->lost[i].owner));
		json_object_object_add(l, "reason", json_object_new_string(w->lost[i].reason));
		json_object_object_add(l, "after_ms", json_object_new_int64(w->lost[i].after_ms));
		json_object_object_add(l, "timeout_ms", json_object_new_int64((int64_t)w->lost[i].timeout_ms));
		json_object_array_add(lost, l);
	}
	json_object_object_add(j, "lost", lost);
	s = strdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
	json_object_put(j);
	return s;
}

/*
 * (Re)write the filesystem's entry in the hold journal. flags
 * CRYO_HOLD_ENDED: the watchdog is done, and the entry stays only as the
 * record of lost windows. The state dir is never the frozen filesystem
 * (check_target), so this cannot block on the freeze.
 */
static int entry_put(struct wd *w, unsigned flags, bool replace, struct cryo_error *err)
{
	_cleanup_free_ char *detail = w->state ? detail_json(w) : NULL;
	struct cryo_hold_rec tmpl = {
		.name = w->entry,
		.kind = CRYO_HOLD_FS_THAW,
		.target = w->t->m.mountpoint,
		.backend = (char *)(cryo_kmod_available() ? "kmod" : "ioctl"),
		.flags = flags,
		.detail = detail,
	};

	return cryo_hold_put_self(w->t->holdsfd, &tmpl, replace, err);
}

static void journal_save(struct wd *w)
{
	(void)entry_put(w, 0, true, NULL);
}

static struct hold *find_hold(struct wd *w, const char *owner)
{
	size_t i;

	for (i = 0; i < w->n_holds; i++)
		if (strcmp(w->holds[i].owner, owner) == 0)
			return &w->holds[i];
	return NULL;
}

static const struct lost *find_lost(const struct wd *w, const char *owner)
{
	size_t i;

	for (i = w->n_lost; i > 0; i--)
		if (strcmp(w->lost[i - 1].owner, owner) == 0)
			return &w->lost[i - 1];
	return NULL;
}

static void set_deadline(struct hold *h, uint64_t timeout_ms)
{
	h->timeout_ms = timeout_ms;
	h->deadline_ms = timeout_ms ? cryo_now_ms() + (int64_t)timeout_ms : 0;
}

static int add_hold(struct wd *w, const char *owner, pid_t pid, uint64_t timeout_ms, bool thaw_on_exit)
{
	struct hold *h;

	if (w->n_holds >= MAX_HOLDS)
		return -E2BIG;
	h = &w->holds[w->n_holds];
	*h = (struct hold){ .pid = pid, .pidfd = -1, .since_us = cryo_now_us() };
	snprintf(h->owner, sizeof(h->owner), "%s", owner);
	set_deadline(h, timeout_ms);
	if (thaw_on_exit) {
		h->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (h->pidfd < 0)
			return -errno;
	}
	w->n_holds++;
	return 0;
}

static void drop_hold(struct wd *w, struct hold *h, const char *lost_reason)
{
	if (lost_reason && w->n_lost < MAX_HOLDS) {
		struct lost *l = &w->lost[w->n_lost++];

		snprintf(l->owner, sizeof(l->owner), "%s", h->owner);
		snprintf(l->reason, sizeof(l->reason), "%s", lost_reason);
		l->after_ms = (cryo_now_us() - h->since_us) / 1000;
		l->timeout_ms = h->timeout_ms;
		if (strcmp(lost_reason, LOST_TIMEOUT) == 0)
			w->end_state = "thawed-by-timeout";
		else if (strcmp(lost_reason, LOST_HOLDER_EXIT) == 0)
			w->end_state = "thawed-holder-exited";
		else if (strcmp(lost_reason, LOST_BEHIND_BACK) == 0)
			w->end_state = "thawed-behind-cryos-back";
		else
			w->end_state = "thawed-by-signal";
	}
	closep(&h->pidfd);
	*h = w->holds[--w->n_holds];
}

/*
 * Record the outcome r of FITHAW and stop listening: the watchdog's work
 * is done. The entry stays only to tell owners whose hold was lost (they
 * read it on thaw or reset), or for `cryo recover` when FITHAW failed;
 * otherwise nothing is left behind. Written before the socket goes, so a
 * command that finds no watchdog finds this entry as it is left.
 */
static int thaw_done(struct wd *w, int r, const char *state)
{
	char sock[48];

	w->thawed_at_us = cryo_now_us();
	/* EINVAL: someone thawed it behind cryo's back (fsfreeze -u); it is thawed all the same */
	w->state = r == 0 || r == -EINVAL ? state : "thaw-failed";
	if (r != 0 && r != -EINVAL)
		journal_save(w);
	else if (w->n_lost > 0)
		(void)entry_put(w, CRYO_HOLD_ENDED, true, NULL);
	else
		cryo_hold_drop_self(w->t->holdsfd, w->entry);
	cryo_fsfreeze_sock_name(w->t->key, sock, sizeof(sock));
	unlinkat(w->t->holdsfd, sock, 0);
	/* from now on the main loop exits: a late deadline must never FITHAW a freeze made after this one */
	closep(&w->lfd);
	return r;
}

/*
 * The freeze itself. With cryo_freezer.ko loaded the watchdog holds it
 * through /dev/cryo_freezer: should the watchdog itself die (kill -9, OOM),
 * the kernel thaws the filesystem at once instead of leaving it frozen
 * until `cryo recover`. The per-owner deadlines stay the watchdog's. The
 * errors are FIFREEZE's (EBUSY, EOPNOTSUPP, EPERM).
 */
static int wd_freeze(struct wd *w)
{
	int r;

	w->kfd = -1;
	if (cryo_kmod_available() && cryo_kmod_open(&w->kfd, NULL) == 0) {
		r = cryo_kmod_fs_freeze(w->kfd, w->t->fd, 0, NULL);
		if (r < 0)
			closep(&w->kfd);
		return r;
	}
	return ioctl(w->t->fd, FIFREEZE, 0) < 0 ? -errno : 0;
}

/* FITHAW's answer: EINVAL when it was not frozen (thawed behind cryo's back). */
static int wd_thaw(struct wd *w)
{
	if (w->kfd >= 0)
		return cryo_kmod_fs_thaw(w->kfd, w->t->fd, NULL);
	return ioctl(w->t->fd, FITHAW, 0) < 0 ? -errno : 0;
}

static int thaw_now(struct wd *w, const char *state)
{
	return thaw_done(w, wd_thaw(w), state);
}

/*
 * Linux cannot be asked whether a filesystem is frozen, but a second
 * userspace FIFREEZE fails with EBUSY at once, before any sync. If it
 * succeeds, someone thawed the filesystem behind cryo's back (fsfreeze -u)
 * and every hold's consistency window was broken: they are all lost, and
 * the filesystem is frozen again, by this probe, from now on.
 */
static bool thawed_behind_back(struct wd *w)
{
	int64_t t0 = cryo_now_us();

	/*
	 * A kmod hold: since Linux 6.6 a userspace FIFREEZE nests inside a
	 * kernel freeze (and FITHAW cannot undo ours), so the probe would
	 * freeze for good. Before 6.6 a FITHAW behind cryo's back does undo
	 * it; the module then answers RESET_TIMEOUT with EINVAL (0 keeps the
	 * hold without a deadline, as it is), and the filesystem is frozen
	 * again through the module, as by the probe.
	 */
	if (w->kfd >= 0) {
		if (cryo_kmod_fs_reset(w->kfd, w->t->fd, 0, NULL) != -EINVAL)
			return false;
		if (cryo_kmod_fs_freeze(w->kfd, w->t->fd, 0, NULL) < 0)
			cryo_debug("freeze `%s` again after a thaw behind cryo's back failed", w->t->m.mountpoint);
	} else if (ioctl(w->t->fd, FIFREEZE, 0) < 0) {
		return false;
	}
	while (w->n_holds > 0)
		drop_hold(w, &w->holds[0], LOST_BEHIND_BACK);
	w->frozen_at_us = t0;
	return true;
}

static void handle_request(struct wd *w, int conn, char *req)
{
	char reply[CRYO_WATCHDOG_MSG_MAX], owner[129];
	unsigned long long ms;
	unsigned on_exit;
	struct hold *h;
	int pid, r;

	if (sscanf(req, "HOLD %llu %d %u %128s", &ms, &pid, &on_exit, owner) == 4) {
		/* a new hold must not join holds whose window is already broken */
		thawed_behind_back(w);
		h = find_hold(w, owner);
		if (h) {
			snprintf(reply, sizeof(reply), "%d owner `%s` already holds `%s` frozen (since %" PRId64 " ms)", EBUSY,
				 owner, w->t->m.mountpoint, (cryo_now_us() - h->since_us) / 1000);
		} else {
			r = add_hold(w, owner, pid, ms, on_exit != 0);
			if (r < 0)
				snprintf(reply, sizeof(reply), "%d cannot add a hold: %s", -r, strerror(-r));
			else
				snprintf(reply, sizeof(reply), "0 held %zu", w->n_holds);
			journal_save(w);
		}
	} else if (sscanf(req, "RESET %llu %128s", &ms, owner) == 2) {
		if (thawed_behind_back(w)) {
			/* nobody holds the probe's freeze */
			thaw_now(w, "thawed-behind-cryos-back");
		}
		h = find_hold(w, owner);
		if (h) {
			set_deadline(h, ms);
			journal_save(w);
			snprintf(reply, sizeof(reply), "0 reset");
		} else if (find_lost(w, owner)) {
			snprintf(reply, sizeof(reply), "%d lost", EINVAL);
		} else {
			snprintf(reply, sizeof(reply), "%d none", EINVAL);
		}
	} else if (sscanf(req, "THAW %128s", owner) == 1 || strcmp(req, "THAWALL") == 0) {
		bool all = strcmp(req, "THAWALL") == 0;

		h = all ? NULL : find_hold(w, owner);
		if (!all && !h) {
			snprintf(reply, sizeof(reply), "%d %s", EINVAL, find_lost(w, owner) ? "lost" : "none");
		} else {
			bool last = all || w->n_holds == 1;

			while (all && w->n_holds > 0)
				drop_hold(w, &w->holds[0], LOST_FORCED);
			if (!last) {
				drop_hold(w, h, NULL);
				journal_save(w);
				snprintf(reply, sizeof(reply), "0 held %zu", w->n_holds);
			} else {
				r = wd_thaw(w);
				if (h)
					drop_hold(w, h, r == -EINVAL ? LOST_BEHIND_BACK : NULL);
				r = thaw_done(w, r, r == -EINVAL ? "thawed-behind-cryos-back" : "thawed");
				if (r == -EINVAL && !all)
					snprintf(reply, sizeof(reply), "%d lost", EINVAL);
				else if (r < 0 && r != -EINVAL)
					snprintf(reply, sizeof(reply), "%d FITHAW failed: %s", -r, strerror(-r));
				else
					snprintf(reply, sizeof(reply), "0 thawed %" PRId64, w->thawed_at_us - w->frozen_at_us);
			}
		}
	} else {
		snprintf(reply, sizeof(reply), "%d unknown request", EINVAL);
	}
	cryo_watchdog_reply(conn, reply);
}

static int64_t next_deadline(const struct wd *w)
{
	int64_t d = 0;
	size_t i;

	for (i = 0; i < w->n_holds; i++)
		if (w->holds[i].deadline_ms && (!d || w->holds[i].deadline_ms < d))
			d = w->holds[i].deadline_ms;
	return d;
}

/*
 * The watchdog: freeze, then hold the filesystem until the last hold is
 * released, its deadline passes, its holder exits (THAW_ON_EXIT) or
 * someone sends SIGTERM. Only this process ever calls FITHAW for a hold,
 * so a deadline can never thaw a freeze made after the hold ended.
 */
static void watchdog_main(void *data, int ready_fd)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	struct wd *w = data;
	size_t n_lost;
	char msg[256];
	bool stale;
	sigset_t ss;
	int r;

	prctl(PR_SET_NAME, "cryo-fsfreeze", 0, 0, 0);
	/* the creator's lock fd was not passed on (detach() closed it): the lock is the creator's alone */
	w->t->lockfd = -1;
	if (cryo_pid_start_time(getpid(), &w->start_time) < 0)
		w->start_time = 0;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	w->sigfd = signalfd(-1, &ss, SFD_CLOEXEC);

	/* journalled first, so that `cryo recover` finds the freeze should this process die at any point */
	r = entry_put(w, 0, false, &e);
	/* the entry of a dead watchdog stays for `cryo recover` unless the filesystem turns out thawed */
	stale = r == -EEXIST;
	if (r < 0 && !stale) {
		cryo_watchdog_ready(ready_fd, e.status > 0 ? e.status : EIO, e.msg);
		_exit(1);
	}
	cryo_error_clear(&e);
	/* writers block from the start of FIFREEZE (it syncs with SB_FREEZE_WRITE set): the window starts here */
	w->frozen_at_us = cryo_now_us();
	r = -wd_freeze(w);
	if (r == 0 && stale && entry_put(w, 0, true, &e) < 0) {
		wd_thaw(w);
		cryo_watchdog_ready(ready_fd, e.status > 0 ? e.status : EIO, e.msg);
		_exit(1);
	}
	if (r) {
		cryo_hold_drop_self(w->t->holdsfd, w->entry);
		snprintf(msg, sizeof(msg), "FIFREEZE%s: %s", w->kfd >= 0 ? " (cryo_freezer)" : "", strerror(r));
		cryo_watchdog_ready(ready_fd, r, msg);
		_exit(1);
	}
	w->state = "frozen";
	r = cryo_fault("fsfreeze-hold") ? -EIO : add_hold(w, w->owner, w->holder, w->timeout_ms, w->thaw_on_exit);
	if (r < 0) {
		/* nobody would ever thaw it: undo before telling the caller */
		wd_thaw(w);
		cryo_hold_drop_self(w->t->holdsfd, w->entry);
		snprintf(msg, sizeof(msg), "watch the holder: %s", strerror(-r));
		cryo_watchdog_ready(ready_fd, -r, msg);
		_exit(1);
	}
	journal_save(w);
	cryo_watchdog_ready(ready_fd, 0, NULL);
	n_lost = w->n_lost;

	for (;;) {
		struct pollfd p[2 + MAX_HOLDS];
		int64_t d = next_deadline(w), now;
		size_t n = 0, i;
		int timeout = -1;

		p[n++] = (struct pollfd){ .fd = w->lfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = w->sigfd, .events = POLLIN };
		for (i = 0; i < w->n_holds; i++)
			p[n++] = (struct pollfd){ .fd = w->holds[i].pidfd, .events = POLLIN };
		if (d) {
			now = cryo_now_ms();
			timeout = d > now ? (int)(d - now < 0x7fffffff ? d - now : 0x7fffffff) : 0;
		}
		r = poll(p, n, timeout);
		if (r < 0 && errno != EINTR)
			break;

		if (p[1].revents & POLLIN) {
			while (w->n_holds > 0)
				drop_hold(w, &w->holds[0], LOST_SIGTERM);
			break;
		}
		/* holder exits first: a pidfd slot moves when a hold is dropped */
		/* a dead holder will never ask what happened to its hold: nothing to record */
		for (i = w->n_holds; i > 0; i--)
			if (p[2 + i - 1].revents & POLLIN)
				drop_hold(w, &w->holds[i - 1], NULL);
		now = cryo_now_ms();
		for (i = w->n_holds; i > 0; i--)
			if (w->holds[i - 1].deadline_ms && w->holds[i - 1].deadline_ms <= now)
				drop_hold(w, &w->holds[i - 1], LOST_TIMEOUT);
		if (w->n_holds == 0)
			break;
		if (w->n_lost != n_lost) {
			n_lost = w->n_lost;
			journal_save(w);
		}

		if (p[0].revents & POLLIN) {
			char req[CRYO_WATCHDOG_MSG_MAX];
			int conn = cryo_watchdog_accept(w->lfd, req, sizeof(req));

			if (conn >= 0)
				handle_request(w, conn, req);
			if (w->lfd < 0)
				_exit(0);
		}
	}
	thaw_now(w, w->end_state ? w->end_state : "thawed-by-timeout");
	_exit(0);
}

int cryo_fsfreeze_watchdog_start(struct fsfreeze_target *t, const char *owner, pid_t holder, uint64_t timeout_ms,
				 bool thaw_on_exit, pid_t *ret_pid, struct cryo_error *err)
{
	char sock[48];
	struct wd *w;
	int keep[3], r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return cryo_error_set(err, ENOMEM, "freeze");
	*w = (struct wd){ .t = t, .lfd = -1, .sigfd = -1, .kfd = -1, .owner = owner, .timeout_ms = timeout_ms,
			  .holder = holder, .thaw_on_exit = thaw_on_exit };
	cryo_fsfreeze_entry_name(t->key, w->entry, sizeof(w->entry));
	cryo_fsfreeze_sock_name(t->key, sock, sizeof(sock));
	r = cryo_watchdog_listen(t->holdsfd, sock, &w->lfd, err);
	if (r < 0) {
		free(w);
		return r;
	}
	/*
	 * From now on a command that takes the lock finds this socket and
	 * waits for its answer, which comes once the freeze is made (or the
	 * connection breaks if it fails): FIFREEZE, which syncs the
	 * filesystem, is not made under the journal's lock, which other
	 * filesystems' freezes and the cgroup holds' deadlines wait for.
	 */
	closep(&t->lockfd);
	keep[0] = t->fd;
	keep[1] = t->holdsfd;
	keep[2] = w->lfd;
	r = cryo_watchdog_spawn(watchdog_main, w, keep, ARRAY_SIZE(keep), CALL_TIMEOUT_MS, ret_pid, err);
	closep(&w->lfd);
	free(w);
	if (r < 0)
		unlinkat(t->holdsfd, sock, 0);
	return r;
}
