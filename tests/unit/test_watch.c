// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the source watch (src/core/watch.c): which directories
 * get a watch (directories only, each once, up to the budget, the rest
 * counted), a watch dropped with its inode or gone with its directory,
 * and what an event in a watched directory sends: a name changed behind
 * the mount, its entry and its directory's attributes (and the entry
 * again a moment later); a known file changed behind the mount, its
 * attributes and pages, unless its stamp is the one already seen; the
 * mount's own changes (watch_own_add, watch_own_end), nothing, unless
 * the change failed, nor past their time, nor after an overflow, which
 * drops every watched directory's attributes.
 *
 * Real inotify on a real temporary directory, and a real notifier
 * (hotfs/notify.h) on a session that was never mounted: libfuse refuses
 * every notification of it (no FUSE_INIT: -ENOSYS) before writing
 * anything, but each is counted as sent (the stats' invalidations),
 * which is what the tests look at.
 *
 * The notifier sends in the order queued, so a barrier is a change to a
 * known file, "mark", behind the mount: once the notification for it has
 * been sent (its sent callback, stamp_inval_sent, clears the file's
 * pending invalidation), every notification queued before it has been
 * sent too.  A name's second expiry (DEFER_MS later) may not have been:
 * the tests wait for those by their count.
 *
 * The remote-filesystem rule (NFS, FUSE, ... not watched) is not tested:
 * it needs such a mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_util.h"

#include "hotfs/clock.h"
#include "hotfs/inode.h"
#include "hotfs/stamp.h"
#include "hotfs/watch.h"

#define OWN_TTL_NS	(2000 * 1000000LL)	/* watch.c's OWN_TTL_MS */


struct fx {
	char dir[64];
	int dfd;			/* O_PATH on dir, the test's own */
	struct hotfs_itable *t;
	struct hotfs_watch *w;
	struct fuse_session *se;
	struct hotfs_inode *mark;	/* the barrier's file */
	uint64_t marks;			/* barriers so far */
};

static struct fuse_session *session_new(void)
{
	static const struct fuse_lowlevel_ops ops;
	static char prog[] = "test_watch";
	char *argv[] = { prog, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *se;

	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	fuse_opt_free_args(&args);
	return se;
}

static void touch(struct fx *f, const char *name)
{
	int fd = openat(f->dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	close(fd);
}

/* Set name's mtime to sec (a new stamp, one IN_ATTRIB event). */
static void set_mtime(struct fx *f, const char *name, time_t sec)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { sec, 0 } };

	assert_int_equal(utimensat(f->dfd, name, ts, 0), 0);
}

/* The table's inode of name (a lookup), its stamp recorded (as an open
 * or a getattr would). */
static struct hotfs_inode *known(struct fx *f, const char *name)
{
	struct hotfs_inode *in;
	struct stat st;

	in = ut_inode(f->t, f->dfd, name, &st);
	assert_non_null(in);
	if (S_ISREG(st.st_mode))
		assert_int_equal(stamp_check(in, &st), STAMP_NEW);
	return in;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int rfd;

	assert_non_null(f);
	assert_non_null(ut_tmpdir("watch", f->dir, sizeof(f->dir)));
	f->dfd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->dfd >= 0);
	assert_int_equal(mkdirat(f->dfd, "A", 0700), 0);
	assert_int_equal(mkdirat(f->dfd, "B", 0700), 0);
	assert_int_equal(mkdirat(f->dfd, "C", 0700), 0);
	touch(f, "mark");
	touch(f, "file");
	touch(f, "other");
	rfd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	assert_int_equal(ino_table_new(&f->t, rfd), 0);
	f->mark = known(f, "mark");
	assert_int_equal(watch_new(&f->w, f->t), 0);
	f->se = session_new();
	assert_non_null(f->se);
	assert_int_equal(watch_start(f->w, f->se), 0);
	assert_true(watch_dir(f->w, ino_root(f->t)));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	watch_free(f->w);
	ino_table_free(f->t);
	fuse_session_destroy(f->se);
	close(f->dfd);
	assert_int_equal(ut_rm_tree(f->dir), 0);
	free(f);
	return 0;
}

static struct hotfs_watch_stats stats(struct fx *f)
{
	struct hotfs_watch_stats s;

	watch_get_stats(f->w, &s);
	return s;
}

static uint64_t sent(struct fx *f)
{
	return stats(f).invalidations;
}

/* Has the watch's notification for in's n-th change behind the mount
 * been sent? */
static bool told(struct hotfs_inode *in, uint32_t n)
{
	bool done;

	pthread_mutex_lock(&in->m);
	done = stamp_behind_locked(in) == n && !stamp_inval_pending(in);
	pthread_mutex_unlock(&in->m);
	return done;
}

/* in's count of changes behind the mount, read under its lock */
static uint32_t behind(struct hotfs_inode *in)
{
	uint32_t n;

	pthread_mutex_lock(&in->m);
	n = stamp_behind_locked(in);
	pthread_mutex_unlock(&in->m);
	return n;
}

/* Every notification queued so far (but second expiries) sent; the
 * barrier's own is one more. */
static void barrier(struct fx *f)
{
	f->marks++;
	set_mtime(f, "mark", (time_t)(1000000 + f->marks));
	WAIT_UNTIL(told(f->mark, (uint32_t)f->marks));
}

/* Directories: each watched once; a file is not (and not asked again). */
static void test_dirs_watched(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t), *a, *file;

	assert_true(atomic_load(&root->watch.wd) > 0);
	assert_int_equal(stats(f).dirs, 1);
	assert_true(watch_dir(f->w, root));	/* idempotent */
	assert_int_equal(stats(f).dirs, 1);

	a = known(f, "A");
	assert_int_equal(atomic_load(&a->watch.wd), 0);
	assert_true(watch_dir(f->w, a));
	assert_true(atomic_load(&a->watch.wd) > 0);
	assert_int_not_equal(atomic_load(&a->watch.wd),
			     atomic_load(&root->watch.wd));
	assert_true(watch_dir(f->w, a));
	assert_int_equal(stats(f).dirs, 2);
	assert_int_equal(stats(f).unwatched, 0);

	file = known(f, "file");
	assert_false(watch_dir(f->w, file));
	assert_int_equal(atomic_load(&file->watch.wd), -1);
	assert_false(watch_dir(f->w, file));
	assert_int_equal(stats(f).dirs, 2);
	assert_int_equal(stats(f).unwatched, 1);

	assert_false(watch_dir(NULL, a));
}

/* Past the budget a directory is not watched, counted once, and what
 * changes in it raises nothing. */
static void test_budget(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = known(f, "A"), *b = known(f, "B");

	watch_set_max_dirs(NULL, 1);		/* harmless */
	watch_set_max_dirs(f->w, 2);
	assert_true(watch_dir(f->w, a));
	assert_false(watch_dir(f->w, b));
	assert_int_equal(atomic_load(&b->watch.wd), -1);
	assert_false(watch_dir(f->w, b));
	assert_int_equal(stats(f).dirs, 2);
	assert_int_equal(stats(f).unwatched, 1);

	/* a bound set later is not raised by a higher one */
	watch_set_max_dirs(f->w, 1000);
	assert_false(watch_dir(f->w, known(f, "C")));
	assert_int_equal(stats(f).unwatched, 2);

	assert_int_equal(mkdirat(f->dfd, "B/x", 0700), 0);
	barrier(f);
	assert_int_equal(sent(f), 1);		/* the barrier's */

	/* in A, watched: the entry, A's attributes, the entry again */
	assert_int_equal(mkdirat(f->dfd, "A/x", 0700), 0);
	WAIT_UNTIL(sent(f) == 4);
	barrier(f);
	assert_int_equal(sent(f), 5);
}

/* An inode freed drops its watch: its place in the budget is free, and
 * its directory raises nothing more; looked up again, it is watched
 * again. */
static void test_drop(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = known(f, "A"), *b = known(f, "B");

	watch_set_max_dirs(f->w, 2);
	assert_true(watch_dir(f->w, a));
	assert_int_equal(stats(f).dirs, 2);
	ino_forget(f->t, a, 1);			/* freed: watch_drop */
	assert_int_equal(stats(f).dirs, 1);
	assert_true(watch_dir(f->w, b));
	assert_int_equal(stats(f).dirs, 2);
	assert_int_equal(stats(f).unwatched, 0);

	assert_int_equal(mkdirat(f->dfd, "A/x", 0700), 0);
	barrier(f);
	assert_int_equal(sent(f), 1);

	ino_forget(f->t, b, 1);
	a = known(f, "A");
	assert_int_equal(atomic_load(&a->watch.wd), 0);
	assert_true(watch_dir(f->w, a));
	assert_int_equal(stats(f).dirs, 2);
	assert_int_equal(mkdirat(f->dfd, "A/y", 0700), 0);
	WAIT_UNTIL(sent(f) == 4);
	barrier(f);
	assert_int_equal(sent(f), 5);
}

/* Names changed behind the mount: for each, its entry and its
 * directory's attributes at once, the entry again later; the directory's
 * own attributes, or a watched directory's, renamed. */
static void test_behind(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = known(f, "A");

	assert_int_equal(mkdirat(f->dfd, "x", 0700), 0);
	WAIT_UNTIL(sent(f) == 3);
	assert_int_equal(renameat(f->dfd, "x", f->dfd, "y"), 0);
	WAIT_UNTIL(sent(f) == 9);		/* both names */
	assert_int_equal(unlinkat(f->dfd, "y", AT_REMOVEDIR), 0);
	WAIT_UNTIL(sent(f) == 12);
	barrier(f);
	assert_int_equal(sent(f), 13);

	assert_int_equal(chmod(f->dir, 0750), 0);
	barrier(f);
	assert_int_equal(sent(f), 15);
	assert_int_equal(stats(f).own_events, 0);

	/* a watched directory renamed: its own event (its attributes),
	 * both names in the root, and, as a known child found under its
	 * new name, its attributes again */
	assert_true(watch_dir(f->w, a));
	assert_int_equal(renameat(f->dfd, "A", f->dfd, "A2"), 0);
	WAIT_UNTIL(sent(f) == 23);
	barrier(f);
	assert_int_equal(sent(f), 24);
	assert_int_equal(stats(f).dirs, 2);
}

/*
 * A watched directory removed behind the mount: its attributes dropped.
 * The kernel raises no IN_DELETE_SELF while an fd holds the directory
 * (hotfs holds two as long as it watches it), so the watch finds it by
 * its fd after its parent's IN_DELETE (scan_removed); without that, the
 * kernel kept its link count for the covered timeout.  Its watch stays
 * until its inode is freed.
 */
static void test_dir_removed(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = known(f, "A");

	assert_true(watch_dir(f->w, a));
	assert_int_equal(stats(f).dirs, 2);
	assert_int_equal(unlinkat(f->dfd, "A", AT_REMOVEDIR), 0);
	/* its name in the root, twice, the root's attributes, and A's */
	WAIT_UNTIL(sent(f) == 4);
	barrier(f);
	assert_int_equal(sent(f), 5);
	assert_int_equal(stats(f).dirs, 2);
	ino_forget(f->t, a, 1);			/* its inode freed */
	assert_int_equal(stats(f).dirs, 1);
}

/* A known file: a change behind the mount drops its attributes and
 * pages; an event that leaves the stamp as seen, or of a file the table
 * does not know, sends nothing. */
static void test_child(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *file = known(f, "file");
	int fd;

	fd = openat(f->dfd, "file", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);				/* IN_CLOSE_WRITE, no change */
	set_mtime(f, "other", 12345);
	barrier(f);
	assert_int_equal(sent(f), 1);
	assert_int_equal(behind(file), 0);

	set_mtime(f, "file", 12345);
	WAIT_UNTIL(told(file, 1));
	barrier(f);
	assert_int_equal(sent(f), 3);

	/* a new link behind the mount: the name, and the file's count */
	assert_int_equal(linkat(f->dfd, "file", f->dfd, "link", 0), 0);
	WAIT_UNTIL(told(file, 2));
	WAIT_UNTIL(sent(f) == 7);
	barrier(f);
	assert_int_equal(sent(f), 8);
}

/* The mount's own changes, announced and made, send nothing, once each:
 * the same name changed behind the mount later is told. */
static void test_own(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t);
	struct hotfs_inode *file = known(f, "file");
	struct watch_own o = { 0 };

	watch_own_add(f->w, &o, root, "x", IN_CREATE);
	assert_int_equal(o.n, 1);
	assert_int_equal(mkdirat(f->dfd, "x", 0700), 0);
	watch_own_end(f->w, &o, true);
	assert_int_equal(o.n, 0);
	barrier(f);
	assert_int_equal(stats(f).own_events, 1);
	assert_int_equal(sent(f), 1);

	/* an exchange-less rename: both names announced */
	watch_own_add(f->w, &o, root, "x", IN_MOVED_FROM);
	watch_own_add(f->w, &o, root, "y", IN_MOVED_TO);
	assert_int_equal(renameat(f->dfd, "x", f->dfd, "y"), 0);
	watch_own_end(f->w, &o, true);
	barrier(f);
	assert_int_equal(stats(f).own_events, 3);
	assert_int_equal(sent(f), 2);

	/* a link of the mount's own: not even the file's count */
	watch_own_add(f->w, &o, root, "link", IN_CREATE);
	assert_int_equal(linkat(f->dfd, "file", f->dfd, "link", 0), 0);
	watch_own_end(f->w, &o, true);
	barrier(f);
	assert_int_equal(stats(f).own_events, 4);
	assert_int_equal(sent(f), 3);
	assert_int_equal(behind(file), 0);

	/* behind the mount now: y removed and made again */
	assert_int_equal(unlinkat(f->dfd, "y", AT_REMOVEDIR), 0);
	assert_int_equal(mkdirat(f->dfd, "y", 0700), 0);
	WAIT_UNTIL(sent(f) == 9);
	barrier(f);
	assert_int_equal(sent(f), 10);
	assert_int_equal(stats(f).own_events, 4);
}

/* watch.c's own_bucket: which of its lists the announcement of name in
 * the directory of node id dir is on (if that changes, the test below
 * merely no longer puts two directories on one list). */
static unsigned own_bucket(uint64_t dir, const char *name)
{
	uint64_t h = dir * 0x9e3779b97f4a7c15ull;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return (unsigned)((h >> 32) % 256);
}

/* An announcement matches its directory, name and kind only. */
static void test_own_mismatch(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t), *a = known(f, "A");
	struct watch_own o = { 0 };
	uint64_t rnd = 88172645463325252ull;
	char x[16];
	unsigned i, k, len;

	/* a name whose announcement in A is on the root's list */
	for (i = 0; i < 100000; i++) {
		x[0] = 'n';
		len = 1 + i % 12;
		for (k = 1; k <= len; k++)
			x[k] = (char)('a' + ut_rnd(&rnd) % 26);
		x[k] = '\0';
		if (own_bucket((uintptr_t)a, x) == own_bucket(FUSE_ROOT_ID, x))
			break;
	}
	assert_true(i < 100000);
	assert_true(watch_dir(f->w, a));
	watch_own_add(f->w, &o, root, x, IN_DELETE);	/* another kind */
	watch_own_add(f->w, &o, root, "z", IN_CREATE);	/* another name */
	watch_own_add(f->w, &o, a, x, IN_CREATE);	/* another dir */
	assert_int_equal(o.n, 3);
	assert_int_equal(mkdirat(f->dfd, x, 0700), 0);
	watch_own_end(f->w, &o, true);
	WAIT_UNTIL(sent(f) == 3);
	barrier(f);
	assert_int_equal(sent(f), 4);
	assert_int_equal(stats(f).own_events, 0);
}

/* An event taken for a change in flight that then failed was another's:
 * told when the change ends.  One taken for a change made: not. */
static void test_own_in_flight(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t);
	struct watch_own o = { 0 };

	watch_own_add(f->w, &o, root, "x", IN_CREATE);
	assert_int_equal(mkdirat(f->dfd, "x", 0700), 0);
	WAIT_UNTIL(stats(f).own_events == 1);	/* claimed */
	barrier(f);
	assert_int_equal(sent(f), 1);
	watch_own_end(f->w, &o, false);
	barrier(f);
	assert_int_equal(sent(f), 4);		/* the entry, the dir */

	watch_own_add(f->w, &o, root, "y", IN_CREATE);
	assert_int_equal(mkdirat(f->dfd, "y", 0700), 0);
	WAIT_UNTIL(stats(f).own_events == 2);
	watch_own_end(f->w, &o, true);
	barrier(f);
	assert_int_equal(sent(f), 5);
}

/* An announcement whose event has not come OWN_TTL_MS after its change
 * is forgotten: a later change of that name behind the mount is told. */
static void test_own_expires(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t);
	struct watch_own o = { 0 };
	int64_t end;

	watch_own_add(f->w, &o, root, "x", IN_CREATE);
	end = clock_mono_ns();
	watch_own_end(f->w, &o, true);		/* made, no event */
	WAIT_UNTIL(clock_mono_ns() > end + OWN_TTL_NS + 1000000);
	assert_int_equal(mkdirat(f->dfd, "x", 0700), 0);
	WAIT_UNTIL(sent(f) == 3);
	barrier(f);
	assert_int_equal(sent(f), 4);
	assert_int_equal(stats(f).own_events, 0);
}

/* What is announced and what not: nothing in a directory not watched,
 * nor without a watch or before it starts; WATCH_OWN_MAX at most. */
static void test_own_limits(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t), *a = known(f, "A");
	struct hotfs_itable *t2;
	struct hotfs_watch *w2;
	struct watch_own o = { 0 };
	int rfd;

	watch_own_add(NULL, &o, root, "x", IN_CREATE);
	watch_own_add(f->w, &o, a, "x", IN_CREATE);	/* not decided */
	watch_set_max_dirs(f->w, 1);
	assert_false(watch_dir(f->w, a));
	watch_own_add(f->w, &o, a, "x", IN_CREATE);	/* not watched */
	assert_int_equal(o.n, 0);
	watch_own_end(NULL, &o, true);
	watch_own_end(f->w, &o, true);

	rfd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	assert_int_equal(ino_table_new(&t2, rfd), 0);
	assert_int_equal(watch_new(&w2, t2), 0);
	assert_true(watch_dir(w2, ino_root(t2)));
	watch_own_add(w2, &o, ino_root(t2), "x", IN_CREATE);  /* stopped */
	assert_int_equal(o.n, 0);
	watch_free(w2);
	ino_table_free(t2);

	watch_own_add(f->w, &o, root, "n1", IN_CREATE);
	watch_own_add(f->w, &o, root, "n2", IN_CREATE);
	watch_own_add(f->w, &o, root, "n3", IN_CREATE);
	watch_own_add(f->w, &o, root, "n4", IN_CREATE);
	watch_own_add(f->w, &o, root, "n5", IN_CREATE);
	assert_int_equal(o.n, WATCH_OWN_MAX);
	assert_int_equal(mkdirat(f->dfd, "n4", 0700), 0);
	assert_int_equal(mkdirat(f->dfd, "n5", 0700), 0);
	watch_own_end(f->w, &o, true);
	WAIT_UNTIL(sent(f) == 3);		/* n5's */
	barrier(f);
	assert_int_equal(sent(f), 4);
	assert_int_equal(stats(f).own_events, 1);
}

static uint64_t max_queued(void)
{
	FILE *fp = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
	unsigned long long n = 0;

	assert_non_null(fp);
	assert_int_equal(fscanf(fp, "%llu", &n), 1);
	fclose(fp);
	return n;
}

/* Events lost (the queue overflowed while the thread was held up): the
 * overflow counted, every watched directory's attributes dropped, and
 * the mount's own events still awaited are not waited for. */
static void test_overflow(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t), *a = known(f, "A");
	struct watch_own o = { 0 };
	uint64_t i, n = max_queued() + 8192;

	assert_true(watch_dir(f->w, a));
	watch_own_add(f->w, &o, root, "x", IN_CREATE);
	watch_own_end(f->w, &o, true);		/* its event to come */

	/* the thread stops at mark's event, on its lock, while the
	 * queue overflows */
	pthread_mutex_lock(&f->mark->m);
	set_mtime(f, "mark", 1);
	for (i = 0; i < n; i++)
		set_mtime(f, i % 2 ? "file" : "other", (time_t)i);
	pthread_mutex_unlock(&f->mark->m);
	WAIT_UNTIL(stats(f).overflows == 1);
	f->marks++;				/* the mark's change */
	barrier(f);
	/* mark's twice, root's and A's attributes */
	assert_int_equal(sent(f), 4);

	assert_int_equal(mkdirat(f->dfd, "x", 0700), 0);
	WAIT_UNTIL(sent(f) == 7);
	barrier(f);
	assert_int_equal(sent(f), 8);
	assert_int_equal(stats(f).own_events, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dirs_watched, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_removed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_mismatch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_own_in_flight, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_own_expires, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_own_limits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_overflow, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
