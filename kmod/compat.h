/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel API differences that cryo_freezer has to bridge, keyed on
 * LINUX_VERSION_CODE, so that the logic in cryo_freezer.c has none.
 *
 * freeze_super()/thaw_super() (and the ->freeze_super/->thaw_super super
 * operations some filesystems provide instead):
 *   < 6.6   one argument; a freeze is a single global state of the sb, so
 *           a FITHAW from userspace also undoes a freeze made here.
 *   >= 6.6  a holder argument: freezes by the kernel and by userspace are
 *           counted apart, FITHAW can no longer undo ours.
 *   >= 6.16 an owner argument too (only needed with FREEZE_EXCL).
 * CI compiles the < 6.6 branch (bookworm's 6.1 headers, the VM kernel) and
 * the >= 6.6 one (bookworm's 6.12 headers, compile only); no Debian kernel
 * >= 6.16 has headers in bookworm, so that branch is not compiled here.
 */
#ifndef CRYO_FREEZER_COMPAT_H
#define CRYO_FREEZER_COMPAT_H

#include <linux/fs.h>
#include <linux/version.h>

#if KERNEL_VERSION(6, 16, 0) <= LINUX_VERSION_CODE

static inline int cryo_freeze_sb(struct super_block *sb)
{
	if (sb->s_op->freeze_super)
		return sb->s_op->freeze_super(sb, FREEZE_HOLDER_KERNEL, NULL);
	return freeze_super(sb, FREEZE_HOLDER_KERNEL, NULL);
}

static inline int cryo_thaw_sb(struct super_block *sb)
{
	if (sb->s_op->thaw_super)
		return sb->s_op->thaw_super(sb, FREEZE_HOLDER_KERNEL, NULL);
	return thaw_super(sb, FREEZE_HOLDER_KERNEL, NULL);
}

#elif KERNEL_VERSION(6, 6, 0) <= LINUX_VERSION_CODE

static inline int cryo_freeze_sb(struct super_block *sb)
{
	if (sb->s_op->freeze_super)
		return sb->s_op->freeze_super(sb, FREEZE_HOLDER_KERNEL);
	return freeze_super(sb, FREEZE_HOLDER_KERNEL);
}

static inline int cryo_thaw_sb(struct super_block *sb)
{
	if (sb->s_op->thaw_super)
		return sb->s_op->thaw_super(sb, FREEZE_HOLDER_KERNEL);
	return thaw_super(sb, FREEZE_HOLDER_KERNEL);
}

#else

static inline int cryo_freeze_sb(struct super_block *sb)
{
	if (sb->s_op->freeze_super)
		return sb->s_op->freeze_super(sb);
	return freeze_super(sb);
}

static inline int cryo_thaw_sb(struct super_block *sb)
{
	if (sb->s_op->thaw_super)
		return sb->s_op->thaw_super(sb);
	return thaw_super(sb);
}

#endif

#endif /* CRYO_FREEZER_COMPAT_H */
