/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * fluxonkv - node-local DRAM (+ SSD) cache for large objects.
 *
 * This header is the whole kernel ABI of fluxonkv.ko:
 *   - ioctls on the misc device /dev/fluxonkv (clients: put/get/delete,
 *     holders) and mmap of the segment (read-only);
 *   - the "fluxonkv" generic netlink family spoken between the module (the
 *     owner of the segment bytes) and the fluxond daemon (the master of
 *     routes, placement and eviction).
 *
 * See Documentation/fluxonkv/uapi.md and netlink.md.
 */
#ifndef _UAPI_LINUX_FLUXONKV_H
#define _UAPI_LINUX_FLUXONKV_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define FLUXONKV_DEVICE_NAME	"fluxonkv"
#define FLUXONKV_ABI_VERSION	1

/* Keys are arbitrary bytes, 1..FLUXONKV_KEY_MAX long. */
#define FLUXONKV_KEY_MAX	256
/* Values are 1..FLUXONKV_VALUE_MAX bytes (and never more than the segment). */
#define FLUXONKV_VALUE_MAX	(64ULL << 20)

/*
 * Segment allocations start on and are rounded up to this many bytes; the
 * master accounts a replica's weight as round_up(len, FLUXONKV_SEGMENT_ALIGN).
 */
#define FLUXONKV_SEGMENT_ALIGN	4096

/* Where the bytes of a get came from. */
enum fluxonkv_source {
	FLUXONKV_SOURCE_NONE = 0,	/* miss (netlink only) */
	FLUXONKV_SOURCE_MEMORY = 1,	/* a DRAM replica */
	FLUXONKV_SOURCE_SSD = 2,	/* refilled from the SSD tier */
	FLUXONKV_SOURCE_REMOTE = 3,	/* pulled from another node's DRAM */
	FLUXONKV_SOURCE_REMOTE_SSD = 4,	/* pushed from another node's SSD */
};

/*
 * Every ioctl argument starts with __u32 size = sizeof(the struct the caller
 * was compiled with).  The kernel accepts any size from the *_SIZE_VER0 of
 * that struct up to a page; bytes it does not know must be zero (E2BIG
 * otherwise).  Reserved fields and flags must be zero (EINVAL otherwise).
 * Output fields are written back for min(size, kernel's sizeof).
 */

/**
 * struct fluxonkv_info - FLUXONKV_IOC_INFO: learn the ABI and segment layout.
 * @size: in: sizeof(struct fluxonkv_info).
 * @abi_version: out: FLUXONKV_ABI_VERSION of the module.
 * @segment_size: out: bytes to mmap (offset 0, PROT_READ, MAP_SHARED).
 * @value_max: out: largest value a put accepts.
 * @key_max: out: the longest key this description may use:
 *	FLUXONKV_KEY_MAX, less FLUXONKV_TENANT_PREFIX_LEN once bound to a tenant.
 * @flags: out: FLUXONKV_INFO_* bits.
 * @segment_used: out: bytes of the segment currently allocated.
 * @reserved: must be zero.
 */
struct fluxonkv_info {
	__u32 size;
	__u32 abi_version;
	__u64 segment_size;
	__u64 value_max;
	__u32 key_max;
	__u32 flags;
	__u64 segment_used;
	__u64 reserved[2];
};
#define FLUXONKV_INFO_SIZE_VER0		56
#define FLUXONKV_INFO_DAEMON		(1U << 0)	/* a daemon is registered */
#define FLUXONKV_INFO_PUT_IOV		(1U << 1)	/* gather puts (FLUXONKV_PUT_F_IOV) */
#define FLUXONKV_INFO_TENANTS		(1U << 2)	/* FLUXONKV_IOC_TENANT exists */
#define FLUXONKV_INFO_ISOLATED		(1U << 3)	/* a tenant table is loaded:
							 * mappings show only the
							 * caller's tenant's values */
#define FLUXONKV_INFO_BATCH_RESUME	(1U << 4)	/* FLUXONKV_BATCH_F_RESUME */

/*
 * Tenants.  A tenant is a key space of its own: tenant T's key K and
 * tenant 0's key K are different keys.  Tenant 0 (the default) is what a
 * description has until FLUXONKV_IOC_TENANT binds it to another; ids
 * 1..FLUXONKV_TENANT_ID_MAX come from a table the daemon loads
 * (FLUXONKV_CMD_TENANTS) with, for each id, the uids and gids that may
 * bind to it (CAP_SYS_ADMIN may bind to any id in the table).
 *
 * Internally (in the module's index, the daemon's routes, the SSD ring and
 * between nodes) tenant T's key K is the bytes
 *	0x00 'T' <T as 4 bytes, big-endian> K
 * so a bound description's keys are at most FLUXONKV_KEY_MAX -
 * FLUXONKV_TENANT_PREFIX_LEN bytes (FLUXONKV_IOC_INFO's key_max says so),
 * and keys starting with 0x00 'T' are refused (EINVAL) to every
 * unprivileged description: no one names another tenant's keys.
 */
#define FLUXONKV_TENANT_ID_MAX		65535
#define FLUXONKV_TENANT_PREFIX_LEN	6
#define FLUXONKV_TENANT_TAG0		0x00
#define FLUXONKV_TENANT_TAG1		'T'
/* Table limits: entries, and uids / gids per entry. */
#define FLUXONKV_TENANTS_MAX		256
#define FLUXONKV_TENANT_IDS_MAX		64

/**
 * struct fluxonkv_tenant - FLUXONKV_IOC_TENANT: bind this description to
 *	a tenant, once, before it holds anything.
 * @size: in: sizeof(struct fluxonkv_tenant).
 * @flags: in: must be zero.
 * @tenant: in: 1..FLUXONKV_TENANT_ID_MAX, an id of the loaded table.
 * @key_max: out: the longest key this description may use now.
 * @reserved: must be zero.
 *
 * Errors: EINVAL (id 0 or past the max, flags, reserved), ENOENT (no such
 * id in the table), EPERM (the caller's fsuid / groups are not among the
 * id's and it lacks CAP_SYS_ADMIN), EBUSY (already bound, or holders
 * open).  A privileged description (opened O_RDWR with CAP_SYS_ADMIN) may
 * bind too; its mapping stays unchecked, as the daemon's.
 */
struct fluxonkv_tenant {
	__u32 size;
	__u32 flags;
	__u32 tenant;
	__u32 key_max;
	__u64 reserved[2];
};
#define FLUXONKV_TENANT_SIZE_VER0	32

/**
 * struct fluxonkv_put - FLUXONKV_IOC_PUT: store a value under a key.
 * @size: in: sizeof(struct fluxonkv_put).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @value_ptr: in: user pointer to the value bytes; with FLUXONKV_PUT_F_IOV,
 *	to @iov_count struct fluxonkv_iovec whose bytes, in order, are the value.
 * @value_len: in: 1..value_max (with FLUXONKV_PUT_F_IOV: the sum of the
 *	pieces' lengths, EINVAL otherwise).
 * @flags: in: 0 or FLUXONKV_PUT_F_IOV (other bits: EINVAL).
 * @put_id: out: version the master assigned to this put.
 * @reserved: must be zero.
 * @iov_count: in: FLUXONKV_PUT_F_IOV: pieces at @value_ptr,
 *	1..FLUXONKV_IOV_MAX (EINVAL otherwise); zero without the flag.
 *	(Added in FLUXONKV_PUT_SIZE_VER1; a VER0 caller has none.)
 * @reserved1: must be zero.
 *
 * Returns once a DRAM replica is readable by any later get.
 *
 * A gather put (FLUXONKV_PUT_F_IOV) stores the concatenation of the
 * pieces, copied from each straight into the segment (no staging).  The
 * array is read once, at the call: EINVAL for a count of 0 or past
 * FLUXONKV_IOV_MAX, a piece whose end or a running total that overflows
 * 64 bits, or a total other than @value_len; EFAULT for an array that
 * cannot be read or a piece outside the caller's address space (checked
 * before the master is asked), or one whose pages fault during the copy.
 * A put that fails leaves nothing stored.  Pieces of length 0 are allowed.
 */
struct fluxonkv_put {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 value_ptr;
	__u64 value_len;
	__u64 flags;
	__u64 put_id;
	__u64 reserved[2];
	__u32 iov_count;
	__u32 reserved1;
};
#define FLUXONKV_PUT_SIZE_VER0		64
#define FLUXONKV_PUT_SIZE_VER1		72	/* iov_count */

/* struct fluxonkv_put.flags (the ioctl's; a bit of its own, apart from
 * the netlink FLUXONKV_PUT_F_PERSIST / _PUBLISHED): a gather put. */
#define FLUXONKV_PUT_F_IOV		(1U << 2)

/* Most pieces of one gather put (UIO_MAXIOV). */
#define FLUXONKV_IOV_MAX		1024

/**
 * struct fluxonkv_iovec - one piece of a gather put's value.
 * @base: user pointer to the piece.
 * @len: its length in bytes (may be 0).
 *
 * The layout of struct iovec on 64-bit, for any caller.
 */
struct fluxonkv_iovec {
	__u64 base;
	__u64 len;
};

/**
 * struct fluxonkv_get - FLUXONKV_IOC_GET: pin the current value of a key.
 * @size: in: sizeof(struct fluxonkv_get).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @flags: in: must be zero.
 * @holder_id: out: names the pin; release it with FLUXONKV_IOC_RELEASE.
 *	Only the file description that took it can release it.
 * @offset: out: where the value starts in the segment mapping.
 * @len: out: value length.
 * @put_id: out: version of the value.
 * @source: out: enum fluxonkv_source.
 * @reserved0: zero.
 * @reserved: must be zero.
 *
 * ENOENT on a miss.  The bytes at [offset, offset + len) of the mapping do not
 * change until the holder is released, whatever happens to the key.
 */
struct fluxonkv_get {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 flags;
	__u64 holder_id;
	__u64 offset;
	__u64 len;
	__u64 put_id;
	__u32 source;
	__u32 reserved0;
	__u64 reserved[2];
};
#define FLUXONKV_GET_SIZE_VER0		80

/**
 * struct fluxonkv_release - FLUXONKV_IOC_RELEASE: drop a holder.
 * @size: in: sizeof(struct fluxonkv_release).
 * @reserved0: must be zero.
 * @holder_id: in: a holder of this file description (ENOENT otherwise).
 * @reserved: must be zero.
 */
struct fluxonkv_release {
	__u32 size;
	__u32 reserved0;
	__u64 holder_id;
	__u64 reserved[2];
};
#define FLUXONKV_RELEASE_SIZE_VER0	32

/**
 * struct fluxonkv_delete - FLUXONKV_IOC_DELETE: remove a key.
 * @size: in: sizeof(struct fluxonkv_delete).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @flags: in: must be zero.
 * @reserved: must be zero.
 *
 * ENOENT if the key had no route.  Held bytes stay valid.
 */
struct fluxonkv_delete {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 flags;
	__u64 reserved[2];
};
#define FLUXONKV_DELETE_SIZE_VER0	40

/**
 * struct fluxonkv_ssd_attach - FLUXONKV_IOC_SSD_ATTACH: add an SSD shard.
 * @size: in: sizeof(struct fluxonkv_ssd_attach).
 * @fd: in: a regular file or block device opened O_RDWR | O_DIRECT.  The
 *	module takes its own reference; the caller may close @fd afterwards.
 * @capacity: in: bytes of the file/device to use from @offset; a multiple
 *	of 4096, at least 1 MiB; @offset + @capacity at most its size.
 * @device: in: the caller's device group (shards on one physical device
 *	share one IO queue); any value, equal for shards of one st_dev.
 * @flags: in: must be zero.
 * @shard: out: shard index.
 * @reserved0: must be zero.
 * @offset: in: where the shard starts in the file/device (a multiple of
 *	4096); lets one block device carry several shards.
 * @reserved: must be zero.
 *
 * Needs CAP_SYS_ADMIN.  The ring on the shard starts empty: the SSD tier is
 * a runtime cache, nothing is recovered from old contents.
 */
struct fluxonkv_ssd_attach {
	__u32 size;
	__s32 fd;
	__u64 capacity;
	__u32 device;
	__u32 flags;
	__u32 shard;
	__u32 reserved0;
	__u64 offset;
	__u64 reserved[2];
};
#define FLUXONKV_SSD_ATTACH_SIZE_VER0	56

/**
 * struct fluxonkv_hold - FLUXONKV_IOC_HOLD: pin a replica by its handle.
 * @size: in: sizeof(struct fluxonkv_hold).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @handle: in: a replica handle the module gave the master (PUT_DONE,
 *	GET_DONE).
 * @put_id: in: the version the caller expects under @handle.
 * @flags: in: must be zero.
 * @holder_id: out: as for FLUXONKV_IOC_GET.
 * @offset: out: where the value starts in the segment mapping.
 * @len: out: value length.
 * @reserved: must be zero.
 *
 * For the node daemon serving another node's pull (the cluster data
 * plane): needs a file description opened with CAP_SYS_ADMIN.  ENOENT
 * unless @handle names a live replica of @key at @put_id.  The holder is
 * this file description's, like any other.
 */
struct fluxonkv_hold {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 handle;
	__u64 put_id;
	__u64 flags;
	__u64 holder_id;
	__u64 offset;
	__u64 len;
	__u64 reserved[2];
};
#define FLUXONKV_HOLD_SIZE_VER0		80

/**
 * struct fluxonkv_ssd_stage - FLUXONKV_IOC_SSD_STAGE: read a chunk of this
 *	node's SSD copy of a version into staging in the segment.
 * @size: in: sizeof(struct fluxonkv_ssd_stage).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @put_id: in: the version.
 * @offset: in: first byte of the chunk in the value, a multiple of
 *	FLUXONKV_SSD_CSUM_CHUNK.
 * @len: in: bytes of the chunk, 1..FLUXONKV_SSD_CHUNK_MAX, within the
 *	value, ending on a multiple of FLUXONKV_SSD_CSUM_CHUNK or at the
 *	value's end (every staged byte is checksummed before it is seen).
 * @flags: in: must be zero.
 * @holder_id: out: a holder on the staging range (release it when sent).
 * @seg_offset: out: where the chunk starts in the segment mapping.
 * @value_len: out: length of the whole value.
 * @reserved: must be zero.
 *
 * The remote SSD push (the SSD owner's half of a get from another node):
 * needs a file description opened with CAP_SYS_ADMIN (EPERM otherwise).
 * ENOENT: no committed entry of that version here; ESTALE: overtaken by
 * the ring while read; EINVAL: a bad range; EIO: the device failed or a
 * checksum did not match (the entry is dropped, ssd_csum_errors counts).
 */
struct fluxonkv_ssd_stage {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 put_id;
	__u64 offset;
	__u64 len;
	__u64 flags;
	__u64 holder_id;
	__u64 seg_offset;
	__u64 value_len;
	__u64 reserved[2];
};
#define FLUXONKV_SSD_STAGE_SIZE_VER0	88

/**
 * struct fluxonkv_target - FLUXONKV_IOC_TARGET: allocate the replica of a
 *	put another node places on this one (the target's half of a remote
 *	placement, FLUXONKV_CMD_PUT_PLACE).
 * @size: in: sizeof(struct fluxonkv_target).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @put_id: in: the version the master assigned, > 0.
 * @len: in: value bytes, 1..the largest value.
 * @flags: in: must be zero.
 * @holder_id: out: a holder on the new range (release it once filled).
 * @offset: out: where the value goes in the segment's writable mapping.
 * @handle: out: the replica's handle; the requester names it in PUT_DONE.
 * @reserved: must be zero.
 *
 * Needs a file description opened with CAP_SYS_ADMIN (EPERM otherwise).
 * The replica is not readable through the index until the master published
 * it (FLUXONKV_IOC_PUBLISH); the master's DROP_REPLICA frees it, like any
 * replica, and so does the daemon's disconnect.  May wait for room
 * (NEED_ROOM) like a put: ENOSPC when none comes.
 */
struct fluxonkv_target {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 put_id;
	__u64 len;
	__u64 flags;
	__u64 holder_id;
	__u64 offset;
	__u64 handle;
	__u64 reserved[2];
};
#define FLUXONKV_TARGET_SIZE_VER0	80

/**
 * struct fluxonkv_publish - FLUXONKV_IOC_PUBLISH: the master published a
 *	replica made with FLUXONKV_IOC_TARGET.
 * @size: in: sizeof(struct fluxonkv_publish).
 * @flags: in: FLUXONKV_PUBLISH_F_*.
 * @handle: in: the replica.
 * @put_id: in: its version (checked).
 * @reserved: must be zero.
 *
 * Enters the replica in the local index (gets on this node find it without
 * asking the master) and, with FLUXONKV_PUBLISH_F_PERSIST, writes it to
 * this node's SSD tier as a put's persist would (SSD_COMMIT follows).
 * ENOENT: no such replica (dropped meanwhile).  CAP_SYS_ADMIN session only.
 */
struct fluxonkv_publish {
	__u32 size;
	__u32 flags;
	__u64 handle;
	__u64 put_id;
	__u64 reserved[2];
};
#define FLUXONKV_PUBLISH_SIZE_VER0	40
#define FLUXONKV_PUBLISH_F_PERSIST	(1U << 0)

/**
 * struct fluxonkv_lookup - FLUXONKV_IOC_LOOKUP: does a key have a value?
 * @size: in: sizeof(struct fluxonkv_lookup).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @flags: in: must be zero.
 * @len: out: the value's length.
 * @put_id: out: its version.
 * @source: out: enum fluxonkv_source: where a get would read it now.
 * @reserved0: must be zero.
 * @reserved: must be zero.
 *
 * ENOENT if the key has no value.  Takes no holder, starts no refill or
 * transfer and counts as no access for eviction: an existence or size
 * check that leaves the cache as it was.  The answer may be stale by the
 * time the caller acts on it (a get can still miss).
 */
struct fluxonkv_lookup {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 flags;
	__u64 len;
	__u64 put_id;
	__u32 source;
	__u32 reserved0;
	__u64 reserved[2];
};
#define FLUXONKV_LOOKUP_SIZE_VER0	64

/**
 * struct fluxonkv_get_into - FLUXONKV_IOC_GET_INTO: copy a value out.
 * @size: in: sizeof(struct fluxonkv_get_into).
 * @key_len: in: 1..FLUXONKV_KEY_MAX.
 * @key_ptr: in: user pointer to the key bytes.
 * @flags: in: must be zero.
 * @buf_ptr: in: where the value is copied to.
 * @buf_len: in: bytes writable at @buf_ptr.
 * @len: out: the value's length (also with EMSGSIZE).
 * @put_id: out: its version.
 * @source: out: enum fluxonkv_source.
 * @reserved0: must be zero.
 * @reserved: must be zero.
 *
 * A get, a copy into the caller's buffer and the release in one call; no
 * holder is left, and the value counts against the caller's pin budget only
 * while it is copied (EDQUOT beyond it).  ENOENT on a miss; EMSGSIZE (nothing copied, @len set) if the
 * value is longer than @buf_len; EFAULT for a buffer the caller cannot
 * write (checked before anything is read).
 */
struct fluxonkv_get_into {
	__u32 size;
	__u32 key_len;
	__u64 key_ptr;
	__u64 flags;
	__u64 buf_ptr;
	__u64 buf_len;
	__u64 len;
	__u64 put_id;
	__u32 source;
	__u32 reserved0;
	__u64 reserved[2];
};
#define FLUXONKV_GET_INTO_SIZE_VER0	80

/* struct fluxonkv_op.opcode: what one entry of a batch does. */
enum fluxonkv_opcode {
	FLUXONKV_OP_NONE,
	FLUXONKV_OP_GET,	/* as FLUXONKV_IOC_GET */
	FLUXONKV_OP_GET_INTO,	/* as FLUXONKV_IOC_GET_INTO */
	FLUXONKV_OP_RELEASE,	/* as FLUXONKV_IOC_RELEASE */
	FLUXONKV_OP_LOOKUP,	/* as FLUXONKV_IOC_LOOKUP */
	FLUXONKV_OP_PUT,	/* as FLUXONKV_IOC_PUT */
	FLUXONKV_OP_DELETE,	/* as FLUXONKV_IOC_DELETE */
	FLUXONKV_OP_PUT_IOV,	/* as FLUXONKV_IOC_PUT with FLUXONKV_PUT_F_IOV */
	FLUXONKV_OP_MAX,
};

/**
 * struct fluxonkv_op - one operation of a FLUXONKV_IOC_BATCH.
 * @opcode: in: enum fluxonkv_opcode.
 * @key_len: in: 1..FLUXONKV_KEY_MAX (RELEASE: zero).
 * @key_ptr: in: user pointer to the key bytes (RELEASE: zero).
 * @buf_ptr: in: PUT: the value; PUT_IOV: @iov_count struct fluxonkv_iovec;
 *	GET_INTO: the destination; else zero.
 * @buf_len: in: PUT, PUT_IOV: the value's length; GET_INTO: room at
 *	@buf_ptr.
 * @holder_id: GET: out, the new holder; RELEASE: in, the holder to drop.
 * @offset: out: GET: where the value starts in the segment mapping.
 * @len: out: the value's length (GET, GET_INTO, LOOKUP).
 * @put_id: out: its version (GET, GET_INTO, LOOKUP, PUT).
 * @source: out: enum fluxonkv_source (GET, GET_INTO, LOOKUP).
 * @result: out: 0 or the negative errno the single call would return.
 * @iov_count: in: PUT_IOV: pieces at @buf_ptr, 1..FLUXONKV_IOV_MAX; else
 *	zero.  (It and @reserved were one reserved __u64, zero before.)
 * @reserved: must be zero.
 *
 * Outputs must be zero on input (as for the single calls).
 */
struct fluxonkv_op {
	__u32 opcode;
	__u32 key_len;
	__u64 key_ptr;
	__u64 buf_ptr;
	__u64 buf_len;
	__u64 holder_id;
	__u64 offset;
	__u64 len;
	__u64 put_id;
	__u32 source;
	__s32 result;
	__u32 iov_count;
	__u32 reserved;
};
#define FLUXONKV_OP_SIZE_VER0		80

/* Most operations in one batch. */
#define FLUXONKV_BATCH_MAX		1024

/**
 * struct fluxonkv_batch - FLUXONKV_IOC_BATCH: many operations, one call.
 * @size: in: sizeof(struct fluxonkv_batch).
 * @count: in: operations at @ops_ptr, 1..FLUXONKV_BATCH_MAX.
 * @ops_ptr: in: user pointer to @count entries of @op_size bytes.
 * @op_size: in: sizeof(struct fluxonkv_op) of the caller (at least
 *	FLUXONKV_OP_SIZE_VER0; bytes past what the module knows must be 0).
 * @flags: in: 0 or FLUXONKV_BATCH_F_RESUME.
 * @done: in: the first operation to run (0: all of them); out: the number
 *	of operations whose @result was written.  A batch interrupted (a
 *	fault, or io_uring moving it off the submitter) resumes from @done.
 * @reserved: must be zero.
 *
 * Over io_uring, a GET that must be read from the local SSD goes on
 * without the submitter when it is the batch's last entry.  With
 * FLUXONKV_BATCH_F_RESUME every such GET does, and the entries after it
 * run meanwhile; in exchange the command may complete with -EAGAIN before
 * every entry ran (an entry after a read of the same key, one that has to
 * wait for the daemon, or more than 64 reads in flight): @done says how
 * far it got, every entry before it has its @result, and the caller sends
 * the same header again to run the rest.  (When the reads all ended before
 * the stop, io_uring runs the rest from a worker instead and the command
 * completes whole.)  The ioctl ignores the flag.
 *
 * The operations run in order and each reports its own @result: a miss or
 * a failed put does not stop the batch.  The call fails only for a bad
 * header (EINVAL), a header that cannot be written (EFAULT before any
 * operation ran), a bad @ops_ptr or an operation whose result cannot be
 * written (EFAULT: @done says how far it got; a holder a GET took for an
 * entry that could not be written is released again).
 */
struct fluxonkv_batch {
	__u32 size;
	__u32 count;
	__u64 ops_ptr;
	__u32 op_size;
	__u32 flags;
	__u64 done;
	__u64 reserved[2];
};
#define FLUXONKV_BATCH_SIZE_VER0	48
/* The caller resends a batch that completed early over io_uring. */
#define FLUXONKV_BATCH_F_RESUME		(1U << 0)

/**
 * struct fluxonkv_uring_cmd - the 16 bytes of an IORING_OP_URING_CMD sqe.
 * @arg: user pointer to the command's struct, as the ioctl takes it.
 * @reserved: must be zero.
 *
 * sqe->cmd_op is the ioctl number (FLUXONKV_IOC_GET, _GET_INTO, _RELEASE,
 * _LOOKUP, _PUT, _DELETE, _BATCH or _INFO); cqe->res is what the ioctl
 * would return (0 or -errno).  The struct at @arg and the bytes it points
 * to must stay valid until the completion: a command that has to wait (for
 * the daemon, the SSD or a peer) runs later, from io_uring's workers, and
 * reads them then.  A DRAM hit, a miss the module can answer and a release
 * complete inline, at submission.
 */
struct fluxonkv_uring_cmd {
	__u64 arg;
	__u64 reserved;
};

/* Largest chunk one FLUXONKV_IOC_SSD_STAGE reads; pushes use 4 MiB. */
#define FLUXONKV_SSD_CHUNK_MAX		(16ULL << 20)
#define FLUXONKV_SSD_CHUNK		(4ULL << 20)
/*
 * SSD entries carry an xxh64 of each MiB of their value, checked before
 * any byte is handed out: a staged chunk starts on one of these and ends
 * on one or at the value's end, so that every byte of it is verified.
 */
#define FLUXONKV_SSD_CSUM_CHUNK		(1ULL << 20)

/* SSD rings are written and read in units of this many bytes (reference
 * §6.1: aligned_len = align_up(len, 512); only len is ever exposed). */
#define FLUXONKV_SSD_ALIGN	512

#define FLUXONKV_IOC_MAGIC	0xF7
#define FLUXONKV_IOC_INFO	_IOWR(FLUXONKV_IOC_MAGIC, 0x00, struct fluxonkv_info)
#define FLUXONKV_IOC_PUT	_IOWR(FLUXONKV_IOC_MAGIC, 0x01, struct fluxonkv_put)
#define FLUXONKV_IOC_GET	_IOWR(FLUXONKV_IOC_MAGIC, 0x02, struct fluxonkv_get)
#define FLUXONKV_IOC_RELEASE	_IOW(FLUXONKV_IOC_MAGIC, 0x03, struct fluxonkv_release)
#define FLUXONKV_IOC_DELETE	_IOW(FLUXONKV_IOC_MAGIC, 0x04, struct fluxonkv_delete)
#define FLUXONKV_IOC_SSD_ATTACH	_IOWR(FLUXONKV_IOC_MAGIC, 0x05, struct fluxonkv_ssd_attach)
#define FLUXONKV_IOC_HOLD	_IOWR(FLUXONKV_IOC_MAGIC, 0x06, struct fluxonkv_hold)
#define FLUXONKV_IOC_SSD_STAGE	_IOWR(FLUXONKV_IOC_MAGIC, 0x07, struct fluxonkv_ssd_stage)
#define FLUXONKV_IOC_TARGET	_IOWR(FLUXONKV_IOC_MAGIC, 0x08, struct fluxonkv_target)
#define FLUXONKV_IOC_PUBLISH	_IOW(FLUXONKV_IOC_MAGIC, 0x09, struct fluxonkv_publish)
#define FLUXONKV_IOC_LOOKUP	_IOWR(FLUXONKV_IOC_MAGIC, 0x0a, struct fluxonkv_lookup)
#define FLUXONKV_IOC_GET_INTO	_IOWR(FLUXONKV_IOC_MAGIC, 0x0b, struct fluxonkv_get_into)
#define FLUXONKV_IOC_BATCH	_IOWR(FLUXONKV_IOC_MAGIC, 0x0c, struct fluxonkv_batch)
#define FLUXONKV_IOC_TENANT	_IOWR(FLUXONKV_IOC_MAGIC, 0x0d, struct fluxonkv_tenant)

/*
 * mmap of the device: read-only for everyone but a file description opened
 * O_RDWR with CAP_SYS_ADMIN, which may map it MAP_SHARED | PROT_WRITE: the
 * node daemon lands remote payloads (FLUXONKV_CMD_FETCH) straight in their
 * targets.  Such a mapping is not inherited across fork().
 */

/*
 * Generic netlink family.
 *
 * Upcalls (module -> daemon) are unicast to the registered daemon's port and
 * carry FLUXONKV_A_REQ_ID.  The daemon answers an upcall by sending a message
 * with the *same* command and FLUXONKV_A_REQ_ID, FLUXONKV_A_STATUS (0 or a
 * negative errno) and the command's reply attributes; that direction is the
 * doit handler of the command (admin-only) with its own policy.  Commands
 * marked "notify" expect no answer.  Commands marked "cmd" are sent by the
 * daemon on its own initiative.
 */
#define FLUXONKV_GENL_NAME	"fluxonkv"
#define FLUXONKV_GENL_VERSION	1
#define FLUXONKV_GENL_MCGRP_EVENTS	"events"

enum fluxonkv_cmd {
	FLUXONKV_CMD_UNSPEC,
	/* anyone -> module: reply VERSION, ABI, SEGMENT_SIZE/USED, DAEMON_PID */
	FLUXONKV_CMD_GET_VERSION,
	/* cmd [FLAGS (FLUXONKV_REGISTER_F_*), NODE_ID]: daemon registers its
	 * port; reply SEGMENT_SIZE, INCARNATION, PUT_ID (largest put_id seen:
	 * a new master continues above it), SSD_CAPACITY, FLAGS (accepted),
	 * NODE_ID (stamped into every handle from now on) */
	FLUXONKV_CMD_DAEMON_REGISTER,
	/* cmd: daemon leaves (closing the socket does the same) */
	FLUXONKV_CMD_DAEMON_UNREGISTER,
	/* upcall KEY, LEN -> PUT_ID, FLAGS (FLUXONKV_PUT_F_*) */
	FLUXONKV_CMD_PUT_START,
	/* upcall KEY, PUT_ID, HANDLE, LEN -> FLAGS (FLUXONKV_PUT_F_PUBLISHED) */
	FLUXONKV_CMD_PUT_DONE,
	/* notify KEY, PUT_ID, ERRNO: a started put failed in the module */
	FLUXONKV_CMD_PUT_ABORT,
	/* upcall KEY -> SOURCE + PUT_ID + LEN (+ HANDLE for memory) or -ENOENT */
	FLUXONKV_CMD_GET_START,
	/* upcall KEY, PUT_ID, HANDLE, LEN, SOURCE -> FLAGS (PROMOTED) */
	FLUXONKV_CMD_GET_DONE,
	/* upcall KEY, PUT_ID, SOURCE, ERRNO: the chosen source failed */
	FLUXONKV_CMD_GET_REVOKE,
	/* upcall KEY -> PUT_ID (the version deleted) or -ENOENT */
	FLUXONKV_CMD_DELETE,
	/* upcall BYTES, SEGMENT_USED: allocation failed; evict, then answer */
	FLUXONKV_CMD_NEED_ROOM,
	/* notify HANDLES: replicas read through the local fast path */
	FLUXONKV_CMD_ACCESS,
	/* cmd HANDLE, FLAGS (FLUXONKV_DROP_F_*): the master drops its route
	 * reference on a replica.  Or SOURCE = SSD, KEY, PUT_ID (no HANDLE):
	 * the master no longer routes to this owner's SSD copies of KEY up
	 * to PUT_ID (another node overwrote or deleted it); 0 if none */
	FLUXONKV_CMD_DROP_REPLICA,
	/* multicast on "events": DAEMON_PID (0 = gone) */
	FLUXONKV_CMD_DAEMON_EVENT,
	/* upcall KEY, PUT_ID, LEN: the value is committed to this owner's SSD
	 * ring -> FLAGS (FLUXONKV_SSD_F_PUBLISHED if the route took it).
	 * With ERRNO: the persist of that version failed.  Either way the
	 * persist is over: the master may evict the DRAM replica from now on. */
	FLUXONKV_CMD_SSD_COMMIT,
	/* notify ENTRY...: committed SSD entries overwritten at the ring tail */
	FLUXONKV_CMD_SSD_EVICTED,
	/* notify SSD_CAPACITY: this owner's SSD capacity changed (0 = none) */
	FLUXONKV_CMD_SSD_STATE,
	/* upcall KEY, PUT_ID, LEN, SOURCE, HANDLE (GET_START's token), OFFSET:
	 * fill LEN bytes at OFFSET of the segment from the remote source
	 * GET_START named -> STATUS.  The target stays allocated until this
	 * is answered (or the daemon goes), even if the get gave up. */
	FLUXONKV_CMD_FETCH,
	/* upcall KEY, PUT_ID, LEN: this owner has no room for an in-flight
	 * put (the master has nothing left to evict here) -> HANDLE (the
	 * replica another node allocated for it, named in the PUT_DONE that
	 * follows) and FD: a connected stream socket in the answering
	 * daemon's file table on which that node expects exactly LEN bytes.
	 * The module sends the value on it from the putter's buffer, then
	 * PUT_DONE {HANDLE}.  Only with FLUXONKV_REGISTER_F_PLACEMENT. */
	FLUXONKV_CMD_PUT_PLACE,
	/* dump (admin, any socket): one message per DRAM replica in the
	 * handle table {HANDLE, KEY, PUT_ID, LEN, SOURCE=MEMORY, FLAGS
	 * (FLUXONKV_DUMP_F_INDEXED)}, then per routed SSD entry {KEY, PUT_ID,
	 * LEN, SOURCE=SSD}: what a daemon that adopts (REGISTER_F_ADOPT)
	 * rebuilds its routes from. */
	FLUXONKV_CMD_DUMP,
	/* notify REQ_ID: the module stopped waiting for that request (its
	 * caller was killed, or timed out).  A daemon that has not acted on
	 * the request yet drops it: nothing reserved, evicted or routed for
	 * a caller that is gone. */
	FLUXONKV_CMD_CANCEL,
	/* upcall KEY -> SOURCE + PUT_ID + LEN or -ENOENT, like GET_START but
	 * the master only reads its route: no hold on a source, no eviction
	 * touch, no transfer (FLUXONKV_IOC_LOOKUP). */
	FLUXONKV_CMD_LOOKUP,
	/* cmd HANDLE, PUT_ID: write that published replica to this node's
	 * SSD tier as a put's persist would (SSD_COMMIT follows); -ENOENT if
	 * no such replica, -ENODEV without an SSD tier.  What a daemon that
	 * adopted a replica whose persist never committed asks. */
	FLUXONKV_CMD_PERSIST,
	/* notify ENTRY...: puts the module published itself (uapi
	 * FLUXONKV_REGISTER_F_LOCAL_PUTS), one nested ENTRY {KEY, PUT_ID,
	 * HANDLE, LEN, FLAGS (FLUXONKV_PUT_F_PERSIST: its SSD write started,
	 * an SSD_COMMIT follows) [, DROPPED: the replica it replaced in the
	 * index, already dropped: no DROP_REPLICA for it]} each, in
	 * publication order, sent in batches and before any later upcall
	 * or notify of the module: a DELETE, SSD_COMMIT or NEED_ROOM never
	 * overtakes the put it follows. */
	FLUXONKV_CMD_PUT_LOCAL,
	/* upcall KEY, HANDLE, LEN: a put in one message (uapi
	 * FLUXONKV_REGISTER_F_ONE_TRIP): the module allocated the replica
	 * and copied the value in; the master numbers it, decides its SSD
	 * copy, publishes it and drops the older versions (other nodes'
	 * included) before it answers -> PUT_ID (the version assigned),
	 * FLAGS (FLUXONKV_PUT_F_PUBLISHED, FLUXONKV_PUT_F_PERSIST).  Like
	 * PUT_DONE it is never cancelled: its answer decides. */
	FLUXONKV_CMD_PUT,
	/* cmd, no attributes: the daemon that registered with ADOPT has
	 * had its master adopt every kept replica it did not drop (its
	 * DROP_REPLICAs came first).  Until then a kept replica is no local
	 * hit and no local miss is trusted: gets ask the master, which
	 * routes to a kept replica by handle once it adopted it, so a node
	 * back from a partition never serves a version overwritten while
	 * it was away. */
	FLUXONKV_CMD_ADOPT_DONE,
	/* cmd DEADLINE (u64, CLOCK_MONOTONIC ns, at most an hour ahead):
	 * a daemon registered with FLUXONKV_REGISTER_F_LEASE holds its
	 * master's lease until then.  Past it the module serves no local
	 * hit (every get asks the master), so a node cut off from its
	 * master, or whose daemon stopped, never serves a version the
	 * master has replaced once the lease ran out.  A later LEASE
	 * replaces the deadline (an earlier one shortens it).  EPERM from
	 * anyone but the registered daemon, EINVAL without F_LEASE or
	 * DEADLINE, ERANGE further than an hour. */
	FLUXONKV_CMD_LEASE,
	/* notify HANDLES: replicas the module dropped itself to make room
	 * (a daemon registered with FLUXONKV_REGISTER_F_CLEAN_DROPS): each
	 * was its key's current version with a committed SSD copy of the
	 * same put_id that the master routes to, and no holder.  The master
	 * forgets the DRAM replica and keeps routing to the SSD copy; it
	 * sends no DROP_REPLICA for them.  Batched like ACCESS, never lost
	 * while the daemon stays registered. */
	FLUXONKV_CMD_DROPPED,
	/* daemon -> module (admin): replace the tenant table with the
	 * TENANT_ENTRY nests of the message (none: no table, no isolation).
	 * Each entry: TENANT_ID, and UIDS / GIDS that may bind to it. */
	FLUXONKV_CMD_TENANTS,

	__FLUXONKV_CMD_MAX,
	FLUXONKV_CMD_MAX = __FLUXONKV_CMD_MAX - 1
};

enum fluxonkv_attr {
	FLUXONKV_A_UNSPEC,
	FLUXONKV_A_VERSION,		/* string: module version */
	FLUXONKV_A_ABI,			/* u32: FLUXONKV_ABI_VERSION */
	FLUXONKV_A_REQ_ID,		/* u64: upcall id */
	FLUXONKV_A_STATUS,		/* s32: 0 or -errno (reply) */
	FLUXONKV_A_KEY,			/* binary: 1..FLUXONKV_KEY_MAX */
	FLUXONKV_A_LEN,			/* u64: value length */
	FLUXONKV_A_PUT_ID,		/* u64: key version, > 0 */
	FLUXONKV_A_HANDLE,		/* u64: opaque replica handle, > 0 */
	FLUXONKV_A_FLAGS,		/* u32: command specific */
	FLUXONKV_A_SOURCE,		/* u32: enum fluxonkv_source */
	FLUXONKV_A_SEGMENT_SIZE,	/* u64: bytes */
	FLUXONKV_A_SEGMENT_USED,	/* u64: bytes */
	FLUXONKV_A_BYTES,		/* u64: bytes wanted */
	FLUXONKV_A_HANDLES,		/* binary: array of __u64 handles */
	FLUXONKV_A_INCARNATION,		/* u64: changes at every module load */
	FLUXONKV_A_DAEMON_PID,		/* u32 */
	FLUXONKV_A_ERRNO,		/* s32: -errno of a failure (notify) */
	FLUXONKV_A_PAD,
	FLUXONKV_A_SSD_CAPACITY,	/* u64: bytes of SSD ring (0 = no SSD) */
	FLUXONKV_A_ENTRY,		/* nested: KEY + PUT_ID (SSD_EVICTED) */
	FLUXONKV_A_OFFSET,		/* u64: byte offset in the segment */
	FLUXONKV_A_NODE_ID,		/* u32: 0..FLUXONKV_NODE_MAX */
	FLUXONKV_A_FD,			/* u32: a file descriptor of the daemon */
	FLUXONKV_A_DEADLINE,		/* u64: CLOCK_MONOTONIC ns after which the
					 * module no longer waits for the answer
					 * (LEASE: the lease ends) */
	FLUXONKV_A_DROPPED,		/* u64: PUT_LOCAL: the handle of the
					 * version this put replaced, which the
					 * module dropped itself */
	FLUXONKV_A_HANDLE_LAYOUT,	/* u32: GET_VERSION: the module's
					 * FLUXONKV_HANDLE_LAYOUT (absent: 1) */
	FLUXONKV_A_TENANT_ENTRY,	/* nested: TENANT_ID, UIDS, GIDS */
	FLUXONKV_A_TENANT_ID,		/* u32: 1..FLUXONKV_TENANT_ID_MAX */
	FLUXONKV_A_UIDS,		/* binary: array of __u32 uids */
	FLUXONKV_A_GIDS,		/* binary: array of __u32 gids */

	__FLUXONKV_A_MAX,
	FLUXONKV_A_MAX = __FLUXONKV_A_MAX - 1
};

/*
 * FLUXONKV_A_FLAGS of DAEMON_REGISTER: the master routes only to this
 * owner's replicas, so the module's index (DRAM replicas the master
 * published, SSD entries it accepted with SSD_COMMIT) is the whole route
 * table.  The module then answers a get from it alone: an SSD refill
 * without GET_START, a miss with -ENOENT at once, and GET_DONE without
 * waiting for the answer.  Without it every local miss asks the master.
 */
#define FLUXONKV_REGISTER_F_LOCAL_ROUTES	(1U << 0)
/*
 * ... and the daemon can place a put on another node (PUT_PLACE): when the
 * master answers NEED_ROOM with ENOSPC, a put asks PUT_PLACE at once
 * instead of waiting for room here.
 */
#define FLUXONKV_REGISTER_F_PLACEMENT		(1U << 1)
/*
 * ... and when this daemon goes (crash, upgrade), the module keeps its
 * replica references and SSD routes for the next daemon instead of
 * dropping them: a daemon registering with KEEP takes them over (its
 * answer's FLAGS then carry ADOPT, and FLUXONKV_CMD_DUMP lists them; their
 * handles are renumbered to its NODE_ID), one registering without KEEP
 * gets an empty module as before.  Gets and puts fail with ENOTCONN while
 * no daemon is registered either way; holders stay valid.
 */
#define FLUXONKV_REGISTER_F_KEEP		(1U << 2)
/* DAEMON_REGISTER answer only: kept replicas wait to be adopted (DUMP). */
#define FLUXONKV_REGISTER_F_ADOPT		(1U << 3)
/*
 * ... and the module places and publishes puts itself, without PUT_START
 * or PUT_DONE: it takes the put_id from its own counter (above every
 * put_id it has seen, the registration's PUT_ID answer included) at the
 * moment the replica enters its index, starts the SSD write when it has
 * an SSD tier the value fits in, and tells the master afterwards
 * (PUT_LOCAL, batched).  A put then needs the daemon only for room
 * (NEED_ROOM).  For a master that routes to this owner alone; refused
 * (EINVAL) with FLUXONKV_REGISTER_F_PLACEMENT.
 */
#define FLUXONKV_REGISTER_F_LOCAL_PUTS		(1U << 4)
/*
 * ... and a put asks the master once, after its value is in: FLUXONKV_CMD_PUT
 * instead of PUT_START before the allocation and PUT_DONE after the copy.
 * For a master of several nodes, which must number and publish every put
 * itself; a put this node has no room for still asks PUT_START (and
 * PUT_PLACE, with FLUXONKV_REGISTER_F_PLACEMENT).  Refused (EINVAL) with
 * FLUXONKV_REGISTER_F_LOCAL_PUTS.  A registered daemon registering again
 * keeps its LOCAL_PUTS and ONE_TRIP choice (EBUSY otherwise).
 */
#define FLUXONKV_REGISTER_F_ONE_TRIP		(1U << 5)
/*
 * ... and local hits need the master's lease (FLUXONKV_CMD_LEASE): none
 * until the first LEASE, none past its DEADLINE.  For a node of a
 * cluster whose master is elsewhere: the master answers an overwrite
 * without this node's DROP_REPLICA acknowledgement only after the lease
 * it granted ran out.  Gets that the lease turned away are counted in
 * lease_refused.
 */
#define FLUXONKV_REGISTER_F_LEASE		(1U << 6)
/*
 * ... and the module may make room itself by dropping clean replicas: a
 * key's current DRAM replica with no holder whose version also has a
 * committed SSD copy the master routes to (dropping it loses nothing).
 * It picks them by CLOCK (a hit gives a replica a second chance), when an
 * allocation finds no room and, in the background, to keep
 * clean_reserve_bytes free; it tells the master in DROPPED notes.  Dirty
 * replicas (no routed SSD copy yet, or the copy left the ring) still go
 * only through the master (NEED_ROOM).  Counted in clean_drops.
 */
#define FLUXONKV_REGISTER_F_CLEAN_DROPS		(1U << 7)

/*
 * FLUXONKV_A_FLAGS of DAEMON_UNREGISTER: the daemon lost its master (the
 * master's end of the connection closed: its process died, or it let
 * this node go and then waits out the lease itself) and the module goes
 * on serving this node's local hits without a daemon until the lease it
 * holds runs out: replicas in its index, and routed SSD copies read into
 * a temporary holder where free room exists without asking for any.
 * They count in hits_alone; everything else fails ENOTCONN as without a
 * daemon (puts, deletes, misses), and nothing is noted for a master.
 * Only for a daemon registered with F_LEASE and F_KEEP (EINVAL
 * otherwise, still registered).  A daemon whose socket closes, or that
 * unregisters without this flag, ends local hits at once; the next
 * registration ends them too (no hit before its first LEASE).
 */
#define FLUXONKV_UNREGISTER_F_LEASED		(1U << 0)

/*
 * GET_START may answer SOURCE=REMOTE or REMOTE_SSD with PUT_ID, LEN and a
 * HANDLE that is the daemon's own token for the transfer: the module
 * allocates a target and asks the daemon to fill it (FETCH), then offers
 * it with GET_DONE {SOURCE} like an SSD refill.
 */

/*
 * Replica handles: bits 0..23 a slot, 24..35 the node id the daemon
 * registered with (0 on a single node), 36..63 the low 28 bits of the
 * put_id (of a local put, FLUXONKV_REGISTER_F_LOCAL_PUTS: of a number the
 * module drew just before the put_id it publishes it with) -- the tag
 * that makes a recycled slot a new handle.  Distinct nodes of a cluster
 * therefore never issue the same handle, and the master reads the owner
 * off a handle.  A cluster has at most 1,024 members (fluxond), well
 * inside FLUXONKV_NODE_MAX.
 */
/*
 * Layout 2 (this one); layout 1 had 8 node bits (24..31) and 32 put_id
 * bits.  Clients never read a handle: the layout is the daemon's concern,
 * said in GET_VERSION's HANDLE_LAYOUT, and fluxond refuses a module of
 * another.  A layout-1 daemon reads node ids up to 255 right on layout 2.
 */
#define FLUXONKV_HANDLE_LAYOUT		2
#define FLUXONKV_NODE_BITS		12
#define FLUXONKV_NODE_MAX		((1U << FLUXONKV_NODE_BITS) - 1)
#define FLUXONKV_HANDLE_SLOT_MASK	0xffffffULL
#define FLUXONKV_HANDLE_NODE_SHIFT	24
#define FLUXONKV_HANDLE_TAG_SHIFT	(FLUXONKV_HANDLE_NODE_SHIFT + \
					 FLUXONKV_NODE_BITS)
#define FLUXONKV_HANDLE_NODE(h)		((__u32)(((h) >> \
					  FLUXONKV_HANDLE_NODE_SHIFT) & \
					 FLUXONKV_NODE_MAX))
/* The put_id bits a handle carries (a put_id's low 28 bits). */
#define FLUXONKV_HANDLE_TAG(h)		((__u64)(h) >> FLUXONKV_HANDLE_TAG_SHIFT)
#define FLUXONKV_HANDLE_TAG_OF(put_id)	((__u64)(put_id) & \
					 ((1ULL << (64 - \
					  FLUXONKV_HANDLE_TAG_SHIFT)) - 1))
#define FLUXONKV_HANDLE_MAKE(slot, node, put_id) \
	(FLUXONKV_HANDLE_TAG_OF(put_id) << FLUXONKV_HANDLE_TAG_SHIFT | \
	 ((__u64)((node) & FLUXONKV_NODE_MAX) << FLUXONKV_HANDLE_NODE_SHIFT) | \
	 ((__u64)(slot) & FLUXONKV_HANDLE_SLOT_MASK))

/* FLUXONKV_A_FLAGS of PUT_START (and PUT) replies */
#define FLUXONKV_PUT_F_PERSIST		(1U << 0)	/* also write to SSD */
/* FLUXONKV_A_FLAGS of PUT_DONE (and PUT) replies */
#define FLUXONKV_PUT_F_PUBLISHED	(1U << 1)	/* route now names it */
/* FLUXONKV_A_FLAGS of SSD_COMMIT replies */
#define FLUXONKV_SSD_F_PUBLISHED	(1U << 0)	/* route now has the SSD replica */
/* FLUXONKV_A_FLAGS of GET_DONE replies */
#define FLUXONKV_GET_F_PROMOTED		(1U << 0)	/* became the replica */

/* FLUXONKV_A_FLAGS of DROP_REPLICA: why the master drops it */
#define FLUXONKV_DROP_F_EVICTED		(1U << 0)	/* eviction (else overwrite/delete) */

/* FLUXONKV_A_FLAGS of DUMP records */
#define FLUXONKV_DUMP_F_INDEXED		(1U << 0)	/* the key's current copy */

/* Most handles one ACCESS notification carries. */
#define FLUXONKV_ACCESS_BATCH		256

#endif /* _UAPI_LINUX_FLUXONKV_H */
