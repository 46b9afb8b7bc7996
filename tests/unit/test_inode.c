// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the inode table (src/core/inode.c): lookups counted and
 * forgotten, forgotten inodes retained up to inode_cache, and the fd
 * budget: retained inodes let go first, then the fds of known ones closed
 * and reopened by file handle.
 * The objects are real files in a temporary directory, the fds real
 * O_PATH fds: the test counts the process's open fds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_util.h"

#include "hotfs/clock.h"
#include "hotfs/inode.h"

#define NFILES 64

struct fx {
	char dir[64];
	int dfd;
	struct hotfs_itable *t;
	struct hotfs_inode *in[NFILES];
};

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;		/* the DIR's own fd */
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char name[32];
	int i, fd;

	assert_non_null(f);
	strcpy(f->dir, "/tmp/hotfs-inode-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->dfd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->dfd >= 0);
	for (i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		fd = openat(f->dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(ino_table_new(&f->t, f->dfd), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	ino_table_free(f->t);	/* closes the root fd too */
	assert_int_equal(ut_rm_tree(f->dir), 0);
	free(f);
	return 0;
}

/* Look file i up: a new O_PATH fd, consumed by ino_get. */
static struct hotfs_inode *lookup(struct fx *f, int i)
{
	struct hotfs_inode *in;
	struct stat st;
	char name[32];
	int fd, err = 0;

	snprintf(name, sizeof(name), "f%02d", i);
	fd = openat(f->dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	in = ino_get(f->t, fd, &st, &err);
	assert_non_null(in);
	assert_int_equal(err, 0);
	return in;
}

static void lookup_all(struct fx *f, int n)
{
	int i;

	for (i = 0; i < n; i++)
		f->in[i] = lookup(f, i);
}

static void forget_all(struct fx *f, int n)
{
	int i;

	for (i = 0; i < n; i++)
		ino_forget(f->t, f->in[i], 1);
}

/* Same object, same inode; a second lookup needs a second forget. */
static void test_lookup_counts(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = lookup(f, 3), *b = lookup(f, 3);
	int fds = open_fds();

	assert_ptr_equal(a, b);
	assert_int_equal(ino_count(f->t), 2);	/* the root and f03 */
	ino_forget(f->t, a, 1);
	assert_int_equal(ino_count(f->t), 2);
	assert_int_equal(open_fds(), fds);
	ino_forget(f->t, a, 1);		/* no retaining: freed */
	assert_int_equal(ino_count(f->t), 1);
	assert_int_equal(open_fds(), fds - 1);
}

/* A retired inode is found by no lookup: the next makes a new one for
 * the object, which says it succeeds a retired one; once the retired one
 * is forgotten, a new inode of the object succeeds none. */
static void test_retire(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = lookup(f, 5), *b, *c;
	int64_t t0 = clock_mono_ns();

	assert_int_equal(a->succeeds_ns, 0);
	ino_retire(a);
	b = lookup(f, 5);
	assert_ptr_not_equal(a, b);
	assert_true(b->succeeds_ns >= t0);
	assert_int_equal(ino_count(f->t), 3);
	ino_forget(f->t, a, 1);		/* retired: freed, never retained */
	assert_int_equal(ino_count(f->t), 2);
	ino_retire(b);
	ino_forget(f->t, b, 1);
	c = lookup(f, 5);
	assert_int_equal(c->succeeds_ns, 0);
	ino_forget(f->t, c, 1);
}

/* Forgotten inodes stay open up to inode_cache, oldest let go first. */
static void test_retain_lru(void **state)
{
	struct fx *f = *state;
	int fds0 = open_fds();

	ino_set_retain(f->t, 10);
	lookup_all(f, 20);
	forget_all(f, 20);
	assert_int_equal(ino_retained(f->t), 10);
	assert_int_equal(ino_count(f->t), 11);
	assert_int_equal(open_fds(), fds0 + 10);
	/* the last ten forgotten are the ones kept */
	assert_ptr_equal(lookup(f, 19), f->in[19]);
	assert_int_equal(ino_retained(f->t), 9);
	ino_forget(f->t, f->in[19], 1);
	ino_set_retain(f->t, 4);	/* lowering the bound lets go at once */
	assert_int_equal(ino_retained(f->t), 4);
	assert_int_equal(open_fds(), fds0 + 4);
}

/*
 * The fd budget, first on retained inodes: with 30 known and a budget of
 * 40, ten forgotten ones stay open (with the root: 40 fds), the oldest
 * forgotten let go first; a bigger budget keeps more from then on.
 */
static void test_fd_budget(void **state)
{
	struct fx *f = *state;
	int fds0 = open_fds(), i;

	ino_set_retain(f->t, 1000);
	ino_set_fd_budget(f->t, 40);
	lookup_all(f, 30);
	forget_all(f, 30);
	assert_int_equal(ino_retained(f->t), 30);
	for (i = 30; i < 60; i++)
		f->in[i] = lookup(f, i);
	assert_int_equal(ino_fds(f->t), 40);
	assert_int_equal(ino_retained(f->t), 9);
	assert_int_equal(ino_count(f->t), 40);
	assert_int_equal(open_fds(), fds0 + 39);
	assert_int_equal(ino_fd_drops(f->t), 0);	/* known: all kept */
	/* known again: a retained inode comes back without a new fd */
	f->in[29] = lookup(f, 29);
	assert_int_equal(ino_retained(f->t), 8);
	assert_int_equal(ino_fds(f->t), 40);
	ino_set_fd_budget(f->t, 0);
	for (i = 29; i < 60; i++)
		ino_forget(f->t, f->in[i], 1);
	assert_int_equal(ino_retained(f->t), 39);
}

/* The fd of file i, checked to be that file's, then put back. */
static void check_fd(struct fx *f, int i)
{
	struct stat st;
	int fd = ino_fd(f->t, f->in[i]);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, f->in[i]->ino);
	ino_fd_put(f->in[i]);
}

/* An inode of the first n whose fd the budget closed, or -1. */
static int dropped(struct fx *f, int n, int skip)
{
	int i;

	for (i = 0; i < n; i++)
		if (i != skip && atomic_load(&f->in[i]->fd) < 0)
			return i;
	return -1;
}

/*
 * Then on inodes the kernel knows: over the budget their fds are closed
 * (down to a low mark), and ino_fd reopens them by file handle, after a
 * rename too; one in use (ino_fd not yet put) keeps its fd, and so does a
 * deleted one (a handle would not find it again).  A file deleted after
 * its fd was closed is ESTALE.
 */
static void test_fd_budget_known(void **state)
{
	struct fx *f = *state;
	int fds0 = open_fds(), i, round, pinned, gone, moved, fd;
	struct stat st;

	ino_set_fd_budget(f->t, 32);
	lookup_all(f, NFILES);
	assert_int_equal(ino_count(f->t), NFILES + 1);
	if (ino_fd_drops(f->t) == 0)
		skip();		/* no file handles here (not root?) */
	assert_true(ino_fds(f->t) <= 32);
	/* the root's is counted in fds0; one more to decode handles on */
	assert_true(open_fds() <= fds0 + 31 + 1);
	for (i = 0; i < NFILES; i++)
		check_fd(f, i);
	assert_true(ino_fd_reopens(f->t) > 0);
	assert_true(ino_fds(f->t) <= 32);

	/* renamed behind the table's back: the handle still finds it */
	moved = dropped(f, NFILES, -1);
	assert_true(moved >= 0);
	{
		char from[32], to[32];

		snprintf(from, sizeof(from), "f%02d", moved);
		snprintf(to, sizeof(to), "moved%02d", moved);
		assert_int_equal(renameat(f->dfd, from, f->dfd, to), 0);
	}
	check_fd(f, moved);

	/* in use: never closed under its user */
	pinned = 3;
	fd = ino_fd(f->t, f->in[pinned]);
	assert_true(fd >= 0);
	/* deleted while it has its fd: it keeps it */
	check_fd(f, 4);
	{
		char name[32];

		snprintf(name, sizeof(name), "f%02d", 4);
		assert_int_equal(unlinkat(f->dfd, name, 0), 0);
	}
	/* deleted after its fd was closed: nothing finds it */
	gone = dropped(f, NFILES, moved);
	assert_true(gone >= 0 && gone != 4 && gone != pinned);
	{
		char name[32];

		snprintf(name, sizeof(name), "f%02d", gone);
		assert_int_equal(unlinkat(f->dfd, name, 0), 0);
	}
	for (round = 0; round < 4; round++)
		for (i = 5; i < NFILES; i++)
			if (i != gone)
				check_fd(f, i);
	assert_int_equal(atomic_load(&f->in[pinned]->fd), fd);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, f->in[pinned]->ino);
	ino_fd_put(f->in[pinned]);
	assert_true(atomic_load(&f->in[4]->fd) >= 0);
	assert_int_equal(ino_fd(f->t, f->in[gone]), -ESTALE);
	assert_true(ino_fds(f->t) <= 32 + 1);	/* + the deleted one */

	forget_all(f, NFILES);
	assert_int_equal(ino_count(f->t), 1);
	assert_int_equal(ino_fds(f->t), 1);
	assert_int_equal(open_fds(), fds0 + 1);
}

/* A retained file deleted behind the table's back is closed by a sweep. */
static void test_sweep_deleted(void **state)
{
	struct fx *f = *state;

	ino_set_retain(f->t, 100);
	lookup_all(f, 8);
	forget_all(f, 8);
	assert_int_equal(ino_retained(f->t), 8);
	assert_int_equal(unlinkat(f->dfd, "f02", 0), 0);
	assert_int_equal(unlinkat(f->dfd, "f05", 0), 0);
	assert_int_equal(ino_sweep(f->t), 2);
	assert_int_equal(ino_retained(f->t), 6);
	assert_int_equal(ino_count(f->t), 7);
}

static int stale_calls;
static struct hotfs_inode *stale_in;

static void on_stale(void *arg, struct hotfs_inode *in)
{
	(void)arg;
	stale_calls++;
	stale_in = in;
}

/*
 * Inodes made from the metadata snapshot: no fd until ino_fd, which opens
 * them by name through their parents; a name that now names another
 * object is ESTALE (and reported), one gone ENOENT; the parent is held
 * until the child has its own fd.
 */
static void test_lazy(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *root = ino_root(f->t), *d, *x, *y;
	struct stat dst, xst, yst, st;
	int fds, err = 0, fd, keep;

	assert_int_equal(mkdirat(f->dfd, "d", 0700), 0);
	fd = openat(f->dfd, "d/x", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	fd = openat(f->dfd, "d/y", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fstatat(f->dfd, "d", &dst, 0), 0);
	assert_int_equal(fstatat(f->dfd, "d/x", &xst, 0), 0);
	assert_int_equal(fstatat(f->dfd, "d/y", &yst, 0), 0);
	ino_set_stale_hook(f->t, on_stale, NULL);

	fds = open_fds();
	d = ino_get_lazy(f->t, root, "d", &dst, &err);
	x = ino_get_lazy(f->t, d, "x", &xst, &err);
	y = ino_get_lazy(f->t, d, "y", &yst, &err);
	assert_non_null(d);
	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(d->fd, -1);
	assert_int_equal(x->fd, -1);
	assert_int_equal(open_fds(), fds);	/* nothing opened yet */
	/* the kernel forgets the directory: its children keep it */
	ino_forget(f->t, d, 1);
	assert_int_equal(ino_count(f->t), 4);

	fd = ino_fd(f->t, x);			/* opens d, then x */
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, xst.st_ino);
	assert_true(d->fd >= 0);
	assert_int_equal(ino_fd(f->t, x), fd);	/* once */
	assert_int_equal(open_fds(), fds + 2);

	/* y replaced by another file of the same name (y kept open
	 * meanwhile: its inode number is not reused) */
	keep = openat(f->dfd, "d/y", O_PATH | O_CLOEXEC);
	assert_true(keep >= 0);
	assert_int_equal(unlinkat(f->dfd, "d/y", 0), 0);
	fd = openat(f->dfd, "d/z", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(renameat(f->dfd, "d/z", f->dfd, "d/y"), 0);
	assert_int_equal(ino_fd(f->t, y), -ESTALE);
	assert_int_equal(stale_calls, 1);
	assert_ptr_equal(stale_in, y);
	close(keep);
	/* and gone */
	assert_int_equal(unlinkat(f->dfd, "d/y", 0), 0);
	assert_int_equal(ino_fd(f->t, y), -ENOENT);
	assert_int_equal(stale_calls, 2);

	/* a source lookup of a lazily made inode gives it its fd */
	ino_forget(f->t, x, 1);
	ino_forget(f->t, y, 1);			/* d goes with them */
	assert_int_equal(ino_count(f->t), 1);
	assert_int_equal(open_fds(), fds);
	d = ino_get_lazy(f->t, root, "d", &dst, &err);
	fd = openat(f->dfd, "d", O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_ptr_equal(ino_get(f->t, fd, &dst, &err), d);
	assert_int_equal(d->fd, fd);
	ino_forget(f->t, d, 2);
	assert_int_equal(ino_count(f->t), 1);
	assert_int_equal(open_fds(), fds);
	unlinkat(f->dfd, "d/x", 0);
	unlinkat(f->dfd, "d", AT_REMOVEDIR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_retire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retain_lru, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fd_budget, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fd_budget_known, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sweep_deleted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lazy, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
