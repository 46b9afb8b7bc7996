// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for promotion (src/cache/promote.c) over a real store in a
 * temporary directory and a real source file: the queue's deduplication
 * and bounds, extents promoted from the reader's bytes or read from the
 * source, nothing cached when a write came meanwhile (insert if still
 * current) or the source changed, and promote_rate's waits.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_util.h"

#include "hotfs/cache.h"
#include "hotfs/promote.h"

#define EXT	(64 * 1024)
#define FSIZE	(8 * EXT)

struct fx {
	char dir[64];
	int dfd;
	struct hotfs_cache c;
	struct hotfs_inode *in;
	struct hotfs_key k;
	struct hotfs_stamp stamp;
};

static const char ident[] = "test_promote";

static int setup(void **state)
{
	struct hotfs_store_params sp = { 0 };
	struct pol_params pp = { .threshold = 1 };
	struct fx *f = calloc(1, sizeof(*f));
	char cache[96], err[256], *buf;
	struct stat st;
	int e;

	assert_non_null(f);
	buf = malloc(FSIZE);
	assert_non_null(buf);
	for (e = 0; e < FSIZE; e++)
		buf[e] = (char)('a' + e / EXT);
	f->dfd = ut_dir_with_file("promote", f->dir, sizeof(f->dir), "f", buf,
				  FSIZE);
	assert_true(f->dfd >= 0);
	free(buf);
	snprintf(cache, sizeof(cache), "%s/cache", f->dir);
	assert_int_equal(mkdir(cache, 0700), 0);
	sp.ident = ident;
	sp.ident_len = sizeof(ident) - 1;
	sp.capacity = 64ull << 20;
	sp.extent = EXT;
	assert_int_equal(st_open(cache, &sp, &f->c.st, err, sizeof(err)), 0);
	assert_int_equal(pol_new(&pp, &f->c.pol), 0);
	assert_int_equal(ino_table_new(&f->c.it, f->dfd), 0);
	f->c.proc_self_fd = open("/proc/self/fd", O_PATH | O_CLOEXEC);
	assert_true(f->c.proc_self_fd >= 0);
	f->in = ut_inode(f->c.it, f->dfd, "f", &st);
	assert_non_null(f->in);
	f->c.extent = EXT;
	f->c.ext_shift = 16;
	cache_key(&f->c, st.st_dev, st.st_ino, &f->k);
	cache_stamp(&st, &f->stamp);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	pr_free(f->c.pr);
	ino_forget(f->c.it, f->in, 1);
	ino_table_free(f->c.it);
	st_close(f->c.st);
	pol_free(f->c.pol);
	close(f->c.proc_self_fd);
	ut_rm_tree(f->dir);
	free(f);
	return 0;
}

/* An item for extent e of the file, with the reader's bytes if buf. */
static bool queue(struct fx *f, uint32_t e, bool buf, uint64_t gen)
{
	struct pr_item it = { 0 };

	it.in = f->in;
	it.key = f->k;
	it.extno = e;
	it.stamp = f->stamp;
	it.gen = gen;
	it.h = pol_hash(&f->k, e);
	if (buf) {
		it.buf = malloc(EXT);
		assert_non_null(it.buf);
		memset(it.buf, 'a' + (int)e, EXT);
		it.len = EXT;
	}
	ino_hold(f->c.it, f->in);	/* the queue takes it over */
	return pr_enqueue(f->c.pr, &it);
}

static void wait_promoted(struct fx *f, uint64_t n, enum hotfs_stat why)
{
	struct timespec ts = { 0, 5000000L };
	int i;

	for (i = 0; i < 2000; i++) {
		if (stats_get(&f->c.stats, STAT_PROMOTIONS) +
		    stats_get(&f->c.stats, why) >= n &&
		    pr_depth(f->c.pr) == 0)
			return;
		nanosleep(&ts, NULL);
	}
	fail_msg("promotions: %llu, depth %u",
		 (unsigned long long)stats_get(&f->c.stats, STAT_PROMOTIONS),
		 pr_depth(f->c.pr));
}

static bool cached(struct fx *f, uint32_t e)
{
	char buf[16];

	return st_read(f->c.st, &f->k, e, &f->stamp, 0, buf, sizeof(buf)) ==
	       sizeof(buf) && buf[0] == 'a' + (int)e && buf[15] == buf[0];
}

static void test_queue_dedup_and_depth(void **state)
{
	struct fx *f = *state;

	assert_int_equal(pr_new(&f->c.pr, &f->c, 0), 0);
	assert_true(queue(f, 1, true, 0));
	assert_false(queue(f, 1, true, 0));	/* already queued */
	assert_true(queue(f, 2, false, 0));
	assert_int_equal(pr_depth(f->c.pr), 2);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMO_QUEUED), 2);
	/* not started: pr_free drops them and their holds */
}

static void test_queue_is_bounded(void **state)
{
	struct fx *f = *state;
	unsigned i, ok = 0;

	assert_int_equal(pr_new(&f->c.pr, &f->c, 0), 0);
	for (i = 0; i < 5000; i++)
		ok += queue(f, i, false, 0);
	assert_int_equal(ok, 4096);
	assert_int_equal(stats_get(&f->c.stats, STAT_NP_QUEUE_FULL),
			 5000 - 4096);
}

static void test_promotes_readers_bytes_and_source_reads(void **state)
{
	struct fx *f = *state;

	assert_int_equal(pr_new(&f->c.pr, &f->c, 0), 0);
	assert_int_equal(pr_start(f->c.pr), 0);
	assert_true(queue(f, 0, true, 0));
	assert_true(queue(f, 3, false, 0));
	wait_promoted(f, 2, STAT_NP_RACE);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMOTIONS), 2);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMO_REUSED), 1);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMO_SRC_READS), 1);
	assert_true(cached(f, 0));
	assert_true(cached(f, 3));
	assert_true(f->in->cw.cached_extents_hint >= 4);
}

static void test_write_meanwhile_caches_nothing(void **state)
{
	struct fx *f = *state;

	assert_int_equal(pr_new(&f->c.pr, &f->c, 0), 0);
	/* queued at generation 0; a write has moved it on since */
	f->in->cw.write_gen = 2;
	assert_int_equal(pr_start(f->c.pr), 0);
	assert_true(queue(f, 1, true, 0));
	wait_promoted(f, 1, STAT_NP_RACE);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMOTIONS), 0);
	assert_int_equal(stats_get(&f->c.stats, STAT_NP_RACE), 1);
	assert_false(cached(f, 1));
}

static void test_source_changed_caches_nothing(void **state)
{
	struct fx *f = *state;

	assert_int_equal(pr_new(&f->c.pr, &f->c, 0), 0);
	f->stamp.mtime_ns--;		/* queued under an older stamp */
	assert_int_equal(pr_start(f->c.pr), 0);
	assert_true(queue(f, 2, false, 0));
	wait_promoted(f, 1, STAT_NP_RACE);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMOTIONS), 0);
}

static void test_rate_limits_source_reads(void **state)
{
	struct fx *f = *state;
	uint32_t e;

	/* 64 KiB/s with a burst of one second: of 4 extents read from the
	 * source, the second on waits for tokens */
	assert_int_equal(pr_new(&f->c.pr, &f->c, EXT), 0);
	assert_int_equal(pr_start(f->c.pr), 0);
	for (e = 0; e < 3; e++)
		assert_true(queue(f, e, false, 0));
	wait_promoted(f, 3, STAT_NP_RACE);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMOTIONS), 3);
	assert_true(stats_get(&f->c.stats, STAT_NP_RATE) > 0);
	/* the reader's own bytes cost the disk nothing: never limited */
	f->c.stats.c[STAT_NP_RATE] = 0;
	assert_true(queue(f, 4, true, 0));
	wait_promoted(f, 4, STAT_NP_RACE);
	assert_int_equal(stats_get(&f->c.stats, STAT_NP_RATE), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_queue_dedup_and_depth,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_is_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_promotes_readers_bytes_and_source_reads,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_write_meanwhile_caches_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_source_changed_caches_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limits_source_reads,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
