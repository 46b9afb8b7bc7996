// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the source probe (src/core/srcprobe.c): the timestamp
 * granularity of sets of stamps, the racy window, the inode-number
 * sample checked against a directory (renumbered, replaced, unchanged),
 * and the per-run keys of filesystems mounted inside the source.
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
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/cache.h"
#include "hotfs/inode.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"

#define S 1000000000LL

static void granularity_of_stamps(void **state)
{
	int64_t whole[] = { 1700000001 * S, 1700000002 * S, 0 };
	int64_t even[] = { 1700000000 * S, 1700000002 * S, 1700000010 * S };
	int64_t ms[] = { 1700000000 * S + 5000000, 1700000001 * S + 1000000 };
	int64_t us[] = { 1700000000 * S + 123000, 1700000001 * S };
	int64_t ns[] = { 1700000000 * S + 123456789, 1700000001 * S };
	int64_t none[] = { 0, 0 };

	(void)state;
	assert_int_equal(srcprobe_granularity(whole, 3), S);
	assert_int_equal(srcprobe_granularity(even, 3), 2 * S);
	assert_int_equal(srcprobe_granularity(ms, 2), 1000000);
	assert_int_equal(srcprobe_granularity(us, 2), 1000);
	assert_int_equal(srcprobe_granularity(ns, 2), 1);
	/* nothing to measure on: the coarsest */
	assert_int_equal(srcprobe_granularity(none, 2), 2 * S);
	assert_int_equal(srcprobe_granularity(NULL, 0), 2 * S);
}

/* The racy rule (hotfs/stamp.h), with the source's tick set by hand. */
static void racy_window(void **state)
{
	int64_t t = 1700000000 * S + 123, whole = 1700000000 * S;
	int64_t gran = hotfs_src.gran_ns;

	(void)state;
	hotfs_src.gran_ns = S;
	/* a 1 s tick: racy until the tick is over, plus slack */
	assert_true(stamp_racy_ns(t, t, t + S / 2));
	assert_true(stamp_racy_ns(t, t, t + S));
	assert_false(stamp_racy_ns(t, t, t + S + PROBE_RACY_SLACK_NS));
	assert_int_equal(stamp_racy_left(t, t, t + S),
			 PROBE_RACY_SLACK_NS);
	/* whole-second stamps: 2.1 s, whatever the tick */
	assert_true(stamp_racy_ns(whole, whole, whole + 2 * S));
	assert_false(stamp_racy_ns(whole, whole, whole + 21 * S / 10));
	/* the later of mtime and ctime counts */
	assert_true(stamp_racy_ns(t - 10 * S, t, t + S / 2));
	assert_true(stamp_racy_ns(t, t - 10 * S, t + S / 2));
	/* fine stamps: a few coarse-clock ticks, at least RACY_NS */
	hotfs_src.gran_ns = 1;
	assert_true(stamp_racy_ns(t, t, t + PROBE_RACY_SLACK_NS / 2));
	assert_false(stamp_racy_ns(t, t, t + 2 * PROBE_RACY_SLACK_NS));
	assert_false(stamp_racy_ns(t, t, t + RACY_NS + 2));
	/* a stamp from the future (a server clock ahead) is racy, the whole
	 * window long */
	assert_true(stamp_racy_ns(t + 5 * S, t, t));
	assert_int_equal(stamp_racy_left(t + 5 * S, t, t),
			 PROBE_RACY_SLACK_NS + 1);
	hotfs_src.gran_ns = gran;
}

static char dir[] = "/tmp/test_srcprobe.XXXXXX";
static int dfd = -1;

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	return dfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void mkfile(const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	close(fd);
}

static int line(char *buf, size_t size, const char *name, long long dino)
{
	struct stat st;

	assert_int_equal(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	return snprintf(buf, size, "%llu %lld %lld %s\n",
			(unsigned long long)st.st_ino + dino,
			(long long)ts_ns(&st.st_mtim),
			(long long)ts_ns(&st.st_ctim), name);
}

static void sample_check(void **state)
{
	char text[512], why[160] = "";
	unsigned found;
	size_t n;

	(void)state;
	mkfile("a");
	mkfile("b");
	/* as recorded */
	n = (size_t)line(text, sizeof(text), "a", 0);
	n += (size_t)line(text + n, sizeof(text) - n, "b", 0);
	assert_int_equal(srcprobe_check(dfd, text, n, &found, why,
					sizeof(why)), 1);
	assert_int_equal(found, 2);
	/* b had another number with the same times: renumbered */
	n = (size_t)line(text, sizeof(text), "a", 0);
	n += (size_t)line(text + n, sizeof(text) - n, "b", 7);
	assert_int_equal(srcprobe_check(dfd, text, n, &found, why,
					sizeof(why)), 0);
	assert_non_null(strstr(why, "'b'"));
	/* a name whose times differ is another file: not counted */
	n = (size_t)snprintf(text, sizeof(text), "1 5 5 a\n");
	assert_int_equal(srcprobe_check(dfd, text, n, &found, why,
					sizeof(why)), -ENOENT);
	assert_int_equal(found, 0);
	/* gone, garbage, paths: ignored */
	n = (size_t)snprintf(text, sizeof(text),
			     "1 2 3 gone\nxyz\n1 2 3 ../a\n1 2\n");
	assert_int_equal(srcprobe_check(dfd, text, n, &found, why,
					sizeof(why)), -ENOENT);
	/* no newline at the end: the last line is not taken */
	n = (size_t)line(text, sizeof(text), "a", 9);
	assert_int_equal(srcprobe_check(dfd, text, n - 1, &found, why,
					sizeof(why)), -ENOENT);
}

static void run_then_save_rechecks(void **state)
{
	struct hotfs_srcinfo si;
	char cache[] = "/tmp/test_srcprobe_c.XXXXXX";
	int cfd, rfd;

	(void)state;
	assert_non_null(mkdtemp(cache));
	cfd = open(cache, O_RDONLY | O_DIRECTORY);
	rfd = open(dir, O_PATH | O_DIRECTORY);
	assert_true(cfd >= 0 && rfd >= 0);
	mkfile("x");
	assert_int_equal(srcprobe_run(rfd, cfd, &si), 0);
	assert_true(si.ids_kept);
	assert_int_equal(si.checked, 0);	/* nothing recorded yet */
	assert_true(si.nstamps >= 4);
	assert_true(si.gran_ns >= 1 && si.gran_ns <= 2 * S);
	/* nothing written until the store is known usable */
	assert_int_equal(faccessat(cfd, PROBE_FILE, F_OK, 0), -1);
	assert_non_null(si.sample);
	assert_int_equal(srcprobe_save(cfd, &si), 0);
	assert_null(si.sample);
	assert_int_equal(faccessat(cfd, PROBE_FILE, F_OK, 0), 0);
	/* the second start compares what the first recorded */
	assert_int_equal(srcprobe_run(rfd, cfd, &si), 0);
	assert_true(si.ids_kept);
	assert_true(si.checked >= 1);
	free(si.sample);
	unlinkat(cfd, PROBE_FILE, 0);
	close(cfd);
	close(rfd);
	assert_int_equal(rmdir(cache), 0);
}

/* Files of the source's root filesystem keep their key across runs;
 * those of filesystems mounted inside it get another each run. */
static void submount_keys_per_run(void **state)
{
	struct hotfs_cache a = { .root_dev = 2049, .run_salt = 7 };
	struct hotfs_cache b = { .root_dev = 2049, .run_salt = 9 };
	struct hotfs_key ka, kb;

	(void)state;
	cache_key(&a, 2049, 12, &ka);
	cache_key(&b, 2049, 12, &kb);
	assert_int_equal(ka.dev, 0);
	assert_int_equal(kb.dev, 0);
	assert_int_equal(ka.ino, 12);
	cache_key(&a, 45, 12, &ka);
	cache_key(&b, 45, 12, &kb);
	assert_int_not_equal(ka.dev, kb.dev);
	assert_int_not_equal(ka.dev, 0);
	assert_int_equal(ka.ino, kb.ino);
	/* two devices of one run stay apart */
	cache_key(&a, 46, 12, &kb);
	assert_int_not_equal(ka.dev, kb.dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(granularity_of_stamps),
		cmocka_unit_test(racy_window),
		cmocka_unit_test(sample_check),
		cmocka_unit_test(run_then_save_rechecks),
		cmocka_unit_test(submount_keys_per_run),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
