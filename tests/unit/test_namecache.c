// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the daemon's name cache (src/core/namecache.c): a name is
 * answered with the attributes the source gave, while younger than the
 * age asked and under the change generation it was learnt in; a change
 * through the mount, an older answer or a forgotten name is a miss;
 * tables grow, replace, and give their memory back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "hotfs/namecache.h"

#define SEC	1000000000LL

static struct hotfs_inode *dir_new(void)
{
	struct hotfs_inode *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	pthread_mutex_init(&d->m, NULL);
	return d;
}

static void dir_free(struct hotfs_inode *d)
{
	nc_free(d->dir.names);
	pthread_mutex_destroy(&d->m);
	free(d);
}

static struct stat st_of(ino_t ino, off_t size)
{
	struct stat st = { 0 };

	st.st_ino = ino;
	st.st_size = size;
	st.st_mode = S_IFREG | 0644;
	return st;
}

static void test_kept_for_that_long(void **state)
{
	struct hotfs_inode *d = dir_new();
	struct stat a = st_of(10, 100), got;
	uint64_t g = nc_gen();

	(void)state;
	assert_false(nc_get(d, "a", g, 5 * SEC, 30 * SEC, &got));
	nc_add(d, "a", &a, g, 5 * SEC);
	assert_true(nc_get(d, "a", g, 5 * SEC, 30 * SEC, &got));
	assert_int_equal(got.st_ino, 10);
	assert_int_equal(got.st_size, 100);
	assert_false(nc_get(d, "b", g, 5 * SEC, 30 * SEC, &got));
	/* younger than the age asked only */
	assert_true(nc_get(d, "a", g, 34 * SEC, 30 * SEC, &got));
	assert_false(nc_get(d, "a", g, 35 * SEC, 30 * SEC, &got));
	/* a new answer replaces the old one */
	a.st_size = 200;
	nc_add(d, "a", &a, g, 40 * SEC);
	assert_true(nc_get(d, "a", g, 41 * SEC, 30 * SEC, &got));
	assert_int_equal(got.st_size, 200);
	assert_int_equal(nc_count(d), 1);
	/* forgotten */
	nc_forget(d, "a");
	assert_false(nc_get(d, "a", g, 41 * SEC, 30 * SEC, &got));
	nc_forget(d, "never there");
	dir_free(d);
	assert_int_equal(nc_bytes(), 0);
}

static void test_change_through_the_mount(void **state)
{
	struct hotfs_inode *d = dir_new();
	struct stat a = st_of(10, 1), got;
	uint64_t g = nc_gen();

	(void)state;
	nc_add(d, "a", &a, g, SEC);
	nc_changed();
	/* learnt before the change: not used after it */
	assert_int_not_equal(nc_gen(), g);
	assert_false(nc_get(d, "a", nc_gen(), SEC, 30 * SEC, &got));
	/* asked before a change that ended since: not kept at all */
	nc_changed();
	nc_add(d, "b", &a, g + 1, SEC);
	assert_false(nc_get(d, "b", nc_gen(), SEC, 30 * SEC, &got));
	/* under the new generation: kept, and the old entries are gone */
	g = nc_gen();
	nc_add(d, "c", &a, g, SEC);
	assert_true(nc_get(d, "c", g, SEC, 30 * SEC, &got));
	assert_int_equal(nc_count(d), 1);
	dir_free(d);
	assert_int_equal(nc_bytes(), 0);
}

static void test_many_names(void **state)
{
	struct hotfs_inode *d = dir_new(), *e = dir_new();
	uint64_t g = nc_gen();
	struct stat st, got;
	char name[32];
	unsigned i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "file-%u", i);
		st = st_of(1000 + i, i);
		nc_add(i % 2 ? d : e, name, &st, g, SEC);
	}
	assert_int_equal(nc_count(d), 2500);
	assert_true(nc_bytes() > 5000 * sizeof(struct stat));
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "file-%u", i);
		assert_true(nc_get(i % 2 ? d : e, name, g, SEC, SEC + 1, &got));
		assert_int_equal(got.st_ino, 1000 + i);
		assert_false(nc_get(i % 2 ? e : d, name, g, SEC, SEC + 1,
				    &got));
	}
	dir_free(d);
	dir_free(e);
	assert_int_equal(nc_bytes(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_for_that_long),
		cmocka_unit_test(test_change_through_the_mount),
		cmocka_unit_test(test_many_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
