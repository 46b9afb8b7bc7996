// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the pins (src/cache/pins.c): a pin is kept across a reopen, an
 * unpin too, a reset forgets them all; and a pin or unpin that could not
 * be saved is not in force either (what is in force is what a restart
 * finds).
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

#include "hotfs/pins.h"
#include "unit_util.h"

static struct hotfs_key key(uint64_t ino)
{
	struct hotfs_key k;

	memset(&k, 0, sizeof(k));
	k.dev = 7;
	k.ino = ino;
	return k;
}

/* pins_open on the directory dir (the cache opens the cachedir once). */
static int open_in(struct hotfs_pins **p, const char *dir, bool reset)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (dfd < 0)
		return -1;
	r = pins_open(p, dfd, reset);
	close(dfd);
	return r;
}

static void test_kept_across_reopen(void **state)
{
	struct hotfs_pins *p;
	struct hotfs_key a = key(1), b = key(2), c = key(3);
	char dir[64];
	uint64_t i;

	(void)state;
	assert_non_null(ut_tmpdir("pins", dir, sizeof(dir)));
	assert_int_equal(open_in(&p, dir, false), 0);
	assert_int_equal(pins_set(p, &a, true), 0);
	assert_int_equal(pins_set(p, &b, true), 0);
	assert_int_equal(pins_set(p, &b, true), 0);	/* twice: one pin */
	assert_int_equal(pins_count(p), 2);
	/* enough to make the table grow */
	for (i = 100; i < 300; i++) {
		struct hotfs_key k = key(i);

		assert_int_equal(pins_set(p, &k, true), 0);
	}
	assert_int_equal(pins_set(p, &a, false), 0);
	pins_close(p);

	assert_int_equal(open_in(&p, dir, false), 0);
	assert_false(pins_has(p, &a));
	assert_true(pins_has(p, &b));
	assert_false(pins_has(p, &c));
	assert_int_equal(pins_count(p), 201);
	pins_close(p);

	assert_int_equal(open_in(&p, dir, true), 0);
	assert_int_equal(pins_count(p), 0);
	assert_false(pins_has(p, &b));
	pins_close(p);
	assert_int_equal(ut_rm_tree(dir), 0);
}

static void test_not_saved_not_in_force(void **state)
{
	struct hotfs_pins *p;
	struct hotfs_key a = key(1), b = key(2);
	char dir[64];

	(void)state;
	assert_non_null(ut_tmpdir("pins", dir, sizeof(dir)));
	assert_int_equal(open_in(&p, dir, false), 0);
	assert_int_equal(pins_set(p, &a, true), 0);
	/* the cachedir gone under the open list: every save fails */
	assert_int_equal(ut_rm_tree(dir), 0);
	assert_true(pins_set(p, &b, true) < 0);
	assert_false(pins_has(p, &b));
	assert_true(pins_set(p, &a, false) < 0);
	assert_true(pins_has(p, &a));
	assert_int_equal(pins_count(p), 1);
	pins_close(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_across_reopen),
		cmocka_unit_test(test_not_saved_not_in_force),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
