// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the choice of FUSE passthrough (src/daemon/passthrough.c):
 * pt_decide's answer for each mode against each missing requirement, the
 * cachedir's filesystem (a cachedir not made yet: its parent's; a Btrfs
 * mounted on a loop device where root can, else that case skips), and
 * the capability check against the kernel's own answer.
 */
#include <errno.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/passthrough.h"
#include "unit_util.h"

/* Every requirement met, the cachedir's filesystem checksumming or not. */
static struct pt_env all_met(bool checked)
{
	struct pt_env env = {
		.built = true,
		.cap = true,
		.checked = checked,
		.cache = true,
		.writeback = false,
	};

	return env;
}

/* pt_decide's answer; its reason in *why (never left unset). */
static bool decide(enum hotfs_passthrough mode, const struct pt_env *env,
		   const char **why)
{
	*why = NULL;
	return pt_decide(mode, env, why);
}

static void test_decide_met(void **state)
{
	struct pt_env env;
	const char *why;

	(void)state;
	/* Btrfs: auto and on both ask, no scrub needed */
	env = all_met(true);
	assert_true(decide(HOTFS_PT_AUTO, &env, &why));
	assert_string_equal(why, "on");
	assert_true(decide(HOTFS_PT_ON, &env, &why));
	assert_string_equal(why, "on");
	/* elsewhere: on asks, with the scrub; auto does not, and says how
	 * to have it */
	env = all_met(false);
	assert_true(decide(HOTFS_PT_ON, &env, &why));
	assert_string_equal(why, "on, scrubbed");
	assert_false(decide(HOTFS_PT_AUTO, &env, &why));
	assert_non_null(why);
	assert_true(!strncmp(why, "off: ", 5));
	assert_non_null(strstr(why, "passthrough=on"));
	/* off: never, whatever is met */
	env = all_met(true);
	assert_false(decide(HOTFS_PT_OFF, &env, &why));
	assert_string_equal(why, "off");
}

/* Each missing requirement turns auto and on off, and is named. */
static void test_decide_missing(void **state)
{
	static const enum hotfs_passthrough modes[] = {
		HOTFS_PT_AUTO, HOTFS_PT_ON,
	};
	struct pt_env env;
	const char *why;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		env = all_met(true);
		env.cap = false;
		assert_false(decide(modes[i], &env, &why));
		assert_true(!strncmp(why, "off: ", 5));
		assert_non_null(strstr(why, "CAP_SYS_ADMIN"));

		env = all_met(true);
		env.built = false;
		assert_false(decide(modes[i], &env, &why));
		assert_true(!strncmp(why, "off: ", 5));
		assert_non_null(strstr(why, "libfuse"));

		env = all_met(true);
		env.writeback = true;
		assert_false(decide(modes[i], &env, &why));
		assert_true(!strncmp(why, "off: ", 5));
		assert_non_null(strstr(why, "writeback"));

		env = all_met(true);
		env.cache = false;
		assert_false(decide(modes[i], &env, &why));
		assert_true(!strncmp(why, "off: ", 5));
		assert_non_null(strstr(why, "store"));
	}
	/* nothing met: the build is what is named */
	memset(&env, 0, sizeof(env));
	assert_false(decide(HOTFS_PT_ON, &env, &why));
	assert_non_null(strstr(why, "libfuse"));
}

/* What the test expects of path's filesystem, asked directly. */
static bool is_btrfs(const char *path)
{
	struct statfs sfs;

	assert_int_equal(statfs(path, &sfs), 0);
	return (unsigned long)sfs.f_type == 0x9123683EUL;
}

static void test_fs_checked_parent(void **state)
{
	char dir[64], path[128];

	(void)state;
	assert_false(pt_fs_checked(NULL));
	assert_non_null(ut_tmpdir("pt", dir, sizeof(dir)));
	assert_int_equal(pt_fs_checked(dir), is_btrfs(dir));
	/* a cachedir not made yet: its parent's filesystem (not Btrfs
	 * here: the Btrfs case is below) */
	snprintf(path, sizeof(path), "%s/cache", dir);
	assert_int_equal(pt_fs_checked(path), is_btrfs(dir));
	/* nor its parent: nothing to look at */
	snprintf(path, sizeof(path), "%s/no/cache", dir);
	assert_false(pt_fs_checked(path));
	assert_false(pt_fs_checked("no-such-relative-cachedir"));
	assert_int_equal(ut_rm_tree(dir), 0);
}

struct bfx {
	char dir[64];
	char mnt[128];
	bool mounted;
};

static int btrfs_setup(void **state)
{
	static struct bfx b;

	memset(&b, 0, sizeof(b));
	if (!ut_tmpdir("pt-btrfs", b.dir, sizeof(b.dir)))
		return -1;
	snprintf(b.mnt, sizeof(b.mnt), "%s/mnt", b.dir);
	*state = &b;
	return 0;
}

static int btrfs_teardown(void **state)
{
	struct bfx *b = *state;

	if (b->mounted)
		umount2(b->mnt, MNT_DETACH);
	return ut_rm_tree(b->dir);
}

/* Run cmd quietly; true if it exited 0. */
static bool run_quiet(const char *cmd)
{
	char line[1100];
	int r;

	snprintf(line, sizeof(line), "(%s) >/dev/null 2>&1", cmd);
	r = system(line);
	return r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == 0;
}

/* A Btrfs on a loop device (root with mkfs.btrfs only; skipped
 * elsewhere): a cachedir in it, and one not made yet, are checked. */
static void test_fs_checked_btrfs(void **state)
{
	struct bfx *b = *state;
	char img[128], path[192], cmd[1024];

	snprintf(img, sizeof(img), "%s/img", b->dir);
	snprintf(cmd, sizeof(cmd), "truncate -s 128M %s && "
		 "mkfs.btrfs -q %s && mkdir %s && mount -o loop %s %s",
		 img, img, b->mnt, img, b->mnt);
	if (geteuid() != 0 || !run_quiet(cmd))
		skip();
	b->mounted = true;
	assert_true(is_btrfs(b->mnt));
	snprintf(path, sizeof(path), "%s/cache", b->mnt);
	assert_true(pt_fs_checked(path));	/* not made yet */
	assert_int_equal(mkdir(path, 0700), 0);
	assert_true(pt_fs_checked(path));
	assert_int_equal(pt_fs_checked(b->dir), is_btrfs(b->dir));
	assert_int_equal(umount2(b->mnt, MNT_DETACH), 0);
	b->mounted = false;
	/* the mount gone: the same path is the image's directory's */
	assert_int_equal(pt_fs_checked(path), is_btrfs(b->dir));
}

/* The capability as the kernel reports it (capget). */
static bool kernel_says_cap(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32) & 1;
}

static void test_cap_sys_admin(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(pt_cap_sys_admin(), kernel_says_cap());
	/* a child that drops it from its effective set: false */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = {
			.version = _LINUX_CAPABILITY_VERSION_3,
		};
		struct __user_cap_data_struct d[2];

		if (syscall(SYS_capget, &h, d))
			_exit(2);
		d[CAP_SYS_ADMIN / 32].effective &=
			~(1u << (CAP_SYS_ADMIN % 32));
		if (syscall(SYS_capset, &h, d))
			_exit(2);
		_exit(pt_cap_sys_admin() || kernel_says_cap() ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_met),
		cmocka_unit_test(test_decide_missing),
		cmocka_unit_test(test_fs_checked_parent),
		cmocka_unit_test_setup_teardown(test_fs_checked_btrfs,
						btrfs_setup, btrfs_teardown),
		cmocka_unit_test(test_cap_sys_admin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
