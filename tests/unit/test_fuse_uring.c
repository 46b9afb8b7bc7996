// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the choice of FUSE over io_uring (src/daemon/fuse_uring.c):
 * on, off and auto against a build with or without it and the kernel's
 * switch on, off or missing (a file of the test's own in its place).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/fuse_uring.h"
#include "unit_util.h"

struct env {
	char dir[256];
	char on[300], off[300], missing[300];
};

static int setup(void **state)
{
	static struct env e;
	FILE *f;

	if (!ut_tmpdir("fuse_uring", e.dir, sizeof(e.dir)))
		return -1;
	snprintf(e.on, sizeof(e.on), "%s/on", e.dir);
	snprintf(e.off, sizeof(e.off), "%s/off", e.dir);
	snprintf(e.missing, sizeof(e.missing), "%s/missing", e.dir);
	f = fopen(e.on, "w");
	if (!f || fputs("Y\n", f) < 0 || fclose(f))
		return -1;
	f = fopen(e.off, "w");
	if (!f || fputs("N\n", f) < 0 || fclose(f))
		return -1;
	*state = &e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	return ut_rm_tree(e->dir);
}

static int decide_env(enum hotfs_fuse_uring mode,
		      const struct fuse_uring_env *env, const char **why,
		      char *err)
{
	*why = NULL;
	err[0] = 0;
	return fuse_uring_decide(mode, env, why, err, 256);
}

static int decide(enum hotfs_fuse_uring mode, const char *param, bool built,
		  const char **why, char *err)
{
	struct fuse_uring_env env = { .param = param, .built = built };

	return decide_env(mode, &env, why, err);
}

static int decide_refused(enum hotfs_fuse_uring mode, const char *param,
			  bool built, int refused, const char **why, char *err)
{
	struct fuse_uring_env env = { .param = param, .built = built,
				      .refused = refused };

	return decide_env(mode, &env, why, err);
}

static void test_on(void **state)
{
	struct env *e = *state;
	const char *why;
	char err[256];

	/* there: asked for */
	assert_int_equal(decide(HOTFS_FUSE_URING_ON, e->on, true, &why, err),
			 1);
	assert_string_equal(why, "on");
	/* missing anywhere: refused, one line saying what */
	assert_int_equal(decide(HOTFS_FUSE_URING_ON, e->on, false, &why, err),
			 -EINVAL);
	assert_non_null(strstr(err, "fuse_uring=on"));
	assert_non_null(strstr(err, "-Dlibfuse=bundled"));
	assert_null(strchr(err, '\n'));
	assert_int_equal(decide(HOTFS_FUSE_URING_ON, e->off, true, &why, err),
			 -EINVAL);
	assert_non_null(strstr(err, "switched off in the kernel"));
	assert_non_null(strstr(err, FUSE_URING_PARAM));
	assert_int_equal(decide(HOTFS_FUSE_URING_ON, e->missing, true, &why,
				err), -EINVAL);
	assert_non_null(strstr(err, "not in this kernel"));
	/* io_uring refused to the process: refused, saying so */
	assert_int_equal(decide_refused(HOTFS_FUSE_URING_ON, e->on, true,
					EPERM, &why, err), -EINVAL);
	assert_non_null(strstr(err, "io_uring refused"));
	assert_null(strchr(err, '\n'));
}

static void test_off(void **state)
{
	struct env *e = *state;
	const char *why;
	char err[256];

	/* never asked for, whatever is there */
	assert_int_equal(decide(HOTFS_FUSE_URING_OFF, e->on, true, &why, err),
			 0);
	assert_string_equal(why, "off");
	assert_string_equal(err, "");
}

/* The probe says what the kernel's sysctl says: io_uring_disabled 2
 * refuses everyone (EPERM); 0, and 1 for root (CAP_SYS_ADMIN), allow it
 * (tests/integration/no_uring refuses it to a daemon in the suite) */
static void test_probe(void **state)
{
	FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
	int disabled = 0;

	(void)state;
	if (f) {
		assert_int_equal(fscanf(f, "%d", &disabled), 1);
		fclose(f);
	}
	if (disabled == 2)
		assert_int_equal(fuse_uring_refused(), EPERM);
	else if (disabled == 0 || geteuid() == 0)
		assert_int_equal(fuse_uring_refused(), 0);
	else
		skip();
}

static void test_auto(void **state)
{
	struct env *e = *state;
	const char *why;
	char err[256];

	/* missing: off, said why, never refused */
	assert_int_equal(decide(HOTFS_FUSE_URING_AUTO, e->on, false, &why,
				err), 0);
	assert_non_null(strstr(why, "libfuse"));
	assert_int_equal(decide(HOTFS_FUSE_URING_AUTO, e->off, true, &why,
				err), 0);
	assert_non_null(strstr(why, "switched off"));
	assert_int_equal(decide(HOTFS_FUSE_URING_AUTO, e->missing, true, &why,
				err), 0);
	assert_non_null(strstr(why, "kernel"));
	assert_string_equal(err, "");
	/* io_uring refused to the process: off, said why */
	assert_int_equal(decide_refused(HOTFS_FUSE_URING_AUTO, e->on, true,
					EPERM, &why, err), 0);
	assert_non_null(strstr(why, "io_uring refused"));
	assert_string_equal(err, "");
	/* over a network source: off, said why; on still asks for it */
	{
		struct fuse_uring_env net = { .param = e->on, .built = true,
					      .remote = true };

		assert_int_equal(decide_env(HOTFS_FUSE_URING_AUTO, &net, &why,
					    err), 0);
		assert_non_null(strstr(why, "network source"));
		assert_int_equal(decide_env(HOTFS_FUSE_URING_ON, &net, &why,
					    err), 1);
		assert_string_equal(why, "on");
	}
	/* there: asked for */
	assert_int_equal(decide(HOTFS_FUSE_URING_AUTO, e->on, true, &why, err),
			 1);
	assert_string_equal(why, "on");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_on),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_probe),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
