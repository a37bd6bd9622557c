// SPDX-License-Identifier: GPL-2.0
/*
 * test_clean - clean drops (FLUXONKV_REGISTER_F_CLEAN_DROPS, design.md
 * "Clean drops"): a DRAM replica whose version also has a committed SSD
 * copy the master routes to is clean, and the module drops such replicas
 * itself for room -- no NEED_ROOM round trip to fluxond -- telling the
 * master afterwards (DROPPED).  Dirty replicas (no routed SSD copy, or one
 * the ring overwrote since) stay for the master.  Values are patterns of
 * (key, length, salt) checked byte for byte; the master's view (fluxonctl
 * cluster --json) must agree with the module's afterwards.
 *
 * The SSD is a shard file on the ext4 of the scratch disk ssd0 (make
 * vm-test passes it; without it the tests skip).
 */
#include <pthread.h>
#include <signal.h>

#include <fluxonkv.h>

#include "fkv_env.h"
#include "fkv_kv.h"
#include "fkv_ssd.h"

/*
 * A 16 MiB segment; a stopped fluxond's requests time out after 1 s; no
 * background reserve unless a test asks for one.
 */
#define CLEAN_PARAMS	"segment_mb=16 request_timeout_ms=1000 " \
			"clean_reserve_pct=0"
#define VAL		FKV_MIB
#define NKEYS		12

/* The module loaded with PARAMS, fluxond up, a CAP-byte shard on ssd0. */
static struct fkv *begin(const char *params, const char *name, uint64_t cap,
			 uint64_t *base)
{
	char dir[256], path[400];
	struct fkv *kv;

	ext4_dir(name, dir, sizeof(dir));
	*base = setup(params);
	make_file(dir, "shard", cap, path, sizeof(path));
	kv = kv_open();
	attach_file(kv, path, 0, cap);
	return kv;
}

static void daemon_signal(int sig)
{
	pid_t d = (pid_t)fkv_sysfs("daemon_pid");

	FKV_ASSERT(d > 0, "no daemon registered");
	FKV_ASSERT_EQ(kill(d, sig), 0);
}

/* The master's counter NAME (fluxonctl cluster --json). */
static uint64_t mstat(const char *name)
{
	static char out[1 << 16];
	char pat[96];
	const char *p;
	int ret = fkv_ctl(out, sizeof(out), "cluster", "--json", NULL);

	FKV_ASSERT(ret == 0, "fluxonctl cluster --json: %d: %s", ret, out);
	snprintf(pat, sizeof(pat), "\"%s\":", name);
	p = strstr(out, pat);
	FKV_ASSERT(p, "no %s in: %s", name, out);
	return strtoull(p + strlen(pat), NULL, 10);
}

/*
 * The master heard of every clean drop since it started (all but UNHEARD:
 * those made before, for an earlier fluxond), and it routes to exactly
 * the DRAM replicas the module holds: no route to a dropped replica, none
 * forgotten.  Also waits for a restarted fluxond's adoption.
 */
static void master_agrees(uint64_t unheard)
{
	int64_t end = fkv_now_ms() + 15000;
	uint64_t drops, heard, mem, reps;

	for (;;) {
		drops = fkv_sysfs("clean_drops") - unheard;
		heard = mstat("master_clean_dropped") +
			mstat("master_clean_dropped_gone");
		mem = mstat("master_mem_replicas");
		reps = fkv_sysfs("replicas");
		if (heard == drops && mem == reps)
			break;
		FKV_ASSERT(fkv_now_ms() < end, "after 15 s: module dropped %"
			   PRIu64 ", master heard of %" PRIu64 "; master routes "
			   "%" PRIu64 " DRAM replicas, module holds %" PRIu64,
			   drops, heard, mem, reps);
		fkv_msleep(50);
	}
	fkv_diag("module dropped %" PRIu64 " clean replicas (%" PRIu64 " of "
		 "them already gone in the master); %" PRIu64 " DRAM replicas "
		 "on both sides", drops, mstat("master_clean_dropped_gone"),
		 reps);
}

static void key_of(char *buf, size_t n, const char *prefix, int i)
{
	snprintf(buf, n, "%s-%d", prefix, i);
}

/* Put NKEYS values PREFIX-i of VAL bytes (salt 10 + i) and persist them. */
static void put_persisted(struct fkv *kv, const char *prefix, uint64_t *ids)
{
	char key[32];
	int i;

	for (i = 0; i < NKEYS; i++) {
		key_of(key, sizeof(key), prefix, i);
		ids[i] = put_pattern(kv, key, VAL, 10 + i);
	}
	wait_persists(NKEYS);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), NKEYS);
}

/* KEY (LEN bytes, SALT) reads whole at version ID from SOURCE. */
static void read_from(struct fkv *kv, const char *key, size_t len,
		      uint64_t salt, uint64_t id, unsigned int source)
{
	struct fkv_holder h;

	FKV_ASSERT_EQ(get_check(kv, key, len, salt, id, &h), source);
	release(kv, &h);
}

/* Every PREFIX-i reads whole at its version, from either tier. */
static void read_all(struct fkv *kv, const char *prefix, const uint64_t *ids)
{
	struct fkv_holder h;
	char key[32];
	int i;

	for (i = 0; i < NKEYS; i++) {
		key_of(key, sizeof(key), prefix, i);
		get_check(kv, key, VAL, 10 + i, ids[i], &h);
		release(kv, &h);
	}
}

static void delete_all(struct fkv *kv, const char *prefix)
{
	char key[32];
	int i;

	for (i = 0; i < NKEYS; i++) {
		key_of(key, sizeof(key), prefix, i);
		delete_any(kv, key);
	}
}

/*
 * With fluxond stopped, a put that needs room where only clean replicas
 * could give it still succeeds: the module drops the coldest clean ones
 * (the CLOCK passes over the two just read) and asks nobody.  Dropped
 * keys then refill from their SSD copy, and once fluxond runs again it
 * has heard of every drop.  Without clean drops the put waits for a
 * NEED_ROOM nobody answers and fails after the 5 s room wait.
 */
FKV_TEST_TIMEOUT(clean_replicas_make_room_without_the_daemon, 120)
{
	uint64_t base, ids[NKEYS], big;
	struct fkv *kv;
	char key[32];
	int i;

	kv = begin(CLEAN_PARAMS, "clean-room", 64 * FKV_MIB, &base);
	put_persisted(kv, "c", ids);
	for (i = 0; i < 2; i++) {
		key_of(key, sizeof(key), "c", i);
		read_from(kv, key, VAL, 10 + i, ids[i], FLUXONKV_SOURCE_MEMORY);
	}

	daemon_signal(SIGSTOP);
	/* 6 MiB where 4 are free: two clean replicas go */
	big = put_pattern(kv, "big", 6 * FKV_MIB, 99);
	FKV_ASSERT_EQ(fkv_sysfs("clean_drops"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("clean_drop_bytes"), 2 * VAL);
	/* the first two not read since the hand last passed: c-2 and c-3 */
	for (i = 0; i < 5; i++) {
		key_of(key, sizeof(key), "c", i);
		FKV_ASSERT_EQ(lookup_check(kv, key, VAL, ids[i]),
			      i == 2 || i == 3 ? FLUXONKV_SOURCE_SSD
					       : FLUXONKV_SOURCE_MEMORY);
	}
	/* still stopped: the dropped ones refill (their room made alike) */
	for (i = 2; i < 4; i++) {
		key_of(key, sizeof(key), "c", i);
		read_from(kv, key, VAL, 10 + i, ids[i], FLUXONKV_SOURCE_SSD);
	}
	read_from(kv, "big", 6 * FKV_MIB, 99, big, FLUXONKV_SOURCE_MEMORY);
	daemon_signal(SIGCONT);

	master_agrees(0);
	read_all(kv, "c", ids);
	delete_all(kv, "c");
	delete_key(kv, "big");
	teardown(base);
}

/*
 * A replica whose SSD copy the ring overwrote is dirty again, as one that
 * never had a copy: with fluxond stopped, clean drops take only replicas
 * whose copy is still there, and a put that needs more than they give
 * fails (NEED_ROOM unanswered) with every dirty replica still in DRAM and
 * whole.  (Once fluxond runs again its watermarks may evict some: that is
 * the master's choice.)
 */
FKV_TEST_TIMEOUT(replicas_whose_ssd_copy_left_the_ring_are_dirty_again, 120)
{
	uint64_t base, ids[NKEYS], big, clean = 0;
	bool dirty[NKEYS];
	struct fkv *kv;
	char key[32];
	int i, ndirty = 0, ret;
	uint8_t *buf;

	/* a 6 MiB ring: of 12 values of 1 MiB, at most the last 6 stay */
	kv = begin(CLEAN_PARAMS, "clean-dirty", 6 * FKV_MIB, &base);
	put_persisted(kv, "d", ids);
	for (i = 0; i < NKEYS; i++) {
		key_of(key, sizeof(key), "d", i);
		dirty[i] = ring_offset(key) < 0;
		ndirty += dirty[i];
		clean += dirty[i] ? 0 : VAL;
	}
	fkv_diag("%d of %d values left the ring", ndirty, NKEYS);
	FKV_ASSERT(ndirty >= NKEYS - 6, "only %d values left a 6 MiB ring",
		   ndirty);
	FKV_ASSERT(clean >= 4 * VAL, "only %" PRIu64 " clean bytes", clean);

	daemon_signal(SIGSTOP);
	/* 8 MiB where 4 are free: four clean replicas go, no dirty one */
	big = put_pattern(kv, "big", 8 * FKV_MIB, 98);
	FKV_ASSERT_EQ(fkv_sysfs("clean_drop_bytes"), 4 * VAL);
	for (i = 0; i < NKEYS; i++) {
		if (!dirty[i])
			continue;
		key_of(key, sizeof(key), "d", i);
		FKV_ASSERT_EQ(lookup_check(kv, key, VAL, ids[i]),
			      FLUXONKV_SOURCE_MEMORY);
	}
	/* more than the clean ones left can give: the master's to decide */
	buf = pattern("big2", 3 * FKV_MIB, 97);
	ret = fkv_put(kv, "big2", 4, buf, 3 * FKV_MIB, NULL);
	free(buf);
	FKV_ASSERT(ret == -ENOSPC || ret == -ETIMEDOUT, "put 'big2' with "
		   "only dirty replicas to evict and fluxond stopped: %s",
		   ret ? fkv_strerror(ret) : "success");
	FKV_ASSERT_EQ(fkv_sysfs("clean_drop_bytes"), clean);
	for (i = 0; i < NKEYS; i++) {
		if (!dirty[i])
			continue;
		key_of(key, sizeof(key), "d", i);
		read_from(kv, key, VAL, 10 + i, ids[i], FLUXONKV_SOURCE_MEMORY);
	}
	read_from(kv, "big", 8 * FKV_MIB, 98, big, FLUXONKV_SOURCE_MEMORY);
	daemon_signal(SIGCONT);

	master_agrees(0);
	delete_all(kv, "d");
	delete_key(kv, "big");
	delete_any(kv, "big2");
	teardown(base);
}

/*
 * fluxond killed right after the module dropped clean replicas, before it
 * read their notes: the fluxond that adopts the kept replicas next never
 * routes to the dropped ones (they are not in the module's table any
 * more), and serves their keys from the SSD copies it adopts.
 */
FKV_TEST_TIMEOUT(a_master_restarted_after_clean_drops_does_not_resurrect_them,
		 120)
{
	uint64_t base, ids[NKEYS], big;
	struct fkv_holder h;
	struct fkv *kv;
	char key[32];
	int i, nssd = 0;

	kv = begin(CLEAN_PARAMS, "clean-restart", 64 * FKV_MIB, &base);
	put_persisted(kv, "r", ids);
	daemon_signal(SIGSTOP);
	big = put_pattern(kv, "big", 6 * FKV_MIB, 96);
	FKV_ASSERT_EQ(fkv_sysfs("clean_drops"), 2);
	FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
	FKV_START_DAEMON();
	/* the two drops' notes went nowhere: the adoption says it all */
	master_agrees(2);
	FKV_ASSERT_EQ(mstat("master_mem_replicas"), NKEYS - 2 + 1);
	for (i = 0; i < NKEYS; i++) {
		key_of(key, sizeof(key), "r", i);
		nssd += lookup_check(kv, key, VAL, ids[i]) ==
			FLUXONKV_SOURCE_SSD;
	}
	FKV_ASSERT_EQ(nssd, 2);
	read_all(kv, "r", ids);
	/* persisted again by the adoption: DRAM, or its SSD copy by now */
	get_check(kv, "big", 6 * FKV_MIB, 96, big, &h);
	release(kv, &h);
	master_agrees(2);
	delete_all(kv, "r");
	delete_key(kv, "big");
	teardown(base);
}

/*
 * clean_reserve_pct: an allocation that leaves less free than the reserve
 * starts a background pass that drops clean replicas until it is free
 * again, so the next refills find room at once.
 */
FKV_TEST_TIMEOUT(a_background_pass_keeps_the_reserve_free, 120)
{
	uint64_t base, ids[NKEYS], cap, reserve, x;
	struct fkv *kv;
	int64_t end;

	/* 20 % of 16 MiB: 3.2 MiB */
	kv = begin("segment_mb=16 request_timeout_ms=1000 clean_reserve_pct=20",
		   "clean-reserve", 64 * FKV_MIB, &base);
	put_persisted(kv, "v", ids);
	cap = fkv_sysfs("segment_capacity_bytes");
	reserve = cap / 5;
	FKV_ASSERT_EQ(fkv_sysfs("clean_drops"), 0);
	/* 13 MiB used: 3 free, short of the reserve by 0.2 MiB */
	x = put_pattern(kv, "x", VAL, 95);
	end = fkv_now_ms() + 10000;
	while (cap - fkv_sysfs("segment_used_bytes") < reserve) {
		FKV_ASSERT(fkv_now_ms() < end, "free %" PRIu64 " bytes after "
			   "10 s, reserve %" PRIu64 " (%" PRIu64 " passes, %"
			   PRIu64 " clean drops)",
			   cap - fkv_sysfs("segment_used_bytes"), reserve,
			   fkv_sysfs("clean_reserve_runs"),
			   fkv_sysfs("clean_drops"));
		fkv_msleep(20);
	}
	FKV_ASSERT_GE(fkv_sysfs("clean_reserve_runs"), 1);
	/* one 1 MiB value covers 0.2 MiB: no more went */
	FKV_ASSERT_EQ(fkv_sysfs("clean_drops"), 1);
	master_agrees(0);
	read_all(kv, "v", ids);
	lookup_check(kv, "x", VAL, x);
	delete_all(kv, "v");
	delete_key(kv, "x");
	teardown(base);
}

/* ---- clean drops racing everything else --------------------------------- */

#define RACE_KEYS	16
#define RACE_MS		6000
#define RACE_HIST	64

static struct {
	pthread_mutex_t lock;	/* protects everything below */
	/* each key's acknowledged versions: put_id -> salt, the last RACE_HIST */
	uint64_t put_id[RACE_KEYS][RACE_HIST], salt[RACE_KEYS][RACE_HIST];
	unsigned int n[RACE_KEYS];
	uint64_t last[RACE_KEYS];	/* newest acknowledged put, 0: deleted */
	size_t len[RACE_KEYS][RACE_HIST];
	bool stop;
	unsigned long puts, gets, hits, holds, deletes;
} race = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t race_len(uint64_t salt)
{
	/* mixed sizes, so the free bytes fragment and compaction runs too */
	return salt % 3 ? VAL : VAL + VAL / 2 + 4096 * (salt % 7);
}

static bool race_stopped(void)
{
	bool stop;

	pthread_mutex_lock(&race.lock);
	stop = race.stop;
	pthread_mutex_unlock(&race.lock);
	return stop;
}

static void *race_writer(void *arg)
{
	struct fkv *kv = kv_open();
	uint64_t rnd = 0xc1ea11, salt = 1000, put_id;
	char key[32];
	uint8_t *buf;
	int k, ret;
	size_t len;

	while (!race_stopped()) {
		k = (int)(fkv_xorshift(&rnd) % RACE_KEYS);
		key_of(key, sizeof(key), "s", k);
		if (fkv_xorshift(&rnd) % 16 == 0) {
			ret = fkv_delete(kv, key, strlen(key));
			FKV_ASSERT(ret == 0 || ret == -ENOENT, "delete '%s': %s",
				   key, fkv_strerror(ret));
			pthread_mutex_lock(&race.lock);
			race.last[k] = 0;
			race.deletes++;
			pthread_mutex_unlock(&race.lock);
			continue;
		}
		salt++;
		len = race_len(salt);
		buf = pattern(key, len, salt);
		put_id = 0;
		ret = fkv_put(kv, key, strlen(key), buf, len, &put_id);
		free(buf);
		FKV_ASSERT(ret == 0, "put '%s': %s", key, fkv_strerror(ret));
		pthread_mutex_lock(&race.lock);
		race.put_id[k][race.n[k] % RACE_HIST] = put_id;
		race.salt[k][race.n[k] % RACE_HIST] = salt;
		race.len[k][race.n[k] % RACE_HIST] = len;
		race.n[k]++;
		race.last[k] = put_id;
		race.puts++;
		pthread_mutex_unlock(&race.lock);
	}
	fkv_close(kv);
	return NULL;
}

/* The salt and length KEY's version PUT_ID was put with (waits for it). */
static bool race_version(int k, uint64_t put_id, uint64_t *salt, size_t *len)
{
	int64_t end = fkv_now_ms() + 2000;
	unsigned int i;

	for (;;) {
		pthread_mutex_lock(&race.lock);
		for (i = 0; i < RACE_HIST && i < race.n[k]; i++) {
			if (race.put_id[k][i] == put_id) {
				*salt = race.salt[k][i];
				*len = race.len[k][i];
				pthread_mutex_unlock(&race.lock);
				return true;
			}
		}
		pthread_mutex_unlock(&race.lock);
		/* the put's answer may not be written down yet */
		if (fkv_now_ms() > end)
			return false;
		fkv_msleep(1);
	}
}

struct race_held {
	struct fkv_holder h;
	char key[32];
	uint64_t salt;
	bool used;
};

/* H's bytes are the version it names, whole: now and at its release. */
static void race_check(struct fkv *kv, const struct race_held *r)
{
	check_holder(kv, &r->h, r->key, r->h.len, r->salt, r->h.put_id);
}

static void *race_reader(void *arg)
{
	struct fkv *kv = kv_open();
	struct race_held held[4] = {};
	uint64_t rnd = (uintptr_t)arg;
	int k, ret, slot;
	size_t len;

	while (!race_stopped()) {
		slot = (int)(fkv_xorshift(&rnd) % 4);
		if (held[slot].used) {
			race_check(kv, &held[slot]);	/* still whole */
			release(kv, &held[slot].h);
			held[slot].used = false;
		}
		k = (int)(fkv_xorshift(&rnd) % RACE_KEYS);
		key_of(held[slot].key, sizeof(held[slot].key), "s", k);
		ret = fkv_get(kv, held[slot].key, strlen(held[slot].key),
			      &held[slot].h);
		__atomic_add_fetch(&race.gets, 1, __ATOMIC_RELAXED);
		if (ret == -ENOENT)
			continue;
		FKV_ASSERT(ret == 0, "get '%s': %s", held[slot].key,
			   fkv_strerror(ret));
		FKV_ASSERT(race_version(k, held[slot].h.put_id,
					&held[slot].salt, &len),
			   "get '%s': put_id %" PRIu64 " was never put",
			   held[slot].key, held[slot].h.put_id);
		FKV_ASSERT_EQ(held[slot].h.len, len);
		held[slot].used = true;
		race_check(kv, &held[slot]);
		__atomic_add_fetch(&race.hits, 1, __ATOMIC_RELAXED);
	}
	for (slot = 0; slot < 4; slot++) {
		if (!held[slot].used)
			continue;
		race_check(kv, &held[slot]);
		release(kv, &held[slot].h);
	}
	fkv_close(kv);
	return NULL;
}

/*
 * Clean drops racing overwrites, deletes, gets that hold their bytes a
 * while, SSD commits, the master's own evictions and compaction: every
 * hit is the whole version it names (also when its holder goes), and
 * afterwards the master routes to exactly the replicas the module holds
 * and a get never returns a version older than the last acknowledged put.
 */
FKV_TEST_TIMEOUT(clean_drops_racing_puts_gets_and_deletes_keep_every_byte,
		 180)
{
	pthread_t w, r[2];
	uint64_t base, salt;
	struct fkv_holder h;
	struct fkv *kv;
	char key[32];
	int i, ret;
	size_t len;

	kv = begin("segment_mb=16 clean_reserve_pct=5", "clean-race",
		   128 * FKV_MIB, &base);
	FKV_ASSERT_EQ(pthread_create(&w, NULL, race_writer, NULL), 0);
	for (i = 0; i < 2; i++)
		FKV_ASSERT_EQ(pthread_create(&r[i], NULL, race_reader,
					     (void *)(uintptr_t)(0x5eed + i)),
			      0);
	fkv_msleep(RACE_MS);
	pthread_mutex_lock(&race.lock);
	race.stop = true;
	pthread_mutex_unlock(&race.lock);
	pthread_join(w, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	fkv_diag("%lu puts, %lu deletes, %lu gets (%lu hits); %" PRIu64
		 " clean drops, %" PRIu64 " evictions, %" PRIu64
		 " compactions, %" PRIu64 " NEED_ROOM waits", race.puts,
		 race.deletes, race.gets, race.hits, fkv_sysfs("clean_drops"),
		 fkv_sysfs("evictions"), fkv_sysfs("compactions"),
		 fkv_sysfs("room_waits"));
	FKV_ASSERT_GT(fkv_sysfs("clean_drops"), 0);

	master_agrees(0);
	for (i = 0; i < RACE_KEYS; i++) {
		key_of(key, sizeof(key), "s", i);
		ret = fkv_get(kv, key, strlen(key), &h);
		if (!race.last[i]) {
			FKV_ASSERT(ret == -ENOENT, "'%s' deleted last: %s", key,
				   ret ? fkv_strerror(ret) : "a hit");
			continue;
		}
		/* a copy the ring overwrote after its DRAM one went: a miss */
		if (ret == -ENOENT)
			continue;
		FKV_ASSERT(ret == 0, "get '%s': %s", key, fkv_strerror(ret));
		FKV_ASSERT(h.put_id == race.last[i], "'%s': version %" PRIu64
			   ", the last acknowledged put was %" PRIu64, key,
			   h.put_id, race.last[i]);
		FKV_ASSERT(race_version(i, h.put_id, &salt, &len), "'%s'", key);
		check_holder(kv, &h, key, len, salt, h.put_id);
		release(kv, &h);
		delete_key(kv, key);
	}
	teardown(base);
}
