// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the kernel read-ahead setting (src/fuse/bdi.c).  The sysfs
 * writes go to a tree of real files under a temporary directory laid out
 * as /sys is (class/bdi/MAJ:MIN/read_ahead_kb); that the real /sys takes
 * them on a real mount is tests/integration/test_readpath.py's concern.
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/bdi.h"

struct fx {
	char root[64];
	char file[200];
	dev_t dev;
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void get(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char d[160];

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "/tmp/hotfs-bdi.XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	f->dev = makedev(0, 77);
	snprintf(d, sizeof(d), "%s/class", f->root);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/class/bdi", f->root);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/class/bdi/0:77", f->root);
	if (mkdir(d, 0755) == -1)
		return -1;
	snprintf(f->file, sizeof(f->file), "%s/read_ahead_kb", d);
	put(f->file, "128\n");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char d[160];

	unlink(f->file);
	snprintf(d, sizeof(d), "%s/class/bdi/0:77", f->root);
	rmdir(d);
	snprintf(d, sizeof(d), "%s/class/bdi", f->root);
	rmdir(d);
	snprintf(d, sizeof(d), "%s/class", f->root);
	rmdir(d);
	rmdir(f->root);
	free(f);
	return 0;
}

static void test_set_and_get(void **state)
{
	struct fx *f = *state;
	char why[300], text[32];
	uint64_t b = 0;

	assert_int_equal(bdi_get_read_ahead(f->root, f->dev, &b), 0);
	assert_int_equal(b, 128 * 1024);
	assert_int_equal(bdi_set_read_ahead(f->root, f->dev, 1 << 20, why,
					    sizeof(why)), 0);
	get(f->file, text, sizeof(text));
	assert_string_equal(text, "1024\n");
	assert_int_equal(bdi_get_read_ahead(f->root, f->dev, &b), 0);
	assert_int_equal(b, 1 << 20);
	/* sysfs takes KiB: rounded down */
	assert_int_equal(bdi_set_read_ahead(f->root, f->dev, 5000, why,
					    sizeof(why)), 0);
	get(f->file, text, sizeof(text));
	assert_string_equal(text, "4\n");
}

static void test_missing_bdi(void **state)
{
	struct fx *f = *state;
	char why[300] = "";
	uint64_t b = 7;

	assert_int_equal(bdi_set_read_ahead(f->root, makedev(0, 78), 1 << 20,
					    why, sizeof(why)), -ENOENT);
	/* the message names the file */
	assert_non_null(strstr(why, "/class/bdi/0:78/read_ahead_kb"));
	assert_int_equal(bdi_get_read_ahead(f->root, makedev(0, 78), &b),
			 -ENOENT);
	assert_int_equal(b, 7);
}

static void test_garbage_read_back(void **state)
{
	struct fx *f = *state;
	uint64_t b = 7;

	put(f->file, "lots\n");
	assert_int_equal(bdi_get_read_ahead(f->root, f->dev, &b), -EINVAL);
	put(f->file, "12x\n");
	assert_int_equal(bdi_get_read_ahead(f->root, f->dev, &b), -EINVAL);
	put(f->file, "");
	assert_int_equal(bdi_get_read_ahead(f->root, f->dev, &b), -EINVAL);
	assert_int_equal(b, 7);
}

static void test_unwritable(void **state)
{
	struct fx *f = *state;
	char why[300] = "";

	/* a directory where the file should be: the open fails, said so */
	assert_int_equal(unlink(f->file), 0);
	assert_int_equal(mkdir(f->file, 0755), 0);
	assert_true(bdi_set_read_ahead(f->root, f->dev, 1 << 20, why,
				       sizeof(why)) < 0);
	assert_non_null(strstr(why, "read_ahead_kb"));
	assert_int_equal(rmdir(f->file), 0);
	put(f->file, "128\n");
}

static void test_mountinfo(void **state)
{
	static const char mi[] =
		"22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
		"50 30 0:40 / /tmp/a\\040b rw,nosuid shared:5 - fuse.hotfs "
		"/src rw,user_id=0,group_id=0\n"
		"52 30 0:42 / /tmp/c rw - ext4 /dev/vdb rw\n"
		"53 50 0:43 / /tmp/a\\040b rw master:2 shared:9 - fuse /x "
		"rw\n"
		"54 30 7:1 / /tmp/d rw - ext4 /dev/loop1 rw\n";
	dev_t dev = 0;
	FILE *f;

	(void)state;
	f = fmemopen((void *)mi, sizeof(mi) - 1, "r");
	assert_non_null(f);
	/* unescaped, optional fields skipped, the mount on top */
	assert_int_equal(bdi_mountinfo_dev(f, "/tmp/a b", &dev), 0);
	assert_int_equal(major(dev), 0);
	assert_int_equal(minor(dev), 43);
	rewind(f);
	/* not FUSE: never another filesystem's bdi */
	assert_int_equal(bdi_mountinfo_dev(f, "/tmp/c", &dev), -ENOENT);
	rewind(f);
	assert_int_equal(bdi_mountinfo_dev(f, "/tmp/a", &dev), -ENOENT);
	fclose(f);
}

static void test_mount_dev(void **state)
{
	dev_t dev = 0;

	(void)state;
	/* /tmp is not a FUSE mount */
	assert_int_equal(bdi_mount_dev("/tmp", &dev), -ENOENT);
	assert_int_equal(bdi_mount_dev("/tmp/hotfs-bdi-no-such-dir", &dev),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_set_and_get, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_missing_bdi, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_garbage_read_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unwritable, setup,
						teardown),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_mount_dev),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
