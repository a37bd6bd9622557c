/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything that changed after the 6.1 kernel we build against sits here,
 * so the rest of the module reads as plain current kernel code.
 */
#ifndef _FLUXONKV_COMPAT_H
#define _FLUXONKV_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

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

#endif /* _FLUXONKV_COMPAT_H */
