/* SPDX-License-Identifier: GPL-2.0 */
/*
 * etcd.h - a small etcd v3 client over the JSON gRPC gateway (libcurl +
 * json-c): what the master election needs (issue 32), nothing more.
 *
 * Every call is one HTTP POST to <endpoint>/v3/<service>/<method> with a
 * JSON body; keys and values travel base64-encoded, 64-bit numbers as
 * decimal strings (the gateway's protobuf JSON mapping).  Calls block up
 * to the handle's timeout per endpoint; a call that cannot reach an
 * endpoint tries the next one (the first that answers is kept for the
 * following calls).  A handle is used by one thread at a time.
 *
 * Errors are negative errnos, and fkv_etcd_error() holds one line saying
 * which endpoint and why:
 *	-ECONNREFUSED	no endpoint accepted the connection
 *	-ETIMEDOUT	an endpoint did not answer within the timeout
 *	-EHOSTUNREACH	a host name that does not resolve, or no route
 *	-EPROTO		an answer that is not the gateway's JSON
 *	-EKEYREJECTED	TLS: a certificate refused (ours, or etcd's by our
 *			CA or name), or a key or CA file that cannot be read
 *	-ENOENT		etcd said "not found" (a lease that expired)
 *	-EIO		any other error etcd returned (its message kept)
 *	-ENOMEM
 */
#ifndef FKV_ETCD_H
#define FKV_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FKV_ETCD_ENDPOINTS_MAX	8
#define FKV_ETCD_ERR_BUF	256

struct fkv_etcd;

/* One key as etcd holds it (fkv_etcd_get()); free with fkv_etcd_kv_free(). */
struct fkv_etcd_kv {
	char *value;		/* malloc'd, NUL-terminated after value_len */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t lease;		/* 0: none */
};

void fkv_etcd_kv_free(struct fkv_etcd_kv *kv);

/*
 * TLS to etcd's client port (etcd's --cert-file / --key-file, and with
 * --client-cert-auth --trusted-ca-file): @ca_file verifies etcd's
 * certificate (and host name: the endpoint's host must be in it);
 * @cert_file + @key_file, both or neither, prove who we are.  PEM files.
 */
struct fkv_etcd_tls {
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
};

/*
 * A handle for @n endpoints ("http://host:port", checked: scheme, a
 * host, a port, no path).  With @tls every endpoint must be
 * "https://host:port" (and without it "http://": -EINVAL either way);
 * the files are read at each connection.  @timeout_ms bounds each request
 * to one endpoint.  Contacts nothing.  0 and *out, or -EINVAL / -ENOMEM
 * with a line in @err.
 */
int fkv_etcd_open_tls(struct fkv_etcd **out, const char *const *endpoints,
		      size_t n, const struct fkv_etcd_tls *tls,
		      unsigned int timeout_ms, char *err, size_t errlen);
/* fkv_etcd_open_tls() without TLS. */
int fkv_etcd_open(struct fkv_etcd **out, const char *const *endpoints,
		  size_t n, unsigned int timeout_ms, char *err, size_t errlen);
void fkv_etcd_close(struct fkv_etcd *e);

/* Bound each later request to one endpoint by @timeout_ms (> 0). */
void fkv_etcd_set_timeout(struct fkv_etcd *e, unsigned int timeout_ms);

/* The last error's line ("" before any). */
const char *fkv_etcd_error(const struct fkv_etcd *e);
/* The endpoint the last successful call used (or the first). */
const char *fkv_etcd_endpoint(const struct fkv_etcd *e);

/* Maintenance.Status: 0 and the server's version ("3.4.23") in @ver. */
int fkv_etcd_status(struct fkv_etcd *e, char *ver, size_t verlen);

/* Range on one key: 0 and @kv, -ENOENT when it does not exist. */
int fkv_etcd_get(struct fkv_etcd *e, const char *key, struct fkv_etcd_kv *kv);

/*
 * Every key starting with @prefix (at most 10000): @fn(@arg, key, kv) for
 * each in key order; a non-zero return stops the walk and is returned.
 */
int fkv_etcd_get_prefix(struct fkv_etcd *e, const char *prefix,
			int (*fn)(void *arg, const char *key,
				  const struct fkv_etcd_kv *kv),
			void *arg);

/* Put @key = @val (@len bytes) under @lease (0: none). */
int fkv_etcd_put(struct fkv_etcd *e, const char *key, const void *val,
		 size_t len, int64_t lease);

/*
 * Create @key = @val under @lease only if it does not exist (a txn on
 * create_revision == 0).  1: created (and *@rev its create revision, if
 * @rev); 0: it exists, @cur (if given) holds it; < 0: error.
 */
int fkv_etcd_create(struct fkv_etcd *e, const char *key, const void *val,
		    size_t len, int64_t lease, int64_t *rev,
		    struct fkv_etcd_kv *cur);

/*
 * Compare-and-swap: put @key = @val (no lease) only if @key's
 * mod_revision is @mod_rev (0: the key must not exist) and, when
 * @guard_key is set, @guard_key's create_revision is @guard_rev (so that
 * only the holder of a leadership key writes).  1: written; 0: a compare
 * failed; < 0: error.
 */
int fkv_etcd_cas(struct fkv_etcd *e, const char *key, int64_t mod_rev,
		 const void *val, size_t len, const char *guard_key,
		 int64_t guard_rev);

/* Delete @key only if its create_revision is @create_rev: 1, 0, < 0. */
int fkv_etcd_delete_if(struct fkv_etcd *e, const char *key,
		       int64_t create_rev);

/* Lease.Grant of @ttl_s seconds (>= 1): 0 and *@id. */
int fkv_etcd_lease_grant(struct fkv_etcd *e, int64_t ttl_s, int64_t *id);
/*
 * One Lease.KeepAlive: 0 and the lease's renewed TTL in *@ttl_s;
 * -ENOENT when etcd no longer has the lease (it expired or was revoked).
 */
int fkv_etcd_lease_keepalive(struct fkv_etcd *e, int64_t id, int64_t *ttl_s);
/* Lease.Revoke (its keys go with it); -ENOENT when already gone. */
int fkv_etcd_lease_revoke(struct fkv_etcd *e, int64_t id);

/* One change a watch saw (fkv_etcd_watch()). */
struct fkv_etcd_event {
	bool deleted;		/* DELETE (kv.value ""), else PUT */
	struct fkv_etcd_kv kv;	/* freed by the watch after the callback */
	int64_t revision;	/* the store's revision of the change */
};

/*
 * Watch.Watch on @key (that one key) from now: a long POST whose answer
 * streams one JSON object per line.  Blocks, calling @fn(@arg, NULL) once
 * the watch is established (changes before it are not seen: read the key
 * then), then @fn(@arg, ev) for each change, until @fn returns non-zero
 * (returned), *@stop turns true (curl looks about once a second while
 * the stream is idle: 0), or
 * the stream ends or fails (-errno, fkv_etcd_error() says why; the next
 * call starts at the next endpoint).  No timeout once established: an
 * idle watch is normal; TCP keepalives find a dead peer.  Uses its own
 * handle (a handle is used by one thread at a time).
 */
int fkv_etcd_watch(struct fkv_etcd *e, const char *key,
		   int (*fn)(void *arg, const struct fkv_etcd_event *ev),
		   void *arg, const _Atomic bool *stop);

#endif
