// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the stamp the kernel's pages of a file go with
 * (src/core/stamp.c): a change behind the mount is told from the mount's own
 * changes, overlapping ones included.  The file is a real file; its
 * stamps are made distinct by setting its mtime explicitly.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"

struct fx {
	char path[64];
	int fd;
	time_t t;
	struct hotfs_inode in;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->path, "/tmp/hotfs-stamp-XXXXXX");
	f->fd = mkstemp(f->path);
	assert_true(f->fd >= 0);
	f->t = 1000000;
	pthread_mutex_init(&f->in.m, NULL);
	pthread_cond_init(&f->in.sp.inval_cv, NULL);
	atomic_store(&f->in.fd, -1);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	close(f->fd);
	unlink(f->path);
	pthread_cond_destroy(&f->in.sp.inval_cv);
	pthread_mutex_destroy(&f->in.m);
	free(f);
	return 0;
}

/* Change the file (as anyone would: a write and a new mtime). */
static void modify(struct fx *f)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { ++f->t, 0 } };

	assert_int_equal(pwrite(f->fd, "x", 1, (off_t)(f->t % 4096)), 1);
	assert_int_equal(futimens(f->fd, ts), 0);
}

static struct stat now(struct fx *f)
{
	struct stat st;

	assert_int_equal(fstat(f->fd, &st), 0);
	return st;
}

static enum stamp_verdict check(struct fx *f)
{
	struct stat st = now(f);

	return stamp_check(&f->in, &st);
}

static void begin(struct fx *f)
{
	stamp_begin(&f->in, f->fd);
}

static void end(struct fx *f)
{
	stamp_end(&f->in, f->fd);
}

static void test_behind_the_mount(void **state)
{
	struct fx *f = *state;

	assert_int_equal(check(f), STAMP_NEW);
	assert_int_equal(check(f), STAMP_SAME);
	modify(f);
	assert_int_equal(check(f), STAMP_CHANGED);
	/* recorded: the next check finds it the same */
	assert_int_equal(check(f), STAMP_SAME);
}

static void test_own_change(void **state)
{
	struct fx *f = *state;

	assert_int_equal(check(f), STAMP_NEW);
	begin(f);
	modify(f);
	/* in flight: taken as the mount's own, not recorded yet */
	assert_int_equal(check(f), STAMP_SAME);
	assert_true(f->in.sp.stamp.mtime_ns != (int64_t)f->t * 1000000000LL);
	end(f);
	assert_int_equal(f->in.sp.stamp.mtime_ns, (int64_t)f->t * 1000000000LL);
	assert_int_equal(check(f), STAMP_SAME);
	assert_int_equal(f->in.sp.chg_inflight, 0);
}

static void test_overlapping_changes(void **state)
{
	struct fx *f = *state;
	int64_t first;

	assert_int_equal(check(f), STAMP_NEW);
	begin(f);			/* A */
	modify(f);
	begin(f);			/* B, after A landed */
	modify(f);
	end(f);				/* A ends: B still in flight */
	first = f->in.sp.stamp.mtime_ns;
	assert_true(first != (int64_t)f->t * 1000000000LL);
	modify(f);			/* B lands more */
	assert_int_equal(check(f), STAMP_SAME);
	end(f);				/* B, the last: recorded */
	assert_int_equal(f->in.sp.stamp.mtime_ns, (int64_t)f->t * 1000000000LL);
	assert_int_equal(check(f), STAMP_SAME);
}

static void test_change_after_one_behind(void **state)
{
	struct fx *f = *state;

	assert_int_equal(check(f), STAMP_NEW);
	modify(f);			/* behind the mount, not checked */
	begin(f);			/* the mount's own, from there */
	modify(f);
	end(f);
	/* the change behind the mount must still show */
	assert_int_equal(check(f), STAMP_CHANGED);
	assert_int_equal(check(f), STAMP_SAME);
}

static void test_end_without_begin(void **state)
{
	struct fx *f = *state;

	assert_int_equal(check(f), STAMP_NEW);
	end(f);				/* tolerated: nothing in flight */
	assert_int_equal(f->in.sp.chg_inflight, 0);
	modify(f);
	assert_int_equal(check(f), STAMP_CHANGED);
}

/* The source watch's view (stamp_check_ino): a state recorded by an
 * open or a getattr, or by the watch itself, is "seen" (the kernel was
 * told); one recorded at the end of the mount's own change is not; without
 * an fd nothing is known. */
static void test_watch_seen(void **state)
{
	struct fx *f = *state;
	bool seen = true;

	assert_int_equal(stamp_check_ino(&f->in, &seen), STAMP_SAME);
	assert_false(seen);			/* no fd: not checked */
	atomic_store(&f->in.fd, f->fd);
	assert_int_equal(stamp_check_ino(&f->in, &seen), STAMP_NEW);
	assert_false(seen);
	assert_int_equal(stamp_check_ino(&f->in, &seen), STAMP_SAME);
	assert_true(seen);			/* the watch recorded it */
	modify(f);
	assert_int_equal(check(f), STAMP_CHANGED);	/* an open saw it */
	assert_int_equal(stamp_check_ino(&f->in, &seen), STAMP_SAME);
	assert_true(seen);
	begin(f);
	modify(f);
	end(f);					/* the mount's own change */
	assert_int_equal(stamp_check_ino(&f->in, &seen), STAMP_SAME);
	assert_false(seen);
	modify(f);				/* behind the mount */
	assert_int_equal(stamp_check_ino(&f->in, &seen), STAMP_CHANGED);
	assert_false(seen);
	assert_true(f->in.sp.inval_pending == 1);
	stamp_inval_sent(&f->in);
	assert_true(f->in.sp.inval_pending == 0);
	atomic_store(&f->in.fd, -1);
}

static void *send_later(void *arg)
{
	struct hotfs_inode *in = arg;

	/* the waiter holds m until it waits: taking it means it waits */
	pthread_mutex_lock(&in->m);
	pthread_mutex_unlock(&in->m);
	stamp_inval_sent(in);
	return NULL;
}

/* An open that finds an invalidation pending waits until it is sent, and
 * no more than a second when nobody sends it. */
static void test_wait_inval(void **state)
{
	struct fx *f = *state;
	struct timespec a, b;
	pthread_t th;

	pthread_mutex_lock(&f->in.m);
	f->in.sp.inval_pending = 1;
	assert_int_equal(pthread_create(&th, NULL, send_later, &f->in), 0);
	stamp_wait_inval_locked(&f->in);
	assert_true(f->in.sp.inval_pending == 0);
	pthread_mutex_unlock(&f->in.m);
	pthread_join(th, NULL);

	pthread_mutex_lock(&f->in.m);
	f->in.sp.inval_pending = 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	stamp_wait_inval_locked(&f->in);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(f->in.sp.inval_pending == 1);	/* nobody sent it */
	f->in.sp.inval_pending = 0;
	pthread_mutex_unlock(&f->in.m);
	assert_true((b.tv_sec - a.tv_sec) * 1000000000L +
		    (b.tv_nsec - a.tv_nsec) >= 900000000L);
}

/*
 * On a coarse source (hotfs/srcprobe.h), a stamp recorded within its
 * clock tick is not settled (an open then drops the kernel's pages); on
 * a fine local source every stamp is.  (The file's ctime is always now
 * here: the racy case uses an mtime ahead of the clock, which stays
 * racy however slow the machine.)
 */
static void test_settled(void **state)
{
	struct fx *f = *state;
	struct hotfs_srcinfo saved = hotfs_src;
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };

	hotfs_src.remote = true;
	hotfs_src.gran_ns = 1000000000LL;
	ts[1].tv_sec = time(NULL) + 30;
	assert_int_equal(futimens(f->fd, ts), 0);
	assert_int_equal(check(f), STAMP_NEW);
	assert_false(f->in.sp.stamp_settled);
	/* the same on a local source with fine stamps: settled */
	hotfs_src.remote = false;
	hotfs_src.gran_ns = 1;
	ts[1].tv_sec++;
	assert_int_equal(futimens(f->fd, ts), 0);
	assert_int_equal(check(f), STAMP_CHANGED);
	assert_true(f->in.sp.stamp_settled);
	hotfs_src = saved;
}

/*
 * An open of a racy, unsettled stamp drops the kernel's pages, but not
 * while other handles write the file (their bytes may be in the pages,
 * not yet sent); the first open without writers drops them.
 */
static void test_open_beside_writers(void **state)
{
	struct fx *f = *state;
	struct hotfs_srcinfo saved = hotfs_src;
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	bool keep;

	hotfs_src.remote = true;
	hotfs_src.gran_ns = 1000000000LL;
	ts[1].tv_sec = time(NULL) + 30;		/* racy however slow */
	assert_int_equal(futimens(f->fd, ts), 0);
	assert_int_equal(check(f), STAMP_NEW);
	assert_false(f->in.sp.stamp_settled);
	pthread_mutex_lock(&f->in.m);
	/* writers open: kept, and still unsettled */
	assert_false(stamp_open_locked(&f->in, f->fd, false, true, &keep));
	assert_true(keep);
	assert_false(f->in.sp.stamp_settled);
	assert_false(stamp_open_locked(&f->in, f->fd, false, true, &keep));
	assert_true(keep);
	/* none: dropped (still racy: still unsettled) */
	assert_false(stamp_open_locked(&f->in, f->fd, false, false, &keep));
	assert_false(keep);
	assert_false(f->in.sp.stamp_settled);
	pthread_mutex_unlock(&f->in.m);
	/* a change behind the mount is dropped with writers open too */
	ts[1].tv_sec++;
	assert_int_equal(futimens(f->fd, ts), 0);
	pthread_mutex_lock(&f->in.m);
	assert_true(stamp_open_locked(&f->in, f->fd, false, true, &keep));
	assert_false(keep);
	pthread_mutex_unlock(&f->in.m);
	hotfs_src = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_behind_the_mount, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_own_change, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_changes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_change_after_one_behind,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_seen, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wait_inval, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_end_without_begin, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_settled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_beside_writers, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
