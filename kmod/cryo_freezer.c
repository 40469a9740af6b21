// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo_freezer - held freezes of cgroups and filesystems, with deadlines.
 *
 * Linux can freeze a filesystem (FIFREEZE) and a cgroup (cgroup.freeze,
 * freezer.state), but nothing undoes such a freeze when whoever made it
 * dies: a crashed checkpoint leaves a container stopped and its filesystem
 * blocking every writer in uninterruptible sleep. The auto-thaw timeout
 * proposed with the generic freeze ioctls was never merged.
 *
 * Here every freeze is a hold owned by an open file of /dev/cryo_freezer.
 * A hold ends when its holder thaws it, when its deadline passes (the hold
 * is then kept as "fired" so that RESET_TIMEOUT answers EINVAL, as in the
 * proposed FIFREEZE_RESET_TIMEOUT), or when the file is released, which
 * also happens when the holding process is killed. An open file pins the
 * module.
 *
 * A detached hold is owned by the module instead of a file: it is made
 * through a file but lives on after it, until its deadline (mandatory),
 * a THAW through any open file, or the unload of the module, which thaws
 * every detached hold that is left. That is a watchdog without a process.
 *
 * Filesystems are frozen with freeze_super(), exactly what FIFREEZE does.
 * Cgroups are frozen through their own control file: cgroup_freeze() is
 * not exported (6.1 exports cgroup_get_from_fd() but nothing that freezes),
 * and writing cgroup.freeze (v2) or freezer.state (v1) from the kernel
 * gives the very semantics userspace sees, including cgroup.events.
 *
 * Suspend and hibernation must not change what cryo froze: deadlines are
 * paused from PM_*_PREPARE to PM_POST_* (the PM freezer may keep the
 * system stopped for long, or, with pm_test, run the clock while nothing
 * is allowed to happen), and after resume every held cgroup is checked and
 * frozen again if something thawed it.
 *
 * Locking: cryo_lock guards the hold lists and every field of a hold. It is
 * never held across freeze_super(): that syncs the filesystem and may wait
 * on I/O to another filesystem held frozen here (a loop image), whose
 * deadline work needs the lock to thaw it. A hold being frozen is listed
 * as CRYO_FREEZING so that nobody else touches it meanwhile.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kdev_t.h>
#include <linux/ktime.h>
#include <linux/limits.h>
#include <linux/magic.h>
#include <linux/math64.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/path.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/suspend.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "uapi/cryo_freezer.h"

enum cryo_kind {
	CRYO_KIND_FS,
	CRYO_KIND_CGROUP2,
	CRYO_KIND_CGROUP1,
};

static const char * const cryo_kind_names[] = {
	[CRYO_KIND_FS] = "fs",
	[CRYO_KIND_CGROUP2] = "cgroup2",
	[CRYO_KIND_CGROUP1] = "cgroup1",
};

enum cryo_state {
	CRYO_FREEZING,	/* being frozen, cryo_lock dropped */
	CRYO_HELD,
	CRYO_FIRING,	/* the deadline work is thawing it */
	CRYO_FIRED,	/* thawed by its deadline */
};

static const char * const cryo_state_names[] = {
	[CRYO_FREEZING] = "freezing",
	[CRYO_HELD] = "held",
	[CRYO_FIRING] = "firing",
	[CRYO_FIRED] = "fired",
};

struct cryo_holder {
	struct list_head holds;
	unsigned int nr_holds;
	unsigned int max_holds;
};

/* What a hold is about: a filesystem, or a cgroup directory. */
struct cryo_target {
	enum cryo_kind kind;
	dev_t dev;
	unsigned long ino;	/* 0 for filesystems */
};

struct cryo_hold {
	struct list_head node;		/* in holder->holds */
	struct list_head all;		/* in cryo_all_holds */
	struct cryo_holder *holder;
	struct cryo_target target;
	enum cryo_state state;
	bool unlisted;			/* off all lists, owned by one caller */
	bool detached;			/* owned by the module, not a file */
	struct path path;		/* fs: pins the mount and the sb */
	struct file *ctl;		/* cgroup: its freezer control file */
	char *what;
	pid_t pid;
	char comm[TASK_COMM_LEN];
	u64 since;			/* boottime ns */
	bool has_deadline;
	u64 deadline;			/* monotonic ns, unless PM paused */
	u64 remaining;			/* ns left, while PM paused */
	unsigned int fired;
	unsigned int reasserted;
	struct delayed_work work;
};

static DEFINE_MUTEX(cryo_lock);
static LIST_HEAD(cryo_all_holds);

/* The owner of every detached hold. */
static struct cryo_holder cryo_detached = {
	.holds = LIST_HEAD_INIT(cryo_detached.holds),
	.max_holds = CRYO_FREEZER_MAX_DETACHED,
};
static bool cryo_pm_paused;
static unsigned int cryo_pm_cycles;
static struct dentry *cryo_debugfs;

static bool cryo_sb_frozen(struct super_block *sb)
{
	return READ_ONCE(sb->s_writers.frozen) != SB_UNFROZEN;
}

/* Read a cgroup freezer file: 1 if it asks for frozen, 0 if not. */
static int cryo_cg_read(struct cryo_hold *hold, struct file *ctl)
{
	char buf[16] = "";
	loff_t pos = 0;
	ssize_t n;

	n = kernel_read(ctl, buf, sizeof(buf) - 1, &pos);
	if (n < 0)
		return n;
	if (hold->target.kind == CRYO_KIND_CGROUP2)
		return buf[0] == '1';
	return strncmp(buf, "THAWED", 6) != 0;
}

static int cryo_cg_write(struct cryo_hold *hold, bool freeze)
{
	const char *s;
	loff_t pos = 0;
	ssize_t n;

	if (hold->target.kind == CRYO_KIND_CGROUP2)
		s = freeze ? "1" : "0";
	else
		s = freeze ? "FROZEN" : "THAWED";
	n = kernel_write(hold->ctl, s, strlen(s), &pos);
	return n < 0 ? n : 0;
}

/*
 * Undo the freeze and drop the references that kept its target alive, so
 * that a fired hold does not keep a filesystem from being unmounted.
 * Called by whoever owns the hold exclusively: the deadline work while
 * CRYO_FIRING, or the one that unlisted a held hold.
 */
static int cryo_undo(struct cryo_hold *hold)
{
	int ret;

	if (hold->target.kind == CRYO_KIND_FS) {
		/* before 6.6 a FITHAW behind our back may have done it */
		ret = cryo_sb_frozen(hold->path.mnt->mnt_sb) ?
		      cryo_thaw_sb(hold->path.mnt->mnt_sb) : -EINVAL;
		path_put(&hold->path);
		hold->path.mnt = NULL;
		hold->path.dentry = NULL;
	} else {
		ret = cryo_cg_write(hold, false);
		fput(hold->ctl);
		hold->ctl = NULL;
	}
	if (ret && ret != -EINVAL)
		pr_warn("thaw of %s %s failed: %d\n",
			cryo_kind_names[hold->target.kind], hold->what, ret);
	return ret;
}

/*
 * Before 6.6 a freeze is one global state of the superblock: a FITHAW
 * from userspace undoes ours. Such a hold is lost - answered like a fired
 * one (EINVAL), which tells its holder that its window was broken. Needs
 * cryo_lock.
 */
static bool cryo_lost(struct cryo_hold *hold)
{
	lockdep_assert_held(&cryo_lock);
	if (hold->target.kind != CRYO_KIND_FS || hold->state != CRYO_HELD ||
	    cryo_sb_frozen(hold->path.mnt->mnt_sb))
		return false;
	cancel_delayed_work(&hold->work);
	path_put(&hold->path);
	hold->path.mnt = NULL;
	hold->path.dentry = NULL;
	hold->state = CRYO_FIRED;
	return true;
}

static void cryo_hold_free(struct cryo_hold *hold)
{
	if (hold->path.mnt)
		path_put(&hold->path);
	if (hold->ctl)
		fput(hold->ctl);
	kfree(hold->what);
	kfree(hold);
}

/* Queue the deadline work for the time left. */
static void cryo_arm(struct cryo_hold *hold)
{
	u64 now = ktime_get_ns();
	unsigned long delay = 0;

	lockdep_assert_held(&cryo_lock);
	if (!hold->has_deadline || cryo_pm_paused)
		return;
	if (hold->deadline > now)
		delay = nsecs_to_jiffies(hold->deadline - now) + 1;
	mod_delayed_work(system_wq, &hold->work, delay);
}

static void cryo_set_timeout(struct cryo_hold *hold, u64 timeout_ms)
{
	u64 ns = timeout_ms * NSEC_PER_MSEC;

	lockdep_assert_held(&cryo_lock);
	hold->has_deadline = timeout_ms != 0;
	if (!hold->has_deadline) {
		cancel_delayed_work(&hold->work);
		return;
	}
	hold->remaining = ns;
	hold->deadline = ktime_get_ns() + ns;
	cryo_arm(hold);
}

static void cryo_expire(struct work_struct *work)
{
	struct cryo_hold *hold = container_of(to_delayed_work(work),
					      struct cryo_hold, work);

	mutex_lock(&cryo_lock);
	if (hold->unlisted || hold->state != CRYO_HELD ||
	    !hold->has_deadline || cryo_pm_paused) {
		mutex_unlock(&cryo_lock);
		return;
	}
	if (ktime_get_ns() < hold->deadline) {
		cryo_arm(hold);
		mutex_unlock(&cryo_lock);
		return;
	}
	hold->state = CRYO_FIRING;
	mutex_unlock(&cryo_lock);

	cryo_undo(hold);

	mutex_lock(&cryo_lock);
	hold->fired++;
	hold->state = CRYO_FIRED;
	mutex_unlock(&cryo_lock);
}

/* Take a hold off all lists; its owner then calls cryo_hold_finish(). */
static void cryo_unlist(struct cryo_hold *hold)
{
	lockdep_assert_held(&cryo_lock);
	list_del_init(&hold->node);
	list_del_init(&hold->all);
	hold->holder->nr_holds--;
	hold->unlisted = true;
}

/*
 * Thaw an unlisted hold if it is still held and free it. Returns the thaw's
 * result, or -EINVAL when the hold was no longer frozen (its deadline had
 * fired).
 */
static int cryo_hold_finish(struct cryo_hold *hold)
{
	int ret = -EINVAL;

	/*
	 * Waits for a deadline work that is thawing this hold right now, and
	 * kills one that would re-arm itself: once this returns, nothing of
	 * the module runs for this hold any more (module exit relies on it).
	 */
	cancel_delayed_work_sync(&hold->work);
	if (hold->state == CRYO_HELD)
		ret = cryo_undo(hold);
	cryo_hold_free(hold);
	return ret;
}

static bool cryo_target_eq(const struct cryo_target *a,
			   const struct cryo_target *b)
{
	return a->kind == b->kind && a->dev == b->dev && a->ino == b->ino;
}

static struct cryo_hold *cryo_find(struct list_head *list,
				   const struct cryo_target *t, bool all)
{
	struct cryo_hold *hold;

	if (all) {
		list_for_each_entry(hold, list, all)
			if (cryo_target_eq(&hold->target, t) &&
			    hold->state != CRYO_FIRED)
				return hold;
		return NULL;
	}
	list_for_each_entry(hold, list, node)
		if (cryo_target_eq(&hold->target, t))
			return hold;
	return NULL;
}

/* The oldest fired hold of a holder: fair game when it is full. */
static struct cryo_hold *cryo_find_fired(struct cryo_holder *holder)
{
	struct cryo_hold *hold;

	list_for_each_entry(hold, &holder->holds, node)
		if (hold->state == CRYO_FIRED)
			return hold;
	return NULL;
}

/*
 * The hold a THAW or RESET_TIMEOUT through holder names: the holder's
 * own, else a detached one. A fired hold of the holder's own gives way to
 * a live detached hold of the same target made since.
 */
static struct cryo_hold *cryo_find_for(struct cryo_holder *holder,
				       const struct cryo_target *t)
{
	struct cryo_hold *own, *det;

	own = cryo_find(&holder->holds, t, false);
	if (own && own->state != CRYO_FIRED)
		return own;
	det = cryo_find(&cryo_detached.holds, t, false);
	if (det && (!own || det->state != CRYO_FIRED))
		return det;
	return own;
}

static struct cryo_hold *cryo_hold_alloc(const struct cryo_target *t)
{
	struct cryo_hold *hold = kzalloc(sizeof(*hold), GFP_KERNEL);

	if (!hold)
		return NULL;
	INIT_LIST_HEAD(&hold->node);
	INIT_LIST_HEAD(&hold->all);
	INIT_DELAYED_WORK(&hold->work, cryo_expire);
	hold->target = *t;
	hold->state = CRYO_FREEZING;
	hold->pid = task_tgid_nr(current);
	get_task_comm(hold->comm, current);
	hold->since = ktime_get_boottime_ns();
	return hold;
}

/*
 * List a new hold as CRYO_FREEZING, unless its target is held already.
 * A fired hold of the same target by this holder is replaced: the new
 * freeze is what RESET_TIMEOUT and THAW refer to from now on.
 */
static int cryo_hold_insert(struct cryo_holder *holder, struct cryo_hold *hold)
{
	struct cryo_hold *old;

	mutex_lock(&cryo_lock);
	if (cryo_find(&cryo_all_holds, &hold->target, true)) {
		mutex_unlock(&cryo_lock);
		return -EBUSY;
	}
	old = cryo_find(&holder->holds, &hold->target, false);
	if (!old && holder->nr_holds >= holder->max_holds)
		old = cryo_find_fired(holder);
	if (old)
		cryo_unlist(old);
	if (holder->nr_holds >= holder->max_holds) {
		mutex_unlock(&cryo_lock);
		if (old)
			cryo_hold_finish(old);
		return -ENOSPC;
	}
	hold->holder = holder;
	list_add_tail(&hold->node, &holder->holds);
	list_add_tail(&hold->all, &cryo_all_holds);
	holder->nr_holds++;
	mutex_unlock(&cryo_lock);
	if (old)
		cryo_hold_finish(old);
	return 0;
}

/* End CRYO_FREEZING: the hold is held, or it goes away with error ret. */
static int cryo_hold_commit(struct cryo_hold *hold, int ret, u64 timeout_ms)
{
	mutex_lock(&cryo_lock);
	if (ret) {
		cryo_unlist(hold);
		mutex_unlock(&cryo_lock);
		cryo_hold_free(hold);
		return ret;
	}
	hold->state = CRYO_HELD;
	cryo_set_timeout(hold, timeout_ms);
	mutex_unlock(&cryo_lock);
	return 0;
}

enum cryo_op {
	CRYO_OP_FREEZE,
	CRYO_OP_THAW,
	CRYO_OP_RESET,
};

static int cryo_get_args(struct cryo_freezer_hold *args, void __user *argp,
			 enum cryo_op op)
{
	u32 flags_ok = op == CRYO_OP_FREEZE ? CRYO_FREEZER_HOLD_DETACHED : 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(args, argp, sizeof(*args)))
		return -EFAULT;
	if (args->flags & ~flags_ok || args->reserved[0] || args->reserved[1] ||
	    args->timeout_ms > CRYO_FREEZER_TIMEOUT_MAX_MS)
		return -EINVAL;
	if (op == CRYO_OP_THAW && args->timeout_ms)
		return -EINVAL;
	/* nothing but its deadline would ever end it */
	if (args->flags & CRYO_FREEZER_HOLD_DETACHED && !args->timeout_ms)
		return -EINVAL;
	return 0;
}

/* Who owns a new hold: the file, or the module for a detached one. */
static struct cryo_holder *cryo_owner(struct cryo_holder *holder,
				      const struct cryo_freezer_hold *args,
				      struct cryo_hold *hold)
{
	if (!(args->flags & CRYO_FREEZER_HOLD_DETACHED))
		return holder;
	hold->detached = true;
	return &cryo_detached;
}

static void cryo_fs_target(struct file *file, struct cryo_target *t)
{
	t->kind = CRYO_KIND_FS;
	t->dev = file_inode(file)->i_sb->s_dev;
	t->ino = 0;
}

static int cryo_cg_target(struct file *file, struct cryo_target *t)
{
	struct inode *inode = file_inode(file);

	if (!S_ISDIR(inode->i_mode))
		return -ENOTDIR;
	switch (inode->i_sb->s_magic) {
	case CGROUP2_SUPER_MAGIC:
		t->kind = CRYO_KIND_CGROUP2;
		break;
	case CGROUP_SUPER_MAGIC:
		t->kind = CRYO_KIND_CGROUP1;
		break;
	default:
		return -EINVAL;
	}
	t->dev = inode->i_sb->s_dev;
	t->ino = inode->i_ino;
	return 0;
}

static long cryo_ioctl_version(void __user *argp)
{
	__u32 v = CRYO_FREEZER_ABI_VERSION;

	if (copy_to_user(argp, &v, sizeof(v)))
		return -EFAULT;
	return 0;
}

/* FREEZE: read the args, return the file they name (fput it) or an ERR_PTR. */
static struct file *cryo_freeze_target(void __user *argp,
				       struct cryo_freezer_hold *args)
{
	struct file *file;
	int ret;

	ret = cryo_get_args(args, argp, CRYO_OP_FREEZE);
	if (ret)
		return ERR_PTR(ret);
	file = fget(args->fd);
	return file ? file : ERR_PTR(-EBADF);
}

static long cryo_ioctl_fs_freeze(struct cryo_holder *holder,
				 void __user *argp)
{
	struct cryo_freezer_hold args;
	struct cryo_target t;
	struct cryo_hold *hold;
	struct super_block *sb;
	struct file *file;
	int ret;

	file = cryo_freeze_target(argp, &args);
	if (IS_ERR(file))
		return PTR_ERR(file);
	sb = file_inode(file)->i_sb;
	ret = -EOPNOTSUPP;
	if (!sb->s_op->freeze_fs && !sb->s_op->freeze_super)
		goto out_fput;

	cryo_fs_target(file, &t);
	ret = -ENOMEM;
	hold = cryo_hold_alloc(&t);
	if (!hold)
		goto out_fput;
	hold->what = kasprintf(GFP_KERNEL, "%u:%u %s %s", MAJOR(sb->s_dev),
			       MINOR(sb->s_dev), sb->s_type->name, sb->s_id);
	if (!hold->what) {
		cryo_hold_free(hold);
		goto out_fput;
	}
	hold->path = file->f_path;
	path_get(&hold->path);
	fput(file);

	ret = cryo_hold_insert(cryo_owner(holder, &args, hold), hold);
	if (ret) {
		cryo_hold_free(hold);
		return ret;
	}
	/*
	 * Before 6.6 freeze_super() answers EBUSY itself; later kernels let
	 * a kernel freeze nest inside a FIFREEZE, which would hide that
	 * someone else froze this filesystem.
	 */
	if (cryo_sb_frozen(sb))
		ret = -EBUSY;
	else
		ret = cryo_freeze_sb(sb);
	return cryo_hold_commit(hold, ret, args.timeout_ms);

out_fput:
	fput(file);
	return ret;
}

static long cryo_ioctl_cgroup_freeze(struct cryo_holder *holder,
				     void __user *argp)
{
	struct cryo_freezer_hold args;
	struct cryo_target t;
	struct cryo_hold *hold;
	struct file *file;
	char *buf, *p;
	int ret;

	file = cryo_freeze_target(argp, &args);
	if (IS_ERR(file))
		return PTR_ERR(file);
	ret = cryo_cg_target(file, &t);
	if (ret)
		goto out_fput;

	ret = -ENOMEM;
	hold = cryo_hold_alloc(&t);
	if (!hold)
		goto out_fput;
	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (buf) {
		p = d_path(&file->f_path, buf, PATH_MAX);
		hold->what = kstrdup(IS_ERR(p) ? "?" : p, GFP_KERNEL);
		kfree(buf);
	}
	if (!hold->what)
		goto out_free;

	hold->ctl = file_open_root(&file->f_path, t.kind == CRYO_KIND_CGROUP2 ?
				   "cgroup.freeze" : "freezer.state",
				   O_RDWR, 0);
	if (IS_ERR(hold->ctl)) {
		ret = PTR_ERR(hold->ctl);
		hold->ctl = NULL;
		/* The root cgroup, or a v1 hierarchy without the freezer. */
		if (ret == -ENOENT)
			ret = -EOPNOTSUPP;
		goto out_free;
	}
	ret = cryo_cg_read(hold, hold->ctl);
	if (ret > 0)
		ret = -EBUSY;
	if (ret)
		goto out_free;
	fput(file);

	ret = cryo_hold_insert(cryo_owner(holder, &args, hold), hold);
	if (ret) {
		cryo_hold_free(hold);
		return ret;
	}
	ret = cryo_cg_write(hold, true);
	return cryo_hold_commit(hold, ret, args.timeout_ms);

out_free:
	cryo_hold_free(hold);
out_fput:
	fput(file);
	return ret;
}

/* The target named by args->fd, for THAW and RESET_TIMEOUT. */
static int cryo_lookup_target(const struct cryo_freezer_hold *args,
			      bool cgroup, struct cryo_target *t)
{
	struct file *file;
	int ret = 0;

	file = fget(args->fd);
	if (!file)
		return -EBADF;
	if (cgroup)
		ret = cryo_cg_target(file, t);
	else
		cryo_fs_target(file, t);
	fput(file);
	return ret;
}

/*
 * THAW and RESET_TIMEOUT: read the args, find the holder's hold of the
 * target they name and return it with cryo_lock held (NULL: none, the
 * lock held too), or an ERR_PTR without the lock.
 */
static struct cryo_hold *cryo_lock_hold(struct cryo_holder *holder,
					void __user *argp, enum cryo_op op,
					bool cgroup,
					struct cryo_freezer_hold *args)
{
	struct cryo_target t;
	struct cryo_hold *hold;
	int ret;

	ret = cryo_get_args(args, argp, op);
	if (!ret)
		ret = cryo_lookup_target(args, cgroup, &t);
	if (ret)
		return ERR_PTR(ret);
	mutex_lock(&cryo_lock);
	hold = cryo_find_for(holder, &t);
	if (hold)
		cryo_lost(hold);
	return hold;
}

static long cryo_ioctl_thaw(struct cryo_holder *holder, void __user *argp,
			    bool cgroup)
{
	struct cryo_freezer_hold args;
	struct cryo_hold *hold;

	hold = cryo_lock_hold(holder, argp, CRYO_OP_THAW, cgroup, &args);
	if (IS_ERR(hold))
		return PTR_ERR(hold);
	if (!hold) {
		mutex_unlock(&cryo_lock);
		return -EINVAL;
	}
	if (hold->state == CRYO_FREEZING) {
		mutex_unlock(&cryo_lock);
		return -EBUSY;
	}
	cryo_unlist(hold);
	mutex_unlock(&cryo_lock);
	return cryo_hold_finish(hold);
}

static long cryo_ioctl_reset(struct cryo_holder *holder, void __user *argp,
			     bool cgroup)
{
	struct cryo_freezer_hold args;
	struct cryo_hold *hold;
	int ret;

	hold = cryo_lock_hold(holder, argp, CRYO_OP_RESET, cgroup, &args);
	if (IS_ERR(hold))
		return PTR_ERR(hold);
	if (!hold || hold->state != CRYO_HELD ||
	    (hold->detached && !args.timeout_ms)) {
		ret = hold && hold->state == CRYO_FREEZING ? -EBUSY : -EINVAL;
		mutex_unlock(&cryo_lock);
		return ret;
	}
	cryo_set_timeout(hold, args.timeout_ms);
	mutex_unlock(&cryo_lock);
	return 0;
}

static long cryo_freezer_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	struct cryo_holder *holder = file->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case CRYO_FREEZER_IOC_VERSION:
		return cryo_ioctl_version(argp);
	case CRYO_FREEZER_IOC_FS_FREEZE:
		return cryo_ioctl_fs_freeze(holder, argp);
	case CRYO_FREEZER_IOC_FS_THAW:
		return cryo_ioctl_thaw(holder, argp, false);
	case CRYO_FREEZER_IOC_FS_RESET_TIMEOUT:
		return cryo_ioctl_reset(holder, argp, false);
	case CRYO_FREEZER_IOC_CGROUP_FREEZE:
		return cryo_ioctl_cgroup_freeze(holder, argp);
	case CRYO_FREEZER_IOC_CGROUP_THAW:
		return cryo_ioctl_thaw(holder, argp, true);
	case CRYO_FREEZER_IOC_CGROUP_RESET_TIMEOUT:
		return cryo_ioctl_reset(holder, argp, true);
	default:
		return -ENOIOCTLCMD;
	}
}

static int cryo_freezer_open(struct inode *inode, struct file *file)
{
	struct cryo_holder *holder;

	holder = kzalloc(sizeof(*holder), GFP_KERNEL);
	if (!holder)
		return -ENOMEM;
	INIT_LIST_HEAD(&holder->holds);
	holder->max_holds = CRYO_FREEZER_MAX_HOLDS;
	file->private_data = holder;
	return nonseekable_open(inode, file);
}

/*
 * The holder is gone - closed, exited or killed: thaw all it held. Its
 * detached holds are not on its list and live on.
 */
static int cryo_freezer_release(struct inode *inode, struct file *file)
{
	struct cryo_holder *holder = file->private_data;
	struct cryo_hold *hold, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&cryo_lock);
	list_for_each_entry_safe(hold, tmp, &holder->holds, node) {
		cryo_unlist(hold);
		list_add_tail(&hold->node, &gone);
	}
	mutex_unlock(&cryo_lock);

	list_for_each_entry_safe(hold, tmp, &gone, node)
		cryo_hold_finish(hold);
	kfree(holder);
	return 0;
}

/* Suspend or hibernation begins: stop the deadline clocks. */
static void cryo_pm_pause(void)
{
	struct cryo_hold *hold;
	u64 now = ktime_get_ns();

	mutex_lock(&cryo_lock);
	if (!cryo_pm_paused) {
		cryo_pm_paused = true;
		list_for_each_entry(hold, &cryo_all_holds, all) {
			if (hold->state != CRYO_HELD || !hold->has_deadline)
				continue;
			hold->remaining = hold->deadline > now ?
					  hold->deadline - now : 0;
			cancel_delayed_work(&hold->work);
		}
	}
	mutex_unlock(&cryo_lock);
}

/*
 * The system is back: every held cgroup must still be frozen (the PM thaw
 * skips frozen cgroups, but a sleep hook may have thawed one), and every
 * deadline gets back the time it had left before the system went down.
 */
static void cryo_pm_resume(void)
{
	struct cryo_hold *hold;
	u64 now = ktime_get_ns();
	int ret;

	mutex_lock(&cryo_lock);
	if (!cryo_pm_paused)
		goto out;
	cryo_pm_paused = false;
	cryo_pm_cycles++;
	list_for_each_entry(hold, &cryo_all_holds, all) {
		if (hold->state != CRYO_HELD)
			continue;
		if (hold->target.kind != CRYO_KIND_FS) {
			ret = cryo_cg_read(hold, hold->ctl);
			if (ret == 0) {
				ret = cryo_cg_write(hold, true);
				hold->reasserted++;
				pr_info("re-froze %s %s after resume: %d\n",
					cryo_kind_names[hold->target.kind],
					hold->what, ret);
			}
		}
		if (hold->has_deadline) {
			hold->deadline = now + hold->remaining;
			cryo_arm(hold);
		}
	}
out:
	mutex_unlock(&cryo_lock);
}

static int cryo_pm_notify(struct notifier_block *nb, unsigned long action,
			  void *data)
{
	switch (action) {
	case PM_HIBERNATION_PREPARE:
	case PM_SUSPEND_PREPARE:
	case PM_RESTORE_PREPARE:
		cryo_pm_pause();
		break;
	case PM_POST_HIBERNATION:
	case PM_POST_SUSPEND:
	case PM_POST_RESTORE:
		cryo_pm_resume();
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block cryo_pm_nb = {
	.notifier_call = cryo_pm_notify,
};

static int cryo_holds_show(struct seq_file *m, void *v)
{
	u64 now = ktime_get_ns();
	u64 boot = ktime_get_boottime_ns();
	struct cryo_hold *hold;
	u64 left;

	mutex_lock(&cryo_lock);
	seq_printf(m, "# pm_paused=%d pm_cycles=%u\n", cryo_pm_paused,
		   cryo_pm_cycles);
	list_for_each_entry(hold, &cryo_all_holds, all) {
		seq_printf(m, "%s state=%s owner=%s pid=%d since_ms=%llu age_ms=%llu",
			   cryo_kind_names[hold->target.kind],
			   cryo_state_names[hold->state],
			   hold->detached ? "detached" : "file", hold->pid,
			   div_u64(hold->since, NSEC_PER_MSEC),
			   div_u64(boot - hold->since, NSEC_PER_MSEC));
		if (!hold->has_deadline || hold->state != CRYO_HELD) {
			seq_puts(m, " deadline_ms=none");
		} else {
			if (cryo_pm_paused)
				left = hold->remaining;
			else
				left = hold->deadline > now ?
				       hold->deadline - now : 0;
			seq_printf(m, " deadline_ms=%llu",
				   div_u64(left, NSEC_PER_MSEC));
		}
		seq_printf(m, " fired=%u reasserted=%u comm=", hold->fired,
			   hold->reasserted);
		seq_escape(m, hold->comm, " \t\n\\");
		seq_puts(m, " target=");
		seq_escape(m, hold->what, " \t\n\\");
		seq_putc(m, '\n');
	}
	mutex_unlock(&cryo_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cryo_holds);

static const struct file_operations cryo_freezer_fops = {
	.owner = THIS_MODULE,
	.open = cryo_freezer_open,
	.release = cryo_freezer_release,
	.unlocked_ioctl = cryo_freezer_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice cryo_freezer_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "cryo_freezer",
	.fops = &cryo_freezer_fops,
	.mode = 0600,
};

static int __init cryo_freezer_init(void)
{
	int ret;

	ret = register_pm_notifier(&cryo_pm_nb);
	if (ret)
		return ret;
	cryo_debugfs = debugfs_create_dir("cryo_freezer", NULL);
	debugfs_create_file("holds", 0400, cryo_debugfs, NULL,
			    &cryo_holds_fops);
	ret = misc_register(&cryo_freezer_misc);
	if (ret) {
		debugfs_remove(cryo_debugfs);
		unregister_pm_notifier(&cryo_pm_nb);
	}
	return ret;
}

/*
 * Every open file pins the module, so the only holds left are detached
 * ones; no ioctl or release can run any more. Once the PM notifier is
 * gone (unregistering waits for a running one), only their deadline
 * works still touch them: unlisting each under cryo_lock makes a work
 * that runs later return at once, and cryo_hold_finish() waits for one
 * that is thawing right now and cancels one that would re-arm, before it
 * thaws what is still held. No work of ours is queued when this returns.
 */
static void __exit cryo_freezer_exit(void)
{
	struct cryo_hold *hold, *tmp;
	unsigned int thawed = 0;
	LIST_HEAD(gone);

	misc_deregister(&cryo_freezer_misc);
	unregister_pm_notifier(&cryo_pm_nb);
	debugfs_remove(cryo_debugfs);

	mutex_lock(&cryo_lock);
	list_for_each_entry_safe(hold, tmp, &cryo_detached.holds, node) {
		cryo_unlist(hold);
		list_add_tail(&hold->node, &gone);
	}
	mutex_unlock(&cryo_lock);

	list_for_each_entry_safe(hold, tmp, &gone, node)
		if (cryo_hold_finish(hold) == 0)
			thawed++;
	if (thawed)
		pr_info("unload thawed %u detached holds\n", thawed);
	WARN_ON(!list_empty(&cryo_all_holds));
}

module_init(cryo_freezer_init);
module_exit(cryo_freezer_exit);

MODULE_AUTHOR("cryo developers");
MODULE_DESCRIPTION("Held cgroup and filesystem freezes with deadlines");
MODULE_LICENSE("GPL");
