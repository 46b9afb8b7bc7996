// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the writeback mark (wbmark.c): a cachedir's identity
 * made once and kept; the mark set, checked against this cachedir,
 * another, a new one and nocache (the refusal's line), and cleared.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/wbmark.h"
#include "unit_util.h"

struct dirs {
	char root[256], src[PATH_MAX], c1[PATH_MAX], c2[PATH_MAX];
	int src_fd, c1_fd, c2_fd;
};

static int setup(void **state)
{
	static struct dirs d;

	assert_non_null(ut_tmpdir("wbmark", d.root, sizeof(d.root)));
	snprintf(d.src, sizeof(d.src), "%s/src", d.root);
	snprintf(d.c1, sizeof(d.c1), "%s/c1", d.root);
	snprintf(d.c2, sizeof(d.c2), "%s/c2", d.root);
	assert_int_equal(mkdir(d.src, 0700), 0);
	assert_int_equal(mkdir(d.c1, 0700), 0);
	assert_int_equal(mkdir(d.c2, 0700), 0);
	d.src_fd = open(d.src, O_RDONLY | O_DIRECTORY);
	d.c1_fd = open(d.c1, O_RDONLY | O_DIRECTORY);
	d.c2_fd = open(d.c2, O_RDONLY | O_DIRECTORY);
	assert_true(d.src_fd >= 0 && d.c1_fd >= 0 && d.c2_fd >= 0);
	*state = &d;
	return 0;
}

static int teardown(void **state)
{
	struct dirs *d = *state;

	close(d->src_fd);
	close(d->c1_fd);
	close(d->c2_fd);
	return ut_rm_tree(d->root);
}

static void identity_kept(void **state)
{
	struct dirs *d = *state;
	char a[WBMARK_ID_LEN + 1], b[WBMARK_ID_LEN + 1], c[WBMARK_ID_LEN + 1];

	assert_int_equal(wbmark_id(d->c1_fd, 0, a), -ENOENT);
	assert_int_equal(wbmark_id(d->c1_fd, 1, a), 0);
	assert_int_equal(strlen(a), WBMARK_ID_LEN);
	assert_int_equal(wbmark_id(d->c1_fd, 1, b), 0);
	assert_string_equal(a, b);
	assert_int_equal(wbmark_id(d->c2_fd, 1, c), 0);
	assert_string_not_equal(a, c);
}

static void mark_names_its_cachedir(void **state)
{
	struct dirs *d = *state;
	char id[WBMARK_ID_LEN + 1], err[1024];
	struct stat st;

	assert_int_equal(wbmark_id(d->c1_fd, 1, id), 0);
	assert_int_equal(wbmark_check(d->src_fd, d->src, d->c1, err,
				      sizeof(err)), 0);
	assert_int_equal(wbmark_set(d->src_fd, id, d->c1), 0);
	assert_int_equal(fstatat(d->src_fd, WBMARK_NAME ".new", &st, 0), -1);
	assert_int_equal(wbmark_check(d->src_fd, d->src, d->c1, err,
				      sizeof(err)), 1);
	/* another cachedir (with an identity or a new one), nocache */
	assert_int_equal(wbmark_id(d->c2_fd, 1, id), 0);
	assert_int_equal(wbmark_check(d->src_fd, d->src, d->c2, err,
				      sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, d->c1));
	assert_null(strchr(err, '\n'));
	assert_int_equal(wbmark_check(d->src_fd, d->src, d->root, err,
				      sizeof(err)), -EBUSY);
	assert_int_equal(wbmark_check(d->src_fd, d->src, NULL, err,
				      sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "nocache"));
	assert_non_null(strstr(err, "remove"));
	assert_int_equal(wbmark_clear(d->src_fd), 0);
	assert_int_equal(wbmark_clear(d->src_fd), 0);	/* none: fine */
	assert_int_equal(wbmark_check(d->src_fd, d->src, NULL, err,
				      sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(identity_kept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(mark_names_its_cachedir,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
