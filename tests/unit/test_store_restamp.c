// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for st_restamp (src/store/store_restamp.c): carrying a file's
 * extents over a write made through the mount.
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

#include "hotfs/store.h"

#define EXT (64u * 1024)

struct fx {
	char dir[64];
	struct hotfs_store *st;
};

static const char ident[] = "/srv/slow restamp";

static int setup(void **state)
{
	struct hotfs_store_params p = { 0 };
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	strcpy(f->dir, "/tmp/hotfs-restamp-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	p.ident = ident;
	p.ident_len = sizeof(ident) - 1;
	p.capacity = 64u << 20;
	p.extent = EXT;
	assert_int_equal(st_open(f->dir, &p, &f->st, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	st_close(f->st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static const struct hotfs_key key = { .dev = 0, .ino = 42 };

static void put(struct fx *f, const struct hotfs_stamp *s, uint32_t e,
		uint32_t len)
{
	char *buf = malloc(len);

	memset(buf, 'a' + (int)e, len);
	assert_int_equal(st_insert(f->st, &key, e, s, buf, len), 0);
	free(buf);
}

static bool cached(struct fx *f, const struct hotfs_stamp *s, uint32_t e)
{
	struct hotfs_loc loc;

	return st_lookup(f->st, &key, e, s, &loc) == 0;
}

/* 4 whole extents and a partial one: size 4 * EXT + 100 */
static void fill_file(struct fx *f, const struct hotfs_stamp *s)
{
	uint32_t e;

	for (e = 0; e < 4; e++)
		put(f, s, e, EXT);
	put(f, s, 4, 100);
}

static void test_untouched_extents_kept(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = { 42, 4 * EXT + 100, 1000, 1000 };
	struct hotfs_stamp s1 = { 42, 4 * EXT + 100, 2000, 2000 };
	char buf[16];

	fill_file(f, &s0);
	/* a write inside extent 2 */
	assert_int_equal(st_restamp(f->st, &key, &s0, &s1, 2 * EXT + 10, 1), 4);
	assert_true(cached(f, &s1, 0));
	assert_true(cached(f, &s1, 1));
	assert_false(cached(f, &s1, 2));
	assert_true(cached(f, &s1, 3));
	assert_true(cached(f, &s1, 4));	/* same size: the tail stays */
	/* and the data under the new stamp is the old data */
	assert_int_equal(st_read(f->st, &key, 3, &s1, 10, buf, 4), 4);
	assert_memory_equal(buf, "dddd", 4);
}

/*
 * A read under the stamp the records had before a write carried them to
 * its own (writethrough's patch of a write that ended after another):
 * -ESTALE, and the records stay under the new stamp, counted as no
 * change behind the mount.  (It dropped them all as one.)
 */
static void test_read_under_older_stamp_drops_nothing(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = { 42, 4 * EXT + 100, 1000, 1000 };
	struct hotfs_stamp s1 = { 42, 4 * EXT + 100, 2000, 2000 };
	struct hotfs_store_stats ss;
	char buf[16];
	uint32_t e;

	fill_file(f, &s0);
	assert_int_equal(st_restamp(f->st, &key, &s0, &s1, 2 * EXT + 10, 1), 4);
	assert_int_equal(st_read(f->st, &key, 3, &s0, 10, buf, 4), -ESTALE);
	for (e = 0; e < 5; e++)
		assert_int_equal(cached(f, &s1, e), e != 2);
	st_get_stats(f->st, &ss);
	assert_int_equal(ss.invalidations[ST_INVAL_SOURCE], 0);
}

static void test_size_change_drops_partials(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = { 42, 4 * EXT + 100, 1000, 1000 };
	struct hotfs_stamp s1 = { 42, 4 * EXT + 200, 2000, 2000 };
	struct hotfs_stamp s2 = { 42, EXT + 5, 3000, 3000 };

	fill_file(f, &s0);
	/* an append: the partial last extent is gone, the rest kept */
	assert_int_equal(st_restamp(f->st, &key, &s0, &s1, 4 * EXT + 100,
				    100), 4);
	assert_false(cached(f, &s1, 4));
	assert_true(cached(f, &s1, 3));
	/* a truncate to EXT + 5: only extent 0 is whole before both ends */
	assert_int_equal(st_restamp(f->st, &key, &s1, &s2, 0, 0), 1);
	assert_true(cached(f, &s2, 0));
	assert_false(cached(f, &s2, 1));
	assert_false(cached(f, &s2, 3));
}

static void test_unexpected_stamp_drops_all(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = { 42, 4 * EXT + 100, 1000, 1000 };
	struct hotfs_stamp other = { 42, 4 * EXT + 100, 1500, 1500 };
	struct hotfs_stamp s1 = { 42, 4 * EXT + 100, 2000, 2000 };
	struct hotfs_store_stats ss;

	fill_file(f, &s0);
	/* the file changed behind the mount between: nothing carried */
	assert_int_equal(st_restamp(f->st, &key, &other, &s1, EXT, 1), 0);
	assert_false(cached(f, &s1, 0));
	assert_false(cached(f, &s0, 0));
	st_get_stats(f->st, &ss);
	assert_int_equal(ss.extents, 0);
}

static void test_to_the_end_and_restart(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = { 42, 4 * EXT + 100, 1000, 1000 };
	struct hotfs_stamp s1 = { 42, 4 * EXT + 100, 1000, 1000 };
	struct hotfs_store_params p = { 0 };
	char err[256];

	fill_file(f, &s0);
	/* same stamp after the write (one timestamp tick): extents 1.. are
	 * dropped, and stay dropped after a restart */
	assert_int_equal(st_restamp(f->st, &key, &s0, &s1, EXT,
				    ST_TO_END), 1);
	assert_int_equal(st_commit(f->st), 0);
	st_close(f->st);
	p.ident = ident;
	p.ident_len = sizeof(ident) - 1;
	p.extent = EXT;
	assert_int_equal(st_open(f->dir, &p, &f->st, err, sizeof(err)), 0);
	assert_true(cached(f, &s1, 0));
	assert_false(cached(f, &s1, 1));
	assert_false(cached(f, &s1, 3));
	assert_false(cached(f, &s1, 4));
}

static uint32_t blk(uint32_t b)
{
	return ST_REC_BLOCK | b;
}

/* Block records: a write drops exactly the blocks it touched. */
static void test_blocks_dropped_exactly(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = { 42, 64 * EXT, 1000, 1000 };
	struct hotfs_stamp s1 = { 42, 64 * EXT, 2000, 2000 };
	struct hotfs_store_stats ss;
	char buf[8];
	uint32_t b;

	for (b = 100; b < 110; b++)
		put(f, &s0, blk(b), 4096);
	put(f, &s0, 40, EXT);		/* and an extent elsewhere */
	/* 4 KiB written at block 103, 1 byte at the end of block 105 */
	assert_int_equal(st_restamp(f->st, &key, &s0, &s1, 103 * 4096ull,
				    4096), 10);
	assert_int_equal(st_restamp(f->st, &key, &s1, &s0, 106 * 4096ull - 1,
				    1), 9);
	for (b = 100; b < 110; b++)
		assert_int_equal(cached(f, &s0, blk(b)), b != 103 && b != 105);
	assert_true(cached(f, &s0, 40));
	/* the kept blocks hold their bytes under the new stamp */
	assert_int_equal(st_read(f->st, &key, blk(104), &s0, 7, buf, 2), 2);
	assert_int_equal((unsigned char)buf[0],
			 (unsigned char)('a' + (int)blk(104)));
	assert_int_equal(buf[1], buf[0]);
	st_get_stats(f->st, &ss);
	assert_int_equal(ss.extents, 9);
	/* a write that straddles an extent record drops it whole */
	assert_int_equal(st_restamp(f->st, &key, &s0, &s1, 40ull * EXT + 5,
				    3), 8);
	assert_false(cached(f, &s1, 40));
	assert_true(cached(f, &s1, blk(100)));
}

/* A block record may not be longer than a block; an invalidation of an
 * extent drops the blocks inside it, also after a restart. */
static void test_blocks_and_tombstones(void **state)
{
	struct fx *f = *state;
	struct hotfs_stamp s0 = { 42, 64 * EXT, 1000, 1000 };
	struct hotfs_store_params p = { 0 };
	char big[8192] = { 0 }, err[256];
	uint32_t per = EXT / 4096, b;

	assert_int_equal(st_insert(f->st, &key, blk(1), &s0, big, 4097),
			 -EINVAL);
	for (b = 0; b < 3 * per; b++)
		put(f, &s0, blk(b), 4096);
	put(f, &s0, 1, EXT);
	/* extent 1 and its blocks go; extents 0 and 2 keep theirs */
	assert_int_equal(st_invalidate(f->st, &key, 1, 1, ST_INVAL_USER),
			 (int)per + 1);
	assert_int_equal(st_commit(f->st), 0);
	st_close(f->st);
	p.ident = ident;
	p.ident_len = sizeof(ident) - 1;
	p.extent = EXT;
	assert_int_equal(st_open(f->dir, &p, &f->st, err, sizeof(err)), 0);
	for (b = 0; b < 3 * per; b++)
		assert_int_equal(cached(f, &s0, blk(b)), b / per != 1);
	assert_false(cached(f, &s0, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_untouched_extents_kept),
		T(test_read_under_older_stamp_drops_nothing),
		T(test_size_change_drops_partials),
		T(test_unexpected_stamp_drops_all),
		T(test_to_the_end_and_restart),
		T(test_blocks_dropped_exactly),
		T(test_blocks_and_tombstones),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
