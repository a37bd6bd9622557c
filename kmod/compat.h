/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything that changed after the 6.1 kernel we build against sits here,
 * so the rest of the module reads as plain current kernel code.
 */
#ifndef _FLUXONKV_COMPAT_H
#define _FLUXONKV_COMPAT_H

#include <linux/blkdev.h>
#include <linux/mm.h>
#include <linux/version.h>

/*
 * An exclusive claim on block device @dev for @holder (who may claim it
 * again: one holder, several shards): a device someone else holds -- a
 * mounted filesystem, an O_EXCL opener -- is refused with -EBUSY.  The
 * open mode and the release changed in 6.5 (blk_mode_t, holder ops).
 */
static inline struct block_device *fluxonkv_bdev_claim(dev_t dev, void *holder)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
	return blkdev_get_by_dev(dev, FMODE_READ | FMODE_WRITE | FMODE_EXCL,
				 holder);
#else
	return blkdev_get_by_dev(dev, BLK_OPEN_READ | BLK_OPEN_WRITE, holder,
				 NULL);
#endif
}

static inline void fluxonkv_bdev_unclaim(struct block_device *bdev,
					 void *holder)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
	blkdev_put(bdev, FMODE_READ | FMODE_WRITE | FMODE_EXCL);
#else
	blkdev_put(bdev, holder);
#endif
}

/* vm_flags became read-only behind helpers in 6.3. */
static inline void fluxonkv_vm_flags_mod(struct vm_area_struct *vma,
					 unsigned long set, unsigned long clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/* The direction of an iov_iter the kernel reads from: named in 6.2. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define FLUXONKV_ITER_SOURCE	ITER_SOURCE
#else
#define FLUXONKV_ITER_SOURCE	WRITE
#endif

#endif /* _FLUXONKV_COMPAT_H */
