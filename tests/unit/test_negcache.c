// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the daemon's negative entries (src/core/negcache.c): a name
 * found absent is remembered under the directory's stamp, forgotten when
 * the stamp changes, bounded per directory; and the racy rule (a stamp
 * within a clock tick of now, two seconds on whole-second clocks).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/negcache.h"
#include "hotfs/stamp.h"

static void test_remembered_under_the_stamp(void **state)
{
	struct hotfs_inode dir;
	struct stat st = { 0 };
	char name[32];
	unsigned i;

	(void)state;
	memset(&dir, 0, sizeof(dir));
	pthread_mutex_init(&dir.m, NULL);
	st.st_mtim.tv_sec = 1000;
	st.st_ctim.tv_sec = 1000;
	assert_false(neg_hit(&dir, &st, "a"));
	neg_add(&dir, &st, "a");
	assert_true(neg_hit(&dir, &st, "a"));
	assert_false(neg_hit(&dir, &st, "b"));
	/* the directory changed: nothing known any more */
	st.st_mtim.tv_nsec = 1;
	assert_false(neg_hit(&dir, &st, "a"));
	neg_add(&dir, &st, "b");
	assert_true(neg_hit(&dir, &st, "b"));
	assert_false(neg_hit(&dir, &st, "a"));
	/* bounded: the oldest names go round-robin */
	for (i = 0; i < HOTFS_NEG_MAX + 1; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		neg_add(&dir, &st, name);
	}
	assert_int_equal(dir.dir.neg->n, HOTFS_NEG_MAX);
	assert_true(neg_hit(&dir, &st, "n1"));
	neg_free(dir.dir.neg);
	pthread_mutex_destroy(&dir.m);
}

static void test_racy(void **state)
{
	int64_t s = 1000000000LL, now = 5000 * s;

	(void)state;
	/* fine-grained stamps: a few clock ticks */
	assert_true(stamp_racy_ns(now - 1000, now - 1000, now));
	assert_false(stamp_racy_ns(now - RACY_NS - 1, now - RACY_NS - 1,
				   now));
	/* whole seconds: a filesystem with 1 or 2 s stamps */
	assert_true(stamp_racy_ns(now - s, now - s, now));
	assert_false(stamp_racy_ns(now - 3 * s, now - 3 * s, now));
	/* either time counts */
	assert_true(stamp_racy_ns(now - 3 * s, now - 1000, now));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remembered_under_the_stamp),
		cmocka_unit_test(test_racy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
