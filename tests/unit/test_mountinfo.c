// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for reading mountinfo (src/lib/mountinfo.c): its fields, and
 * what the mounts a tree spans forbid.  The streams are mountinfo text
 * in memory; that the FUSE mount takes those flags is
 * tests/integration/test_mount.py's concern.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <cmocka.h>

#include "hotfs/mountinfo.h"

static const char table[] =
	"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	"30 22 7:0 / /srv rw,nosuid,nodev - ext4 /dev/loop0 rw\n"
	"31 30 0:40 / /srv/data/sub rw,noexec,relatime - tmpfs tmpfs rw\n"
	"32 22 7:1 / /ro\\040disk rw,relatime - ext4 /dev/loop1 ro,errors=x\n"
	"33 22 7:2 / /srvx rw,nosuid - ext4 /dev/loop2 rw\n"
	"34 22 7:3 / /opt ro,nodev - ext4 /dev/loop3 rw\n"
	"35 22 0:41 / /opt rw - tmpfs tmpfs rw\n"
	"36 22 0:42 / /home/a rw,nodev - tmpfs tmpfs rw\n"
	"garbage line\n";

static long forbids(const char *dir)
{
	FILE *f = fmemopen((void *)table, sizeof(table) - 1, "r");
	long r;

	assert_non_null(f);
	r = mountinfo_forbids(f, dir);
	fclose(f);
	return r;
}

static void test_fields(void **state)
{
	FILE *f = fmemopen((void *)table, sizeof(table) - 1, "r");
	struct mountinfo_ent e;
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	(void)state;
	assert_non_null(f);
	while (mountinfo_next(f, &line, &cap, &e)) {
		if (++n == 4) {
			assert_string_equal(e.mnt, "/ro disk");
			assert_string_equal(e.opts, "rw,relatime");
			assert_string_equal(e.fstype, "ext4");
			assert_string_equal(e.super, "ro,errors=x");
			assert_int_equal(e.major, 7);
			assert_int_equal(e.minor, 1);
		}
	}
	assert_int_equal(n, 8);		/* the garbage line skipped */
	free(line);
	fclose(f);
}

static void test_forbids(void **state)
{
	(void)state;
	/* the source's own mount, not its parent's */
	assert_int_equal(forbids("/srv/data/sub/x"), ST_NOEXEC);
	/* and a mount below the tree: its nosuid, nodev, noexec count */
	assert_int_equal(forbids("/srv"), ST_NOSUID | ST_NODEV | ST_NOEXEC);
	assert_int_equal(forbids("/srv/data"),
			 ST_NOSUID | ST_NODEV | ST_NOEXEC);
	/* the root's tree spans every mount (but their ro is theirs) */
	assert_int_equal(forbids("/"), ST_NOSUID | ST_NODEV | ST_NOEXEC);
	assert_int_equal(forbids("/usr"), 0);
	/* read-only by its superblock; an escaped name */
	assert_int_equal(forbids("/ro disk/d"), ST_RDONLY);
	/* a prefix that is not a parent */
	assert_int_equal(forbids("/srvxy"), 0);
	assert_int_equal(forbids("/srvx"), ST_NOSUID);
	/* of two mounts on one point, the later is on top */
	assert_int_equal(forbids("/opt/x"), 0);
	assert_int_equal(forbids("/home"), ST_NODEV);
}

static void test_no_mount(void **state)
{
	static const char empty[] = "garbage\n";
	FILE *f = fmemopen((void *)empty, sizeof(empty) - 1, "r");

	(void)state;
	assert_non_null(f);
	assert_int_equal(mountinfo_forbids(f, "/srv"), -ENOENT);
	fclose(f);
}

/* ro, or ext4's emergency_ro after an error: in the superblock's
 * options, of the device's mount */
static int dev_ro(unsigned major, unsigned minor)
{
	static const char t[] =
		"22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
		"30 22 7:0 / /c rw - ext4 /dev/loop0 rw,errors=remount-ro\n"
		"31 22 7:1 / /d rw - ext4 /dev/loop1 rw,emergency_ro\n"
		"32 22 7:2 / /e ro - ext4 /dev/loop2 rw\n"
		"33 22 7:3 / /f rw - ext4 /dev/loop3 ro,errors=x\n"
		"34 22 7:4 / /g rw - ext4 /dev/loop4 rw,rox\n";
	FILE *f = fmemopen((void *)t, sizeof(t) - 1, "r");
	int r;

	assert_non_null(f);
	r = mountinfo_dev_ro(f, major, minor);
	fclose(f);
	return r;
}

static void test_dev_ro(void **state)
{
	(void)state;
	assert_int_equal(dev_ro(8, 1), 0);
	assert_int_equal(dev_ro(7, 0), 0);
	assert_int_equal(dev_ro(7, 1), 1);
	/* a read-only mount of a writable superblock: not the filesystem */
	assert_int_equal(dev_ro(7, 2), 0);
	assert_int_equal(dev_ro(7, 3), 1);
	assert_int_equal(dev_ro(7, 4), 0);
	assert_int_equal(dev_ro(9, 9), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_forbids),
		cmocka_unit_test(test_no_mount),
		cmocka_unit_test(test_dev_ro),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
