// SPDX-License-Identifier: GPL-2.0
/*
 * etcd.c - etcd v3 over the JSON gRPC gateway (see etcd.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/evp.h>

#include "etcd.h"

#define FKV_ETCD_URL_MAX	300
#define FKV_ETCD_BODY_MAX	(1U << 20)	/* an answer larger is refused */

struct fkv_etcd {
	CURL *curl;
	char *ep[FKV_ETCD_ENDPOINTS_MAX];
	size_t nep;
	size_t cur;		/* the endpoint tried first */
	char *ca, *cert, *key;	/* TLS (https endpoints) or all NULL */
	char curlerr[CURL_ERROR_SIZE];	/* curl's detail of the last failure */
	unsigned int timeout_ms;
	char err[FKV_ETCD_ERR_BUF];
};

struct fkv_etcd_buf {
	char *p;
	size_t len, cap;
	bool overflow;
};

static pthread_once_t fkv_etcd_once = PTHREAD_ONCE_INIT;
static CURLcode fkv_etcd_global_rc;

static void fkv_etcd_global_init(void)
{
	fkv_etcd_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void fkv_etcd_seterr(struct fkv_etcd *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fkv_etcd_seterr(struct fkv_etcd *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->err, sizeof(e->err), fmt, ap);
	va_end(ap);
}

void fkv_etcd_kv_free(struct fkv_etcd_kv *kv)
{
	if (!kv)
		return;
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

/*
 * "http://host:port" (with @tls "https://host:port") with a non-empty host
 * and a port 1..65535, no path.
 */
static bool fkv_etcd_endpoint_ok(const char *s, bool tls, char *why,
				 size_t whylen)
{
	const char *scheme = tls ? "https://" : "http://";
	const char *h, *colon, *end;
	unsigned long port;
	char *stop;

	if (!tls && strncmp(s, "https://", 8) == 0) {
		snprintf(why, whylen, "https needs the TLS files (ca_file, and cert_file + key_file for client certificates)");
		return false;
	}
	if (tls && strncmp(s, "http://", 7) == 0) {
		snprintf(why, whylen, "http with TLS files: https://host:port");
		return false;
	}
	if (strncmp(s, scheme, strlen(scheme)) != 0) {
		snprintf(why, whylen, "not %shost:port", scheme);
		return false;
	}
	h = s + strlen(scheme);
	end = h + strlen(h);
	if (end > h && end[-1] == '/')
		end--;
	if (h[0] == '[') {
		const char *rb = strchr(h, ']');

		if (!rb || rb[1] != ':') {
			snprintf(why, whylen, "not http://[ipv6]:port");
			return false;
		}
		colon = rb + 1;
	} else {
		colon = memchr(h, ':', end - h);
		if (!colon || colon == h) {
			snprintf(why, whylen, "no host:port after http://");
			return false;
		}
		for (const char *c = h; c < colon; c++)
			if (*c == '/' || *c == '@' || *c == '?' || *c == '#') {
				snprintf(why, whylen, "not http://host:port");
				return false;
			}
	}
	errno = 0;
	port = strtoul(colon + 1, &stop, 10);
	if (errno || stop != end || stop == colon + 1 || port < 1 ||
	    port > 65535) {
		snprintf(why, whylen, "bad port (1..65535, no path)");
		return false;
	}
	return true;
}

int fkv_etcd_open(struct fkv_etcd **out, const char *const *endpoints,
		  size_t n, unsigned int timeout_ms, char *err, size_t errlen)
{
	return fkv_etcd_open_tls(out, endpoints, n, NULL, timeout_ms, err,
				 errlen);
}

int fkv_etcd_open_tls(struct fkv_etcd **out, const char *const *endpoints,
		      size_t n, const struct fkv_etcd_tls *tls,
		      unsigned int timeout_ms, char *err, size_t errlen)
{
	struct fkv_etcd *e;
	char why[160];

	*out = NULL;
	if (tls && (!tls->ca_file || !tls->ca_file[0] ||
		    !tls->cert_file != !tls->key_file)) {
		snprintf(err, errlen, "etcd TLS: ca_file is required, and cert_file and key_file go together");
		return -EINVAL;
	}
	if (n == 0 || n > FKV_ETCD_ENDPOINTS_MAX) {
		snprintf(err, errlen, "etcd: %zu endpoints (1..%d)", n,
			 FKV_ETCD_ENDPOINTS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(endpoints[i]);

		if (len == 0 || len > FKV_ETCD_URL_MAX - 32) {
			snprintf(err, errlen, "etcd endpoint %zu: empty or too long", i);
			return -EINVAL;
		}
		if (!fkv_etcd_endpoint_ok(endpoints[i], tls != NULL, why,
					  sizeof(why))) {
			snprintf(err, errlen, "etcd endpoint \"%s\": %s",
				 endpoints[i], why);
			return -EINVAL;
		}
	}
	pthread_once(&fkv_etcd_once, fkv_etcd_global_init);
	if (fkv_etcd_global_rc != CURLE_OK) {
		snprintf(err, errlen, "etcd: curl_global_init: %s",
			 curl_easy_strerror(fkv_etcd_global_rc));
		return -ENOMEM;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto nomem;
	e->timeout_ms = timeout_ms ? timeout_ms : 1000;
	e->curl = curl_easy_init();
	if (!e->curl)
		goto nomem_free;
	if (tls) {
		e->ca = strdup(tls->ca_file);
		if (!e->ca)
			goto nomem_free;
		if (tls->cert_file) {
			e->cert = strdup(tls->cert_file);
			e->key = strdup(tls->key_file);
			if (!e->cert || !e->key)
				goto nomem_free;
		}
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(endpoints[i]);

		e->ep[i] = strdup(endpoints[i]);
		if (!e->ep[i])
			goto nomem_free;
		if (len && e->ep[i][len - 1] == '/')
			e->ep[i][len - 1] = '\0';
		e->nep++;
	}
	*out = e;
	return 0;

nomem_free:
	fkv_etcd_close(e);
nomem:
	snprintf(err, errlen, "etcd: out of memory");
	return -ENOMEM;
}

void fkv_etcd_close(struct fkv_etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	for (size_t i = 0; i < e->nep; i++)
		free(e->ep[i]);
	free(e->ca);
	free(e->cert);
	free(e->key);
	free(e);
}

void fkv_etcd_set_timeout(struct fkv_etcd *e, unsigned int timeout_ms)
{
	if (timeout_ms)
		e->timeout_ms = timeout_ms;
}

const char *fkv_etcd_error(const struct fkv_etcd *e)
{
	return e->err;
}

const char *fkv_etcd_endpoint(const struct fkv_etcd *e)
{
	return e->ep[e->cur];
}

static size_t fkv_etcd_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct fkv_etcd_buf *b = ud;
	size_t n = size * nmemb;

	if (b->len + n + 1 > FKV_ETCD_BODY_MAX) {
		b->overflow = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, ptr, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

/*
 * Sockets close on exec: fluxond re-executes itself on a role change
 * while the watch thread may be dialing (libcurl before 8.11 opens them
 * without SOCK_CLOEXEC).
 */
static curl_socket_t fkv_etcd_socket(void *arg, curlsocktype purpose,
				     struct curl_sockaddr *a)
{
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/*
 * What every request sets after curl_easy_reset(): the scheme the handle
 * speaks, TLS, signals, proxies, and e->curlerr for the detailed reason
 * of a failure (a TLS alert says more than its code).
 */
static void fkv_etcd_setopt_conn(struct fkv_etcd *e)
{
	e->curlerr[0] = '\0';
	curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, e->curlerr);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e->curl, CURLOPT_OPENSOCKETFUNCTION, fkv_etcd_socket);
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR,
			 e->ca ? "https" : "http");
	if (!e->ca)
		return;
	curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->ca);
	curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (e->cert) {
		curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->cert);
		curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->key);
	}
}

/*
 * A fresh POST of JSON @txt (@hdr: its Content-Type) to @url, the answer
 * to @write(@data), connecting within the handle's timeout.
 */
static void fkv_etcd_setopt_post(struct fkv_etcd *e, const char *url,
				 const char *txt, struct curl_slist *hdr,
				 curl_write_callback write, void *data)
{
	curl_easy_reset(e->curl);
	fkv_etcd_setopt_conn(e);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, txt);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, write);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, data);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)e->timeout_ms);
}

/* curl's reason: its error buffer when it says something, else the code's. */
static const char *fkv_etcd_why(CURLcode rc, const char *errbuf)
{
	return errbuf[0] ? errbuf : curl_easy_strerror(rc);
}

/* A curl failure as an errno: only the ones that say "try elsewhere". */
static int fkv_etcd_curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
		return -EKEYREJECTED;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/*
 * POST @body to /v3/@path on each endpoint from the current one until one
 * answers; the parsed answer in *@res.  An answer with an "error" member
 * is etcd's refusal: NOT_FOUND (gRPC code 5) is -ENOENT, others -EIO.
 */
static int fkv_etcd_call(struct fkv_etcd *e, const char *path,
			 json_object *body, json_object **res)
{
	const char *txt = json_object_to_json_string_ext(body,
							  JSON_C_TO_STRING_PLAIN);
	struct curl_slist *hdr = NULL;
	int err = -EIO;

	*res = NULL;
	if (!txt) {
		fkv_etcd_seterr(e, "etcd: out of memory");
		return -ENOMEM;
	}
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	if (!hdr) {
		fkv_etcd_seterr(e, "etcd: out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < e->nep; k++) {
		size_t i = (e->cur + k) % e->nep;
		struct fkv_etcd_buf b = { 0 };
		char url[FKV_ETCD_URL_MAX];
		long code = 0;
		CURLcode rc;
		json_object *j, *jerr;

		snprintf(url, sizeof(url), "%s/v3/%s", e->ep[i], path);
		fkv_etcd_setopt_post(e, url, txt, hdr, fkv_etcd_write, &b);
		curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
		rc = curl_easy_perform(e->curl);
		if (rc != CURLE_OK) {
			err = b.overflow ? -EPROTO : fkv_etcd_curl_errno(rc);
			fkv_etcd_seterr(e, "etcd %s: %s (%s)", e->ep[i],
					b.overflow ? "answer too large"
						   : fkv_etcd_why(rc, e->curlerr),
					strerror(-err));
			free(b.p);
			if (err == -ENOMEM)
				break;
			continue;	/* the next endpoint */
		}
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
		j = b.p ? json_tokener_parse(b.p) : NULL;
		if (!j || !json_object_is_type(j, json_type_object)) {
			fkv_etcd_seterr(e, "etcd %s: HTTP %ld, not the gateway's JSON (is this an etcd v3.4+ client URL?)",
					e->ep[i], code);
			json_object_put(j);
			free(b.p);
			err = -EPROTO;
			continue;
		}
		free(b.p);
		e->cur = i;
		if (json_object_object_get_ex(j, "error", &jerr)) {
			json_object *jc;
			int gc = 0;

			if (json_object_object_get_ex(j, "code", &jc))
				gc = json_object_get_int(jc);
			fkv_etcd_seterr(e, "etcd %s: %s (code %d)", e->ep[i],
					json_object_get_string(jerr), gc);
			json_object_put(j);
			err = gc == 5 ? -ENOENT : -EIO;
			goto out;
		}
		if (code != 200) {
			fkv_etcd_seterr(e, "etcd %s: HTTP %ld", e->ep[i], code);
			json_object_put(j);
			err = -EIO;
			goto out;
		}
		*res = j;
		err = 0;
		goto out;
	}
out:
	curl_slist_free_all(hdr);
	return err;
}

/* Base64 of @len bytes as a json string (NULL: out of memory). */
static json_object *fkv_etcd_b64(const void *p, size_t len)
{
	size_t olen = 4 * ((len + 2) / 3) + 1;
	unsigned char *o = malloc(olen);
	json_object *j;

	if (!o)
		return NULL;
	EVP_EncodeBlock(o, p, (int)len);
	j = json_object_new_string((const char *)o);
	free(o);
	return j;
}

/* Decode base64 @s into a malloc'd, NUL-terminated buffer. */
static int fkv_etcd_unb64(const char *s, char **out, size_t *outlen)
{
	size_t slen = strlen(s);
	unsigned char *o;
	int n;

	if (slen % 4)
		return -EPROTO;
	o = malloc(slen / 4 * 3 + 1);
	if (!o)
		return -ENOMEM;
	n = slen ? EVP_DecodeBlock(o, (const unsigned char *)s, (int)slen) : 0;
	if (n < 0) {
		free(o);
		return -EPROTO;
	}
	/* EVP_DecodeBlock counts the padding's zero bytes. */
	if (slen >= 1 && s[slen - 1] == '=')
		n--;
	if (slen >= 2 && s[slen - 2] == '=')
		n--;
	o[n] = '\0';
	*out = (char *)o;
	*outlen = (size_t)n;
	return 0;
}

/* An int64 member (the gateway writes them as strings); 0 if absent. */
static int64_t fkv_etcd_i64(json_object *o, const char *name)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, name, &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

static json_object *fkv_etcd_i64_json(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_new_string(s);
}

/* Add members, all or nothing; false: out of memory (@o keeps what it got). */
static bool fkv_etcd_add(json_object *o, const char *name, json_object *v)
{
	if (!v)
		return false;
	if (json_object_object_add(o, name, v)) {
		json_object_put(v);
		return false;
	}
	return true;
}

static bool fkv_etcd_add_key(json_object *o, const char *name, const char *key)
{
	return fkv_etcd_add(o, name, fkv_etcd_b64(key, strlen(key)));
}

static int fkv_etcd_nomem(struct fkv_etcd *e, json_object *o)
{
	json_object_put(o);
	fkv_etcd_seterr(e, "etcd: out of memory");
	return -ENOMEM;
}

/* One KeyValue object into @kv: 0, -EPROTO, -ENOMEM. */
static int fkv_etcd_kv_parse(struct fkv_etcd *e, json_object *k0,
			     struct fkv_etcd_kv *kv)
{
	json_object *val;
	int err;

	memset(kv, 0, sizeof(*kv));
	if (json_object_object_get_ex(k0, "value", &val)) {
		err = fkv_etcd_unb64(json_object_get_string(val), &kv->value,
				     &kv->value_len);
		if (err) {
			fkv_etcd_seterr(e, "etcd: a value that is not base64");
			return err;
		}
	} else {
		kv->value = strdup("");
		if (!kv->value)
			return -ENOMEM;
	}
	kv->create_revision = fkv_etcd_i64(k0, "create_revision");
	kv->mod_revision = fkv_etcd_i64(k0, "mod_revision");
	kv->lease = fkv_etcd_i64(k0, "lease");
	return 0;
}

/* The first entry of a range answer's kvs into @kv: 0, -ENOENT, -EPROTO. */
static int fkv_etcd_first_kv(struct fkv_etcd *e, json_object *range,
			     struct fkv_etcd_kv *kv)
{
	json_object *kvs;

	memset(kv, 0, sizeof(*kv));
	if (!json_object_object_get_ex(range, "kvs", &kvs) ||
	    !json_object_is_type(kvs, json_type_array) ||
	    json_object_array_length(kvs) == 0)
		return -ENOENT;
	return fkv_etcd_kv_parse(e, json_object_array_get_idx(kvs, 0), kv);
}

int fkv_etcd_status(struct fkv_etcd *e, char *ver, size_t verlen)
{
	json_object *q = json_object_new_object(), *r, *v;
	int err;

	if (!q)
		return fkv_etcd_nomem(e, NULL);
	err = fkv_etcd_call(e, "maintenance/status", q, &r);
	json_object_put(q);
	if (err)
		return err;
	if (!json_object_object_get_ex(r, "version", &v)) {
		fkv_etcd_seterr(e, "etcd %s: a status without a version",
				fkv_etcd_endpoint(e));
		json_object_put(r);
		return -EPROTO;
	}
	if (ver && verlen)
		snprintf(ver, verlen, "%s", json_object_get_string(v));
	json_object_put(r);
	return 0;
}

int fkv_etcd_get(struct fkv_etcd *e, const char *key, struct fkv_etcd_kv *kv)
{
	json_object *q = json_object_new_object(), *r;
	int err;

	memset(kv, 0, sizeof(*kv));
	if (!q || !fkv_etcd_add_key(q, "key", key))
		return fkv_etcd_nomem(e, q);
	err = fkv_etcd_call(e, "kv/range", q, &r);
	json_object_put(q);
	if (err)
		return err == -ENOENT ? -EIO : err;
	err = fkv_etcd_first_kv(e, r, kv);
	json_object_put(r);
	return err;
}

int fkv_etcd_get_prefix(struct fkv_etcd *e, const char *prefix,
			int (*fn)(void *arg, const char *key,
				  const struct fkv_etcd_kv *kv),
			void *arg)
{
	json_object *q = json_object_new_object(), *r, *kvs;
	size_t plen = strlen(prefix), n;
	char *end;
	int err;

	if (!q)
		return fkv_etcd_nomem(e, NULL);
	if (plen == 0 || (unsigned char)prefix[plen - 1] == 0xff) {
		json_object_put(q);
		fkv_etcd_seterr(e, "etcd: a prefix must end below 0xff");
		return -EINVAL;
	}
	/* range_end: the prefix with its last byte one higher. */
	end = strdup(prefix);
	if (!end)
		return fkv_etcd_nomem(e, q);
	end[plen - 1]++;
	if (!fkv_etcd_add_key(q, "key", prefix) ||
	    !fkv_etcd_add_key(q, "range_end", end) ||
	    !fkv_etcd_add(q, "limit", fkv_etcd_i64_json(10000))) {
		free(end);
		return fkv_etcd_nomem(e, q);
	}
	free(end);
	err = fkv_etcd_call(e, "kv/range", q, &r);
	json_object_put(q);
	if (err)
		return err == -ENOENT ? -EIO : err;
	if (!json_object_object_get_ex(r, "kvs", &kvs) ||
	    !json_object_is_type(kvs, json_type_array)) {
		json_object_put(r);
		return 0;	/* none */
	}
	n = json_object_array_length(kvs);
	for (size_t i = 0; i < n && !err; i++) {
		json_object *k0 = json_object_array_get_idx(kvs, i), *jk;
		struct fkv_etcd_kv kv;
		char *key = NULL;
		size_t klen;

		err = fkv_etcd_kv_parse(e, k0, &kv);
		if (err)
			break;
		if (json_object_object_get_ex(k0, "key", &jk))
			err = fkv_etcd_unb64(json_object_get_string(jk), &key,
					     &klen);
		else
			err = -EPROTO;
		if (!err)
			err = fn(arg, key, &kv);
		free(key);
		fkv_etcd_kv_free(&kv);
	}
	json_object_put(r);
	return err;
}

static json_object *fkv_etcd_put_req(const char *key, const void *val,
				     size_t len, int64_t lease)
{
	json_object *p = json_object_new_object();

	if (!p)
		return NULL;
	if (!fkv_etcd_add_key(p, "key", key) ||
	    !fkv_etcd_add(p, "value", fkv_etcd_b64(val, len)) ||
	    (lease && !fkv_etcd_add(p, "lease", fkv_etcd_i64_json(lease)))) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

int fkv_etcd_put(struct fkv_etcd *e, const char *key, const void *val,
		 size_t len, int64_t lease)
{
	json_object *q = fkv_etcd_put_req(key, val, len, lease), *r;
	int err;

	if (!q)
		return fkv_etcd_nomem(e, NULL);
	err = fkv_etcd_call(e, "kv/put", q, &r);
	json_object_put(q);
	if (err)
		return err == -ENOENT ? -EIO : err;
	json_object_put(r);
	return 0;
}

/* {"key": k, "result": "EQUAL", "target": @target, @field: @v} */
static json_object *fkv_etcd_cmp(const char *key, const char *target,
				 const char *field, int64_t v)
{
	json_object *c = json_object_new_object();

	if (!c)
		return NULL;
	if (!fkv_etcd_add_key(c, "key", key) ||
	    !fkv_etcd_add(c, "result", json_object_new_string("EQUAL")) ||
	    !fkv_etcd_add(c, "target", json_object_new_string(target)) ||
	    !fkv_etcd_add(c, field, fkv_etcd_i64_json(v))) {
		json_object_put(c);
		return NULL;
	}
	return c;
}

/* [{"@kind": @req}]; takes @req in every case. */
static json_object *fkv_etcd_ops(const char *kind, json_object *req)
{
	json_object *a, *op;

	if (!req)
		return NULL;
	op = json_object_new_object();
	if (!op) {
		json_object_put(req);
		return NULL;
	}
	if (!fkv_etcd_add(op, kind, req)) {	/* puts req */
		json_object_put(op);
		return NULL;
	}
	a = json_object_new_array();
	if (!a || json_object_array_add(a, op)) {
		json_object_put(op);
		json_object_put(a);
		return NULL;
	}
	return a;
}

/*
 * Run a txn: @q holds "compare" and "success" (and maybe "failure").
 * 1: succeeded, 0: a compare failed; *@res the answer (caller puts it) if
 * @res.
 */
static int fkv_etcd_txn(struct fkv_etcd *e, json_object *q, json_object **res)
{
	json_object *r, *s;
	int err;

	err = fkv_etcd_call(e, "kv/txn", q, &r);
	json_object_put(q);
	if (err)
		return err == -ENOENT ? -EIO : err;
	/* The gateway leaves out "succeeded" when it is false. */
	err = json_object_object_get_ex(r, "succeeded", &s) &&
	      json_object_get_boolean(s);
	if (res)
		*res = r;
	else
		json_object_put(r);
	return err;
}

static bool fkv_etcd_add_cmps(json_object *q, json_object *c1, json_object *c2)
{
	json_object *a = json_object_new_array();

	if (!a || !c1) {
		json_object_put(a);
		json_object_put(c1);
		json_object_put(c2);
		return false;
	}
	if (json_object_array_add(a, c1)) {
		json_object_put(c1);
		json_object_put(c2);
		json_object_put(a);
		return false;
	}
	if (c2 && json_object_array_add(a, c2)) {
		json_object_put(c2);
		json_object_put(a);
		return false;
	}
	return fkv_etcd_add(q, "compare", a);
}

int fkv_etcd_create(struct fkv_etcd *e, const char *key, const void *val,
		    size_t len, int64_t lease, int64_t *rev,
		    struct fkv_etcd_kv *cur)
{
	json_object *q = json_object_new_object(), *rq, *r = NULL, *x;
	int ok, err;

	if (cur)
		memset(cur, 0, sizeof(*cur));
	if (!q)
		return fkv_etcd_nomem(e, NULL);
	rq = json_object_new_object();
	if (!rq || !fkv_etcd_add_key(rq, "key", key)) {
		json_object_put(rq);
		return fkv_etcd_nomem(e, q);
	}
	if (!fkv_etcd_add(q, "failure", fkv_etcd_ops("request_range", rq)) ||
	    !fkv_etcd_add_cmps(q, fkv_etcd_cmp(key, "CREATE", "create_revision", 0), NULL) ||
	    !fkv_etcd_add(q, "success",
			  fkv_etcd_ops("request_put",
				       fkv_etcd_put_req(key, val, len, lease))))
		return fkv_etcd_nomem(e, q);
	ok = fkv_etcd_txn(e, q, &r);
	if (ok < 0)
		return ok;
	if (ok) {
		json_object *h;

		if (rev)
			*rev = json_object_object_get_ex(r, "header", &h)
			       ? fkv_etcd_i64(h, "revision") : 0;
		json_object_put(r);
		return 1;
	}
	/* responses[0].response_range */
	err = 0;
	if (cur) {
		json_object *resp, *r0;

		if (json_object_object_get_ex(r, "responses", &resp) &&
		    json_object_is_type(resp, json_type_array) &&
		    json_object_array_length(resp) > 0 &&
		    (r0 = json_object_array_get_idx(resp, 0)) &&
		    json_object_object_get_ex(r0, "response_range", &x)) {
			err = fkv_etcd_first_kv(e, x, cur);
			/* Gone between the compare and the range: none. */
			if (err == -ENOENT)
				err = 0;
		}
	}
	json_object_put(r);
	return err < 0 ? err : 0;
}

int fkv_etcd_cas(struct fkv_etcd *e, const char *key, int64_t mod_rev,
		 const void *val, size_t len, const char *guard_key,
		 int64_t guard_rev)
{
	json_object *q = json_object_new_object();
	json_object *c1, *c2 = NULL;

	if (!q)
		return fkv_etcd_nomem(e, NULL);
	c1 = mod_rev ? fkv_etcd_cmp(key, "MOD", "mod_revision", mod_rev)
		     : fkv_etcd_cmp(key, "CREATE", "create_revision", 0);
	if (guard_key) {
		c2 = fkv_etcd_cmp(guard_key, "CREATE", "create_revision",
				  guard_rev);
		if (!c2) {
			json_object_put(c1);
			return fkv_etcd_nomem(e, q);
		}
	}
	if (!fkv_etcd_add_cmps(q, c1, c2) ||
	    !fkv_etcd_add(q, "success",
			  fkv_etcd_ops("request_put",
				       fkv_etcd_put_req(key, val, len, 0))))
		return fkv_etcd_nomem(e, q);
	return fkv_etcd_txn(e, q, NULL);
}

int fkv_etcd_delete_if(struct fkv_etcd *e, const char *key, int64_t create_rev)
{
	json_object *q = json_object_new_object(), *d;

	if (!q)
		return fkv_etcd_nomem(e, NULL);
	d = json_object_new_object();
	if (!d || !fkv_etcd_add_key(d, "key", key)) {
		json_object_put(d);
		return fkv_etcd_nomem(e, q);
	}
	if (!fkv_etcd_add(q, "success", fkv_etcd_ops("request_delete_range", d)) ||
	    !fkv_etcd_add_cmps(q, fkv_etcd_cmp(key, "CREATE", "create_revision",
					       create_rev), NULL))
		return fkv_etcd_nomem(e, q);
	return fkv_etcd_txn(e, q, NULL);
}

int fkv_etcd_lease_grant(struct fkv_etcd *e, int64_t ttl_s, int64_t *id)
{
	json_object *q = json_object_new_object(), *r;
	int err;

	*id = 0;
	if (ttl_s < 1) {
		fkv_etcd_seterr(e, "etcd: lease TTL %" PRId64 " s (>= 1)", ttl_s);
		json_object_put(q);
		return -EINVAL;
	}
	if (!q || !fkv_etcd_add(q, "TTL", fkv_etcd_i64_json(ttl_s)))
		return fkv_etcd_nomem(e, q);
	err = fkv_etcd_call(e, "lease/grant", q, &r);
	json_object_put(q);
	if (err)
		return err == -ENOENT ? -EIO : err;
	*id = fkv_etcd_i64(r, "ID");
	json_object_put(r);
	if (*id == 0) {
		fkv_etcd_seterr(e, "etcd %s: a lease grant without an ID",
				fkv_etcd_endpoint(e));
		return -EPROTO;
	}
	return 0;
}

int fkv_etcd_lease_keepalive(struct fkv_etcd *e, int64_t id, int64_t *ttl_s)
{
	json_object *q = json_object_new_object(), *r, *res;
	int err;

	*ttl_s = 0;
	if (!q || !fkv_etcd_add(q, "ID", fkv_etcd_i64_json(id)))
		return fkv_etcd_nomem(e, q);
	err = fkv_etcd_call(e, "lease/keepalive", q, &r);
	json_object_put(q);
	if (err)
		return err;
	/* A stream of one: {"result": {"ID", "TTL"}}; no TTL: no lease. */
	if (!json_object_object_get_ex(r, "result", &res)) {
		fkv_etcd_seterr(e, "etcd %s: a keepalive answer without a result",
				fkv_etcd_endpoint(e));
		json_object_put(r);
		return -EPROTO;
	}
	*ttl_s = fkv_etcd_i64(res, "TTL");
	json_object_put(r);
	if (*ttl_s <= 0) {
		fkv_etcd_seterr(e, "etcd %s: lease %" PRIx64 " is gone",
				fkv_etcd_endpoint(e), (uint64_t)id);
		return -ENOENT;
	}
	return 0;
}

int fkv_etcd_lease_revoke(struct fkv_etcd *e, int64_t id)
{
	json_object *q = json_object_new_object(), *r;
	int err;

	if (!q || !fkv_etcd_add(q, "ID", fkv_etcd_i64_json(id)))
		return fkv_etcd_nomem(e, q);
	err = fkv_etcd_call(e, "lease/revoke", q, &r);
	json_object_put(q);
	if (err)
		return err;
	json_object_put(r);
	return 0;
}

/* ---- Watch: a streamed answer, one JSON object per line ---- */

struct fkv_etcd_watch_st {
	struct fkv_etcd *e;
	const char *ep;
	int (*fn)(void *arg, const struct fkv_etcd_event *ev);
	void *arg;
	const _Atomic bool *stop;
	struct fkv_etcd_buf line;	/* what came after the last newline */
	int ret;			/* what ends the stream (fn's, -errno) */
	bool created;
};

/* One line of the stream: 0 to go on, else why it ends (in st->ret). */
static int fkv_etcd_watch_line(struct fkv_etcd_watch_st *st, const char *txt)
{
	json_object *j = json_tokener_parse(txt), *res, *evs, *v;
	size_t i, n;
	int ret = 0;

	if (!j || !json_object_is_type(j, json_type_object)) {
		fkv_etcd_seterr(st->e, "etcd %s: a watch line that is not JSON",
				st->ep);
		ret = -EPROTO;
		goto out;
	}
	if (json_object_object_get_ex(j, "error", &v)) {
		fkv_etcd_seterr(st->e, "etcd %s: watch: %s", st->ep,
				json_object_get_string(v));
		ret = -EIO;
		goto out;
	}
	if (!json_object_object_get_ex(j, "result", &res))
		goto out;	/* nothing we know: skipped */
	if (json_object_object_get_ex(res, "canceled", &v) &&
	    json_object_get_boolean(v)) {
		fkv_etcd_seterr(st->e, "etcd %s: the watch was canceled", st->ep);
		ret = -ECANCELED;
		goto out;
	}
	if (json_object_object_get_ex(res, "created", &v) &&
	    json_object_get_boolean(v) && !st->created) {
		st->created = true;
		ret = st->fn(st->arg, NULL);
		if (ret)
			goto out;
	}
	if (!json_object_object_get_ex(res, "events", &evs) ||
	    !json_object_is_type(evs, json_type_array))
		goto out;
	n = json_object_array_length(evs);
	for (i = 0; i < n && !ret; i++) {
		json_object *ev = json_object_array_get_idx(evs, i), *kv, *t;
		struct fkv_etcd_event e = { 0 };

		if (!json_object_object_get_ex(ev, "kv", &kv))
			continue;
		e.deleted = json_object_object_get_ex(ev, "type", &t) &&
			    !strcmp(json_object_get_string(t), "DELETE");
		ret = fkv_etcd_kv_parse(st->e, kv, &e.kv);
		if (ret)
			break;
		e.revision = e.kv.mod_revision;
		ret = st->fn(st->arg, &e);
		fkv_etcd_kv_free(&e.kv);
	}
out:
	json_object_put(j);
	if (ret)
		st->ret = ret;
	return ret;
}

static size_t fkv_etcd_watch_write(char *ptr, size_t size, size_t nmemb,
				   void *ud)
{
	struct fkv_etcd_watch_st *st = ud;
	size_t n = size * nmemb, used = 0;
	char *nl;

	if (!fkv_etcd_write(ptr, size, nmemb, &st->line)) {
		fkv_etcd_seterr(st->e, "etcd %s: a watch line over %u bytes",
				st->ep, FKV_ETCD_BODY_MAX);
		st->ret = -EPROTO;
		return 0;
	}
	while ((nl = memchr(st->line.p + used, '\n', st->line.len - used))) {
		*nl = '\0';
		if (nl > st->line.p + used &&
		    fkv_etcd_watch_line(st, st->line.p + used))
			return 0;	/* ends the transfer */
		used = (size_t)(nl - st->line.p) + 1;
	}
	memmove(st->line.p, st->line.p + used, st->line.len - used);
	st->line.len -= used;
	st->line.p[st->line.len] = '\0';
	return n;
}

/* curl's progress callback: non-zero ends the transfer (a stop). */
static int fkv_etcd_watch_progress(void *ud, curl_off_t dlt, curl_off_t dln,
				   curl_off_t ult, curl_off_t uln)
{
	struct fkv_etcd_watch_st *st = ud;

	return st->stop && atomic_load(st->stop);
}

int fkv_etcd_watch(struct fkv_etcd *e, const char *key,
		   int (*fn)(void *arg, const struct fkv_etcd_event *ev),
		   void *arg, const _Atomic bool *stop)
{
	struct fkv_etcd_watch_st st = {
		.e = e, .ep = e->ep[e->cur], .fn = fn, .arg = arg, .stop = stop,
	};
	json_object *q = json_object_new_object(), *c;
	struct curl_slist *hdr = NULL;
	char url[FKV_ETCD_URL_MAX];
	const char *txt;
	CURLcode rc;
	long code = 0;

	if (!q)
		return fkv_etcd_nomem(e, NULL);
	c = json_object_new_object();
	if (!c || !fkv_etcd_add_key(c, "key", key)) {
		json_object_put(c);
		return fkv_etcd_nomem(e, q);
	}
	if (!fkv_etcd_add(q, "create_request", c))	/* puts @c */
		return fkv_etcd_nomem(e, q);
	txt = json_object_to_json_string_ext(q, JSON_C_TO_STRING_PLAIN);
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	if (!txt || !hdr) {
		curl_slist_free_all(hdr);
		return fkv_etcd_nomem(e, q);
	}
	snprintf(url, sizeof(url), "%s/v3/watch", st.ep);
	fkv_etcd_setopt_post(e, url, txt, hdr, fkv_etcd_watch_write, &st);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION,
			 fkv_etcd_watch_progress);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, &st);
	curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e->curl, CURLOPT_TCP_KEEPIDLE, 2L);
	curl_easy_setopt(e->curl, CURLOPT_TCP_KEEPINTVL, 1L);
	rc = curl_easy_perform(e->curl);
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hdr);
	json_object_put(q);
	free(st.line.p);
	if (st.ret)		/* the callback's, or a bad line */
		return st.ret;
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return 0;	/* stopped */
	/* it ended: next time, the next endpoint */
	e->cur = (e->cur + 1) % e->nep;
	if (rc != CURLE_OK) {
		int err = fkv_etcd_curl_errno(rc);

		fkv_etcd_seterr(e, "etcd %s: watch: %s (%s)", st.ep,
				fkv_etcd_why(rc, e->curlerr), strerror(-err));
		return err;
	}
	fkv_etcd_seterr(e, "etcd %s: the watch stream ended (HTTP %ld)",
			st.ep, code);
	return -EPIPE;
}

