/* SPDX-License-Identifier: GPL-2.0 */
/* libfluxonkv: what fkv.c shares with fkv_ring.c, not exported. */
#ifndef FKV_INTERNAL_H
#define FKV_INTERNAL_H

#include <fluxonkv.h>

#define FKV_HIDDEN __attribute__((visibility("hidden")))

FKV_HIDDEN int fkv_op_check(const struct fkv *kv, const struct fkv_op *op);
FKV_HIDDEN void fkv_op_encode(struct fluxonkv_op *k, const struct fkv_op *op,
			      const void *key);
/* The module takes FLUXONKV_BATCH_F_RESUME (an older one refuses it). */
FKV_HIDDEN bool fkv_batch_resume(const struct fkv *kv);
FKV_HIDDEN void fkv_op_decode(struct fkv *kv, struct fkv_op *op,
			      const struct fluxonkv_op *k);

#endif /* FKV_INTERNAL_H */
