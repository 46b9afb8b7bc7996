// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for src/cache/cache_insert.c: insert if still current, and the
 * write notes that let a promotion through writes that missed its bytes.
 * A real store in a temporary directory; the inode is a bare struct
 * hotfs_inode (cache_insert uses its lock, write generation and notes).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/cache_insert.h"

#define EXT (64u * 1024)
#define BLK(b) (ST_REC_BLOCK | (b))

struct fx {
	char dir[64];
	struct hotfs_store *st;
	struct hotfs_inode in;
	char buf[4096];
};

static const char ident[] = "/srv/slow insert";
static const struct hotfs_key key = { .dev = 0, .ino = 7 };

static int setup(void **state)
{
	struct hotfs_store_params p = { 0 };
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	strcpy(f->dir, "/tmp/hotfs-insert-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	p.ident = ident;
	p.ident_len = sizeof(ident) - 1;
	p.capacity = 64u << 20;
	p.extent = EXT;
	assert_int_equal(st_open(f->dir, &p, &f->st, err, sizeof(err)), 0);
	pthread_mutex_init(&f->in.m, NULL);
	memset(f->buf, 'q', sizeof(f->buf));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	st_close(f->st);
	free(f->in.cw.wr_notes);
	pthread_mutex_destroy(&f->in.m);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static struct hotfs_stamp stamp_at(int64_t t, uint64_t size)
{
	struct hotfs_stamp s = { key.ino, size, t, t };

	return s;
}

/* A write through the mount of [lo, hi), from stamp old to now, as
 * cache_write_begin and cache_write_end count it. */
static void write_(struct fx *f, bool known, uint64_t lo, uint64_t hi,
		   const struct hotfs_stamp *old, const struct hotfs_stamp *now)
{
	uint64_t gen;

	pthread_mutex_lock(&f->in.m);
	gen = ++f->in.cw.write_gen;
	f->in.cw.write_gen++;
	__cache_note_write(&f->in, known, gen, lo, hi, old, now);
	pthread_mutex_unlock(&f->in.m);
}

static bool cached(struct fx *f, uint32_t rec, const struct hotfs_stamp *s)
{
	struct hotfs_loc loc;

	return st_lookup(f->st, &key, rec, s, &loc) == 0;
}

static void test_no_write_inserts(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = stamp_at(100, 1 << 20);

	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(3), &s0,
				      f->in.cw.write_gen, f->buf, 4096), 0);
	assert_true(cached(f, BLK(3), &s0));
}

/* Writes elsewhere: the block is cached under the stamp they left. */
static void test_writes_elsewhere_carry_it(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = stamp_at(100, 1 << 20);
	struct hotfs_stamp s1 = stamp_at(200, 1 << 20);
	struct hotfs_stamp s2 = stamp_at(300, 1 << 20);
	uint64_t gen = f->in.cw.write_gen;

	write_(f, true, 0, 4096, &s0, &s1);
	write_(f, true, 40960, 40961, &s1, &s2);
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(3), &s0, gen,
				      f->buf, 4096), 0);
	assert_true(cached(f, BLK(3), &s2));
	assert_false(cached(f, BLK(3), &s0));
	/* an extent elsewhere likewise */
	assert_int_equal(cache_insert(f->st, &f->in, &key, 5, &s0, gen,
				      f->buf, 4096), 0);
	assert_true(cached(f, 5, &s2));
}

/* A write that touched the bytes, or a byte of them, stops it. */
static void test_write_over_it_stops_it(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = stamp_at(100, 1 << 20);
	struct hotfs_stamp s1 = stamp_at(200, 1 << 20);
	uint64_t gen = f->in.cw.write_gen;

	write_(f, true, 3 * 4096 + 4095, 3 * 4096 + 4096 + 10, &s0, &s1);
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(3), &s0, gen,
				      f->buf, 4096), -ESTALE);
	/* the block after it was missed */
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(5), &s0, gen,
				      f->buf, 4096), 0);
	assert_false(cached(f, BLK(3), &s1));
	assert_true(cached(f, BLK(5), &s1));
}

/* Stamps that do not chain: a change behind the mount came between. */
static void test_broken_chain_stops_it(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = stamp_at(100, 1 << 20);
	struct hotfs_stamp other = stamp_at(150, 1 << 20);
	struct hotfs_stamp s1 = stamp_at(200, 1 << 20);
	uint64_t gen = f->in.cw.write_gen;

	write_(f, true, 0, 10, &other, &s1);
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(3), &s0, gen,
				      f->buf, 4096), -ESTALE);
}

/* A write not known (its stamp racy, say) stops every promotion queued
 * before it, and so do more writes than the ring remembers. */
static void test_unknown_or_forgotten_write_stops_it(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s[WR_NOTES + 2];
	uint64_t gen;
	unsigned i;

	for (i = 0; i < WR_NOTES + 2; i++)
		s[i] = stamp_at(100 * (i + 1), 1 << 20);
	gen = f->in.cw.write_gen;
	write_(f, false, 0, 10, &s[0], &s[1]);
	write_(f, true, 0, 10, &s[1], &s[2]);
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(3), &s[0],
				      gen, f->buf, 4096), -ESTALE);
	/* read after the unknown write: fine */
	gen = f->in.cw.write_gen;
	write_(f, true, 0, 10, &s[2], &s[3]);
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(3), &s[2],
				      gen, f->buf, 4096), 0);
	assert_true(cached(f, BLK(3), &s[3]));
	gen = f->in.cw.write_gen;
	for (i = 3; i < WR_NOTES + 1; i++)
		write_(f, true, 0, 10, &s[i], &s[i + 1]);
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(4), &s[3],
				      gen, f->buf, 4096), 0);
	gen = 0;	/* before writes the ring has forgotten */
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(6), &s[0],
				      gen, f->buf, 4096), -ESTALE);
}

/* A size change keeps only whole records before both ends, and a write
 * in flight stops everything. */
static void test_size_change_and_inflight(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = stamp_at(100, 10 * 4096 + 100);
	struct hotfs_stamp s1 = stamp_at(200, 20 * 4096);
	uint64_t gen = f->in.cw.write_gen;

	write_(f, true, 10 * 4096 + 100, 20 * 4096, &s0, &s1);
	/* the old tail block (100 bytes) is partial: not carried */
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(10), &s0, gen,
				      f->buf, 100), -ESTALE);
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(2), &s0, gen,
				      f->buf, 4096), 0);
	f->in.cw.wr_inflight = 1;
	gen = f->in.cw.write_gen - 2;
	assert_int_equal(cache_insert(f->st, &f->in, &key, BLK(4), &s0, gen,
				      f->buf, 4096), -ESTALE);
	f->in.cw.wr_inflight = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_no_write_inserts),
		T(test_writes_elsewhere_carry_it),
		T(test_write_over_it_stops_it),
		T(test_broken_chain_stops_it),
		T(test_unknown_or_forgotten_write_stops_it),
		T(test_size_change_and_inflight),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
