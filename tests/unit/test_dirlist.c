// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the open directories' states (src/core/dirlist.c): each
 * open one is kept until its releasedir (dirp_free), and those whose
 * releasedir never came (the kernel ends its queued background requests
 * unsent when it unmounts) are freed at exit by dir_free_all, their
 * streams closed (the sanitizer stages catch a leak); and a listing read
 * whole is racy by the time its stamp was taken, not by when the reading
 * ended.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hotfs/clock.h"
#include "hotfs/dirlist.h"
#include "hotfs/stamp.h"

static void test_open_ones_kept_and_freed_at_exit(void **state)
{
	struct hotfs_inode in = { 0 };
	struct hotfs_dirp *d[4];
	unsigned i;

	(void)state;
	assert_int_equal(dirp_open_count(), 0);
	for (i = 0; i < 4; i++) {
		d[i] = dirp_new(&in);
		assert_non_null(d[i]);
		assert_ptr_equal(d[i]->in, &in);
	}
	/* streams open, as opendir leaves them */
	d[0]->dp = opendir("/");
	d[2]->dp = opendir("/");
	assert_non_null(d[0]->dp);
	assert_non_null(d[2]->dp);
	assert_int_equal(dirp_open_count(), 4);
	/* releasedirs in any order: first, middle, last of the list */
	dirp_free(d[3]);
	dirp_free(d[1]);
	assert_int_equal(dirp_open_count(), 2);
	dirp_free(NULL);
	assert_int_equal(dirp_open_count(), 2);
	/* the two whose releasedir never came */
	dir_free_all();
	assert_int_equal(dirp_open_count(), 0);
	/* and the list works again after */
	d[0] = dirp_new(&in);
	assert_int_equal(dirp_open_count(), 1);
	dirp_free(d[0]);
	assert_int_equal(dirp_open_count(), 0);
}

/* A listing recorded from a stream whose stamp (mtime) was taken at
 * stamp_ns, ended now: racy (never fresh) or not. */
static bool recorded_racy(int64_t mtime_ns, int64_t stamp_ns)
{
	static struct hotfs_inode in = { .m = PTHREAD_MUTEX_INITIALIZER };
	struct hotfs_dirp *d = dirp_new(&in);
	struct dirent de = { .d_ino = 7, .d_type = DT_REG, .d_name = "a" };
	struct stat st = { 0 };
	bool racy;

	assert_non_null(d);
	d->rec = true;
	d->mtime_ns = d->ctime_ns = mtime_ns;
	d->size = 4096;
	d->stamp_ns = stamp_ns;
	rec_add(d, &de);
	rec_done(d);
	assert_non_null(in.dir.listing);
	assert_int_equal(in.dir.listing->n, 1);
	racy = in.dir.listing->racy;
	st.st_mtim.tv_sec = st.st_ctim.tv_sec = mtime_ns / 1000000000LL;
	st.st_mtim.tv_nsec = st.st_ctim.tv_nsec = mtime_ns % 1000000000LL;
	st.st_size = 4096;
	assert_int_equal(listing_fresh(in.dir.listing, &st), !racy);
	listing_put(in.dir.listing);
	in.dir.listing = NULL;
	dirp_free(d);
	return racy;
}

static void test_racy_from_when_the_stamp_was_taken(void **state)
{
	int64_t now = clock_real_ns();
	/* not on a whole second: the window is RACY_NS here */
	int64_t mtime = now - 10000000000LL + 123457;

	(void)state;
	/* stamp taken 1 ms after the change, the reading ended 10 s later
	 * (a reader held up): a change made after the stamp in its clock
	 * tick leaves it as it is, so the listing proves nothing */
	assert_true(recorded_racy(mtime, mtime + 1000000));
	/* stamp taken past the window: a later change shows */
	assert_false(recorded_racy(mtime, mtime + 2 * RACY_NS));
	/* a change just now, stamp just now: racy */
	assert_true(recorded_racy(now - 1000, now));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_ones_kept_and_freed_at_exit),
		cmocka_unit_test(test_racy_from_when_the_stamp_was_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
