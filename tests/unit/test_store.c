// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the cache store (src/store*.c), without FUSE.
 *
 * Every test gets a private mkdtemp directory with a cachedir in it.  The
 * content of an extent is a pure function of (ino, extno, version, len),
 * so any byte the store returns can be checked: the rule the corruption
 * tests enforce is "a miss or the right bytes, never wrong bytes".
 * The full-filesystem test mounts a small tmpfs (root only) and skips if
 * it cannot; teardown always unmounts it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_util.h"

#include "hotfs/log.h"
#include "hotfs/store.h"
#include "src/store/store_i.h"

#define EXT	(64u * 1024)
#define RSIZE	(256u * 1024)
#define CAP	(4u << 20)
#define DEV	7u

struct fx {
	char dir[64];
	char cache[256];
	char small[128];	/* tmpfs mount point, if mounted */
	bool mounted;
	struct hotfs_store *st;
	struct hotfs_store_params p;
	char err[256];
};

static const char ident[] = "/srv/slow dev=2049 ino=2";

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	return ut_rnd(&rng_state);
}

static void fill(void *buf, uint32_t len, uint64_t ino, uint32_t extno,
		 uint32_t ver)
{
	uint64_t x = ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)extno << 20 ^
		ver ^ (uint64_t)len << 40;
	uint8_t *p = buf;
	uint32_t i;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		p[i] = x >> (8 * (i % 8));
	}
}

static struct hotfs_key key_of(uint64_t ino)
{
	struct hotfs_key k = { DEV, ino };

	return k;
}

static struct hotfs_stamp stamp_of(uint64_t ino, uint32_t ver)
{
	struct hotfs_stamp s = { ino, 1000 + ver, 1700000000000000000ll + ver,
				 1700000000000000001ll + ver };

	return s;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/hotfs-store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
	assert_int_equal(mkdir(f->cache, 0700), 0);
	f->p.ident = ident;
	f->p.ident_len = sizeof(ident) - 1;
	f->p.capacity = CAP;
	f->p.extent = EXT;
	f->p.region = RSIZE;
	f->p.commit_ms = 3600 * 1000;	/* tests commit explicitly */
	f->p.commit_bytes = 1ull << 40;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->st)
		st_close(f->st);
	if (f->mounted)
		umount2(f->small, MNT_DETACH);
	ut_rm_tree(f->dir);
	free(f);
	return 0;
}

static void open_store(struct fx *f)
{
	int err = st_open(f->cache, &f->p, &f->st, f->err, sizeof(f->err));

	if (err)
		print_error("st_open: %s (%s)\n", strerror(-err), f->err);
	assert_int_equal(err, 0);
}

static void reopen(struct fx *f)
{
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;
	open_store(f);
}

static int insert(struct fx *f, uint64_t ino, uint32_t extno, uint32_t ver,
		  uint32_t len)
{
	struct hotfs_key k = key_of(ino);
	struct hotfs_stamp s = stamp_of(ino, ver);
	uint8_t *buf = malloc(len);
	int err;

	fill(buf, len, ino, extno, ver);
	err = st_insert(f->st, &k, extno, &s, buf, len);
	free(buf);
	return err;
}

/*
 * Read [off, off + len) of an extent and compare.  Returns 1 if it was
 * there and right, 0 if it missed (or was caught corrupt); fails the test
 * on a wrong byte.
 */
static int check_range(struct hotfs_store *st, uint64_t ino, uint32_t extno,
		       uint32_t ver, uint32_t elen, uint32_t off, uint32_t len)
{
	struct hotfs_key k = key_of(ino);
	struct hotfs_stamp s = stamp_of(ino, ver);
	uint8_t *want = malloc(elen), *got = malloc(len + 1);
	ssize_t n;
	uint32_t exp;

	fill(want, elen, ino, extno, ver);
	n = st_read(st, &k, extno, &s, off, got, len);
	if (n < 0) {
		free(want);
		free(got);
		assert_true(n == -ENOENT || n == -EBADMSG || n == -ESTALE);
		return 0;
	}
	exp = off >= elen ? 0 : (elen - off < len ? elen - off : len);
	assert_int_equal(n, exp);
	assert_memory_equal(got, want + off, n);
	free(want);
	free(got);
	return 1;
}

static int check(struct hotfs_store *st, uint64_t ino, uint32_t extno,
		 uint32_t ver, uint32_t len)
{
	return check_range(st, ino, extno, ver, len, 0, len);
}

static void get_stats(struct fx *f, struct hotfs_store_stats *s)
{
	st_get_stats(f->st, s);
}

/* ------------------------------------------------------------------ */

static void test_insert_lookup(void **state)
{
	static const uint32_t lens[] = { 1, 511, 512, 513, 4095, 4096, 4097,
		10000, 32768, 65535, EXT };
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint64_t total = 0;
	unsigned i;
	uint32_t off;

	open_store(f);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		assert_int_equal(insert(f, 100 + i, 3, 0, lens[i]), 0);
		total += lens[i];
	}
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		assert_int_equal(check(f->st, 100 + i, 3, 0, lens[i]), 1);
		/* block-aligned and odd ranges */
		for (off = 0; off < lens[i]; off += 4096)
			assert_int_equal(check_range(f->st, 100 + i, 3, 0,
						     lens[i], off, 4096), 1);
		for (off = 0; off < 20; off++) {
			uint32_t o = rnd() % lens[i], l = 1 + rnd() % 9000;

			assert_int_equal(check_range(f->st, 100 + i, 3, 0,
						     lens[i], o, l), 1);
		}
	}
	/* misses: other extent, other file, other device */
	assert_int_equal(check(f->st, 100, 4, 0, 1), 0);
	assert_int_equal(check(f->st, 99, 3, 0, 1), 0);
	get_stats(f, &s);
	assert_int_equal(s.extents, sizeof(lens) / sizeof(lens[0]));
	assert_int_equal(s.bytes, total);
	assert_int_equal(s.state, ST_OK);
	assert_true(s.bytes_written >= total);
	assert_true(s.index_bytes > 0);

	/* replacing an extent keeps one entry */
	assert_int_equal(insert(f, 100, 3, 0, 700), 0);
	assert_int_equal(check(f->st, 100, 3, 0, 700), 1);
	get_stats(f, &s);
	assert_int_equal(s.extents, sizeof(lens) / sizeof(lens[0]));
	assert_int_equal(s.bytes, total - lens[0] + 700);

	/* bad arguments */
	assert_int_equal(insert(f, 1, 0, 0, EXT + 1), -EINVAL);
	{
		struct hotfs_key k = { 1ull << 40, 5 };
		struct hotfs_stamp t = stamp_of(5, 0);
		char b = 0;

		assert_int_equal(st_insert(f->st, &k, 0, &t, &b, 1),
				 -EOVERFLOW);
		t.ino = 6;
		k.dev = 1;
		assert_int_equal(st_insert(f->st, &k, 0, &t, &b, 1), -EINVAL);
	}
}

static void test_span_and_block_verify(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(42);
	struct hotfs_stamp s = stamp_of(42, 0);
	struct hotfs_store_stats st;
	struct hotfs_loc loc;
	struct hotfs_span sp;
	uint8_t *want = malloc(EXT), *buf = malloc(EXT);
	uint64_t tab[2];
	uint8_t junk = 0x5a;

	open_store(f);
	assert_int_equal(insert(f, 42, 0, 0, EXT), 0);
	assert_int_equal(st_lookup(f->st, &k, 0, &s, &loc), 0);
	assert_int_equal(loc.len, EXT);
	assert_true(loc.tab_off > loc.off);
	fill(want, EXT, 42, 0, 0);

	/* a 4 KiB read in the middle needs 4 KiB and 8 bytes of checksum */
	assert_int_equal(st_loc_span(&loc, 32768 + 100, 200, &sp), 0);
	assert_int_equal(sp.ext_off, 32768);
	assert_int_equal(sp.data_len, 4096);
	assert_int_equal(sp.data_off, loc.off + 32768);
	assert_int_equal(sp.tab_len, 8);
	assert_int_equal(pread(loc.fd, buf, sp.data_len, sp.data_off), 4096);
	assert_int_equal(pread(loc.fd, tab, sp.tab_len, sp.tab_off), 8);
	assert_memory_equal(buf, want + 32768, 4096);
	assert_int_equal(st_verify(f->st, &loc, sp.ext_off, buf, sp.data_len,
				   tab), 0);
	/* straddling two blocks */
	assert_int_equal(st_loc_span(&loc, 4000, 200, &sp), 0);
	assert_int_equal(sp.ext_off, 0);
	assert_int_equal(sp.data_len, 8192);
	assert_int_equal(sp.tab_len, 16);
	/* the whole extent needs no table */
	assert_int_equal(st_loc_span(&loc, 0, EXT, &sp), 0);
	assert_int_equal(sp.tab_len, 0);
	assert_int_equal(sp.data_len, EXT);
	assert_int_equal(st_loc_span(&loc, EXT, 1, &sp), -EINVAL);
	/* unaligned verify is refused, not guessed */
	assert_int_equal(st_verify(f->st, &loc, 100, buf, 4096, NULL),
			 -EINVAL);

	/* corrupt block 3 on disk: block 8 still verifies, block 3 not */
	assert_int_equal(pwrite(loc.fd, &junk, 1, loc.off + 3 * 4096 + 7), 1);
	assert_int_equal(check_range(f->st, 42, 0, 0, EXT, 8 * 4096, 4096), 1);
	assert_int_equal(check_range(f->st, 42, 0, 0, EXT, 3 * 4096, 10), 0);
	get_stats(f, &st);
	assert_int_equal(st.invalidations[ST_INVAL_CSUM], 1);
	/* dropped: now a plain miss */
	assert_int_equal(st_lookup(f->st, &k, 0, &s, &loc), -ENOENT);
	free(want);
	free(buf);
}

static void test_stamp_changed(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_key k = key_of(9);
	struct hotfs_stamp t = stamp_of(9, 1);
	struct hotfs_loc loc;
	uint32_t e;

	open_store(f);
	for (e = 0; e < 4; e++)
		assert_int_equal(insert(f, 9, e, 0, 5000), 0);
	assert_int_equal(insert(f, 10, 0, 0, 5000), 0);
	/* a peek with another stamp: a miss that drops nothing (-ESTALE:
	 * the extent is there under another); with the records' own, a
	 * hit */
	assert_int_equal(st_peek(f->st, &k, 2, &t, &loc), -ESTALE);
	get_stats(f, &s);
	assert_int_equal(s.invalidations[ST_INVAL_SOURCE], 0);
	assert_int_equal(s.extents, 5);
	{
		struct hotfs_stamp t0 = stamp_of(9, 0);

		assert_int_equal(st_peek(f->st, &k, 2, &t0, &loc), 0);
		assert_int_equal(st_peek(f->st, &k, 4, &t0, &loc), -ENOENT);
	}
	/* one lookup with a new stamp: a miss, and the file is dropped */
	assert_int_equal(st_lookup(f->st, &k, 2, &t, &loc), -ENOENT);
	get_stats(f, &s);
	assert_int_equal(s.invalidations[ST_INVAL_SOURCE], 4);
	assert_int_equal(s.extents, 1);
	for (e = 0; e < 4; e++)
		assert_int_equal(check(f->st, 9, e, 0, 5000), 0);
	assert_int_equal(check(f->st, 10, 0, 0, 5000), 1);

	/* inserting under a new stamp drops the old one's extents */
	for (e = 0; e < 3; e++)
		assert_int_equal(insert(f, 9, e, 1, 3000), 0);
	assert_int_equal(insert(f, 9, 0, 2, 3000), 0);
	get_stats(f, &s);
	assert_int_equal(s.invalidations[ST_INVAL_SOURCE], 7);
	assert_int_equal(check(f->st, 9, 0, 2, 3000), 1);
	assert_int_equal(check(f->st, 9, 1, 1, 3000), 0);

	/* and the newest stamp wins after a restart too */
	for (e = 1; e < 3; e++)
		assert_int_equal(insert(f, 9, e, 2, 3000), 0);
	reopen(f);
	for (e = 0; e < 3; e++)
		assert_int_equal(check(f->st, 9, e, 2, 3000), 1);
	get_stats(f, &s);
	assert_int_equal(s.extents, 4);
}

static void test_invalidate(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_key k = key_of(20);
	uint32_t e;

	open_store(f);
	for (e = 0; e < 10; e++)
		assert_int_equal(insert(f, 20, e, 0, 2000 + e), 0);
	assert_int_equal(insert(f, 21, 0, 0, 2000), 0);
	assert_int_equal(st_commit(f->st), 0);
	assert_int_equal(st_invalidate(f->st, &k, 2, 3, ST_INVAL_WRITE), 3);
	for (e = 0; e < 10; e++)
		assert_int_equal(check(f->st, 20, e, 0, 2000 + e),
				 e < 2 || e >= 5);
	assert_int_equal(st_invalidate(f->st, &k, 2, 3, ST_INVAL_WRITE), 0);
	assert_int_equal(st_invalidate(f->st, &k, 8, 0, ST_INVAL_SOURCE), 2);
	get_stats(f, &s);
	assert_int_equal(s.invalidations[ST_INVAL_WRITE], 3);
	assert_int_equal(s.invalidations[ST_INVAL_SOURCE], 2);
	assert_int_equal(s.extents, 6);
	assert_int_equal(st_invalidate(f->st, &k, 0, 0, 99), -EINVAL);

	/* tombstones are persistent: the dropped extents stay dropped */
	reopen(f);
	for (e = 0; e < 10; e++)
		assert_int_equal(check(f->st, 20, e, 0, 2000 + e),
				 e < 2 || (e >= 5 && e < 8));
	assert_int_equal(check(f->st, 21, 0, 0, 2000), 1);
	/* re-inserted after the tombstone: alive after a restart */
	assert_int_equal(insert(f, 20, 3, 0, 2003), 0);
	assert_int_equal(st_invalidate(f->st, &k, 0, 0, ST_INVAL_WRITE), 6);
	assert_int_equal(insert(f, 20, 4, 0, 2004), 0);
	reopen(f);
	for (e = 0; e < 10; e++)
		assert_int_equal(check(f->st, 20, e, 0, 2000 + e), e == 4);
}

/* An invalidation never waits for the store mutex: it queues. */
static void test_invalidate_busy(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(30);
	uint32_t e;

	open_store(f);
	for (e = 0; e < 4; e++)
		assert_int_equal(insert(f, 30, e, 0, 3000), 0);
	assert_int_equal(st_commit(f->st), 0);
	/* as if an insert were in the middle of its pwrite */
	pthread_mutex_lock(&f->st->lock);
	assert_int_equal(st_invalidate(f->st, &k, 1, 2, ST_INVAL_WRITE), 2);
	assert_int_equal(f->st->ntq, 1);
	assert_int_equal(check(f->st, 30, 1, 0, 3000), 0);
	pthread_mutex_unlock(&f->st->lock);
	/* drained at the next commit, and persistent */
	assert_int_equal(st_commit(f->st), 0);
	assert_int_equal(f->st->ntq, 0);
	reopen(f);
	for (e = 0; e < 4; e++)
		assert_int_equal(check(f->st, 30, e, 0, 3000),
				 e == 0 || e == 3);
}

static void test_restart(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint32_t i, n = 300;

	open_store(f);
	for (i = 0; i < n; i++)
		assert_int_equal(insert(f, 1000 + i, i % 3, 0,
					1 + (i * 7919) % 20000), 0);
	reopen(f);
	for (i = 0; i < n; i++)
		assert_int_equal(check(f->st, 1000 + i, i % 3, 0,
				       1 + (i * 7919) % 20000), 1);
	get_stats(f, &s);
	assert_int_equal(s.extents_recovered, n);
	assert_int_equal(s.extents, n);
	assert_int_equal(s.regions_dropped, 0);
	/* a restart again, after more inserts in a fresh region */
	for (i = 0; i < 10; i++)
		assert_int_equal(insert(f, 5000 + i, 0, 0, 4096), 0);
	reopen(f);
	get_stats(f, &s);
	assert_int_equal(s.extents, n + 10);
}

/*
 * kill -9 at random points of a stream of inserts and group commits, again
 * and again on the same cachedir: after each, everything the child had
 * seen committed is there, and nothing wrong is.
 */
static void test_kill9(void **state)
{
	struct fx *f = *state;
	uint32_t round, base = 1, i;

	for (round = 0; round < 10; round++) {
		uint32_t acked = 0, got, stop = 1 + rnd() % 10, seen = 0;
		int pfd[2], status;
		pid_t pid;

		assert_int_equal(pipe(pfd), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			open_store(f);
			for (i = 0;; i++) {
				if (insert(f, base + i, 0, 0, 1 + (base + i) %
					   9000))
					_exit(2);
				if (i % 7 == 6) {
					if (st_commit(f->st))
						_exit(3);
					got = i + 1;
					if (write(pfd[1], &got, 4) != 4)
						_exit(4);
				}
			}
		}
		close(pfd[1]);
		while (seen < stop && read(pfd[0], &got, 4) == 4) {
			acked = got;
			seen++;
		}
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		close(pfd[0]);
		open_store(f);
		for (i = 0; i < acked + 30; i++) {
			int ok = check(f->st, base + i, 0, 0,
				       1 + (base + i) % 9000);

			if (i < acked)
				assert_int_equal(ok, 1);
		}
		st_close(f->st);
		f->st = NULL;
		base += acked + 1000;
	}
}

/*
 * The index grows (its file table's hash incrementally, its B+tree a
 * leaf at a time) under inserts, lookups, invalidations and evictions:
 * every extent is still found exactly where expected.
 */
static void test_index_growth(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint32_t i, n = 40000, files = n / 4, alive = 0;
	uint8_t *gone = calloc(files, 1);

	f->p.capacity = 64u << 20;
	f->p.region = 4u << 20;		/* few seals, few fdatasyncs */
	open_store(f);
	assert_int_equal(f->st->fmask + 1, 1024);
	for (i = 0; i < n; i++) {
		uint32_t ino = 1 + i / 4, j;

		assert_int_equal(insert(f, ino, i % 4, 0, 1 + i % 300), 0);
		if (i % 97 == 0) {
			j = rnd() % (i + 1);
			if (!gone[j / 4])
				assert_int_equal(check(f->st, 1 + j / 4, j % 4,
						       0, 1 + j % 300), 1);
		}
		if (i % 101 == 100) {
			struct hotfs_key k = key_of(1 + (rnd() % ino));

			st_invalidate(f->st, &k, 0, 0, ST_INVAL_WRITE);
			gone[k.ino - 1] = 1;
		}
	}
	get_stats(f, &s);
	/* the file hash grew three times (10,000 files, 1,024 buckets) */
	assert_true(f->st->fmask + 1 >= 8192);
	for (i = 0; i < n; i++) {
		int ok = check(f->st, 1 + i / 4, i % 4, 0, 1 + i % 300);

		assert_int_equal(ok, !gone[i / 4]);
		alive += ok;
	}
	assert_int_equal(s.extents, alive);
	assert_int_equal(s.evictions, 0);
	/* recovery grows the index the same way */
	reopen(f);
	get_stats(f, &s);
	assert_int_equal(s.extents, alive);
	for (i = 0; i < n; i += 7)
		assert_int_equal(check(f->st, 1 + i / 4, i % 4, 0,
				       1 + i % 300), !gone[i / 4]);
	/* and a whole-region eviction drops its records from both parts */
	assert_int_equal(st_evict(f->st, 3), 3);
	get_stats(f, &s);
	alive = 0;
	for (i = 0; i < n; i++)
		alive += check(f->st, 1 + i / 4, i % 4, 0, 1 + i % 300);
	assert_int_equal(s.extents, alive);
	free(gone);
}

/* Restarts go on appending to the region they left open. */
static void test_resume_region(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_key k = key_of(3);
	uint32_t round, i;
	int status;
	pid_t pid;

	open_store(f);
	for (round = 0; round < 40; round++) {
		for (i = 0; i < 5; i++)
			assert_int_equal(insert(f, 1 + round * 5 + i, 0, 0,
						1500 + round * 5 + i), 0);
		if (round == 20)
			assert_int_equal(st_invalidate(f->st, &k, 0, 0,
						       ST_INVAL_WRITE), 1);
		reopen(f);
	}
	get_stats(f, &s);
	assert_int_not_equal(f->st->open, ST_NIL);
	/* 200 extents of ~2 KB: one region, not one per restart */
	assert_int_equal(s.regions_used, 2);
	assert_int_equal(s.evictions, 0);
	assert_int_equal(s.extents, 199);
	for (i = 0; i < 200; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, 1500 + i), i != 2);

	/* a crash after resuming: what was committed is still there */
	st_close(f->st);
	f->st = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		open_store(f);
		for (i = 0; i < 30; i++)
			if (insert(f, 500 + i, 0, 0, 700))
				_exit(2);
		if (st_commit(f->st))
			_exit(3);
		for (i = 30; i < 60; i++)
			if (insert(f, 500 + i, 0, 0, 700))
				_exit(4);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	open_store(f);
	for (i = 0; i < 60; i++) {
		int ok = check(f->st, 500 + i, 0, 0, 700);

		if (i < 30)
			assert_int_equal(ok, 1);
	}
	for (i = 0; i < 200; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, 1500 + i), i != 2);
	/* and appending again after that crash works */
	for (i = 0; i < 30; i++)
		assert_int_equal(insert(f, 800 + i, 0, 0, 700), 0);
	reopen(f);
	for (i = 0; i < 30; i++)
		assert_int_equal(check(f->st, 800 + i, 0, 0, 700), 1);
}

/* A child inserts and dies without closing: committed extents survive. */
static void test_crash(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint32_t i, found = 0;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		open_store(f);
		for (i = 0; i < 200; i++)
			if (insert(f, 1 + i, 0, 0, 3000 + i))
				_exit(2);
		if (st_commit(f->st))
			_exit(3);
		for (i = 200; i < 260; i++)
			if (insert(f, 1 + i, 0, 0, 3000 + i))
				_exit(4);
		_exit(0);	/* like kill -9: no commit, no close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	open_store(f);
	for (i = 0; i < 260; i++) {
		int ok = check(f->st, 1 + i, 0, 0, 3000 + i);

		if (i < 200)
			assert_int_equal(ok, 1);
		found += ok;
	}
	/* region seals committed some of the rest: never less */
	assert_true(found >= 200);
	get_stats(f, &s);
	assert_int_equal(s.extents_recovered, found);
}

static void test_evict_fifo(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint32_t i, n = 400, len = 20000, present = 0;

	open_store(f);
	/* 8 MB into a 4 MB store: the oldest go first */
	for (i = 0; i < n; i++)
		assert_int_equal(insert(f, 1 + i, 0, 0, len), 0);
	get_stats(f, &s);
	assert_true(s.evictions > 0);
	assert_true(s.evicted_extents > 0);
	assert_int_equal(s.regions, CAP / RSIZE);
	assert_true(s.regions_used <= s.regions);
	assert_true(s.bytes <= CAP);
	assert_int_equal(check(f->st, 1, 0, 0, len), 0);
	assert_int_equal(check(f->st, n, 0, 0, len), 1);
	for (i = 0; i < n; i++) {
		int ok = check(f->st, 1 + i, 0, 0, len);

		/* FIFO: once present, everything after is present */
		if (present)
			assert_int_equal(ok, 1);
		present += ok;
	}
	assert_int_equal(present, s.extents);
	assert_true(present > n / 3);

	/* explicit eviction of the two oldest regions */
	assert_int_equal(st_evict(f->st, 2), 2);
	get_stats(f, &s);
	assert_true(s.extents < present);
	/* evicted regions stay evicted after a restart */
	present = s.extents;
	reopen(f);
	get_stats(f, &s);
	assert_int_equal(s.extents, present);
}

/*
 * st_insert_cost bounds what an insert and the commit it owes write:
 * records of every size, commits now and then, regions sealed, opened
 * and recycled; and the uncommitted count follows.
 */
static void test_insert_cost(void **state)
{
	static const uint32_t lens[] = { 4096, 20000, 3000, EXT, 512, 4096 };
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint64_t before, cost, exact = 0;
	uint32_t i, n = 600, pending = 0;

	open_store(f);
	for (i = 0; i < n; i++) {
		uint32_t len = lens[i % 6];

		get_stats(f, &s);
		assert_int_equal(s.uncommitted, pending);
		before = s.bytes_written;
		cost = st_insert_cost(f->st, len);
		assert_true(cost >= len);
		assert_int_equal(insert(f, 1 + i, 0, 0, len), 0);
		pending++;
		if (i % 7 == 6) {
			assert_int_equal(st_commit(f->st), 0);
			pending = 0;
		}
		get_stats(f, &s);
		/* a region sealed commits what it held */
		if (pending)
			assert_in_range(s.uncommitted, 1, pending);
		else
			assert_int_equal(s.uncommitted, 0);
		pending = (uint32_t)s.uncommitted;
		/* without the commit, an insert writes no more */
		assert_true(s.bytes_written - before <= cost);
		exact += s.bytes_written - before + 2 * ST_BLOCK >= cost;
	}
	get_stats(f, &s);
	assert_true(s.evictions > 0);
	/* a bound, not a guess: most are within two summary blocks */
	assert_true(exact > n / 2);
}

static int count_iter(void *arg, const struct hotfs_extent_info *x)
{
	uint64_t *sum = arg;

	sum[0]++;
	sum[1] += x->len;
	return 0;
}

/* Evicting regions of one big file: counts and contents stay right. */
static void test_evict_big_file(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint32_t e, n = 900, found = 0, first = n;
	uint64_t sum[2] = { 0, 0 };

	open_store(f);
	for (e = 0; e < n; e++)
		assert_int_equal(insert(f, 77, e, 0, 9000), 0);
	get_stats(f, &s);
	assert_true(s.evicted_extents > 0);
	for (e = 0; e < n; e++) {
		int ok = check(f->st, 77, e, 0, 9000);

		if (ok && first == n)
			first = e;
		if (first < n)
			assert_int_equal(ok, 1);
		found += ok;
	}
	assert_int_equal(found, s.extents);
	assert_int_equal(found + s.evicted_extents, n);
	assert_int_equal(st_iterate(f->st, count_iter, sum), 0);
	assert_int_equal(sum[0], found);
	/* and the whole file still goes in one call */
	{
		struct hotfs_key k = key_of(77);

		assert_int_equal(st_invalidate(f->st, &k, 0, 0,
					       ST_INVAL_WRITE), found);
	}
	get_stats(f, &s);
	assert_int_equal(s.extents, 0);
	assert_int_equal(s.bytes, 0);
}

static void test_evict_reinsert_hot(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint32_t i, len = 9000;

	open_store(f);
	for (i = 0; i < 20; i++)
		assert_int_equal(insert(f, 1 + i, 0, 0, len), 0);
	/* make 1..5 hot */
	for (i = 0; i < 5; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, len), 1);
	/* push them through the whole FIFO several times, touching them */
	for (i = 0; i < 1500; i++) {
		assert_int_equal(insert(f, 100 + i, 0, 0, len), 0);
		if (i % 100 == 0) {
			uint32_t j;

			for (j = 0; j < 5; j++)
				check(f->st, 1 + j, 0, 0, len);
		}
	}
	for (i = 0; i < 5; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, len), 1);
	for (i = 5; i < 20; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, len), 0);
	get_stats(f, &s);
	assert_true(s.reinserted >= 5);
	/* and the copies are durable */
	reopen(f);
	for (i = 0; i < 5; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, len), 1);
}

/*
 * A hot extent damaged on the device is not copied forward when its region
 * is recycled: the copy is checked, and the damage counted.
 */
static void test_evict_damaged_keeper(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_key k = key_of(1);
	struct hotfs_stamp t = stamp_of(1, 0);
	struct hotfs_loc loc;
	uint32_t i, len = 9000;
	uint8_t junk[512];

	open_store(f);
	for (i = 0; i < 3; i++)
		assert_int_equal(insert(f, 1 + i, 0, 0, len), 0);
	for (i = 0; i < 3; i++)		/* all hot */
		assert_int_equal(check(f->st, 1 + i, 0, 0, len), 1);
	assert_int_equal(st_lookup(f->st, &k, 0, &t, &loc), 0);
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(pwrite(loc.fd, junk, sizeof(junk), loc.off + 2048),
			 (ssize_t)sizeof(junk));
	for (i = 0; i < 600; i++)
		assert_int_equal(insert(f, 100 + i, 0, 0, len), 0);
	get_stats(f, &s);
	assert_true(s.reinserted >= 2);
	assert_int_equal(s.invalidations[ST_INVAL_CSUM], 1);
	assert_int_equal(check(f->st, 1, 0, 0, len), 0);
	for (i = 1; i < 3; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, len), 1);
}

/* An extent copied forward keeps the stamp st_restamp gave it. */
static void test_reinsert_restamped(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(1);
	struct hotfs_stamp old = stamp_of(1, 0), now = old;
	uint8_t *want = malloc(9000), *got = malloc(9000);
	struct hotfs_store_stats s;
	uint32_t i;

	now.mtime_ns += 1000;
	now.ctime_ns += 1000;
	open_store(f);
	assert_int_equal(insert(f, 1, 0, 0, 9000), 0);
	assert_int_equal(insert(f, 1, 1, 0, 9000), 0);
	assert_int_equal(check(f->st, 1, 0, 0, 9000), 1);	/* hot */
	/* a write elsewhere in the file: both extents carried over */
	assert_int_equal(st_restamp(f->st, &k, &old, &now, 1ull << 30,
				    1), 2);
	fill(want, 9000, 1, 0, 0);
	for (i = 0; i < 1200; i++) {
		assert_int_equal(insert(f, 100 + i, 0, 0, 9000), 0);
		if (i % 20 == 0)
			assert_int_equal(st_read(f->st, &k, 0, &now, 0, got,
						 9000), 9000);
	}
	get_stats(f, &s);
	assert_true(s.reinserted > 0);
	assert_int_equal(st_read(f->st, &k, 0, &now, 0, got, 9000), 9000);
	assert_memory_equal(got, want, 9000);
	free(want);
	free(got);
}

static bool keep_odd(void *arg, const struct hotfs_extent_info *x)
{
	unsigned *calls = arg;

	(*calls)++;
	return x->key.ino % 2;
}


static void test_keep_callback_iterate(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	unsigned calls = 0;
	uint64_t sum[2] = { 0, 0 };
	uint32_t i;

	f->p.keep = keep_odd;
	f->p.keep_arg = &calls;
	open_store(f);
	for (i = 0; i < 8; i++)
		assert_int_equal(insert(f, 1 + i, 0, 0, 1000), 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(insert(f, 1000 + 2 * i, 0, 0, 9000), 0);
	assert_true(calls > 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(check(f->st, 1 + i, 0, 0, 1000), (1 + i) % 2);
	get_stats(f, &s);
	assert_int_equal(st_iterate(f->st, count_iter, sum), 0);
	assert_int_equal(sum[0], s.extents);
	assert_int_equal(sum[1], s.bytes);
}

/*
 * Evicting a region whose summary cannot be read (zeroed while the store
 * was open): its records are found by a walk of the whole index, and
 * exactly they go, the other regions' records of the same files stay.
 */
static void test_evict_unreadable_summary(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_loc loc;
	uint32_t e, n, r0 = 0, in0 = 0, *reg;
	uint8_t z[ST_BLOCK];

	f->p.capacity = 16 * RSIZE;	/* no recycling here */
	open_store(f);
	for (e = 0;; e++) {
		assert_int_equal(insert(f, 1 + e % 7, e / 7, 0, 9000), 0);
		get_stats(f, &s);
		if (s.regions_used >= 3)
			break;
	}
	n = e + 1;
	assert_int_equal(st_commit(f->st), 0);
	reg = calloc(n, sizeof(*reg));
	for (e = 0; e < n; e++) {
		struct hotfs_key k = key_of(1 + e % 7);
		struct hotfs_stamp t = stamp_of(1 + e % 7, 0);

		assert_int_equal(st_lookup(f->st, &k, e / 7, &t, &loc), 0);
		reg[e] = loc.region;
		if (e == 0)
			r0 = loc.region;
		in0 += loc.region == r0;
	}
	assert_true(in0 > 0 && in0 < n);
	memset(z, 0, sizeof(z));
	assert_int_equal(pwrite(st_data_fd(f->st), z, sizeof(z),
				(uint64_t)(r0 + 1) * RSIZE - ST_BLOCK),
			 ST_BLOCK);
	assert_int_equal(st_evict(f->st, 1), 1);
	get_stats(f, &s);
	assert_int_equal(s.evicted_extents, in0);
	assert_int_equal(s.extents, n - in0);
	for (e = 0; e < n; e++)
		assert_int_equal(check(f->st, 1 + e % 7, e / 7, 0, 9000),
				 reg[e] != r0);
	free(reg);
}

struct room {
	unsigned no_room, no_room_hot;
};

static bool keep_hot_count(void *arg, const struct hotfs_extent_info *x)
{
	struct room *r = arg;

	if (x->no_room) {
		r->no_room++;
		r->no_room_hot += x->hot;
		return false;
	}
	return x->hot;
}

static int hot_of(void *arg, const struct hotfs_extent_info *x)
{
	int *hot = arg;

	if (x->key.ino == 5000)
		*hot = x->hot;
	return 0;
}

/*
 * Region recycling shows the records past the room for keepers to the
 * keep function as no_room when it declined none of the region (all in
 * use: the policy learns that what goes is hot), and not otherwise.
 * st_filling, st_room, st_holds (a peek: the record stays cold).
 */
static void test_no_room_and_peeks(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct room r = { 0, 0 };
	struct hotfs_key k = key_of(5000);
	uint32_t i, len = 9000, n, ev;
	int hot = -1;

	f->p.keep = keep_hot_count;
	f->p.keep_arg = &r;
	open_store(f);
	assert_true(st_filling(f->st));
	assert_int_equal(st_room(f->st), CAP / RSIZE * (uint64_t)RSIZE);
	get_stats(f, &s);
	assert_true(s.filling);
	/* cold records through the whole store: recycling declines them */
	for (i = 0; !s.evictions || i < 2 * CAP / len; i++) {
		assert_int_equal(insert(f, 1 + i, 0, 0, len), 0);
		get_stats(f, &s);
		assert_int_equal(st_room(f->st),
				 (s.regions - s.regions_used) * RSIZE);
	}
	n = i;
	assert_true(s.evictions > 0);
	assert_false(st_filling(f->st));
	assert_false(s.filling);
	assert_int_equal(st_room(f->st), 0);
	assert_int_equal(r.no_room, 0);
	/* every live record looked up: the next recycling declines none,
	 * cannot keep them all (5/8 of a region at most) and shows the
	 * rest as no_room */
	for (i = 0; i < n; i++)
		check(f->st, 1 + i, 0, 0, len);
	ev = (uint32_t)s.evictions;
	for (i = 0; s.evictions == ev; i++) {
		assert_int_equal(insert(f, 100000 + i, 0, 0, len), 0);
		get_stats(f, &s);
	}
	assert_true(r.no_room > 0);
	assert_int_equal(r.no_room_hot, r.no_room);
	/* a peek does not count as a look-up */
	assert_false(st_holds(f->st, &k, 0));
	assert_int_equal(insert(f, 5000, 0, 0, len), 0);
	assert_true(st_holds(f->st, &k, 0));
	assert_false(st_holds(f->st, &k, 1));
	assert_int_equal(st_iterate(f->st, hot_of, &hot), 0);
	assert_int_equal(hot, 0);
	assert_int_equal(check(f->st, 5000, 0, 0, len), 1);
	assert_int_equal(st_iterate(f->st, hot_of, &hot), 0);
	assert_int_equal(hot, 1);
}

/* Read an extent from its location after its region was recycled. */
static void test_stale_location(void **state)
{
	struct fx *f = *state;
	struct hotfs_key k = key_of(1);
	struct hotfs_stamp s = stamp_of(1, 0);
	struct hotfs_store_stats st;
	struct hotfs_loc loc;
	uint8_t *buf = malloc(30000);
	uint32_t i;

	open_store(f);
	assert_int_equal(insert(f, 1, 0, 0, 30000), 0);
	assert_int_equal(st_lookup(f->st, &k, 0, &s, &loc), 0);
	for (i = 0; i < 400; i++)
		assert_int_equal(insert(f, 2 + i, 0, 0, 30000), 0);
	get_stats(f, &st);
	assert_true(st.evictions > 0);
	assert_int_equal(pread(loc.fd, buf, loc.len, loc.off), loc.len);
	assert_int_equal(st_verify(f->st, &loc, 0, buf, loc.len, NULL),
			 -ESTALE);
	get_stats(f, &st);
	assert_int_equal(st.stale_reads, 1);
	assert_int_equal(st.invalidations[ST_INVAL_CSUM], 0);
	free(buf);
}

/* ---- damage: torn writes, bit flips, truncation ---------------------- */

struct expect {
	uint64_t ino;
	uint32_t extno, ver, len;
};

static void copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out;
	char buf[65536];
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, n), n);
	close(in);
	close(out);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat sb;
	uint8_t *p;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	p = malloc(sb.st_size + 1);
	assert_int_equal(pread(fd, p, sb.st_size, 0), sb.st_size);
	close(fd);
	*len = sb.st_size;
	return p;
}

static void spew(const char *path, const uint8_t *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, len, 0), (ssize_t)len);
	close(fd);
}

static void path_in(const struct fx *f, const char *name, char *out,
		    size_t len)
{
	snprintf(out, len, "%s/%s", f->cache, name);
}

/* Open what is in the cachedir now; check every expected extent. */
static unsigned verify_all(struct fx *f, const struct expect *e, unsigned n,
			   unsigned must)
{
	unsigned i, found = 0;
	int err;

	err = st_open(f->cache, &f->p, &f->st, f->err, sizeof(f->err));
	assert_int_equal(err, 0);
	for (i = 0; i < n; i++) {
		int ok = check(f->st, e[i].ino, e[i].extno, e[i].ver,
			       e[i].len);

		if (i < must)
			assert_int_equal(ok, 1);
		if (ok && e[i].len > 8192)
			ok = check_range(f->st, e[i].ino, e[i].extno,
					 e[i].ver, e[i].len, 4096, 4096);
		found += ok;
	}
	st_close(f->st);
	f->st = NULL;
	return found;
}

static void test_torn_last_write(void **state)
{
	struct fx *f = *state;
	struct expect e[ST_EPB + 40];
	char data[512];
	uint8_t *pre, *post, *img;
	size_t plen, qlen, i, ntear = 0;
	size_t *chg, nchg = 0, t;
	unsigned n = 0, k, full = 0, partial = 0;

	path_in(f, "data", data, sizeof(data));
	open_store(f);
	/* batch A fills exactly one summary block: it is never rewritten */
	for (k = 0; k < ST_EPB; k++, n++) {
		e[n] = (struct expect){ 1 + k, 0, 0, 1 + rnd() % 3000 };
		assert_int_equal(insert(f, e[n].ino, 0, 0, e[n].len), 0);
	}
	assert_int_equal(st_commit(f->st), 0);
	pre = slurp(data, &plen);
	/* batch B: the last write, to be torn */
	for (k = 0; k < 40; k++, n++) {
		e[n] = (struct expect){ 500 + k, 1, 0,
					1 + rnd() % (k % 4 ? 5000 : EXT) };
		assert_int_equal(insert(f, e[n].ino, 1, 0, e[n].len), 0);
	}
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;
	post = slurp(data, &qlen);
	assert_true(qlen >= plen);
	pre = realloc(pre, qlen);
	memset(pre + plen, 0, qlen - plen);

	/* the bytes the last write changed, in file order */
	chg = malloc(qlen * sizeof(*chg));
	for (i = 0; i < qlen; i++)
		if (pre[i] != post[i])
			chg[nchg++] = i;
	assert_true(nchg > 4096);
	img = malloc(qlen);
	/* tear after every 4 KiB of it, and at random bytes */
	for (t = 0; t < nchg + 4096 + 60 * 4096; t += 4096) {
		size_t cut = t <= nchg ? t : t < nchg + 4096 ? nchg :
			rnd() % nchg;
		bool garbage = ntear % 3 == 2;
		unsigned got;

		memcpy(img, pre, qlen);
		for (i = 0; i < cut; i++)
			img[chg[i]] = post[chg[i]];
		if (garbage)
			for (i = cut; i < nchg && i < cut + 700; i++)
				img[chg[i]] = rnd();
		spew(data, img, qlen);
		got = verify_all(f, e, n, ST_EPB);
		full += got == n;
		partial += got > ST_EPB && got < n;
		ntear++;
	}
	/* and the intact write recovers everything */
	spew(data, post, qlen);
	assert_int_equal(verify_all(f, e, n, n), n);
	assert_true(ntear > 60);
	assert_true(full >= 1);
	print_message("torn at %zu points: %u complete, %u partial\n", ntear,
		      full, partial);
	free(pre);
	free(post);
	free(img);
	free(chg);
}

static void test_bit_flips(void **state)
{
	struct fx *f = *state;
	struct expect e[120];
	char data[512], sbp[512], keep_data[512];
	uint8_t *orig, *img;
	size_t len;
	unsigned n = 0, k, round, caught = 0;
	struct hotfs_store_stats s;

	path_in(f, "data", data, sizeof(data));
	path_in(f, "superblock", sbp, sizeof(sbp));
	open_store(f);
	for (k = 0; k < 120; k++, n++) {
		e[n] = (struct expect){ 1 + k, k % 2, 0,
					1 + rnd() % (k % 5 ? 12000 : EXT) };
		assert_int_equal(insert(f, e[n].ino, e[n].extno, 0, e[n].len),
				 0);
	}
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;
	snprintf(keep_data, sizeof(keep_data), "%s/data.orig", f->dir);
	copy_file(data, keep_data);
	orig = slurp(data, &len);
	img = malloc(len);
	for (round = 0; round < 150; round++) {
		memcpy(img, orig, len);
		if (round % 3 == 0) {
			/* zero a range */
			size_t o = rnd() % len, l = 1 + rnd() % 8192;

			memset(img + o, 0, o + l > len ? len - o : l);
		} else {
			unsigned flips = 1 + rnd() % 8;

			while (flips--) {
				/* half of them in the summary areas */
				size_t o = rnd() % len;

				if (rnd() % 2)
					o = (o / RSIZE + 1) * RSIZE - 1 -
						rnd() % 8192;
				if (o >= len)
					o = len - 1;
				img[o] ^= 1u << (rnd() % 8);
			}
		}
		spew(data, img, len);
		if (verify_all(f, e, n, 0) < n)
			caught++;
	}
	assert_true(caught > 0);

	/* a damaged superblock refuses to open, reset recovers */
	copy_file(keep_data, data);
	{
		size_t sl;
		uint8_t *sb = slurp(sbp, &sl);

		sb[100] ^= 4;
		spew(sbp, sb, sl);
		free(sb);
	}
	assert_int_equal(st_open(f->cache, &f->p, &f->st, f->err,
				 sizeof(f->err)), -EUCLEAN);
	assert_non_null(strstr(f->err, "damaged"));
	f->p.reset = true;
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.extents, 0);
	free(orig);
	free(img);
}

/* An I/O error reported by the read path turns the store off. */
static void test_io_error_off(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_key k = key_of(5);
	struct hotfs_stamp t = stamp_of(5, 0);
	struct hotfs_loc loc;

	open_store(f);
	assert_int_equal(insert(f, 5, 0, 0, 3000), 0);
	assert_int_equal(st_lookup(f->st, &k, 0, &t, &loc), 0);
	st_report_io_error(f->st, &loc, -EINTR);
	get_stats(f, &s);
	assert_int_equal(s.state, ST_OK);
	assert_int_equal(st_state(f->st), ST_OK);
	st_report_io_error(f->st, &loc, -EIO);
	get_stats(f, &s);
	assert_int_equal(s.state, ST_OFF);
	assert_int_equal(st_state(f->st), ST_OFF);
	assert_non_null(strstr(s.reason, "Input/output error"));
	assert_int_equal(st_lookup(f->st, &k, 0, &t, &loc), -ENOENT);
	assert_int_equal(insert(f, 6, 0, 0, 3000), -EROFS);
	/* off stays off: tick does not revive a failing device */
	assert_int_equal(st_tick(f->st), 0);
	get_stats(f, &s);
	assert_int_equal(s.state, ST_OFF);
	/* the next start finds the committed data again */
	reopen(f);
	assert_int_equal(check(f->st, 5, 0, 0, 3000), 1);
}

static void test_live_corruption(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_loc loc;
	struct hotfs_key k = key_of(5);
	struct hotfs_stamp t = stamp_of(5, 0);
	uint8_t z[512];

	open_store(f);
	assert_int_equal(insert(f, 5, 0, 0, 3000), 0);
	assert_int_equal(st_lookup(f->st, &k, 0, &t, &loc), 0);
	memset(z, 0, sizeof(z));
	assert_int_equal(pwrite(loc.fd, z, sizeof(z), loc.off + 1024), 512);
	assert_int_equal(check(f->st, 5, 0, 0, 3000), 0);
	get_stats(f, &s);
	assert_int_equal(s.invalidations[ST_INVAL_CSUM], 1);
	assert_int_equal(s.extents, 0);
	assert_int_equal(st_lookup(f->st, &k, 0, &t, &loc), -ENOENT);
}

static void test_truncated_data(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	char data[512];
	uint32_t i, n = 200, len = 9000, found = 0;
	struct stat sb;

	path_in(f, "data", data, sizeof(data));
	open_store(f);
	for (i = 0; i < n; i++)
		assert_int_equal(insert(f, 1 + i, 0, 0, len), 0);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;
	assert_int_equal(stat(data, &sb), 0);
	assert_int_equal(truncate(data, sb.st_size - RSIZE - 12345), 0);
	open_store(f);
	for (i = 0; i < n; i++)
		found += check(f->st, 1 + i, 0, 0, len);
	get_stats(f, &s);
	assert_true(found > 0 && found < n);
	assert_int_equal(s.extents, found);
	assert_true(s.regions_dropped >= 1);
	/* and it keeps working */
	assert_int_equal(insert(f, 9999, 0, 0, len), 0);
	reopen(f);
	assert_int_equal(check(f->st, 9999, 0, 0, len), 1);
}

/*
 * A region's last block that lost its summary's magic but is not zeros
 * (a free region's) is damage, counted like a failed checksum; a block
 * zeroed whole looks like a free region and is not.
 */
static void test_summary_magic_damaged(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	char data[512];
	uint8_t *orig, *img;
	size_t len;
	uint32_t i, n = 60, found;

	path_in(f, "data", data, sizeof(data));
	open_store(f);
	for (i = 0; i < n; i++)
		assert_int_equal(insert(f, 1 + i, 0, 0, 9000), 0);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;
	orig = slurp(data, &len);
	assert_true(len >= 2 * RSIZE);
	img = malloc(len);

	/* region 0 (sealed): a bit of its magic flipped */
	memcpy(img, orig, len);
	img[RSIZE - ST_BLOCK] ^= 0x10;
	spew(data, img, len);
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.regions_dropped, 1);
	for (i = 0, found = 0; i < n; i++)
		found += check(f->st, 1 + i, 0, 0, 9000);
	assert_true(found > 0 && found < n);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;

	/* the same block zeroed whole: a free region, nothing counted */
	memcpy(img, orig, len);
	memset(img + RSIZE - ST_BLOCK, 0, ST_BLOCK);
	spew(data, img, len);
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.regions_dropped, 0);
	assert_int_equal(s.extents, found);
	free(orig);
	free(img);
}

/* ---- the cachedir ----------------------------------------------------- */

static void test_two_opens(void **state)
{
	struct fx *f = *state;
	struct hotfs_store *b = NULL;
	int err;

	open_store(f);
	err = st_open(f->cache, &f->p, &b, f->err, sizeof(f->err));
	assert_true(err == -EBUSY);
	assert_null(b);
	assert_non_null(strstr(f->err, "in use"));
	/* from another process, too */
	if (fork() == 0)
		_exit(st_open(f->cache, &f->p, &b, NULL, 0) == -EBUSY ? 0 : 1);
	{
		int status;

		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* nor may a reset empty a store in use */
	f->p.reset = true;
	assert_int_equal(st_open(f->cache, &f->p, &b, NULL, 0), -EBUSY);
	f->p.reset = false;
	/* nor a second store after the lock file was removed */
	{
		char lock[512];

		path_in(f, "lock", lock, sizeof(lock));
		assert_int_equal(unlink(lock), 0);
		assert_int_equal(st_open(f->cache, &f->p, &b, NULL, 0),
				 -EBUSY);
		assert_null(b);
	}
	/* the first store still works; after close the cachedir is free */
	assert_int_equal(insert(f, 1, 0, 0, 100), 0);
	reopen(f);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 1);
}

static void test_identity_and_reset(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	static const char other[] = "/srv/other dev=2050 ino=2";
	struct stat sb;
	char path[512];
	static const char *const names[] = { "lock", "superblock", "data" };
	unsigned i;

	open_store(f);
	assert_int_equal(insert(f, 1, 0, 0, 100), 0);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;
	for (i = 0; i < 3; i++) {
		path_in(f, names[i], path, sizeof(path));
		assert_int_equal(stat(path, &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0600);
	}

	f->p.ident = other;
	f->p.ident_len = sizeof(other) - 1;
	assert_int_equal(st_open(f->cache, &f->p, &f->st, f->err,
				 sizeof(f->err)), -EEXIST);
	assert_null(f->st);
	assert_non_null(strstr(f->err, "another source"));
	/* the refused open left the store alone */
	f->p.ident = ident;
	f->p.ident_len = sizeof(ident) - 1;
	open_store(f);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 1);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;

	/* reset: empty, and bound to the new source */
	f->p.ident = other;
	f->p.ident_len = sizeof(other) - 1;
	f->p.reset = true;
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.extents, 0);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 0);
	assert_int_equal(insert(f, 2, 0, 0, 100), 0);
	f->p.reset = false;
	reopen(f);
	assert_int_equal(check(f->st, 2, 0, 0, 100), 1);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 0);

	/* a different extent size empties the store */
	f->p.extent = EXT / 2;
	reopen(f);
	get_stats(f, &s);
	assert_int_equal(s.extents, 0);
}

static void test_foreign_files(void **state)
{
	struct fx *f = *state;
	char path[512];
	int fd;

	/* a 'data' file with no superblock is not ours */
	path_in(f, "data", path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "precious", 8), 8);
	close(fd);
	assert_int_equal(st_open(f->cache, &f->p, &f->st, f->err,
				 sizeof(f->err)), -EEXIST);
	/* nor is a superblock that is not a hotfs one */
	unlink(path);
	path_in(f, "superblock", path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, path, sizeof(path)), sizeof(path));
	close(fd);
	assert_int_equal(st_open(f->cache, &f->p, &f->st, f->err,
				 sizeof(f->err)), -EEXIST);
	/* parameters */
	f->p.extent = 3000;
	f->p.reset = true;
	assert_int_equal(st_open(f->cache, &f->p, &f->st, f->err,
				 sizeof(f->err)), -EINVAL);
	f->p.extent = EXT;
	f->p.capacity = RSIZE;
	assert_int_equal(st_open(f->cache, &f->p, &f->st, f->err,
				 sizeof(f->err)), -EINVAL);
	f->p.capacity = CAP;
	open_store(f);
}

/* Everything in the cachedir: world-readable, as a careless admin or an
 * older hotfs left it. */
static void make_public(struct fx *f)
{
	static const char *const names[] = { "lock", "superblock", "data",
					     "superblock.tmp" };
	char path[512];
	unsigned i;

	assert_int_equal(chmod(f->cache, 0755), 0);
	for (i = 0; i < 4; i++) {
		path_in(f, names[i], path, sizeof(path));
		if (i == 3)
			close(open(path, O_WRONLY | O_CREAT, 0644));
		assert_int_equal(chmod(path, 0644), 0);
	}
}

static void assert_private(struct fx *f)
{
	static const char *const names[] = { "lock", "superblock", "data",
					     "superblock.tmp" };
	char path[512];
	struct stat sb;
	unsigned i;

	assert_int_equal(stat(f->cache, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700);
	assert_int_equal(sb.st_uid, geteuid());
	for (i = 0; i < 4; i++) {
		path_in(f, names[i], path, sizeof(path));
		if (stat(path, &sb) != 0) {
			/* the tmp is renamed over the superblock */
			assert_true(i == 3 && errno == ENOENT);
			continue;
		}
		assert_int_equal(sb.st_mode & 07777, 0600);
	}
}

/* Whatever modes the cachedir and its files had, an open (fresh, reset,
 * or reusing the store) leaves them 0700 and 0600. */
static void test_private_modes(void **state)
{
	struct fx *f = *state;

	/* fresh: a 0755 cachedir */
	assert_int_equal(chmod(f->cache, 0755), 0);
	open_store(f);
	assert_int_equal(insert(f, 1, 0, 0, 100), 0);
	assert_private(f);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;

	/* reused */
	make_public(f);
	open_store(f);
	assert_private(f);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 1);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;

	/* reset */
	make_public(f);
	f->p.reset = true;
	open_store(f);
	assert_private(f);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 0);
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;

	/* refused (another source): the cachedir is private all the same */
	make_public(f);
	f->p.reset = false;
	f->p.ident = "/srv/other";
	f->p.ident_len = strlen(f->p.ident);
	assert_int_equal(st_open(f->cache, &f->p, &f->st, f->err,
				 sizeof(f->err)), -EEXIST);
	{
		struct stat sb;

		assert_int_equal(stat(f->cache, &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0700);
	}
}

/* The cachedir deleted, replaced, or its data file replaced while open:
 * the next tick but one second turns the store off, with the reason. */
static void test_cachedir_replaced(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	char moved[300], path[512];
	int i, fd;

	for (i = 0; i < 3; i++) {
		open_store(f);
		assert_int_equal(insert(f, 1, 0, 0, 100), 0);
		assert_int_equal(st_tick(f->st), 0);
		get_stats(f, &s);
		assert_int_equal(s.state, ST_OK);
		snprintf(moved, sizeof(moved), "%s.moved", f->cache);
		if (i == 0) {		/* moved away: deleted for the path */
			assert_int_equal(rename(f->cache, moved), 0);
		} else if (i == 1) {	/* replaced by another directory */
			assert_int_equal(rename(f->cache, moved), 0);
			assert_int_equal(mkdir(f->cache, 0700), 0);
		} else {		/* the data file replaced */
			path_in(f, "data", path, sizeof(path));
			assert_int_equal(unlink(path), 0);
			fd = open(path, O_WRONLY | O_CREAT, 0600);
			assert_true(fd >= 0);
			close(fd);
		}
		/* within about a second (ticks look once a second) */
		for (int n = 0; n < 30; n++) {
			assert_int_equal(st_tick(f->st), 0);
			get_stats(f, &s);
			if (s.state == ST_OFF)
				break;
			usleep(100000);
		}
		assert_int_equal(s.state, ST_OFF);
		assert_non_null(strstr(s.reason, f->cache));
		assert_non_null(strstr(s.reason, i == 0 ? "deleted" :
				       i == 1 ? "replaced" : "data file"));
		/* readers still get the right bytes, or a miss */
		assert_int_equal(check(f->st, 1, 0, 0, 100), 0);
		st_close(f->st);
		f->st = NULL;
		/* back in place for the next round */
		if (i == 1)	/* the replacement is still empty */
			assert_int_equal(rmdir(f->cache), 0);
		if (i < 2)
			assert_int_equal(rename(moved, f->cache), 0);
		f->p.reset = true;
	}
}

static void test_size_helper(void **state)
{
	struct fx *f = *state;
	struct statvfs vfs;
	uint64_t b;

	assert_int_equal(statvfs(f->cache, &vfs), 0);
	assert_int_equal(st_size_from_fs(f->cache, 50, false, &b), 0);
	assert_true(b <= (uint64_t)vfs.f_blocks * vfs.f_frsize / 2);
	assert_true(b + vfs.f_frsize * 2 >=
		    (uint64_t)vfs.f_blocks * vfs.f_frsize / 2);
	assert_int_equal(st_size_from_fs(f->cache, 90, true, &b), 0);
	assert_int_equal(st_size_from_fs(f->cache, 0, true, &b), -EINVAL);
	assert_int_equal(st_size_from_fs("/nonexistent/x", 5, true, &b),
			 -ENOENT);
	assert_string_equal(st_state_name(ST_READONLY), "read-only");
}

/* A smaller cache size on reopen: regions beyond it go, the rest stays. */
static void test_shrink(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct stat sb;
	char data[512];
	uint32_t i, found = 0;

	open_store(f);
	for (i = 0; i < 150; i++)
		assert_int_equal(insert(f, 1 + i, 0, 0, 20000), 0);
	f->p.capacity = 4 * RSIZE;
	reopen(f);
	get_stats(f, &s);
	assert_int_equal(s.capacity, 4 * RSIZE);
	assert_int_equal(s.regions, 4);
	path_in(f, "data", data, sizeof(data));
	assert_int_equal(stat(data, &sb), 0);
	assert_true(sb.st_size <= 4 * RSIZE);
	for (i = 0; i < 150; i++)
		found += check(f->st, 1 + i, 0, 0, 20000);
	assert_int_equal(found, s.extents);
	assert_true(found > 0 && found < 150);
	/* and it works within its new size */
	for (i = 0; i < 100; i++)
		assert_int_equal(insert(f, 1000 + i, 0, 0, 20000), 0);
	get_stats(f, &s);
	assert_true(s.regions_used <= 4);
	assert_int_equal(check(f->st, 1099, 0, 0, 20000), 1);
}

/* Bytes of the data file on the disk (its punched regions not). */
static uint64_t data_on_disk(const struct fx *f)
{
	char data[512];
	struct stat sb;

	path_in(f, "data", data, sizeof(data));
	assert_int_equal(stat(data, &sb), 0);
	return (uint64_t)sb.st_blocks * 512;
}

/*
 * A reserve (st_set_reserve: the file grain's copies) takes whole
 * regions from the capacity at the next tick: the oldest go and their
 * space is punched out, inserts recycle within the rest (which the
 * next victim and the room say), and a lower reserve lets the store
 * grow again.
 */
static void test_reserve(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct hotfs_key k;
	uint64_t ev;
	uint32_t i, rec, len = 20000, n = 0;

	f->p.capacity = 8 * RSIZE;
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.regions, 8);
	/* full: every region used, the next insert recycles */
	while (st_next_victim(f->st, len, &k, &rec) == -ENOENT) {
		assert_true(n < 1000);
		assert_int_equal(insert(f, 1 + n++, 0, 0, len), 0);
	}
	get_stats(f, &s);
	assert_int_equal(s.regions_used, 8);
	assert_int_equal(s.evictions, 0);
	assert_int_equal(st_room(f->st), 0);
	assert_true(data_on_disk(f) >= 8ull * RSIZE);

	/* two regions and a byte: three regions, at the next tick */
	st_set_reserve(f->st, 2 * RSIZE + 1);
	get_stats(f, &s);
	assert_int_equal(s.regions_used, 8);
	assert_int_equal(st_tick(f->st), 0);
	get_stats(f, &s);
	assert_true(s.regions_used <= 5);
	assert_true(s.evictions >= 3);
	assert_true(data_on_disk(f) < 6ull * RSIZE);
	assert_int_equal(check(f->st, 1, 0, 0, len), 0);	/* oldest */
	assert_int_equal(check(f->st, n, 0, 0, len), 1);	/* newest */

	/* inserts go on, recycling: no growth into the reserve */
	ev = s.evictions;
	for (i = 0; i < 2 * n; i++)
		assert_int_equal(insert(f, 5000 + i, 0, 0, len), 0);
	get_stats(f, &s);
	assert_true(s.regions_used <= 5);
	assert_true(s.evictions > ev);
	assert_true(data_on_disk(f) < 6ull * RSIZE);
	assert_int_equal(check(f->st, 5000 + 2 * n - 1, 0, 0, len), 1);
	/* no room left to an insert: the next one names a victim (the
	 * open region filled first), and the room is none */
	for (i = 0; st_next_victim(f->st, len, &k, &rec) == -ENOENT; i++) {
		assert_true(i < n);
		assert_int_equal(insert(f, 9000 + i, 0, 0, len), 0);
	}
	assert_int_equal(st_room(f->st), 0);
	assert_true(st_insert_cost(f->st, len) >= RSIZE);	/* a region */

	/* more than the capacity: one region is left, and works */
	st_set_reserve(f->st, 100 * RSIZE);
	assert_int_equal(st_tick(f->st), 0);
	get_stats(f, &s);
	assert_true(s.regions_used <= 1);
	for (i = 0; i < n; i++)
		assert_int_equal(insert(f, 20000 + i, 0, 0, len), 0);
	get_stats(f, &s);
	assert_true(s.regions_used <= 1);
	assert_int_equal(check(f->st, 20000 + n - 1, 0, 0, len), 1);

	/* lowered: the store grows back to its capacity */
	st_set_reserve(f->st, 0);
	assert_true(st_room(f->st) >= 7ull * RSIZE);
	for (i = 0; i < 2 * n; i++)
		assert_int_equal(insert(f, 30000 + i, 0, 0, len), 0);
	get_stats(f, &s);
	assert_int_equal(s.regions_used, 8);
	assert_true(data_on_disk(f) >= 8ull * RSIZE);
}

/* capacity 0: 90% of the free space for a new store, then as recorded */
static void test_default_capacity(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint64_t want, cap;

	assert_int_equal(st_size_from_fs(f->cache, 90, true, &want), 0);
	f->p.capacity = 0;
	open_store(f);
	get_stats(f, &s);
	cap = s.capacity;
	assert_true(cap <= want + want / 100 && cap + want / 100 >= want);
	assert_int_equal(insert(f, 1, 0, 0, 100), 0);
	reopen(f);
	get_stats(f, &s);
	assert_int_equal(s.capacity, cap);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 1);
	/* a new capacity is taken, and recorded */
	f->p.capacity = CAP;
	reopen(f);
	f->p.capacity = 0;
	reopen(f);
	get_stats(f, &s);
	assert_int_equal(s.capacity, CAP);
	assert_int_equal(check(f->st, 1, 0, 0, 100), 1);
}

/* ---- a full cachedir filesystem -------------------------------------- */

static uint64_t fs_free(const char *dir)
{
	struct statvfs vfs;

	assert_int_equal(statvfs(dir, &vfs), 0);
	return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

static void test_full_fs(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	char filler[512];
	uint8_t *junk;
	uint32_t i, len = 9000, last_ok = 0;
	int fd, err;

	snprintf(f->small, sizeof(f->small), "%s/small", f->dir);
	assert_int_equal(mkdir(f->small, 0700), 0);
	if (mount("tmpfs", f->small, "tmpfs", 0, "size=3m,mode=0700")) {
		print_message("cannot mount tmpfs (%s): skipped\n",
			      strerror(errno));
		skip();
	}
	f->mounted = true;
	snprintf(f->cache, sizeof(f->cache), "%s/cache", f->small);
	assert_int_equal(mkdir(f->cache, 0700), 0);
	/* a cache bigger than its filesystem */
	f->p.capacity = 16u << 20;
	open_store(f);
	for (i = 0; i < 1000; i++) {
		err = insert(f, 1 + i, 0, 0, len);
		assert_int_equal(err, 0);
	}
	get_stats(f, &s);
	assert_int_equal(s.state, ST_OK);
	assert_true(s.evictions > 0);
	assert_true(s.regions_used * RSIZE < 3u << 20);
	assert_int_equal(check(f->st, 1000, 0, 0, len), 1);
	assert_int_equal(st_tick(f->st), 0);

	/* something else fills the filesystem: the store culls */
	snprintf(filler, sizeof(filler), "%s/filler", f->small);
	fd = open(filler, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	junk = calloc(1, 65536);
	while (write(fd, junk, 65536) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(st_tick(f->st), 0);
	get_stats(f, &s);
	assert_true(s.culls > 0);
	assert_true(fs_free(f->small) > 0);
	/* inserts now may fail, but never a reader, never wrong bytes */
	for (i = 0; i < 300; i++) {
		err = insert(f, 5000 + i, 0, 0, len);
		assert_true(err == 0 || err == -ENOSPC || err == -EROFS);
		if (!err)
			last_ok = 5000 + i;
	}
	for (i = 0; i < 1000; i++)
		check(f->st, 1 + i, 0, 0, len);
	if (last_ok)
		assert_int_equal(check(f->st, last_ok, 0, 0, len), 1);
	get_stats(f, &s);
	if (s.state != ST_OK)
		assert_true(s.reason[0] != '\0');
	/* space comes back: caching goes on */
	close(fd);
	unlink(filler);
	assert_int_equal(st_tick(f->st), 0);
	get_stats(f, &s);
	assert_int_equal(s.state, ST_OK);
	for (i = 0; i < 50; i++)
		assert_int_equal(insert(f, 9000 + i, 0, 0, len), 0);
	assert_int_equal(check(f->st, 9049, 0, 0, len), 1);

	/*
	 * Space taken from under the open region (thin provisioning, a
	 * punched file): ENOSPC on a write turns the store read-only, once;
	 * readers still get hits or misses, never errors or wrong bytes.
	 */
	{
		struct hotfs_key k = key_of(9049);
		struct hotfs_stamp t = stamp_of(9049, 0);
		struct hotfs_loc loc;
		char data[512];
		int dfd;

		assert_int_equal(st_lookup(f->st, &k, 0, &t, &loc), 0);
		path_in(f, "data", data, sizeof(data));
		dfd = open(data, O_RDWR);
		assert_true(dfd >= 0);
		assert_int_equal(fallocate(dfd, FALLOC_FL_PUNCH_HOLE |
					   FALLOC_FL_KEEP_SIZE,
					   (uint64_t)loc.region * RSIZE, RSIZE),
				 0);
		close(dfd);
		fd = open(filler, O_WRONLY | O_CREAT, 0600);
		while (write(fd, junk, 65536) > 0)
			;
		while (write(fd, junk, 512) > 0)
			;
		err = 0;
		for (i = 0; i < 40 && !err; i++)
			err = insert(f, 9100 + i, 0, 0, len);
		assert_int_equal(err, -ENOSPC);
		get_stats(f, &s);
		assert_int_equal(s.state, ST_READONLY);
		assert_int_equal(st_state(f->st), ST_READONLY);
		assert_non_null(strstr(s.reason, "No space"));
		assert_int_equal(insert(f, 9200, 0, 0, len), -EROFS);
		for (i = 0; i < 50; i++)
			check(f->st, 9000 + i, 0, 0, len);
		/* the punched extent reads as zeros: caught, not served */
		assert_int_equal(check(f->st, 9049, 0, 0, len), 0);
		close(fd);
		unlink(filler);
		assert_int_equal(st_tick(f->st), 0);
		get_stats(f, &s);
		assert_int_equal(s.state, ST_OK);
		assert_int_equal(st_state(f->st), ST_OK);
		assert_int_equal(insert(f, 9300, 0, 0, len), 0);
		assert_int_equal(check(f->st, 9300, 0, 0, len), 1);
		/* tmpfs has no FALLOC_FL_ZERO_RANGE: resume punches */
		reopen(f);
		assert_int_not_equal(f->st->open, ST_NIL);
		assert_int_equal(check(f->st, 9300, 0, 0, len), 1);
		assert_int_equal(insert(f, 9301, 0, 0, len), 0);
		reopen(f);
		assert_int_equal(check(f->st, 9301, 0, 0, len), 1);
		assert_int_equal(check(f->st, 9300, 0, 0, len), 1);
	}
	assert_int_equal(st_close(f->st), 0);
	f->st = NULL;

	/* a full filesystem at open: a clear error, not a crash */
	fd = open(filler, O_WRONLY | O_CREAT, 0600);
	while (write(fd, junk, 65536) > 0)
		;
	while (write(fd, junk, 512) > 0)
		;
	close(fd);
	f->p.reset = true;
	err = st_open(f->cache, &f->p, &f->st, f->err, sizeof(f->err));
	if (!err) {
		/* tmpfs had room for the superblock: nothing to insert into */
		assert_true(insert(f, 1, 0, 0, len) != 0 ||
			    check(f->st, 1, 0, 0, len) == 1);
	} else {
		assert_int_equal(err, -ENOSPC);
		assert_true(f->err[0] != '\0');
	}
	free(junk);
}

/* ---- threads ---------------------------------------------------------- */

struct race {
	struct fx *f;
	int stop;
	unsigned reads, hits;
};

static void *reader(void *arg)
{
	struct race *r = arg;
	uint8_t *buf = malloc(EXT), *want = malloc(EXT);

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		uint64_t ino = 1 + rand() % 600;
		struct hotfs_key k = key_of(ino);
		struct hotfs_stamp s = stamp_of(ino, 0);
		uint32_t len = 1000 + ino * 37 % 30000;
		ssize_t n = st_read(r->f->st, &k, 0, &s, 0, buf, EXT);

		__atomic_fetch_add(&r->reads, 1, __ATOMIC_RELAXED);
		if (n < 0)
			continue;
		fill(want, len, ino, 0, 0);
		if (n != len || memcmp(buf, want, len))
			abort();	/* a wrong byte: fail loudly */
		__atomic_fetch_add(&r->hits, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	free(want);
	return NULL;
}

static void test_threads(void **state)
{
	struct fx *f = *state;
	struct race r = { f, 0, 0, 0 };
	pthread_t th[4];
	uint32_t i, round;

	/* room for small fillers that make the index grow under readers */
	f->p.capacity = 32u << 20;
	f->p.region = 2u << 20;
	open_store(f);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader, &r), 0);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < 2500; i++)
			assert_int_equal(insert(f, 100000 + round * 2500 + i,
						0, 0, 100), 0);
		for (i = 0; i < 600; i++) {
			uint64_t ino = 1 + i;

			assert_int_equal(insert(f, ino, 0, 0,
						1000 + ino * 37 % 30000), 0);
			if (i % 50 == 0) {
				struct hotfs_key k = key_of(ino / 2 + 1);

				st_invalidate(f->st, &k, 0, 0, ST_INVAL_WRITE);
			}
		}
		assert_int_equal(st_commit(f->st), 0);
		assert_true(st_evict(f->st, 1) >= 0);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_true(r.reads > 0);
	assert_true(f->st->fmask + 1 >= 4096);	/* the file hash grew */
	print_message("%u reads, %u hits\n", r.reads, r.hits);
}

/*
 * A fresh store without region= picks its region size from the capacity:
 * 16 MiB when it is a multiple of that (or holds 64 of them), else one
 * region more of a size that loses none of it.  A 102 MiB store (fio's
 * 1:10 of 1 GiB) then holds 25,000 4 KiB blocks without recycling; six
 * regions of 16 MiB would hold 24,192.
 */
static void test_fresh_region(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	uint8_t buf[ST_BLOCK];
	uint32_t b;

	f->p.region = 0;
	f->p.extent = 256u * 1024;
	f->p.capacity = 64u << 20;
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.regions, 4);
	assert_int_equal(f->st->g.rsize, ST_REGION_DEFAULT);
	st_close(f->st);
	f->st = NULL;

	f->p.reset = true;
	f->p.capacity = 102u << 20;
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.regions, 7);
	assert_true(s.regions * f->st->g.rsize <= f->p.capacity);
	assert_true(s.regions * f->st->g.rsize > f->p.capacity - (1u << 20));
	/* whole 256 KiB extent records and their summary block */
	assert_int_equal((f->st->g.rsize - ST_BLOCK) %
			 st_reclen(f->p.extent), 0);
	for (b = 0; b < 25000; b++) {
		struct hotfs_key k = key_of(5);
		struct hotfs_stamp t = stamp_of(5, 1);

		fill(buf, ST_BLOCK, 5, ST_REC_BLOCK | b, 1);
		assert_int_equal(st_insert(f->st, &k, ST_REC_BLOCK | b, &t,
					   buf, ST_BLOCK), 0);
	}
	get_stats(f, &s);
	assert_int_equal(s.evictions, 0);
	assert_int_equal(check(f->st, 5, ST_REC_BLOCK | 24999, 1, ST_BLOCK),
			 1);
	/* the size is recorded: a reopen keeps it */
	b = f->st->g.rsize;
	f->p.reset = false;
	reopen(f);
	assert_int_equal(f->st->g.rsize, b);
	assert_int_equal(check(f->st, 5, ST_REC_BLOCK | 7, 1, ST_BLOCK), 1);
	/* small extents' records are 512-aligned: still whole blocks */
	st_close(f->st);
	f->st = NULL;
	f->p.reset = true;
	f->p.extent = 8192;
	open_store(f);
	get_stats(f, &s);
	assert_int_equal(s.regions, 7);
	assert_int_equal(f->st->g.rsize % ST_BLOCK, 0);
	assert_true(f->st->g.rsize < ST_REGION_DEFAULT);
}

struct region_of {
	uint32_t region;	/* of ino 1 */
	uint64_t inos[64];	/* the region's, in no order */
	uint32_t n;
};

static int region_iter(void *arg, const struct hotfs_extent_info *x)
{
	struct region_of *ro = arg;

	if (x->region == ro->region && ro->n < 64)
		ro->inos[ro->n++] = x->key.ino;
	return 0;
}

/*
 * st_next_victim names the record the next recycling lets go first: none
 * while an insert finds room; then of the oldest region the first not
 * read since written, else (all read) its first live one.
 */
static void test_next_victim(void **state)
{
	struct fx *f = *state;
	struct hotfs_store_stats s;
	struct region_of ro = { 0 };
	struct hotfs_key k, one = key_of(1);
	struct hotfs_stamp t = stamp_of(1, 0);
	struct hotfs_loc loc;
	uint8_t z[ST_BLOCK];
	uint32_t rec, i, len = 9000;

	open_store(f);
	/* room: nothing to name, until the last region is full */
	for (i = 1; st_next_victim(f->st, len, &k, &rec) == -ENOENT; i++) {
		assert_true(i < 1000);
		assert_true(st_filling(f->st));
		assert_int_equal(insert(f, i, 0, 0, len), 0);
	}
	get_stats(f, &s);
	assert_int_equal(s.evictions, 0);
	assert_int_equal(s.regions_used, s.regions);
	assert_true(i > 400);		/* 4 MiB of 9000-byte records */
	assert_false(st_filling(f->st));	/* found full */
	assert_int_equal(k.ino, 1);
	assert_int_equal(k.dev, DEV);
	assert_int_equal(rec, 0);
	/* read since written: the next one not read */
	assert_int_equal(check(f->st, 1, 0, 0, len), 1);
	assert_int_equal(st_next_victim(f->st, len, &k, &rec), 0);
	assert_int_equal(k.ino, 2);

	/* every record of the oldest region read: its first live one */
	assert_int_equal(st_peek(f->st, &one, 0, &t, &loc), 0);
	ro.region = loc.region;
	assert_int_equal(st_iterate(f->st, region_iter, &ro), 0);
	assert_true(ro.n > 10 && ro.n < 64);
	for (i = 0; i < ro.n; i++)
		assert_int_equal(check(f->st, ro.inos[i], 0, 0, len), 1);
	assert_int_equal(st_next_victim(f->st, len, &k, &rec), 0);
	assert_int_equal(k.ino, 1);
	/* gone: the next live one */
	assert_int_equal(st_invalidate(f->st, &one, 0, 0, ST_INVAL_USER), 1);
	assert_int_equal(st_next_victim(f->st, len, &k, &rec), 0);
	assert_int_equal(k.ino, 2);

	/* its summary unreadable: none named (the insert is admitted as
	 * before), and the summary is not read again for each candidate */
	memset(z, 0, sizeof(z));
	assert_int_equal(pwrite(st_data_fd(f->st), z, sizeof(z),
				(uint64_t)(ro.region + 1) * RSIZE - ST_BLOCK),
			 ST_BLOCK);
	f->st->nv_set = false;		/* as if it were new */
	assert_int_equal(st_next_victim(f->st, len, &k, &rec), -ENOENT);
	assert_true(f->st->nv_set);
	assert_int_equal(st_next_victim(f->st, len, &k, &rec), -ENOENT);

	/* the insert recycles the region: room again, nothing to name */
	assert_int_equal(insert(f, 5000, 0, 0, len), 0);
	get_stats(f, &s);
	assert_int_equal(s.evictions, 1);
	assert_int_equal(st_next_victim(f->st, len, &k, &rec), -ENOENT);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_insert_lookup),
		T(test_fresh_region),
		T(test_next_victim),
		T(test_span_and_block_verify),
		T(test_stamp_changed),
		T(test_invalidate),
		T(test_invalidate_busy),
		T(test_restart),
		T(test_crash),
		T(test_resume_region),
		T(test_kill9),
		T(test_index_growth),
		T(test_evict_fifo),
		T(test_insert_cost),
		T(test_evict_big_file),
		T(test_evict_reinsert_hot),
		T(test_evict_damaged_keeper),
		T(test_evict_unreadable_summary),
		T(test_reinsert_restamped),
		T(test_keep_callback_iterate),
		T(test_no_room_and_peeks),
		T(test_stale_location),
		T(test_torn_last_write),
		T(test_bit_flips),
		T(test_live_corruption),
		T(test_io_error_off),
		T(test_truncated_data),
		T(test_summary_magic_damaged),
		T(test_two_opens),
		T(test_identity_and_reset),
		T(test_foreign_files),
		T(test_private_modes),
		T(test_cachedir_replaced),
		T(test_size_helper),
		T(test_default_capacity),
		T(test_shrink),
		T(test_reserve),
		T(test_full_fs),
		T(test_threads),
	};
#undef T
	hotfs_log_level = LOG_CRIT;	/* expected errors stay quiet */
	if (getenv("STORE_TEST"))	/* e.g. STORE_TEST='test_kill*' */
		cmocka_set_test_filter(getenv("STORE_TEST"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
