// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the open directories' states (src/core/dirlist.c): each
 * open one is kept until its releasedir (dirp_free), and those whose
 * releasedir never came (the kernel ends its queued background requests
 * unsent when it unmounts) are freed at exit by dir_free_all, their
 * streams closed (the sanitizer stages catch a leak).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hotfs/dirlist.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_ones_kept_and_freed_at_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
