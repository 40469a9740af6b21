// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo_freezer - held freezes of cgroups and filesystems with deadlines.
 *
 * Each open file of /dev/cryo_freezer is one holder.
 */

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "uapi/cryo_freezer.h"

static long cryo_ioctl_version(void __user *argp)
{
	__u32 v = CRYO_FREEZER_ABI_VERSION;

	if (copy_to_user(argp, &v, sizeof(v)))
		return -EFAULT;
	return 0;
}

static long cryo_freezer_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case CRYO_FREEZER_IOC_VERSION:
		return cryo_ioctl_version(argp);
	default:
		return -ENOIOCTLCMD;
	}
}

static const struct file_operations cryo_freezer_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = cryo_freezer_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice cryo_freezer_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "cryo_freezer",
	.fops = &cryo_freezer_fops,
	.mode = 0600,
};

module_misc_device(cryo_freezer_misc);

MODULE_AUTHOR("cryo developers");
MODULE_DESCRIPTION("Held cgroup and filesystem freezes with deadlines");
MODULE_LICENSE("GPL");
