/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fluxonkv_config - the node's YAML configuration and the SSD tier plan
 * derived from it (reference design §2).
 *
 * Three steps, each usable alone:
 *
 *   fkv_config_load()   file -> struct fkv_config   (reads the file and,
 *                                                    for the default
 *                                                    instance, the host name)
 *   fkv_ssd_plan()      config -> struct fkv_ssd_plan  (stat()s the paths,
 *                                                    creates nothing)
 *   fkv_ssd_prepare()   plan -> open shard fds        (mkdir, create,
 *                                                    truncate, preallocate)
 *
 * The library never prints.  Every problem found is recorded, one message per
 * problem, in the result's `errors` list (all of them, not just the first),
 * and also copied into the caller's @err buffer, one per line; non-fatal
 * remarks go to `warnings`.  Messages are single lines: configured strings
 * are quoted with non-printable bytes written as \xNN.  Functions return 0 or
 * a negative errno (-EINVAL: the configuration is invalid; see `errors`).
 * The result structs must be freed with their *_free() whatever the return.
 *
 * File format (only the `fluxonkv_spec` mapping is read; other top-level keys
 * are ignored, so the file may carry other sections):
 *
 *	fluxonkv_spec:
 *	  cluster_name: prod           # [A-Za-z0-9._-]{1,64}, not starting
 *	                               # with '.'; default "default"
 *	  instance: node7              # same charset; default: the host name
 *	                               # (unsafe bytes mapped to '_')
 *	  segment_mb: 4096             # optional, 1..16384 (module parameter)
 *	  policy: s3fifo               # fluxond's eviction policy: s3fifo | lru
 *	  high_watermark: 98           # evict above this % of a segment (1..100)
 *	  low_watermark: 95            # ... down to this % (<= high_watermark)
 *	  log_level: info              # fluxond: error | warn | info | debug
 *	  large_file_paths: [/data/a, /dev/nvme1n1]
 *	  large_limit_size: ["4GB", 8589934592]
 *	  cluster:                     # optional, see "Cluster section" below
 *	    role: node
 *	    master: 10.77.0.1:7470
 *	    listen: 10.77.0.2:7471
 *	    secret_file: /etc/fluxonkv/cluster.secret
 *
 * An unknown or repeated key inside fluxonkv_spec is an error (a misspelt
 * large_limit_size must not silently disable the SSD tier).  `~`/null or an
 * absent key means "not set".  large_limit_size absent or null: no SSD tier
 * (large_file_paths may still be listed).  Otherwise it must have exactly as
 * many entries as large_file_paths, matched by index, and a configuration
 * without large_file_paths may not declare it.  Paths must be absolute.
 *
 * Size grammar (large_limit_size entries, fkv_parse_size()):
 *
 *	size   := digits [ "." digits ] " "* [ unit ]
 *	digits := [0-9]+            (decimal only: no sign, no exponent, no
 *	                             "0x", no "_"; at most 64 fraction digits)
 *	unit   := B | KB | MB | GB | TB | KiB | MiB | GiB | TiB
 *	                            (case-insensitive; no unit = bytes)
 *
 * All units are binary: KB = KiB = 2^10, MB = MiB = 2^20, GB = 2^30,
 * TB = 2^40.  The value is computed exactly and floored to whole bytes
 * ("512.9B" = 512, "1.5GB" = 1610612736, "0.5KB" = 512).  It must be at least
 * FKV_SIZE_MIN (512, the O_DIRECT sector) and below 2^63 (it must fit an
 * off_t).  A YAML integer is the same as the size string of its digits.
 *
 * Cluster section (fluxonkv_spec.cluster, struct fkv_cluster_config):
 * absent or null means a single node with no network, which is also the
 * embedded default when there is no file at all.  Otherwise a mapping,
 * checked as strictly as fluxonkv_spec (unknown or repeated keys are
 * errors, null = not set):
 *
 *	cluster:
 *	  node_name: a                 # like instance; default: the instance
 *	  role: master                 # master | node (required).  master:
 *	                               # this fluxond also runs the master role
 *	  master: 10.77.0.1:7470       # the master's control listener, the
 *	                               # address nodes dial (required)
 *	  listen: 0.0.0.0:7471         # this node's data-plane listener
 *	                               # (required)
 *	  advertise: 10.77.0.2:7471    # the address peers dial; default:
 *	                               # listen, which must then not be a
 *	                               # wildcard (0.0.0.0, [::])
 *	  transport: tcp               # tcp | rdma | auto; default tcp.  The
 *	                               # parser accepts all three: the daemon
 *	                               # says when it lacks one
 *	  secret: "at-least-16-bytes"  # 16..1024 bytes, no NUL; exactly one
 *	  secret_file: /etc/fluxonkv/cluster.secret   # of secret, secret_file
 *	  heartbeat_ms: 1000           # 50..60000, default 1000
 *	  dead_after_ms: 5000          # > 2 * heartbeat_ms, <= 600000;
 *	                               # default 5000
 *	  lease_ms: 3500               # > heartbeat_ms, < dead_after_ms;
 *	                               # default heartbeat_ms +
 *	                               # dead_after_ms / 2.  The master's:
 *	                               # a node serves local hits only within
 *	                               # lease_ms of the last heartbeat its
 *	                               # master answered, and the master
 *	                               # waits that long for the drop of a
 *	                               # node that does not acknowledge it
 *	  state_dir: /var/lib/fluxonkv # absolute; default /var/lib/fluxonkv.
 *	                               # The master keeps its term there
 *	                               # (master.term): put_ids of a later
 *	                               # master term are above every earlier
 *
 *	  master_candidate: true       # with etcd only: campaign for the
 *	                               # master role; default false
 *	  etcd:                        # the master elected on etcd (issue
 *	    endpoints: [http://10.77.0.9:2379]  # 1..8, http://host:port
 *	    prefix: /fluxonkv/prod     # default /fluxonkv/<cluster_name>
 *	    lease_ttl_ms: 3000         # 1000..60000, default 3000
 *	  With etcd, role must not be set (the election decides it); master
 *	  is required of a candidate (its own control listener, advertised
 *	  while it leads) and optional for the others.
 *
 * master and advertise are dialed by peers, so neither may be a wildcard
 * address.  All three addresses follow the host:port grammar below; they
 * are checked, never resolved (no DNS at parse time).  An [IPv6] address
 * must be quoted in YAML ("[::1]:7470"): a plain '[' opens a flow list.
 *
 * secret_file is read when the configuration is parsed: an absolute path
 * to a regular file of at most 1025 bytes whose content, one trailing
 * "\n" removed, is the secret (any bytes, NUL included).  Like ssh with
 * its keys, a file that grants any permission to group or others (mode &
 * 077) is an error, and so is one that cannot be opened.  The secret is
 * never written into a message (nor by fluxonctl): only its length and
 * source are.
 *
 * Tenants section (fluxonkv_spec.tenants, struct fkv_tenant_config; issue
 * 30): absent, null or [] means no tenants (every key in tenant 0, no
 * isolation).  Otherwise a list of at most FKV_TENANTS_MAX mappings, each
 * checked as strictly as fluxonkv_spec:
 *
 *	  - name: sglang               # required; [A-Za-z0-9_.-]{1,63},
 *	                               # unique; "default" is reserved (tenant 0)
 *	    id: 1                      # required; 1..65535, unique
 *	    uids: [1001, svc-sglang]   # optional; who may use the tenant:
 *	    gids: [infer]              # numbers or user / group names,
 *	                               # resolved (getpwnam / getgrnam) when the
 *	                               # configuration is parsed: an unknown
 *	                               # name is an error.  At most 64 each,
 *	                               # no repeats; 4294967295 is refused.
 *	                               # Root may use every tenant; a tenant
 *	                               # with neither is root's only (warning)
 *	    dram_bytes: 64GB           # optional quotas (size grammar below);
 *	    ssd_bytes: 1TB             # absent or null: none
 *
 * Host:port grammar (fkv_parse_hostport()):
 *
 *	hostport := host ":" port
 *	host     := name | ipv4 | "[" ipv6 "]"
 *	name     := label ( "." label )*     at most 253 bytes; a label is
 *	                                     1..63 of [A-Za-z0-9_-], not
 *	                                     starting or ending with '-';
 *	                                     no trailing '.'
 *	ipv4     := four decimal octets 0..255, no leading zeros ("010" is
 *	            refused: some resolvers read it as octal).  A host of
 *	            digits and dots only is taken as ipv4, never as a name
 *	ipv6     := what inet_pton(AF_INET6) accepts (no zone "%eth0")
 *	port     := 1..65535, decimal digits, no sign, no leading zeros
 *
 * An IPv6 address without brackets is refused (which colon starts the
 * port would be a guess).
 */
#ifndef FLUXONKV_CONFIG_H
#define FLUXONKV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FKV_SIZE_MIN		512ULL
#define FKV_SIZE_MAX		((1ULL << 63) - 1)
#define FKV_NAME_MAX		64	/* cluster_name, instance */
#define FKV_CLUSTER_DEFAULT	"default"
#define FKV_SEGMENT_MB_MAX	16384

/* Where fluxond looks for the configuration unless told (--config). */
#define FKV_CONFIG_PATH_DEFAULT	"/etc/fluxonkv/fluxonkv.yaml"

/* The cluster section's limits and defaults (struct fkv_cluster_config). */
#define FKV_HOST_MAX		253	/* a DNS name's longest text form */
#define FKV_HOST_BUF		(FKV_HOST_MAX + 1)
#define FKV_HOSTPORT_BUF	(FKV_HOST_MAX + 2 + 1 + 5 + 1)	/* [h]:65535 */
#define FKV_SECRET_MIN		16
#define FKV_SECRET_MAX		1024
#define FKV_HEARTBEAT_MS_MIN	50
#define FKV_HEARTBEAT_MS_MAX	60000
#define FKV_HEARTBEAT_MS_DEFAULT	1000
#define FKV_DEAD_AFTER_MS_MAX	600000
#define FKV_DEAD_AFTER_MS_DEFAULT	5000
#define FKV_STATE_DIR_DEFAULT	"/var/lib/fluxonkv"

/* The SSD plan's defaults (struct fkv_ssd_plan_opts). */
#define FKV_SSD_SHARD_MAX	(1ULL << 30)	/* split capacity into <= 1 GiB */
#define FKV_SSD_MAX_SHARDS	64		/* ... but at most 64 per root */
#define FKV_SSD_SHARD_ALIGN	4096ULL		/* every shard size a multiple */
#define FKV_SSD_ROOT_SUFFIX	"_cluster_kv_ssd_storage"
#define FKV_SSD_SHARD_FMT	"shard-%03u.dat"

/* A list of owned, NUL-terminated, single-line messages. */
struct fkv_msgs {
	char **v;
	size_t n;
};

enum fkv_cluster_role {
	FKV_ROLE_NODE = 1,	/* a data node: dials the master */
	FKV_ROLE_MASTER = 2,	/* a data node that also runs the master role */
};

enum fkv_transport {
	FKV_TRANSPORT_TCP = 1,
	FKV_TRANSPORT_RDMA = 2,
	FKV_TRANSPORT_AUTO = 3,	/* RDMA where both ends have it, else TCP */
};

enum fkv_secret_source {
	FKV_SECRET_INLINE = 1,	/* cluster.secret */
	FKV_SECRET_FILE = 2,	/* cluster.secret_file */
};

/* A checked, unresolved address: host without brackets, port 1..65535. */
struct fkv_hostport {
	char host[FKV_HOST_BUF];	/* "10.0.0.1", "::1" or "node-a.lan" */
	uint16_t port;
};

/*
 * fluxonkv_spec.cluster.  When the configuration is valid and present is
 * set, every field below is set and checked (defaults applied); otherwise
 * present is false and the rest is zero.  After an invalid parse the fields
 * are partial: look at none of them.
 */
struct fkv_cluster_config {
	bool present;			/* cluster: is a mapping */
	char *node_name;		/* validated; the instance if unset */
	bool node_name_default;		/* node_name came from instance */
	enum fkv_cluster_role role;
	struct fkv_hostport master;	/* the master's control listener */
	struct fkv_hostport listen;	/* this node's data-plane listener */
	struct fkv_hostport advertise;	/* what peers dial; = listen if unset */
	bool advertise_default;		/* advertise came from listen */
	enum fkv_transport transport;	/* FKV_TRANSPORT_TCP if unset */
	/*
	 * The shared secret: secret_len bytes (16..1024, may hold NULs) and a
	 * NUL after them.  Owned; fkv_config_free() wipes it (explicit_bzero)
	 * before freeing.  Never print it: print secret_len and the source.
	 */
	unsigned char *secret;
	size_t secret_len;
	enum fkv_secret_source secret_source;
	char *secret_file;	/* FKV_SECRET_FILE: the path, for messages;
				 * NULL for an inline secret */
	unsigned int heartbeat_ms;
	unsigned int dead_after_ms;
	unsigned int lease_ms;	/* heartbeat_ms < lease_ms < dead_after_ms */
	char *state_dir;	/* owned; FKV_STATE_DIR_DEFAULT if unset */
	/*
	 * cluster.etcd (issue 32): the master is elected on etcd.  netcd == 0:
	 * not configured (role and master as above).  Otherwise role is
	 * decided by the election (it must not be set) and master_candidate
	 * says whether this fluxond campaigns; a candidate's master is its own
	 * control listener, advertised in etcd while it leads; a node that is
	 * no candidate needs no master (it reads the leader's from etcd).
	 */
	char **etcd_endpoints;	/* owned; "http://host:port" each */
	size_t netcd;		/* 1..FKV_ETCD_ENDPOINTS_MAX_CFG */
	char *etcd_prefix;	/* owned; NULL: "/fluxonkv/<cluster_name>" */
	unsigned int etcd_lease_ttl_ms;	/* FKV_ETCD_LEASE_TTL_MS_* */
	/*
	 * cluster.etcd.tls: PEM files (absolute paths, regular and readable
	 * at parse time), owned; with them every endpoint is https://, without
	 * them http://.  ca_file is required; cert_file and key_file (a client
	 * certificate, for etcd's --client-cert-auth) go together or not at
	 * all.
	 */
	char *etcd_ca_file;
	char *etcd_cert_file;
	char *etcd_key_file;
	bool master_candidate;	/* cluster.master_candidate: true */
};

#define FKV_ETCD_ENDPOINTS_MAX_CFG	8
#define FKV_ETCD_LEASE_TTL_MS_MIN	1000
#define FKV_ETCD_LEASE_TTL_MS_MAX	60000
#define FKV_ETCD_LEASE_TTL_MS_DEFAULT	3000
#define FKV_ETCD_PREFIX_MAX		200

/*
 * fluxonkv_spec.tenants[i] (issue 30): a key space of its own, loaded into
 * the module by fluxond (FLUXONKV_CMD_TENANTS) and known to its master.
 */
#define FKV_TENANTS_MAX		256	/* = FLUXONKV_TENANTS_MAX */
#define FKV_TENANT_IDS_MAX	64	/* uids, gids: = FLUXONKV_TENANT_IDS_MAX */
#define FKV_TENANT_ID_MAX	65535	/* = FLUXONKV_TENANT_ID_MAX */
#define FKV_TENANT_NAME_MAX	63
#define FKV_TENANT_DEFAULT	"default"	/* tenant 0's name, reserved */

struct fkv_tenant_config {
	char *name;		/* owned, validated */
	uint32_t id;		/* 1..FKV_TENANT_ID_MAX */
	uint32_t *uids;		/* owned; nuids entries, resolved */
	size_t nuids;
	uint32_t *gids;
	size_t ngids;
	uint64_t dram_bytes;	/* quota; 0 = none */
	uint64_t ssd_bytes;	/* quota; 0 = none */
};

/* @c's tenant named @name / numbered @id, or NULL. */
const struct fkv_tenant_config *
fkv_tenant_by_name(const struct fkv_tenant_config *t, size_t n,
		   const char *name);
const struct fkv_tenant_config *
fkv_tenant_by_id(const struct fkv_tenant_config *t, size_t n, uint32_t id);
/* The problem with @s as a tenant name ("is empty", ...), or NULL. */
const char *fkv_tenant_name_problem(const char *s);

/* Watermarks fluxond uses when neither the file nor its flags set them. */
#define FKV_HIGH_WATERMARK_PCT	98
#define FKV_LOW_WATERMARK_PCT	95

struct fkv_config {
	char *cluster_name;	/* validated; FKV_CLUSTER_DEFAULT if unset */
	char *instance;		/* validated; the host name if unset */
	bool instance_default;	/* instance came from the host name */
	unsigned int segment_mb;	/* 0 = not set (module default) */
	/*
	 * What fluxond applies unless its command line says otherwise; NULL
	 * or 0 = not set.  low <= high is checked with the defaults above
	 * standing in for the one not set.
	 */
	char *policy;		/* "s3fifo" | "lru" */
	unsigned int high_pct, low_pct;
	char *log_level;	/* "error" | "warn" | "info" | "debug" */
	char **paths;		/* large_file_paths, as written */
	size_t npaths;
	bool ssd;		/* large_limit_size set: SSD tier enabled */
	uint64_t *limits;	/* large_limit_size in bytes, npaths entries
				 * when ssd */
	struct fkv_cluster_config cluster;	/* present: not single node */
	struct fkv_tenant_config *tenants;	/* in file order; owned */
	size_t ntenants;			/* 0..FKV_TENANTS_MAX */
	struct fkv_msgs warnings;
	struct fkv_msgs errors;
};

/*
 * Parse @s (NUL-terminated) as a size, grammar above.  0 and *out, or
 * -EINVAL with one line in @err (if @errlen) such as
 * `unknown unit "XB" (use B, KB, MB, GB, TB; binary units)`.  The message
 * does not repeat @s: callers prefix it with their own context.
 */
int fkv_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);

/*
 * Parse @s (NUL-terminated) as host:port, grammar above, without resolving
 * anything.  0 with the host (no brackets) in @host and the port in *@port,
 * or -EINVAL with one line in @err (if @errlen), e.g. `port "0": must be a
 * decimal number from 1 to 65535`; @host and *@port are then untouched.  A
 * host that does not fit @host_size is refused too (FKV_HOST_BUF always
 * suffices).  Like fkv_parse_size(), the message does not repeat @s.
 */
int fkv_parse_hostport(const char *s, char *host, size_t host_size,
		       uint16_t *port, char *err, size_t errlen);
/* @host is 0.0.0.0 or the IPv6 any address ("::", "0:0::0", ...). */
bool fkv_host_is_wildcard(const char *host);
/*
 * @hp back as text fkv_parse_hostport() accepts: "host:port", or
 * "[host]:port" for an IPv6 host.  @buf should have FKV_HOSTPORT_BUF
 * bytes (truncated otherwise); returns @buf.
 */
const char *fkv_hostport_str(char *buf, size_t len,
			     const struct fkv_hostport *hp);
/* "master", "node"; "tcp", "rdma", "auto"; "?" for anything else. */
const char *fkv_cluster_role_name(enum fkv_cluster_role role);
const char *fkv_transport_name(enum fkv_transport t);

/*
 * Parse a YAML document of @len bytes; @name (e.g. the file name) prefixes
 * every message as "name:line:col: ".  Returns 0, -EINVAL (see
 * out->errors) or -ENOMEM.  Always call fkv_config_free(out) afterwards.
 */
int fkv_config_parse_buffer(const char *buf, size_t len, const char *name,
			    struct fkv_config *out, char *err, size_t errlen);
/*
 * The same from a file; -errno (and a message) when it cannot be read.
 * Both read cluster.secret_file, if set (the only file they open besides
 * @path).
 */
int fkv_config_load(const char *path, struct fkv_config *out, char *err,
		    size_t errlen);
void fkv_config_free(struct fkv_config *c);

enum fkv_ssd_kind {
	FKV_SSD_DIR = 1,	/* shard files under a derived cache root */
	FKV_SSD_BLOCKDEV = 2,	/* the device itself, split into regions */
};

/*
 * One deduplicated SSD root: large_file_paths[index] and its limit.
 *
 * A directory gets the cache root
 * "<path>/<cluster_name>_cluster_kv_ssd_storage/<instance>" holding nshards
 * files FKV_SSD_SHARD_FMT of shard_size bytes each.  A block device is used
 * raw: shard k is bytes [k * shard_size, (k + 1) * shard_size) of it.
 * capacity = nshards * shard_size <= limit (rounded down to equal shards of
 * a multiple of FKV_SSD_SHARD_ALIGN).
 */
struct fkv_ssd_root {
	unsigned int index;	/* i in large_file_paths[i] */
	enum fkv_ssd_kind kind;
	char *path;		/* large_file_paths[i], trailing '/' removed */
	char *root;		/* cache root directory, or the device path */
	dev_t dev;		/* identity for dedup: st_dev of the cache root
				 * (or its nearest existing ancestor), st_rdev
				 * of a block device */
	bool exists;		/* the cache root directory exists already */
	uint64_t limit;		/* large_limit_size[i] */
	uint64_t avail;		/* blockdev: its size; dir: free bytes of the
				 * filesystem now (shards are preallocated) */
	uint64_t capacity;
	unsigned int nshards;
	uint64_t shard_size;
	unsigned int first_shard;	/* index of shard 0 in the plan */
};

struct fkv_ssd_plan {
	struct fkv_ssd_root *roots;	/* in large_file_paths order */
	size_t nroots;
	unsigned int nshards;		/* all roots: the fds[] prepare fills */
	uint64_t capacity;		/* sum of the roots' capacity */
	struct fkv_msgs warnings;	/* dedup, free space, value size */
	struct fkv_msgs errors;
};

struct fkv_ssd_plan_opts {
	uint64_t shard_max;	/* 0 = FKV_SSD_SHARD_MAX */
	unsigned int max_shards;	/* 0 = FKV_SSD_MAX_SHARDS */
};

/*
 * Split @capacity into shards: n = ceil(capacity / shard_max) clamped to
 * [1, max_shards] (max_shards itself at most 999: three-digit file names),
 * size = round_down(capacity / n, FKV_SSD_SHARD_ALIGN).
 * -ENOSPC when that size is 0 (capacity below one aligned shard).
 */
int fkv_ssd_split(uint64_t capacity, const struct fkv_ssd_plan_opts *opts,
		  unsigned int *nshards, uint64_t *shard_size);

/*
 * Resolve every large_file_paths entry of @c (which must have `ssd` set;
 * otherwise the plan is empty): stat it, derive the cache root, drop roots
 * on a device an earlier root already uses (first wins, with a warning),
 * split each limit into shards.  A path that does not exist yet is planned
 * as a directory to be created, on its nearest existing ancestor's device
 * (with a warning).  Errors: a relative path, a path that is neither a
 * directory nor a block device, a block device smaller than its limit or
 * that cannot be opened read-only to size it, a limit below one shard, a
 * shard path longer than PATH_MAX.  @opts may be NULL.
 */
int fkv_ssd_plan(const struct fkv_config *c,
		 const struct fkv_ssd_plan_opts *opts,
		 struct fkv_ssd_plan *plan, char *err, size_t errlen);
void fkv_ssd_plan_free(struct fkv_ssd_plan *plan);

/*
 * The file shard @k of @r lives in: "<root>/shard-%03u.dat" for a directory,
 * the device itself for a block device (at offset k * shard_size).
 * -ENAMETOOLONG when @buf is too short.
 */
int fkv_ssd_shard_path(const struct fkv_ssd_root *r, unsigned int k,
		       char *buf, size_t len);

/*
 * Test-only: when a filesystem refuses O_DIRECT (tmpfs: EINVAL), open the
 * shard without it, with a warning, instead of failing.
 */
#define FKV_SSD_PREPARE_ALLOW_BUFFERED	(1U << 0)

/*
 * Make the plan real.  Directories: mkdir -p the cache root (missing
 * components mode 0750), check it is still on the planned device, then per
 * shard open(O_CREAT | O_TRUNC | O_RDWR | O_DIRECT | O_CLOEXEC | O_NOFOLLOW,
 * 0640) and fallocate() shard_size bytes (ftruncate(), with a warning in
 * @warnings, where the filesystem has no fallocate).  Block devices: one
 * open(O_RDWR | O_DIRECT | O_EXCL | O_CLOEXEC), dup'ed for its other shards.
 * @fds (plan->nshards entries) receives shard i of the plan at
 * fds[root->first_shard + k].  On error every fd opened here is closed and
 * all @fds are -1; files already created stay (the next start truncates
 * them).  @warnings may be NULL.
 */
int fkv_ssd_prepare(const struct fkv_ssd_plan *plan, unsigned int flags,
		    int *fds, struct fkv_msgs *warnings, char *err,
		    size_t errlen);
/* Close @n fds (skipping -1) and set them to -1. */
void fkv_ssd_close(int *fds, unsigned int n);

void fkv_msgs_free(struct fkv_msgs *m);

/* "1.5 GiB (1610612736 bytes)" into @buf; returns @buf. */
const char *fkv_bytes(char *buf, size_t len, uint64_t v);

#endif /* FLUXONKV_CONFIG_H */
