// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for open-file handles and access counting (src/cache/handle.c):
 * an extent touched again by the same handle is one access; a shared
 * handle (no open) counts it again only from another run after
 * NOFH_WINDOW_NS; seqcutoff stops counting a long sequential run; and
 * the promotion candidates a read leaves are queued whole (with the
 * reader's bytes), assembled over several reads, or queued for the
 * promoter to read when the bytes are not all there.  The promoter's
 * queue is real (not started: the items stay queued and are counted).
 */
#include <errno.h>
#include <fcntl.h>
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
#include "hotfs/handle.h"
#include "hotfs/promote.h"

#define EXT	(64 * 1024)

struct fx {
	char dir[64];
	int dfd;
	struct hotfs_cache c;
	struct hotfs_inode *in;
	struct hotfs_key k;
	struct hotfs_stamp stamp;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct stat st;

	assert_non_null(f);
	f->dfd = ut_dir_with_file("handle", f->dir, sizeof(f->dir), "f", NULL,
				  4 * EXT + 100);
	assert_true(f->dfd >= 0);
	assert_int_equal(ino_table_new(&f->c.it, f->dfd), 0);
	f->in = ut_inode(f->c.it, f->dfd, "f", &st);
	assert_non_null(f->in);
	f->c.extent = EXT;
	f->c.ext_shift = 16;
	assert_int_equal(pr_new(&f->c.pr, &f->c, 0), 0);
	cache_key(&f->c, st.st_dev, st.st_ino, &f->k);
	cache_stamp(&st, &f->stamp);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	pr_free(f->c.pr);	/* drops the queue: the holds go */
	ino_forget(f->c.it, f->in, 1);
	ino_table_free(f->c.it);
	assert_int_equal(ut_rm_tree(f->dir), 0);
	free(f);
	return 0;
}

/* Extents the handle is assembling. */
static unsigned stitching(const struct hotfs_fh *fh)
{
	unsigned i, n = 0;

	for (i = 0; i < FH_STITCHES; i++)
		n += fh->stitch[i].buf != NULL;
	return n;
}

static void test_handle_counts_an_extent_once(void **state)
{
	struct hotfs_fh *fh = fh_new(-1);
	unsigned i;

	(void)state;
	assert_non_null(fh);
	assert_false(fh_seen(fh, 7, 0));	/* first touch: an access */
	assert_true(fh_seen(fh, 7, 0));		/* again: not */
	/* FH_RECENT others push it out: then it counts again */
	for (i = 0; i < FH_RECENT; i++)
		assert_false(fh_seen(fh, 100 + i, 0));
	assert_false(fh_seen(fh, 7, 0));
	fh_free(fh);
}

/* the handles' clock, moved by the tests alone */
static int64_t fake_ns = 1000000000LL;

static int64_t fake_now(void)
{
	return fake_ns;
}

static void test_shared_handle_counts_again_from_another_run(void **state)
{
	struct hotfs_fh *fh = fh_new_shared();
	uint64_t run1, run2;

	(void)state;
	assert_non_null(fh);
	fh_set_clock(fake_now);
	run1 = fh_run(fh, false);
	assert_false(fh_seen(fh, 3, run1));
	/* the same run (readahead's requests of one reader): once */
	assert_true(fh_seen(fh, 3, fh_run(fh, true)));
	/* another run within the window: still once, to its last ns */
	run2 = fh_run(fh, false);
	assert_true(run2 != run1);
	fake_ns += NOFH_WINDOW_NS;
	assert_true(fh_seen(fh, 3, run2));
	/* another run after the window: a new access, once */
	fake_ns += 1;
	run2 = fh_run(fh, false);
	assert_false(fh_seen(fh, 3, run2));
	assert_true(fh_seen(fh, 3, run2));
	fh_set_clock(NULL);
	fh_free(fh);
}

static void test_seqcutoff_stops_counting(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = fh_new(-1);
	bool seq;
	off_t off;

	assert_non_null(fh);
	f->c.seqcutoff = 4 * 131072;
	/* a run of the cutoff's length, this read's bytes included */
	for (off = 0; off < 4 * 131072; off += 131072)
		assert_true(fh_counts(&f->c, fh, 131072, off, &seq));
	assert_true(seq);
	/* past the cutoff in one run: not counted, and said why */
	assert_false(fh_counts(&f->c, fh, 131072, off, &seq));
	assert_true(stats_get(&f->c.stats, STAT_NP_SEQCUTOFF) >= 1);
	/* without a cutoff, everything counts */
	f->c.seqcutoff = 0;
	assert_true(fh_counts(&f->c, fh, 131072, off + 131072, &seq));
	fh_free(fh);
}

static void test_queue_whole_extent_with_the_readers_bytes(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = fh_new(-1);
	struct fh_cand v = { .start = EXT, .end = 2 * EXT, .extno = 1 };
	char *data = malloc(EXT);

	assert_non_null(fh);
	assert_non_null(data);
	memset(data, 'x', EXT);
	fh_queue(&f->c, f->in, fh, &f->k, &f->stamp, 0, &v, 1, data, EXT,
		 EXT);
	assert_int_equal(pr_depth(f->c.pr), 1);
	assert_int_equal(stats_get(&f->c.stats, STAT_PROMO_QUEUED), 1);
	/* queued again: deduplicated by the extent's hash */
	fh_queue(&f->c, f->in, fh, &f->k, &f->stamp, 0, &v, 1, data, EXT,
		 EXT);
	assert_int_equal(pr_depth(f->c.pr), 1);
	free(data);
	fh_free(fh);
}

static void test_queue_assembles_an_extent_over_reads(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = fh_new(-1);
	struct fh_cand a = { .start = 2 * EXT, .end = 2 * EXT + EXT / 2,
			     .extno = 2 };
	struct fh_cand b = { .start = 2 * EXT + EXT / 2, .end = 3 * EXT,
			     .extno = 2 };
	char *data = calloc(1, EXT);

	assert_non_null(fh);
	assert_non_null(data);
	/* the first half: assembling, nothing queued yet */
	fh_queue(&f->c, f->in, fh, &f->k, &f->stamp, 0, &a, 1, data,
		 a.start, EXT / 2);
	assert_int_equal(pr_depth(f->c.pr), 0);
	assert_int_equal(stitching(fh), 1);
	/* the second half: whole, queued with its bytes */
	fh_queue(&f->c, f->in, fh, &f->k, &f->stamp, 0, &b, 1, data,
		 b.start, EXT / 2);
	assert_int_equal(pr_depth(f->c.pr), 1);
	assert_int_equal(stitching(fh), 0);
	/* a partial extent left at release is queued for the promoter to
	 * read from the source */
	a.start = 3 * EXT;
	a.end = 3 * EXT + 8192;
	a.extno = 3;
	fh_queue(&f->c, f->in, fh, &f->k, &f->stamp, 0, &a, 1, data,
		 a.start, 8192);
	assert_int_equal(pr_depth(f->c.pr), 1);
	fh_release(&f->c, f->in, fh);
	assert_int_equal(pr_depth(f->c.pr), 2);
	free(data);
	fh_free(fh);
}

static void test_queue_without_bytes(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = fh_new(-1);
	struct fh_cand v = { .start = 0, .end = 4096, .extno = 0 };
	struct fh_cand past = { .start = 5 * EXT, .end = 5 * EXT + 10,
				.extno = 5 };

	assert_non_null(fh);
	/* no bytes at hand: queued for the promoter to read */
	fh_queue(&f->c, f->in, fh, &f->k, &f->stamp, 0, &v, 1, NULL, 0, 0);
	assert_int_equal(pr_depth(f->c.pr), 1);
	/* past the end of the file: nothing to queue */
	fh_queue(&f->c, f->in, fh, &f->k, &f->stamp, 0, &past, 1, NULL, 0, 0);
	assert_int_equal(pr_depth(f->c.pr), 1);
	fh_free(fh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handle_counts_an_extent_once),
		cmocka_unit_test(test_shared_handle_counts_again_from_another_run),
		cmocka_unit_test_setup_teardown(test_seqcutoff_stops_counting,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_queue_whole_extent_with_the_readers_bytes,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_queue_assembles_an_extent_over_reads,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_without_bytes,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
