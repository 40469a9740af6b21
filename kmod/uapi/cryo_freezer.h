/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * cryo_freezer UAPI: the only interface shared between the kernel module
 * and userspace. Every open file of /dev/cryo_freezer is one holder.
 */
#ifndef _UAPI_CRYO_FREEZER_H
#define _UAPI_CRYO_FREEZER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CRYO_FREEZER_ABI_VERSION	1

#define CRYO_FREEZER_IOC_MAGIC		0xC7

/* Returns CRYO_FREEZER_ABI_VERSION. */
#define CRYO_FREEZER_IOC_VERSION	_IOR(CRYO_FREEZER_IOC_MAGIC, 0, __u32)

#endif /* _UAPI_CRYO_FREEZER_H */
