// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for writeback's request hooks (src/writeback/wb.c, the
 * rules in include/hotfs/wb.h), driven directly as the mount's requests
 * would, without FUSE: a real source directory and cachedir in a
 * temporary directory, a real store (cache_open), inode table and log.
 *
 *  - wb_on: regular files of the source's device only, NULL is off;
 *  - a write goes to the log, not the source; the attributes show the
 *    dirty end and the write's time; the counters show it; wb_sync and
 *    an O_SYNC write fdatasync the log, a plain write does not;
 *  - a read of the source's bytes has the dirty ones laid over it, zeros
 *    in the hole up to the dirty end;
 *  - a flush (wb_flush_inode, wb_flush_some: a file's, the mount's, up
 *    to max, before since_ns) lands the bytes on the source and leaves
 *    nothing dirty;
 *  - a truncate (wb_truncate, wb_trunc_fd) drops the dirty bytes past
 *    the new size;
 *  - wb_sync, then a close without a flush and an open again ("a crash,
 *    then a remount"): the log is replayed (its trims too; the file found
 *    by the walk if the table does not know it, wherever it was renamed
 *    to), and its flush lands it; a file flushed, or dropped at its
 *    unlink, is not replayed; nor is a removed file's data given to a new
 *    file that took its inode number; an edit made while unmounted is
 *    kept aside in cachedir/conflicts, the log's bytes written over it;
 *  - an unlink of the last link of a file the kernel does not know drops
 *    its dirty data; of one it knows, of one with another link, or an
 *    unlink that failed, keeps it;
 *  - a change behind the mount before the flush: the host's inval and a
 *    conflict counted for a file whose stamp was recorded, neither for
 *    one whose stamp was not, nor for the mount's own flushes; the
 *    change's bytes outside the dirty ones (in the same block too) kept.
 *
 * The flusher thread is started (wb_start: the descriptors writeback
 * reopens go through /proc/self/fd) with a writeback_delay of an hour,
 * so that it flushes nothing by itself: the tests flush with the
 * synchronous calls (wb_flush_inode, wb_flush_some, wb_stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_util.h"

#include "hotfs/cache.h"
#include "hotfs/clock.h"
#include "hotfs/inode.h"
#include "hotfs/opts.h"
#include "hotfs/readpath.h"
#include "hotfs/srcprobe.h"
#include "hotfs/stamp.h"
#include "hotfs/wb.h"
#include "hotfs/wblog.h"
/* the log of the mount (the test reads its counters: its fdatasyncs) */
#include "src/writeback/wb_i.h"

#define MAXIN	8

/* the source files' mtime before the mount writes them (2001) */
#define OLD_S	1000000000

struct fx {
	char dir[64];
	char src[96], cachedir[96];
	int sfd;			/* O_PATH on the source, the test's */
	int root_fd;			/* the host's */
	int proc_fd;			/* /proc/self/fd */
	struct hotfs_opts o;
	struct hotfs_itable *it;
	struct hotfs_cache *c;
	struct wb_host h;
	struct hotfs_wb *wb;
	struct hotfs_inode *in[MAXIN];
	unsigned nin;
	/* the host's callbacks */
	unsigned invals, changed;
	struct hotfs_inode *inval_in;	/* the last inval's */
};

static void host_inval(void *arg, struct hotfs_inode *in)
{
	struct fx *f = arg;

	__atomic_add_fetch(&f->invals, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&f->inval_in, in, __ATOMIC_RELAXED);
}

static void host_changed(void *arg)
{
	struct fx *f = arg;

	__atomic_add_fetch(&f->changed, 1, __ATOMIC_RELAXED);
}

static void wb_up(struct fx *f)
{
	char err[512] = "";
	int r;

	r = wb_open(&f->wb, &f->h, err, sizeof(err));
	if (r)
		fail_msg("wb_open: %d %s", r, err);
	assert_int_equal(wb_start(f->wb, f->proc_fd), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[512] = "";
	int tfd, r;

	assert_non_null(f);
	assert_non_null(ut_tmpdir("wb", f->dir, sizeof(f->dir)));
	snprintf(f->src, sizeof(f->src), "%s/src", f->dir);
	snprintf(f->cachedir, sizeof(f->cachedir), "%s/cache", f->dir);
	assert_int_equal(mkdir(f->src, 0700), 0);
	f->sfd = open(f->src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	f->root_fd = open(f->src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	tfd = open(f->src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	f->proc_fd = open("/proc/self/fd", O_PATH | O_CLOEXEC);
	assert_true(f->sfd >= 0 && f->root_fd >= 0 && tfd >= 0 &&
		    f->proc_fd >= 0);
	/* as main does before anything looks a name up; writeback needs
	 * the inode numbers kept (a local filesystem's are: forced in case
	 * the temporary directory is on one the probe doubts) */
	srcprobe_run(f->root_fd, -1, &hotfs_src);
	hotfs_src.ids_kept = true;
	free(hotfs_src.sample);
	hotfs_src.sample = NULL;

	f->o.source = f->src;
	f->o.cachedir = f->cachedir;
	f->o.cachesize = 64ull << 20;
	f->o.extent = HOTFS_EXTENT_DEFAULT;
	f->o.threshold = 2;
	f->o.writemode = HOTFS_WRITEBACK;
	f->o.writeback_delay = 3600;	/* the thread flushes nothing */
	f->o.writeback_log = 8ull << 20;
	f->o.dirty_high = HOTFS_DIRTY_HIGH;
	f->o.dirty_low = HOTFS_DIRTY_LOW;
	f->o.inode_cache = HOTFS_INODE_CACHE_DEFAULT;

	assert_int_equal(ino_table_new(&f->it, tfd), 0);	/* owns tfd */
	r = cache_open(&f->c, &f->o, f->root_fd, err, sizeof(err));
	if (r)
		fail_msg("cache_open: %d %s", r, err);
	f->h = (struct wb_host){ .o = &f->o, .it = f->it, .cache = f->c,
				 .root_fd = f->root_fd, .inval = host_inval,
				 .changed = host_changed, .arg = f };
	wb_up(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	unsigned i;

	if (f->wb) {
		/* everything to the source (a file the test removed while
		 * the kernel "knew" it: to the unlinked file) */
		assert_int_equal(wb_stop(f->wb), 0);
		wb_close(f->wb);
	}
	for (i = 0; i < f->nin; i++)
		ino_forget(f->it, f->in[i], 1);
	cache_close(f->c);
	ino_table_free(f->it);
	close(f->sfd);
	close(f->root_fd);
	close(f->proc_fd);
	ut_rm_tree(f->dir);
	free(f);
	return 0;
}

/* Source file name: n bytes of c (n 0: empty), mtime OLD_S; its inode in
 * the table (a lookup the teardown forgets), its stat in *st if st. */
static struct hotfs_inode *mkfile(struct fx *f, const char *name, int c,
				  size_t n, struct stat *st)
{
	struct timespec ts[2] = { { OLD_S, 0 }, { OLD_S, 0 } };
	struct hotfs_inode *in;
	struct stat s;
	char *b = malloc(n + 1);
	int fd;

	assert_non_null(b);
	memset(b, c, n);
	fd = openat(f->sfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	free(b);
	assert_true(f->nin < MAXIN);
	in = ut_inode(f->it, f->sfd, name, &s);
	assert_non_null(in);
	f->in[f->nin++] = in;
	if (st)
		*st = s;
	return in;
}

static void src_stat(struct fx *f, const char *name, struct stat *st)
{
	assert_int_equal(fstatat(f->sfd, name, st, AT_SYMLINK_NOFOLLOW), 0);
}

/* The source file's bytes (up to 1 MiB), their count in *n. */
static char *src_read(struct fx *f, const char *name, size_t *n)
{
	char *b = calloc(1, 1 << 20);
	ssize_t got;
	int fd;

	assert_non_null(b);
	fd = openat(f->sfd, name, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	got = pread(fd, b, 1 << 20, 0);
	assert_true(got >= 0);
	close(fd);
	*n = (size_t)got;
	return b;
}

/* Are b[lo, hi) all c? */
static bool all(const char *b, size_t lo, size_t hi, int c)
{
	size_t i;

	for (i = lo; i < hi; i++)
		if (b[i] != (char)c)
			return false;
	return true;
}

/* n bytes of c at off through the mount's write hook */
static void wr(struct fx *f, struct hotfs_inode *in, int c, size_t n,
	       off_t off)
{
	char *b = malloc(n);

	assert_non_null(b);
	memset(b, c, n);
	assert_int_equal(wb_write(f->wb, in, b, n, off, false), (ssize_t)n);
	free(b);
}

/* The attributes through the mount: the source's stat of name, fixed. */
static void mount_stat(struct fx *f, const char *name, struct stat *st)
{
	src_stat(f, name, st);
	wb_fix_attr(f->wb, st);
}

/*
 * A read through the mount as fop_data.c's read_from makes it (no
 * handle: from the source, then the dirty bytes over it): into *rep (its
 * bytes in one buffer, their count returned).  rp_done(rep) after.
 */
static size_t mount_read(struct fx *f, struct hotfs_inode *in,
			 const char *name, size_t size, off_t off,
			 struct rp_reply *rep, char **out)
{
	int src = openat(f->sfd, name, O_RDONLY | O_CLOEXEC), r, i;
	size_t got = 0;
	char *b;

	assert_true(src >= 0);
	for (;;) {
		uint64_t gen = wb_read_gen(f->wb, in);

		memset(rep, 0, sizeof(*rep));
		assert_int_equal(rp_read_source(src, size, off, rep), 0);
		r = wb_read_fix(f->wb, in, src, size, off, rep, gen);
		assert_true(r == 0 || r == 1);
		if (r == 0)
			break;
		rp_done(rep);
	}
	close(src);
	b = calloc(1, size + 1);
	assert_non_null(b);
	for (i = 0; i < rep->n; i++) {
		assert_true(got + rep->iov[i].iov_len <= size);
		memcpy(b + got, rep->iov[i].iov_base, rep->iov[i].iov_len);
		got += rep->iov[i].iov_len;
	}
	*out = b;
	return got;
}

/*----------------------------------------------------------------*/

static void test_on(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *file = mkfile(f, "f", 'a', 100, NULL), *dir;
	struct stat st;

	assert_int_equal(mkdirat(f->sfd, "d", 0700), 0);
	dir = ut_inode(f->it, f->sfd, "d", &st);
	assert_non_null(dir);
	f->in[f->nin++] = dir;
	assert_true(wb_on(f->wb, file));
	assert_false(wb_on(f->wb, dir));
	assert_false(wb_on(NULL, file));
	/* and the other hooks take NULL as writeback off */
	assert_int_equal(wb_read_gen(NULL, file), 0);
	assert_int_equal(wb_sync(NULL, file), 0);
	assert_int_equal(wb_dirty_files(NULL), 0);
}

/* A write goes to the log: the source as it was; the attributes through
 * the mount show the dirty end (grown past the source's end) and the
 * write's time; the counters show it. */
static void test_write_logged_attrs(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 10000, NULL);
	struct wb_stats ws;
	struct stat st;
	int64_t t0 = clock_real_ns();
	size_t n;
	char *b;

	wr(f, in, 'D', 100, 5000);		/* inside */
	/* the source unchanged */
	b = src_read(f, "f", &n);
	assert_int_equal(n, 10000);
	assert_true(all(b, 0, n, 's'));
	free(b);
	src_stat(f, "f", &st);
	assert_int_equal(st.st_mtim.tv_sec, OLD_S);
	/* within the source's size: the size as it is, the write's time */
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 10000);
	assert_true(clock_ts_ns(&st.st_mtim) >= t0 - 20000000LL);
	assert_true(clock_ts_ns(&st.st_ctim) >= t0 - 20000000LL);
	assert_true(clock_ts_ns(&st.st_mtim) <= clock_real_ns());

	wr(f, in, 'E', 50, 20000);		/* past the end: grows it */
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 20050);
	assert_true(st.st_blocks >= (20050 + 511) / 512);
	src_stat(f, "f", &st);
	assert_int_equal(st.st_size, 10000);	/* the source: not yet */

	wb_stats(f->wb, &ws);
	assert_string_equal(ws.state, "ok");
	assert_int_equal(ws.dirty_files, 1);
	assert_true(ws.dirty_bytes >= 150);
	assert_true(ws.dirty_records >= 2);
	assert_int_equal(ws.flushed_bytes, 0);
	assert_int_equal(wb_dirty_files(f->wb), 1);
	assert_true(wb_holds_dirty(f->wb, &st));
}

/* The read overlay: the dirty bytes over the source's, zeros in the hole
 * past the source's end, up to the dirty end. */
static void test_read_overlay(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 10000, NULL);
	struct rp_reply rep;
	size_t n;
	char *b;

	wr(f, in, 'D', 100, 5000);
	wr(f, in, 'E', 50, 20000);
	/* the whole file: asked for more than there is */
	n = mount_read(f, in, "f", 32768, 0, &rep, &b);
	assert_int_equal(n, 20050);
	assert_true(all(b, 0, 5000, 's'));
	assert_true(all(b, 5000, 5100, 'D'));
	assert_true(all(b, 5100, 10000, 's'));
	assert_true(all(b, 10000, 20000, 0));
	assert_true(all(b, 20000, 20050, 'E'));
	rp_done(&rep);
	free(b);
	/* a piece across the dirty bytes' start */
	n = mount_read(f, in, "f", 20, 4990, &rep, &b);
	assert_int_equal(n, 20);
	assert_true(all(b, 0, 10, 's'));
	assert_true(all(b, 10, 20, 'D'));
	rp_done(&rep);
	free(b);
	/* wholly past the source's end: the hole, then the dirty bytes */
	n = mount_read(f, in, "f", 4096, 19990, &rep, &b);
	assert_int_equal(n, 60);
	assert_true(all(b, 0, 10, 0));
	assert_true(all(b, 10, 60, 'E'));
	rp_done(&rep);
	free(b);
	/* at the dirty end: nothing */
	n = mount_read(f, in, "f", 4096, 20050, &rep, &b);
	assert_int_equal(n, 0);
	rp_done(&rep);
	free(b);
}

/* A flush of the file (wb_flush_inode) lands the bytes on the source;
 * nothing is dirty after, and a read's overlay changes nothing. */
static void test_flush_inode(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 10000, NULL);
	struct rp_reply rep;
	struct wb_stats ws;
	struct stat st;
	size_t n;
	char *b;

	wr(f, in, 'D', 100, 5000);
	wr(f, in, 'E', 50, 20000);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 20050);
	assert_true(all(b, 0, 5000, 's'));
	assert_true(all(b, 5000, 5100, 'D'));
	assert_true(all(b, 5100, 10000, 's'));
	assert_true(all(b, 10000, 20000, 0));
	assert_true(all(b, 20000, 20050, 'E'));
	free(b);
	src_stat(f, "f", &st);
	assert_true(st.st_mtim.tv_sec > OLD_S);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.dirty_bytes, 0);
	assert_int_equal(ws.dirty_files, 0);
	assert_true(ws.flushed_bytes >= 150);
	assert_int_equal(ws.conflicts, 0);
	assert_false(wb_holds_dirty(f->wb, &st));
	/* the attributes: the source's own */
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 20050);
	/* a read: the source's bytes, as they are */
	n = mount_read(f, in, "f", 32768, 0, &rep, &b);
	assert_int_equal(n, 20050);
	assert_true(all(b, 5000, 5100, 'D'));
	assert_true(all(b, 20000, 20050, 'E'));
	rp_done(&rep);
	free(b);
	/* nothing for the host to hear: the inode is known, not changed */
	assert_int_equal(f->invals, 0);
	assert_int_equal(f->changed, 0);
}

/* wb_flush_some: up to max bytes of the file (max 0: none), what is left
 * said; then everything. */
static void test_flush_some(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = mkfile(f, "a", 's', 4096, NULL);
	struct hotfs_inode *b = mkfile(f, "b", 't', 4096, NULL);
	uint64_t done, left, oldest;
	struct wb_stats ws;
	size_t n;
	char *d;

	wr(f, a, 'A', 4096, 0);
	wr(f, b, 'B', 4096, 0);
	/* max 0: nothing written, what is left said */
	assert_int_equal(wb_flush_some(f->wb, a, 0, 0, &done, &left,
				       &oldest), 0);
	assert_int_equal(done, 0);
	assert_int_equal(left, 4096);
	/* a's alone */
	assert_int_equal(wb_flush_some(f->wb, a, 0, UINT64_MAX, &done, &left,
				       &oldest), 0);
	assert_int_equal(done, 4096);
	assert_int_equal(left, 0);
	d = src_read(f, "a", &n);
	assert_int_equal(n, 4096);
	assert_true(all(d, 0, n, 'A'));
	free(d);
	d = src_read(f, "b", &n);
	assert_true(all(d, 0, n, 't'));		/* b's still in the log */
	free(d);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.dirty_files, 1);
	assert_int_equal(ws.dirty_bytes, 4096);
	/* the mount's: its dirty bytes and the oldest's time */
	assert_int_equal(wb_flush_some(f->wb, NULL, 0, 0, &done, &left,
				       &oldest), 0);
	assert_int_equal(left, 4096);
	assert_true(oldest > 0 && oldest <= (uint64_t)clock_real_ns());
	assert_int_equal(wb_flush_some(f->wb, NULL, 0, UINT64_MAX, &done,
				       &left, &oldest), 0);
	assert_int_equal(done, 4096);
	assert_int_equal(left, 0);
	assert_int_equal(oldest, 0);
	d = src_read(f, "b", &n);
	assert_true(all(d, 0, n, 'B'));
	free(d);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.dirty_bytes, 0);
	assert_int_equal(ws.dirty_files, 0);
}

/* A truncate drops the dirty bytes past the new size: the attributes no
 * longer show them, the flush does not write them. */
static void test_truncate(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct rp_reply rep;
	struct stat st;
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 8192, 4096);		/* dirty end 12288 */
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 12288);
	/* as a setattr cuts the file: the log first, then the source */
	assert_int_equal(wb_truncate(f->wb, in, 6000), 0);
	fd = openat(f->sfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 6000), 0);
	close(fd);
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 6000);
	n = mount_read(f, in, "f", 32768, 0, &rep, &b);
	assert_int_equal(n, 6000);
	assert_true(all(b, 0, 4096, 's'));
	assert_true(all(b, 4096, 6000, 'D'));
	rp_done(&rep);
	free(b);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 6000);
	assert_true(all(b, 0, 4096, 's'));
	assert_true(all(b, 4096, 6000, 'D'));
	free(b);
	assert_int_equal(wb_dirty_files(f->wb), 0);
}

/* A truncate to 0, then a write: only the new bytes, at the new size. */
static void test_truncate_then_write(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct stat st;
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 4096, 4096);
	assert_int_equal(wb_truncate(f->wb, in, 0), 0);
	fd = openat(f->sfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	close(fd);
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 0);
	wr(f, in, 'N', 10, 0);
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 10);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 10);
	assert_true(all(b, 0, 10, 'N'));
	free(b);
}

/* wb_sync, then the log closed with its dirty data (no flush: a crash,
 * as far as the log is concerned) and opened again on the same cachedir:
 * replayed, shown, and flushed to the source. */
static void test_sync_close_replay(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 10000, NULL);
	struct rp_reply rep;
	struct wb_stats ws;
	struct stat st;
	size_t n;
	char *b;

	wr(f, in, 'D', 100, 5000);
	wr(f, in, 'E', 50, 20000);
	assert_int_equal(wb_sync(f->wb, in), 0);
	wb_close(f->wb);			/* no flush */
	f->wb = NULL;
	b = src_read(f, "f", &n);
	assert_int_equal(n, 10000);		/* the source: untouched */
	assert_true(all(b, 0, n, 's'));
	free(b);

	wb_up(f);				/* the remount */
	assert_int_equal(wb_dirty_files(f->wb), 1);
	src_stat(f, "f", &st);
	assert_true(wb_holds_dirty(f->wb, &st));
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.dirty_files, 1);
	assert_true(ws.dirty_bytes >= 150);
	assert_int_equal(ws.lost, 0);
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 20050);
	n = mount_read(f, in, "f", 32768, 0, &rep, &b);
	assert_int_equal(n, 20050);
	assert_true(all(b, 5000, 5100, 'D'));
	assert_true(all(b, 10000, 20000, 0));
	assert_true(all(b, 20000, 20050, 'E'));
	rp_done(&rep);
	free(b);

	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 20050);
	assert_true(all(b, 0, 5000, 's'));
	assert_true(all(b, 5000, 5100, 'D'));
	assert_true(all(b, 5100, 10000, 's'));
	assert_true(all(b, 10000, 20000, 0));
	assert_true(all(b, 20000, 20050, 'E'));
	free(b);
	assert_int_equal(wb_dirty_files(f->wb), 0);
}

/* The same with the inode table not knowing the file (a remount's table
 * is new): the walk at open finds it by its number, wb_stop flushes it,
 * and the host hears that the tree changed. */
static void test_replay_unknown_file(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 8192, NULL);
	dev_t dev = in->dev;
	ino_t ino = in->ino;
	size_t n;
	char *b;

	wr(f, in, 'R', 4096, 4096);
	assert_int_equal(wb_sync(f->wb, in), 0);
	wb_close(f->wb);
	f->wb = NULL;
	/* the kernel forgets it: the table no longer holds it */
	ino_forget(f->it, in, 1);
	f->nin--;
	assert_null(ino_find(f->it, dev, ino));

	wb_up(f);
	assert_int_equal(wb_dirty_files(f->wb), 1);
	assert_int_equal(wb_stop(f->wb), 0);
	wb_close(f->wb);
	f->wb = NULL;
	b = src_read(f, "f", &n);
	assert_int_equal(n, 8192);
	assert_true(all(b, 0, 4096, 's'));
	assert_true(all(b, 4096, 8192, 'R'));
	free(b);
	assert_true(f->changed >= 1);
}

/* The last link of a file the kernel does not know: its dirty data is
 * dropped with it. */
static void test_unlink_unknown_drops(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct wb_stats ws;
	struct stat st;
	bool drop = false;

	wr(f, in, 'D', 4096, 4096);
	src_stat(f, "f", &st);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(wb_unlink_begin(f->wb, false, &st, &drop), 0);
	assert_true(drop);
	assert_int_equal(unlinkat(f->sfd, "f", 0), 0);
	wb_unlink_end(f->wb, &st, drop, 0);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.dirty_files, 0);
	assert_int_equal(ws.dirty_bytes, 0);
	assert_false(wb_holds_dirty(f->wb, &st));
	wb_fix_attr(f->wb, &st);
	assert_int_equal(st.st_size, 4096);
	/* and the flush has nothing to write, nor fails */
	assert_int_equal(wb_stop(f->wb), 0);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.flushed_bytes, 0);
	assert_int_equal(ws.flush_errors, 0);
}

/* A file with another link, or one the kernel knows: kept. */
static void test_unlink_known_keeps(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct hotfs_inode *g = mkfile(f, "g", 's', 4096, NULL);
	struct wb_stats ws;
	struct stat st, gst;
	bool drop = true;
	char buf[8192];
	int fd;

	wr(f, in, 'D', 4096, 4096);
	wr(f, g, 'G', 10, 0);
	/* known: kept, flushed to the unlinked file */
	src_stat(f, "f", &st);
	fd = openat(f->sfd, "f", O_RDONLY | O_CLOEXEC);	/* a reader's */
	assert_true(fd >= 0);
	assert_int_equal(wb_unlink_begin(f->wb, true, &st, &drop), 0);
	assert_false(drop);
	assert_int_equal(unlinkat(f->sfd, "f", 0), 0);
	wb_unlink_end(f->wb, &st, drop, 0);
	/* two links: not the last, kept, whoever knows it */
	assert_int_equal(linkat(f->sfd, "g", f->sfd, "g2", 0), 0);
	src_stat(f, "g", &gst);
	assert_int_equal(gst.st_nlink, 2);
	drop = true;
	assert_int_equal(wb_unlink_begin(f->wb, false, &gst, &drop), 0);
	assert_false(drop);
	assert_int_equal(unlinkat(f->sfd, "g", 0), 0);
	wb_unlink_end(f->wb, &gst, drop, 0);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.dirty_files, 2);
	wb_fix_attr(f->wb, &st);
	assert_int_equal(st.st_size, 8192);

	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 8192);
	assert_true(all(buf, 0, 4096, 's'));
	assert_true(all(buf, 4096, 8192, 'D'));
	close(fd);
	assert_int_equal(wb_flush_inode(f->wb, g), 0);
	fd = openat(f->sfd, "g2", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 4096);
	assert_true(all(buf, 0, 10, 'G'));
	assert_true(all(buf, 10, 4096, 's'));
	close(fd);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.dirty_files, 0);
}

/* The file's stamp as an open records it (the host's, under in->m). */
static void take_stamp(struct fx *f, struct hotfs_inode *in,
		       const char *name)
{
	struct stat st;

	src_stat(f, name, &st);
	pthread_mutex_lock(&in->m);
	stamp_take_locked(in, &st);
	pthread_mutex_unlock(&in->m);
}

/* A change behind the mount: name's size and times move. */
static void change_behind(struct fx *f, const char *name)
{
	int fd = openat(f->sfd, name, O_WRONLY | O_APPEND | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "zzzz", 4), 4);
	close(fd);
}

/* A change behind the mount before the flush, of a file whose stamp was
 * recorded: the host's inval for it, a conflict counted, the mount's
 * dirty bytes written over the change (the rest of the change kept). */
static void test_conflict_inval(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct wb_stats ws;
	size_t n;
	char *b;

	take_stamp(f, in, "f");
	wr(f, in, 'D', 100, 0);
	change_behind(f, "f");
	assert_int_equal(f->invals, 0);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	assert_int_equal(f->invals, 1);
	assert_ptr_equal(f->inval_in, in);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.conflicts, 1);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 4100);
	assert_true(all(b, 0, 100, 'D'));
	assert_true(all(b, 100, 4096, 's'));
	assert_true(all(b, 4096, 4100, 'z'));
	free(b);
	/* nothing changed since: a second write and flush is no conflict */
	wr(f, in, 'E', 10, 200);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	assert_int_equal(f->invals, 1);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.conflicts, 1);
}

/* The same change to a file whose stamp was never recorded: nothing
 * the kernel holds is known stale (no inval), and no change behind the
 * mount is known (no conflict); the bytes are written all the same. */
static void test_change_no_stamp(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct wb_stats ws;
	size_t n;
	char *b;

	wr(f, in, 'D', 100, 0);
	change_behind(f, "f");
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	assert_int_equal(f->invals, 0);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.conflicts, 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 4100);
	assert_true(all(b, 0, 100, 'D'));
	free(b);
}

/* A stamp recorded and the file unchanged behind the mount: the mount's
 * own flush is no change behind it. */
static void test_own_flush_no_conflict(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct wb_stats ws;

	take_stamp(f, in, "f");
	wr(f, in, 'D', 100, 0);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	wr(f, in, 'E', 100, 1000);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	assert_int_equal(f->invals, 0);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.conflicts, 0);
}

/* The log's fdatasyncs so far. */
static uint64_t log_syncs(struct fx *f)
{
	struct wblog_stats s;

	wblog_stats(f->wb->wl, &s);
	return s.syncs;
}

/* fsync (wb_sync) and an O_SYNC write make the log durable: an
 * fdatasync of it each; a plain write none. */
static void test_sync_syncs_log(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	uint64_t s0;

	s0 = log_syncs(f);
	wr(f, in, 'D', 100, 0);
	assert_int_equal(log_syncs(f), s0);
	assert_int_equal(wb_sync(f->wb, in), 0);
	assert_true(log_syncs(f) > s0);
	s0 = log_syncs(f);
	assert_int_equal(wb_write(f->wb, in, "abc", 3, 200, true), 3);
	assert_true(log_syncs(f) > s0);
	assert_int_equal(wb_write(f->wb, in, "abc", 3, -1, false), -EINVAL);
}

/* Only the dirty bytes are the mount's: a change behind the mount in
 * the same block but outside them shows through a read, and stays on the
 * source after the flush. */
static void test_change_same_block(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct rp_reply rep;
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 100, 0);
	fd = openat(f->sfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "XXXXXXXXXX", 10, 2000), 10);
	close(fd);
	n = mount_read(f, in, "f", 4096, 0, &rep, &b);
	assert_int_equal(n, 4096);
	assert_true(all(b, 0, 100, 'D'));
	assert_true(all(b, 100, 2000, 's'));
	assert_true(all(b, 2000, 2010, 'X'));
	assert_true(all(b, 2010, 4096, 's'));
	rp_done(&rep);
	free(b);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 4096);
	assert_true(all(b, 0, 100, 'D'));
	assert_true(all(b, 100, 2000, 's'));
	assert_true(all(b, 2000, 2010, 'X'));
	assert_true(all(b, 2010, 4096, 's'));
	free(b);
}

/* A truncate in the log, then the crash and the replay: the trim holds
 * (neither the size nor the flush brings the cut bytes back). */
static void test_replay_truncate(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct stat st;
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 8192, 4096);
	assert_int_equal(wb_truncate(f->wb, in, 6000), 0);
	fd = openat(f->sfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 6000), 0);
	close(fd);
	assert_int_equal(wb_sync(f->wb, in), 0);
	wb_close(f->wb);
	f->wb = NULL;

	wb_up(f);
	assert_int_equal(wb_dirty_files(f->wb), 1);
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 6000);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 6000);
	assert_true(all(b, 0, 4096, 's'));
	assert_true(all(b, 4096, 6000, 'D'));
	free(b);
}

/* A file renamed into another directory after its write, before the
 * crash: the replay's walk finds it by its inode number wherever it is
 * now, and the flush lands there.  (The rename moved its ctime: if past
 * the write's tick, the replay takes it for an edit and keeps a copy
 * aside, as man/hotfs.8 says; not asserted, it depends on the tick.) */
static void test_replay_renamed(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in;
	size_t n;
	char *b;

	assert_int_equal(mkdirat(f->sfd, "d", 0700), 0);
	assert_int_equal(mkdirat(f->sfd, "e", 0700), 0);
	assert_int_equal(mkdirat(f->sfd, "e/sub", 0700), 0);
	in = mkfile(f, "d/f", 's', 4096, NULL);
	wr(f, in, 'D', 100, 100);
	assert_int_equal(renameat(f->sfd, "d/f", f->sfd, "e/sub/h"), 0);
	assert_int_equal(wb_sync(f->wb, in), 0);
	wb_close(f->wb);
	f->wb = NULL;

	wb_up(f);
	assert_int_equal(wb_dirty_files(f->wb), 1);
	assert_int_equal(wb_stop(f->wb), 0);
	b = src_read(f, "e/sub/h", &n);
	assert_int_equal(n, 4096);
	assert_true(all(b, 0, 100, 's'));
	assert_true(all(b, 100, 200, 'D'));
	assert_true(all(b, 200, 4096, 's'));
	free(b);
}

/* wb_flush_some over the mount with since_ns: only what was written
 * before that wall clock time. */
static void test_flush_some_since(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *a = mkfile(f, "a", 's', 4096, NULL);
	struct hotfs_inode *b = mkfile(f, "b", 't', 4096, NULL);
	uint64_t done, left, oldest;
	int64_t t, since;
	size_t n;
	char *d;

	wr(f, a, 'A', 4096, 0);
	t = clock_real_ns();
	/* past the log's coarse clock's tick, both sides of since */
	WAIT_UNTIL(clock_real_ns() > t + 30000000LL);
	since = clock_real_ns();
	WAIT_UNTIL(clock_real_ns() > since + 30000000LL);
	wr(f, b, 'B', 4096, 0);
	assert_int_equal(wb_flush_some(f->wb, NULL, since, UINT64_MAX, &done,
				       &left, &oldest), 0);
	assert_int_equal(done, 4096);
	assert_int_equal(left, 4096);
	assert_true(oldest >= (uint64_t)since);
	d = src_read(f, "a", &n);
	assert_true(all(d, 0, n, 'A'));
	free(d);
	d = src_read(f, "b", &n);
	assert_true(all(d, 0, n, 't'));
	free(d);
}

/* A file flushed (and sealed) before the crash: the replay writes none
 * of its old records again, over what the source got since. */
static void test_flushed_not_replayed(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 100, 0);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	assert_int_equal(wb_sync(f->wb, in), 0);
	/* later, behind the mount */
	fd = openat(f->sfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "XXXXXXXXXX", 10, 0), 10);
	close(fd);
	wb_close(f->wb);
	f->wb = NULL;

	wb_up(f);
	assert_int_equal(wb_dirty_files(f->wb), 0);
	assert_int_equal(wb_stop(f->wb), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 4096);
	assert_true(all(b, 0, 10, 'X'));
	assert_true(all(b, 10, 100, 'D'));
	free(b);
}

/* A dropped file's records (its unlink through the mount), then a new
 * file, maybe given the same inode number: the replay gives it none of
 * them. */
static void test_dropped_not_replayed(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct stat st, gst;
	bool drop = false;
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 4096, 0);
	assert_int_equal(wb_sync(f->wb, in), 0);
	src_stat(f, "f", &st);
	assert_int_equal(wb_unlink_begin(f->wb, false, &st, &drop), 0);
	assert_true(drop);
	assert_int_equal(unlinkat(f->sfd, "f", 0), 0);
	wb_unlink_end(f->wb, &st, drop, 0);
	/* the kernel forgets it; its O_PATH descriptor goes with it, and
	 * the source may give its number to the next file */
	ino_forget(f->it, in, 1);
	f->nin--;
	fd = openat(f->sfd, "g", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "gggg", 4), 4);
	close(fd);
	src_stat(f, "g", &gst);
	print_message("# the new file has %s inode number\n",
		      gst.st_ino == st.st_ino ? "the removed one's" :
		      "another");
	wb_close(f->wb);
	f->wb = NULL;

	wb_up(f);
	assert_int_equal(wb_dirty_files(f->wb), 0);
	mount_stat(f, "g", &gst);
	assert_int_equal(gst.st_size, 4);
	assert_int_equal(wb_stop(f->wb), 0);
	b = src_read(f, "g", &n);
	assert_int_equal(n, 4);
	assert_true(all(b, 0, 4, 'g'));
	free(b);
}

/* A file removed behind the mount with its dirty data in the log, and
 * its inode number given to a new file before the remount: the replay
 * tells them apart by their birth, and gives the new one nothing. */
static void test_removed_number_reused(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct stat st, gst;
	char name[16];
	int fd, i, k;
	size_t n;
	char *b;

	wr(f, in, 'D', 4096, 0);
	assert_int_equal(wb_sync(f->wb, in), 0);
	src_stat(f, "f", &st);
	ino_forget(f->it, in, 1);
	f->nin--;
	assert_int_equal(unlinkat(f->sfd, "f", 0), 0);
	wb_close(f->wb);		/* its descriptor of f goes */
	f->wb = NULL;
	/* new files until one has f's number (the source gives a freed
	 * number again soon, but others may take it first) */
	for (k = 0; k < 64; k++) {
		snprintf(name, sizeof(name), "g%d", k);
		fd = openat(f->sfd, name, O_WRONLY | O_CREAT | O_CLOEXEC,
			    0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "gggg", 4), 4);
		close(fd);
		src_stat(f, name, &gst);
		if (gst.st_ino == st.st_ino)
			break;
	}
	if (k == 64)
		print_message("# no new file has f's inode number: the "
			      "birth check is not reached\n");

	wb_up(f);
	assert_int_equal(wb_dirty_files(f->wb), 0);
	assert_int_equal(wb_stop(f->wb), 0);
	for (i = 0; i < (k < 64 ? k + 1 : 64); i++) {
		snprintf(name, sizeof(name), "g%d", i);
		mount_stat(f, name, &gst);
		assert_int_equal(gst.st_size, 4);
		b = src_read(f, name, &n);
		assert_int_equal(n, 4);
		assert_true(all(b, 0, 4, 'g'));
		free(b);
	}
}

/* An edit while no mount ran (after the crash, before the remount): the
 * source's version kept in cachedir/conflicts, counted; the log's bytes
 * win where they are, the rest is the edit's. */
static void test_edit_while_unmounted(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct timespec now;
	struct wb_stats ws;
	struct stat st;
	int64_t dirty_ns;
	char path[256];
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 100, 0);
	mount_stat(f, "f", &st);
	dirty_ns = clock_ts_ns(&st.st_mtim);	/* the write's time */
	assert_int_equal(wb_sync(f->wb, in), 0);
	wb_close(f->wb);
	f->wb = NULL;
	/* the edit's ctime after the write's time on the source's coarse
	 * clock (within a tick of it, it is not known for an edit) */
	WAIT_UNTIL((clock_gettime(CLOCK_REALTIME_COARSE, &now),
		    clock_ts_ns(&now) > dirty_ns + 1000000));
	fd = openat(f->sfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "XXXXXXXXXX", 10, 2000), 10);
	assert_int_equal(pwrite(fd, "zzzz", 4, 4096), 4);
	close(fd);
	src_stat(f, "f", &st);

	wb_up(f);
	wb_stats(f->wb, &ws);
	assert_int_equal(ws.conflicts, 1);
	assert_int_equal(wb_dirty_files(f->wb), 1);
	/* the source's version, kept aside */
	snprintf(path, sizeof(path), "%s/conflicts/%llu-%lld-f", f->cachedir,
		 (unsigned long long)st.st_ino, (long long)st.st_ctime);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	b = calloc(1, 8192);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, 8192, 0), 4100);
	close(fd);
	assert_true(all(b, 0, 2000, 's'));
	assert_true(all(b, 2000, 2010, 'X'));
	assert_true(all(b, 4096, 4100, 'z'));
	free(b);
	/* the log's bytes over the edit */
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 4100);
	assert_true(all(b, 0, 100, 'D'));
	assert_true(all(b, 100, 2000, 's'));
	assert_true(all(b, 2000, 2010, 'X'));
	assert_true(all(b, 2010, 4096, 's'));
	assert_true(all(b, 4096, 4100, 'z'));
	free(b);
}

/* An open with O_TRUNC of a file with dirty data (wb_trunc_fd): cut in
 * the log, then on the source; nothing of it comes back. */
static void test_trunc_fd(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct stat st;
	size_t n;
	char *b;
	int fd;

	wr(f, in, 'D', 4096, 4096);
	fd = openat(f->sfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(wb_trunc_fd(f->wb, fd, &st), 0);
	close(fd);
	mount_stat(f, "f", &st);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(wb_dirty_files(f->wb), 0);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_int_equal(n, 0);
	free(b);
}

/* An unlink that failed (drop, then the removal's error): the dirty data
 * stays. */
static void test_unlink_failed_keeps(void **state)
{
	struct fx *f = *state;
	struct hotfs_inode *in = mkfile(f, "f", 's', 4096, NULL);
	struct stat st;
	bool drop = false;
	size_t n;
	char *b;

	wr(f, in, 'D', 10, 0);
	src_stat(f, "f", &st);
	assert_int_equal(wb_unlink_begin(f->wb, false, &st, &drop), 0);
	assert_true(drop);
	wb_unlink_end(f->wb, &st, drop, -EACCES);
	assert_int_equal(wb_dirty_files(f->wb), 1);
	/* and writes go on (the exclusive lock was let go) */
	wr(f, in, 'E', 10, 10);
	assert_int_equal(wb_flush_inode(f->wb, in), 0);
	b = src_read(f, "f", &n);
	assert_true(all(b, 0, 10, 'D'));
	assert_true(all(b, 10, 20, 'E'));
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_on, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_logged_attrs,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_overlay, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flush_inode, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flush_some, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_truncate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_truncate_then_write,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_close_replay, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_replay_unknown_file,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_unknown_drops,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_known_keeps,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_conflict_inval, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_change_no_stamp, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_own_flush_no_conflict,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_syncs_log, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_change_same_block, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_replay_truncate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_replay_renamed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flush_some_since, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_flushed_not_replayed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_dropped_not_replayed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_number_reused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_edit_while_unmounted,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_trunc_fd, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unlink_failed_keeps,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
