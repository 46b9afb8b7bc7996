// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the writeback log (src/writeback/wblog.c) on a real file in a
 * private directory: what is written reads back over the file's own bytes
 * (newest wins, partial blocks joined, gaps filled), group commit,
 * replay after a reopen, a torn or foreign tail dropped, trims replayed,
 * the files' births replayed and a file's dirty data dropped, a log of an
 * earlier format refused, the oldest dirty run coalesced, the space the
 * log has, a resize refused leaving the log as it was, and the dirty
 * bytes a log holds, read without changing it; damage: a bad block or
 * header with synced records after it replayed around and counted (and
 * a later file of the same inode number never given an earlier one's
 * bytes past a damaged trim; a log emptied without a flush), a
 * torn tail past the last sync dropped, dirty blocks checked at every
 * read (lost: an error, never flushed, carried by the cleaner), a log of
 * format 3 replayed; power loss (the states a loss right after a header
 * write may leave, built from the log's recorded writes and syncs): the
 * tail passes no record whose bytes are not durable elsewhere, and an
 * open vouches for no replayed record that is not durable.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/wblog.h"
#include "../../src/writeback/wblog_i.h"
#include "unit_util.h"

/* the area's first block in the file (after the two header slots) */
#define AREA	(2 * WB_BLOCK)
#define CAP	(1024 * WB_BLOCK)
#define SMALL	(64 * WB_BLOCK)

struct fx {
	char dir[64];
	int dfd;
	struct wblog *wl;
};

static const struct wb_fid F1 = { 1, 100, 0 }, F2 = { 1, 200, 0 };

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char err[200];

	if (!x || !ut_tmpdir("wblog", x->dir, sizeof(x->dir)))
		return -1;
	x->dfd = open(x->dir, O_RDONLY | O_DIRECTORY);
	if (x->dfd < 0 || wblog_open(x->dfd, CAP, &x->wl, err, sizeof(err)))
		return -1;
	*state = x;
	return 0;
}

static void pl_cleanup(void);

static int teardown(void **state)
{
	struct fx *x = *state;

	wblog_close(x->wl);
	close(x->dfd);
	ut_rm_tree(x->dir);
	free(x);
	pl_cleanup();
	return 0;
}

static void reopen(struct fx *x)
{
	char err[200];

	wblog_close(x->wl);
	x->wl = NULL;
	assert_int_equal(wblog_open(x->dfd, CAP, &x->wl, err, sizeof(err)),
			 0);
}

/* c repeated n times at off */
static void wr(struct wblog *wl, const struct wb_fid *f, uint64_t off,
	       int c, size_t n)
{
	char *b = malloc(n);

	assert_non_null(b);
	memset(b, c, n);
	assert_int_equal(wblog_write(wl, f, off, b, n, NULL, NULL, NULL),
			 (ssize_t)n);
	free(b);
}

/* [off, off + n) read over a file of '.' bytes */
static char *rd(struct wblog *wl, const struct wb_fid *f, uint64_t off,
		size_t n)
{
	char *b = malloc(n + 1);

	assert_non_null(b);
	memset(b, '.', n);
	b[n] = 0;
	assert_true(wblog_overlay(wl, f, off, b, n) >= 0);
	return b;
}

static void expect_run(const char *b, size_t from, size_t to, int c)
{
	size_t i;

	for (i = from; i < to; i++)
		if (b[i] != c)
			fail_msg("byte %zu is '%c', not '%c'", i, b[i], c);
}

static void test_write_reads_back(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char *b;

	wr(x->wl, &F1, 10, 'a', 100);
	b = rd(x->wl, &F1, 0, 200);
	expect_run(b, 0, 10, '.');
	expect_run(b, 10, 110, 'a');
	expect_run(b, 110, 200, '.');
	free(b);
	/* another file's bytes are its own */
	b = rd(x->wl, &F2, 0, 200);
	expect_run(b, 0, 200, '.');
	free(b);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 110);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 100);
	assert_int_equal(s.dirty_blocks, 1);
	assert_int_equal(s.dirty_records, 1);
	assert_int_equal(s.dirty_files, 1);
	assert_int_equal(s.log_used, 2 * WB_BLOCK);
	assert_true(s.oldest_dirty_ns > 0);
}

static void test_newest_wins(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char *b;

	wr(x->wl, &F1, 0, 'x', 3 * WB_BLOCK);
	wr(x->wl, &F1, 4000, 'y', 200);
	wr(x->wl, &F1, 4100, 'z', 10);
	b = rd(x->wl, &F1, 0, 3 * WB_BLOCK);
	expect_run(b, 0, 4000, 'x');
	expect_run(b, 4000, 4100, 'y');
	expect_run(b, 4100, 4110, 'z');
	expect_run(b, 4110, 4200, 'y');
	expect_run(b, 4200, 3 * WB_BLOCK, 'x');
	free(b);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 3 * WB_BLOCK);
	assert_int_equal(s.dirty_blocks, 3);
	/* the first record keeps block 2, the second (which took in the
	 * dirty bytes of blocks 0 and 1 around it) block 0, the third
	 * block 1 */
	assert_int_equal(s.dirty_records, 3);
	assert_true(s.absorbed >= 3);
}

/* fill: the file's own bytes are 'f' */
static int fill_f(void *arg, const struct wb_fid *fid, uint64_t off,
		  void *buf, size_t len)
{
	int *calls = arg;

	(void)fid;
	(void)off;
	(*calls)++;
	memset(buf, 'f', len);
	return 0;
}

static void test_partial_blocks(void **state)
{
	struct fx *x = *state;
	int calls = 0;
	char p[100], *b;

	/* joined without the file's bytes: overlapping and adjacent */
	wr(x->wl, &F1, 100, 'a', 100);
	wr(x->wl, &F1, 150, 'b', 150);
	wr(x->wl, &F1, 300, 'c', 10);
	/* a gap of [310, 400): without fill it cannot be logged */
	memset(p, 'd', sizeof(p));
	assert_int_equal(wblog_write(x->wl, &F1, 400, p, 50, NULL, NULL,
				     NULL), -EINVAL);
	assert_int_equal(wblog_write(x->wl, &F1, 400, p, 50, fill_f, &calls,
				     NULL), 50);
	assert_int_equal(calls, 1);
	/* a gap on the left: [20, 100) */
	assert_int_equal(wblog_write(x->wl, &F1, 10, p, 10, fill_f, &calls,
				     NULL), 10);
	assert_int_equal(calls, 2);
	b = rd(x->wl, &F1, 0, WB_BLOCK);
	expect_run(b, 0, 10, '.');
	expect_run(b, 10, 20, 'd');
	expect_run(b, 20, 100, 'f');
	expect_run(b, 100, 150, 'a');
	expect_run(b, 150, 300, 'b');
	expect_run(b, 300, 310, 'c');
	expect_run(b, 310, 400, 'f');
	expect_run(b, 400, 450, 'd');
	expect_run(b, 450, WB_BLOCK, '.');
	free(b);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 450);
	/* the same after a replay */
	reopen(x);
	b = rd(x->wl, &F1, 0, WB_BLOCK);
	expect_run(b, 0, 10, '.');
	expect_run(b, 10, 20, 'd');
	expect_run(b, 20, 100, 'f');
	expect_run(b, 310, 400, 'f');
	expect_run(b, 450, WB_BLOCK, '.');
	free(b);
}

struct syncer {
	struct wblog *wl;
	int id;
	int err;
	uint64_t last;
};

static void *sync_loop(void *arg)
{
	struct syncer *t = arg;
	char b[512];
	int i;

	memset(b, 'A' + t->id, sizeof(b));
	for (i = 0; i < 20 && !t->err; i++) {
		struct wb_fid f = { 2, (uint64_t)t->id, 0 };

		ssize_t n = wblog_write(t->wl, &f, (uint64_t)i * 512, b,
					sizeof(b), NULL, NULL, &t->last);

		t->err = n == sizeof(b) ? 0 : n < 0 ? (int)n : -EIO;
		if (!t->err)
			t->err = wblog_sync(t->wl, t->last);
	}
	return NULL;
}

static void test_group_commit(void **state)
{
	struct fx *x = *state;
	struct syncer t[8];
	pthread_t th[8];
	struct wblog_stats s0, s1;
	char *b;
	int i;

	wr(x->wl, &F1, 0, 'a', 10);
	assert_int_equal(wblog_sync(x->wl, 0), 0);
	wblog_stats(x->wl, &s0);
	/* synced already: no second fdatasync */
	assert_int_equal(wblog_sync(x->wl, 0), 0);
	wblog_stats(x->wl, &s1);
	assert_int_equal(s1.syncs, s0.syncs);
	for (i = 0; i < 8; i++) {
		t[i] = (struct syncer){ .wl = x->wl, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, sync_loop,
						&t[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(t[i].err, 0);
	}
	wblog_stats(x->wl, &s1);
	/* at most one fdatasync a call, each caller's record covered */
	assert_true(s1.syncs - s0.syncs <= 8 * 20);
	assert_true(s1.syncs > s0.syncs);
	for (i = 0; i < 8; i++) {
		struct wb_fid f = { 2, (uint64_t)i, 0 };

		b = rd(x->wl, &f, 0, 20 * 512);
		expect_run(b, 0, 20 * 512, 'A' + i);
		free(b);
	}
}

static void test_replay(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char *b;

	wr(x->wl, &F1, 0, 'a', 5000);
	wr(x->wl, &F2, 8192, 'b', 10);
	wr(x->wl, &F1, 4096, 'c', 100);
	reopen(x);		/* never synced: a kill keeps the pages */
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 3);
	assert_int_equal(s.dirty_bytes, 5000 + 10);
	b = rd(x->wl, &F1, 0, 6000);
	expect_run(b, 0, 4096, 'a');
	expect_run(b, 4096, 4196, 'c');
	expect_run(b, 4196, 5000, 'a');
	expect_run(b, 5000, 6000, '.');
	free(b);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 8202);
	/* appending goes on after the replayed records */
	wr(x->wl, &F2, 8192, 'd', 5);
	reopen(x);
	b = rd(x->wl, &F2, 8192, 10);
	expect_run(b, 0, 5, 'd');
	expect_run(b, 5, 10, 'b');
	free(b);
}

/* Flip a byte of the log file at off. */
static void corrupt(struct fx *x, off_t off)
{
	int fd = openat(x->dfd, WB_LOG_NAME, O_RDWR);
	char c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x5a;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void test_torn_tail(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char *b;

	/* one header block and one data block each: at 0, 2 and 4 */
	wr(x->wl, &F1, 0, 'a', 100);
	wr(x->wl, &F1, WB_BLOCK, 'b', 100);
	wr(x->wl, &F1, 2 * WB_BLOCK, 'c', 100);
	/* the third record's data torn: it is dropped whole */
	corrupt(x, AREA + 5 * WB_BLOCK + 50);
	reopen(x);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 2);
	b = rd(x->wl, &F1, 0, 3 * WB_BLOCK);
	expect_run(b, 0, 100, 'a');
	expect_run(b, WB_BLOCK, WB_BLOCK + 100, 'b');
	expect_run(b, 2 * WB_BLOCK, 3 * WB_BLOCK, '.');
	free(b);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), WB_BLOCK + 100);
	/* the second's header torn: it and everything after it dropped */
	corrupt(x, AREA + 2 * WB_BLOCK + 9);
	reopen(x);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 1);
	b = rd(x->wl, &F1, 0, 3 * WB_BLOCK);
	expect_run(b, 0, 100, 'a');
	expect_run(b, 100, 3 * WB_BLOCK, '.');
	free(b);
}

static void test_old_life_not_a_successor(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char *b;

	wr(x->wl, &F1, 0, 'a', 100);
	wr(x->wl, &F1, WB_BLOCK, 'b', 100);
	wr(x->wl, &F1, 2 * WB_BLOCK, 'c', 100);	/* seq 3, at 4 */
	corrupt(x, AREA + 3 * WB_BLOCK + 7);	/* record 2 torn */
	reopen(x);				/* record 1 only */
	/* the next record takes seq 2 at block 2, as long as the torn
	 * one: the old seq 3 at block 4 is whole and would follow */
	wr(x->wl, &F2, 0, 'n', 100);
	reopen(x);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 2);
	b = rd(x->wl, &F1, 0, 3 * WB_BLOCK);
	expect_run(b, 0, 100, 'a');
	expect_run(b, 100, 3 * WB_BLOCK, '.');
	free(b);
	b = rd(x->wl, &F2, 0, 100);
	expect_run(b, 0, 100, 'n');
	free(b);
}

static void test_garbage_after_head(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char junk[3 * WB_BLOCK];
	int fd;

	wr(x->wl, &F1, 0, 'a', 100);
	fd = openat(x->dfd, WB_LOG_NAME, O_RDWR);
	assert_true(fd >= 0);
	memset(junk, 0xa5, sizeof(junk));
	memcpy(junk, "HOTFSWR1", 8);	/* a magic, nothing else right */
	assert_int_equal(pwrite(fd, junk, sizeof(junk), AREA + 2 * WB_BLOCK),
			 (ssize_t)sizeof(junk));
	close(fd);
	reopen(x);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 1);
	assert_int_equal(s.dirty_bytes, 100);
}

static void test_headers_damaged(void **state)
{
	struct fx *x = *state;
	char err[200];
	struct wblog *wl = NULL;

	wr(x->wl, &F1, 0, 'a', 100);
	reopen(x);		/* both header slots written */
	wblog_close(x->wl);
	x->wl = NULL;
	/* the older slot damaged (a torn header write): the newer serves */
	corrupt(x, WB_BLOCK + 20);
	assert_int_equal(wblog_open(x->dfd, CAP, &x->wl, err, sizeof(err)),
			 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 100);
	wblog_close(x->wl);
	x->wl = NULL;
	/* both: the log is kept, not reset */
	corrupt(x, 20);
	corrupt(x, WB_BLOCK + 20);
	assert_int_equal(wblog_open(x->dfd, CAP, &wl, err, sizeof(err)),
			 -EUCLEAN);
	assert_null(wl);
	assert_non_null(strstr(err, "kept"));
	assert_int_equal(wblog_open(x->dfd, CAP, &wl, err, sizeof(err)),
			 -EUCLEAN);
}

static void test_trim(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char *b;

	wr(x->wl, &F1, 0, 'a', 3 * WB_BLOCK);
	wr(x->wl, &F2, 0, 'b', 10);
	assert_int_equal(wblog_trim(x->wl, &F1, 5000), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 5000);
	b = rd(x->wl, &F1, 0, 3 * WB_BLOCK);
	expect_run(b, 0, 5000, 'a');
	expect_run(b, 5000, 3 * WB_BLOCK, '.');
	free(b);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 5000 + 10);
	/* a replay trims too */
	reopen(x);
	b = rd(x->wl, &F1, 0, 3 * WB_BLOCK);
	expect_run(b, 0, 5000, 'a');
	expect_run(b, 5000, 3 * WB_BLOCK, '.');
	free(b);
	/* written again past the cut: the new bytes, not the trimmed */
	wr(x->wl, &F1, 8192, 'c', 10);
	reopen(x);
	b = rd(x->wl, &F1, 5000, 3300);
	expect_run(b, 0, 3192, '.');
	expect_run(b, 3192, 3202, 'c');
	free(b);
	/* an unlink: nothing of the file left */
	assert_int_equal(wblog_trim(x->wl, &F1, 0), 0);
	reopen(x);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_files, 1);
	assert_int_equal(s.dirty_bytes, 10);
}

/* the birth of a file's DATA records comes back from a replay with its
 * dirty data; dropping a file forgets its bytes for good, counted */
static void test_birth_and_drop(void **state)
{
	struct fx *x = *state;
	const struct wb_fid b1 = { 1, 100, 1700000000123456789ull },
			    g2 = { 1, 200, WB_BIRTH_GEN | 42 },
			    n3 = { 1, 300, 0 };
	struct wblog_stats s;
	struct wb_fid *l = NULL;
	size_t n, i;
	int seen = 0;

	wr(x->wl, &b1, 0, 'a', 5000);
	wr(x->wl, &b1, 8192, 'b', 10);
	wr(x->wl, &g2, 0, 'c', 10);
	wr(x->wl, &n3, 0, 'd', 10);
	reopen(x);
	n = wblog_files(x->wl, &l);
	assert_int_equal(n, 3);
	for (i = 0; i < n; i++) {
		const struct wb_fid *w = l[i].ino == 100 ? &b1 :
					 l[i].ino == 200 ? &g2 : &n3;

		assert_int_equal(l[i].dev, 1);
		assert_int_equal(l[i].birth, w->birth);
		seen |= 1 << (l[i].ino / 100);
	}
	free(l);
	assert_int_equal(seen, 2 | 4 | 8);
	/* a write that knows no birth leaves the file's */
	wr(x->wl, &F1, 100, 'e', 10);
	n = wblog_files(x->wl, &l);
	for (i = 0; i < n; i++)
		if (l[i].ino == 100)
			assert_int_equal(l[i].birth, b1.birth);
	free(l);
	/* dropped: its dirty bytes counted, nothing of it after a replay */
	assert_int_equal(wblog_drop(x->wl, &b1), 5000 + 10);
	assert_int_equal(wblog_dirty_end(x->wl, &b1), 0);
	assert_int_equal(wblog_drop(x->wl, &b1), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.flush_errors, 1);
	assert_int_equal(s.dirty_files, 2);
	reopen(x);
	assert_int_equal(wblog_dirty_end(x->wl, &b1), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &g2), 10);
	assert_int_equal(wblog_dirty_end(x->wl, &n3), 10);
}

/* a log of the format before births is refused, and kept as it is */
static void test_old_format_refused(void **state)
{
	struct fx *x = *state;
	struct wblog *wl = NULL;
	char err[300], m[8];
	int fd, i;

	wr(x->wl, &F1, 0, 'a', 100);
	reopen(x);		/* both header slots written */
	wblog_close(x->wl);
	x->wl = NULL;
	fd = openat(x->dfd, WB_LOG_NAME, O_RDWR);
	assert_true(fd >= 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pread(fd, m, 8, i * WB_BLOCK), 8);
		assert_memory_equal(m, "HOTFSWL", 7);
		assert_int_equal(pwrite(fd, "HOTFSWL1", 8, i * WB_BLOCK), 8);
	}
	close(fd);
	for (i = 0; i < 2; i++) {
		err[0] = 0;
		assert_int_equal(wblog_open(x->dfd, CAP, &wl, err,
					    sizeof(err)), -EPROTONOSUPPORT);
		assert_null(wl);
		assert_non_null(strstr(err, "earlier format"));
		assert_null(strchr(err, '\n'));
	}
}

static void test_flush_oldest_coalesced(void **state)
{
	struct fx *x = *state;
	struct wb_run r;
	struct wblog_stats s;

	wr(x->wl, &F2, 10 * WB_BLOCK, 'z', 100);	/* oldest */
	wr(x->wl, &F1, 0, 'a', WB_BLOCK);
	wr(x->wl, &F1, WB_BLOCK, 'b', WB_BLOCK);
	wr(x->wl, &F1, 2 * WB_BLOCK, 'c', 50);
	wr(x->wl, &F1, 5 * WB_BLOCK, 'd', 50);	/* not adjacent */
	/* too young */
	assert_int_equal(wblog_flush_next(x->wl, 3600LL * 1000000000, 1 << 20,
					  NULL, &r), 0);
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r), 1);
	assert_int_equal(r.fid.ino, F2.ino);
	assert_int_equal(r.off, 10 * WB_BLOCK);
	assert_int_equal(r.len, 100);
	expect_run(r.buf, 0, 100, 'z');
	wblog_flush_done(x->wl, &r, 0);
	/* F1's three adjacent blocks in one run */
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r), 1);
	assert_int_equal(r.fid.ino, F1.ino);
	assert_int_equal(r.off, 0);
	assert_int_equal(r.len, 2 * WB_BLOCK + 50);
	expect_run(r.buf, 0, WB_BLOCK, 'a');
	expect_run(r.buf, WB_BLOCK, 2 * WB_BLOCK, 'b');
	expect_run(r.buf, 2 * WB_BLOCK, 2 * WB_BLOCK + 50, 'c');
	/* rewritten while in flight: the new bytes stay dirty */
	wr(x->wl, &F1, WB_BLOCK, 'B', 10);
	wblog_flush_done(x->wl, &r, 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_blocks, 2);
	assert_int_equal(s.flushed_bytes, 100 + 2 * WB_BLOCK + 50);
	/* a max smaller than the run: one block */
	assert_int_equal(wblog_flush_next(x->wl, 0, WB_BLOCK, NULL, &r), 1);
	assert_int_equal(r.off, 5 * WB_BLOCK);
	assert_int_equal(r.len, 50);
	/* a failed write keeps it dirty, counted */
	wblog_flush_done(x->wl, &r, -EIO);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.flush_errors, 1);
	assert_int_equal(s.dirty_blocks, 2);
}

static void test_one_run_a_file(void **state)
{
	struct fx *x = *state;
	struct wb_run r, r2;
	struct wb_fid *fids;
	uint64_t g;
	size_t n;

	wr(x->wl, &F1, 0, 'a', 10);		/* oldest */
	wr(x->wl, &F2, 0, 'b', 10);
	wr(x->wl, &F1, 3 * WB_BLOCK, 'c', 10);
	n = wblog_files(x->wl, &fids);
	assert_int_equal(n, 2);
	assert_true((fids[0].ino == F1.ino && fids[1].ino == F2.ino) ||
		    (fids[0].ino == F2.ino && fids[1].ino == F1.ino));
	free(fids);
	g = wblog_forget_gen(x->wl, &F2);
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r), 1);
	assert_int_equal(r.fid.ino, F1.ino);
	assert_int_equal(r.off, 0);
	/* F1 has a run in flight: its next one waits, F2's goes */
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r2), 1);
	assert_int_equal(r2.fid.ino, F2.ino);
	wblog_flush_done(x->wl, &r2, 0);
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r2), 0);
	assert_true(wblog_forget_gen(x->wl, &F2) != g);
	g = wblog_forget_gen(x->wl, &F1);
	wblog_flush_done(x->wl, &r, 0);
	assert_true(wblog_forget_gen(x->wl, &F1) != g);
	/* a file's own runs, whatever their age */
	wr(x->wl, &F2, 0, 'd', 10);
	assert_int_equal(wblog_flush_next(x->wl, 3600LL * 1000000000, 1 << 20,
					  &F1, &r), 1);
	assert_int_equal(r.fid.ino, F1.ino);
	assert_int_equal(r.off, 3 * WB_BLOCK);
	wblog_flush_done(x->wl, &r, 0);
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, &F1, &r), 0);
	/* a trim forgets bytes too */
	g = wblog_forget_gen(x->wl, &F2);
	assert_int_equal(wblog_trim(x->wl, &F2, 5), 0);
	assert_true(wblog_forget_gen(x->wl, &F2) != g);
	n = wblog_files(x->wl, &fids);
	assert_int_equal(n, 1);
	assert_int_equal(fids[0].ino, F2.ino);
	free(fids);
}

/*
 * A random sequence of writes (some leaving gaps within blocks), trims
 * (the source cut with them, as the mount does), holes punched (the file
 * flushed and sealed first, as the mount does), flushes into a model of
 * the source (some with a rewrite racing them) and reopens, checked after
 * each step against a model of what the mount must show: the source's
 * bytes with the dirty ones over them, and the size.
 */
#define M_FILES	3
#define M_SIZE	(64 * 1024)

struct model {
	unsigned char cur[M_FILES][M_SIZE];	/* what the mount shows */
	unsigned char src[M_FILES][M_SIZE];	/* the source */
	uint64_t size[M_FILES], src_size[M_FILES];
};

static struct wb_fid mfid(int i)
{
	return (struct wb_fid){ 7, 1000 + (uint64_t)i, 0 };
}

static int mfill(void *arg, const struct wb_fid *fid, uint64_t off,
		 void *buf, size_t len)
{
	struct model *m = arg;
	int i = (int)(fid->ino - 1000);

	/* the source's bytes (zeros past its end: kept zero there) */
	memcpy(buf, m->src[i] + off, len);
	return 0;
}

static void m_flush_run(struct model *m, const struct wb_run *r)
{
	int i = (int)(r->fid.ino - 1000);

	memcpy(m->src[i] + r->off, r->buf, r->len);
	if (r->off + r->len > m->src_size[i])
		m->src_size[i] = r->off + r->len;
}

static void m_check(struct wblog *wl, struct model *m, unsigned step)
{
	static unsigned char b[M_SIZE];
	int i;

	for (i = 0; i < M_FILES; i++) {
		struct wb_fid f = mfid(i);
		uint64_t end = wblog_dirty_end(wl, &f), sz;

		memcpy(b, m->src[i], M_SIZE);
		assert_true(wblog_overlay(wl, &f, 0, b, M_SIZE) >= 0);
		if (memcmp(b, m->cur[i], M_SIZE)) {
			size_t k = 0;

			while (b[k] == m->cur[i][k])
				k++;
			fail_msg("step %u file %d: byte %zu is %u, not %u",
				 step, i, k, b[k], m->cur[i][k]);
		}
		sz = end > m->src_size[i] ? end : m->src_size[i];
		if (sz != m->size[i])
			fail_msg("step %u file %d: size %llu, not %llu", step,
				 i, (unsigned long long)sz,
				 (unsigned long long)m->size[i]);
	}
}

static void m_write(struct fx *x, struct model *m, int i, unsigned step)
{
	static unsigned char p[8000];
	uint64_t off = (uint64_t)(rand() % (M_SIZE - 8000));
	int small = rand() % 3;
	size_t len = 1 + (size_t)(rand() % (small ? 300 : 7999));
	struct wb_fid f = mfid(i);
	int err;

	memset(p, 1 + step % 250, len);
	err = (int)wblog_write(x->wl, &f, off, p, len, mfill, m, NULL);
	if (err == -ENOSPC) {
		struct wb_run r;

		while (wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r) == 1) {
			m_flush_run(m, &r);
			wblog_flush_done(x->wl, &r, 0);
		}
		assert_int_equal(wblog_release(x->wl), 0);
		err = (int)wblog_write(x->wl, &f, off, p, len, mfill, m,
				       NULL);
	}
	assert_int_equal(err, (int)len);
	memcpy(m->cur[i] + off, p, len);
	if (off + len > m->size[i])
		m->size[i] = off + len;
}

static unsigned seed = 23;

static void test_model(void **state)
{
	struct fx *x = *state;
	struct model *m = calloc(1, sizeof(*m));
	struct wb_run r;
	unsigned step;

	assert_non_null(m);
	srand(seed);
	for (step = 0; step < 3000; step++) {
		int i = rand() % M_FILES, op = rand() % 100;
		struct wb_fid f = mfid(i);

		if (op < 70) {
			m_write(x, m, i, step);
		} else if (op < 78) {
			/* a truncate: the log first, then the source */
			uint64_t sz = m->size[i] ?
				      (uint64_t)rand() % (m->size[i] + 1) : 0;

			assert_int_equal(wblog_trim(x->wl, &f, sz), 0);
			memset(m->cur[i] + sz, 0, M_SIZE - sz);
			memset(m->src[i] + sz, 0, M_SIZE - sz);
			m->size[i] = m->src_size[i] = sz;
		} else if (op < 82) {
			/* a hole punched: the file flushed and sealed, then
			 * the source changed */
			uint64_t a = (uint64_t)rand() % M_SIZE, n = 1 +
				     (uint64_t)rand() % (M_SIZE - a);

			while (wblog_flush_next(x->wl, 0, 1 << 20, &f,
						&r) == 1) {
				m_flush_run(m, &r);
				wblog_flush_done(x->wl, &r, 0);
			}
			assert_int_equal(wblog_seal(x->wl, &f), 0);
			if (a < m->src_size[i]) {
				if (a + n > m->src_size[i])
					n = m->src_size[i] - a;
				memset(m->src[i] + a, 0, n);
				memset(m->cur[i] + a, 0, n);
			}
		} else if (op < 90) {
			/* a run flushed; sometimes rewritten meanwhile */
			if (wblog_flush_next(x->wl, 0, 1 << 20, NULL,
					     &r) == 1) {
				int j = (int)(r.fid.ino - 1000);

				if (rand() % 3 == 0)
					m_write(x, m, j, step);
				m_flush_run(m, &r);
				wblog_flush_done(x->wl, &r, 0);
			}
			if (rand() % 4 == 0)
				assert_int_equal(wblog_release(x->wl), 0);
		} else if (op < 95) {
			reopen(x);
		} else {
			assert_int_equal(wblog_sync(x->wl, 0), 0);
		}
		m_check(x->wl, m, step);
	}
	free(m);
}

static void test_short_write(void **state)
{
	struct fx *x = *state;
	size_t big = 2 * WB_REC_MAX;
	char *b = malloc(big), *r;

	assert_non_null(b);
	memset(b, 's', big);
	/* records of 257 blocks in an area of 1024: three fit */
	assert_int_equal(wblog_write(x->wl, &F1, 0, b, big, NULL, NULL, NULL),
			 (ssize_t)big);
	assert_int_equal(wblog_write(x->wl, &F1, big, b, big, NULL, NULL,
				     NULL), WB_REC_MAX);
	/* 253 blocks left: a record of 257 does not fit, one of 2 does */
	assert_int_equal(wblog_write(x->wl, &F2, 0, b, WB_REC_MAX, NULL,
				     NULL, NULL), -ENOSPC);
	assert_int_equal(wblog_write(x->wl, &F2, 0, b, 10, NULL, NULL, NULL),
			 10);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 3 * WB_REC_MAX);
	reopen(x);
	r = rd(x->wl, &F1, 0, 3 * WB_REC_MAX + 10);
	expect_run(r, 0, 3 * WB_REC_MAX, 's');
	expect_run(r, 3 * WB_REC_MAX, 3 * WB_REC_MAX + 10, '.');
	free(r);
	r = rd(x->wl, &F2, 0, 20);
	expect_run(r, 0, 10, 's');
	expect_run(r, 10, 20, '.');
	free(r);
	free(b);
}

static void drain(struct wblog *wl)
{
	struct wb_run r;

	while (wblog_flush_next(wl, 0, 1 << 20, NULL, &r) == 1)
		wblog_flush_done(wl, &r, 0);
	assert_int_equal(wblog_release(wl), 0);
}

static void test_space(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char b[WB_BLOCK];
	int i, err;
	char *r;

	/* an empty log takes the capacity asked for */
	wblog_close(x->wl);
	assert_int_equal(wblog_open(x->dfd, SMALL, &x->wl, NULL, 0), 0);
	memset(b, 'q', sizeof(b));
	/* 64 blocks less the cleaner's reserve of 8 (1/8 of a small log):
	 * 28 records of a header and a block; every block live and each of
	 * another file, so the cleaner has nothing to gain */
	for (i = 0;; i++) {
		struct wb_fid fi = { 1, 1000 + (uint64_t)i, 0 };

		err = (int)wblog_write(x->wl, &fi, 0, b,
				       sizeof(b), NULL, NULL, NULL);
		if (err < 0)
			break;
		assert_int_equal(err, WB_BLOCK);
	}
	assert_int_equal(err, -ENOSPC);
	assert_int_equal(i, 28);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.log_used, s.log_capacity - 8 * WB_BLOCK);
	assert_int_equal(s.log_capacity, SMALL);
	/* flushed and released: the space is free again */
	drain(x->wl);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.log_used, 0);
	assert_int_equal(s.dirty_bytes, 0);
	assert_int_equal(s.dirty_files, 0);
	/* around the end of the area: a 3-block record from block 62 pads
	 * the last 2 and starts at 0 */
	for (i = 0; i < 3; i++)		/* from block 56 up to 62 */
		wr(x->wl, &F1, (uint64_t)i * WB_BLOCK, 'x', 10);
	drain(x->wl);
	wr(x->wl, &F2, 0, 'w', 2 * WB_BLOCK);
	/* a log holding data keeps its capacity */
	reopen(x);
	r = rd(x->wl, &F2, 0, 2 * WB_BLOCK);
	expect_run(r, 0, 2 * WB_BLOCK, 'w');
	free(r);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 1);
	assert_int_equal(s.log_used, 5 * WB_BLOCK);	/* pad 2 + 3 */
}

/* The log's bytes (malloc'd), its size in *n. */
static char *log_bytes(struct fx *x, size_t *n)
{
	int fd = openat(x->dfd, WB_LOG_NAME, O_RDONLY);
	struct stat st;
	char *b;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	*n = (size_t)st.st_size;
	b = malloc(*n ? *n : 1);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, *n, 0), (ssize_t)*n);
	close(fd);
	return b;
}

/*
 * What a mount in another mode asks (wblog_dirty): the dirty bytes a log
 * holds, by a replay that changes nothing; none in a log flushed clean,
 * none without a log; a log it cannot read, the reason.
 */
static void test_dirty(void **state)
{
	struct fx *x = *state;
	uint64_t bytes = 1;
	char *a, *b;
	size_t na, nb;

	wr(x->wl, &F1, 0, 'a', 5000);
	wr(x->wl, &F2, 8192, 'b', 10);
	wr(x->wl, &F1, 100, 'c', 10);		/* over dirty bytes */
	a = log_bytes(x, &na);
	assert_int_equal(wblog_dirty(x->dfd, &bytes), 0);
	assert_int_equal(bytes, 5010);
	b = log_bytes(x, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na);
	free(a);
	free(b);
	/* flushed and released: clean, at its size */
	drain(x->wl);
	assert_int_equal(wblog_dirty(x->dfd, &bytes), 0);
	assert_int_equal(bytes, 0);
	/* reopened with capacity 0: it keeps its size, though empty */
	wblog_close(x->wl);
	assert_int_equal(wblog_open(x->dfd, 0, &x->wl, NULL, 0), 0);
	b = log_bytes(x, &nb);
	assert_int_equal(nb, na);
	free(b);
	/* both headers damaged: the reason, not "nothing dirty" */
	corrupt(x, 20);
	corrupt(x, WB_BLOCK + 20);
	assert_int_equal(wblog_dirty(x->dfd, &bytes), -EUCLEAN);
	/* no log */
	assert_int_equal(unlinkat(x->dfd, WB_LOG_NAME, 0), 0);
	bytes = 1;
	assert_int_equal(wblog_dirty(x->dfd, &bytes), 0);
	assert_int_equal(bytes, 0);
}

/*
 * A resize that cannot be (a file size limit here, as a full filesystem
 * would refuse it): the open fails with the real errno and the log is as
 * it was, byte for byte, and opens at its size.
 */
static void test_resize_refused(void **state)
{
	struct fx *x = *state;
	struct rlimit was, lim;
	struct wblog_stats s;
	char *a, *b, err[200];
	struct wblog *wl = NULL;
	size_t na, nb;
	int r;

	/* empty, at SMALL: a resize to CAP is asked */
	wblog_close(x->wl);
	assert_int_equal(wblog_open(x->dfd, SMALL, &x->wl, NULL, 0), 0);
	wblog_close(x->wl);
	x->wl = NULL;
	a = log_bytes(x, &na);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	lim = was;
	lim.rlim_cur = na + 16 * WB_BLOCK;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	r = wblog_open(x->dfd, CAP, &wl, err, sizeof(err));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(r, -EFBIG);
	assert_null(wl);
	assert_non_null(strstr(err, strerror(EFBIG)));
	b = log_bytes(x, &nb);
	assert_int_equal(nb, na);
	assert_memory_equal(a, b, na);
	free(a);
	free(b);
	assert_int_equal(wblog_open(x->dfd, 0, &x->wl, NULL, 0), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.log_capacity, SMALL);
}

/*
 * The cleaner: random writes, whole blocks and odd ranges, over a file of
 * 128 blocks, never flushed, 16 times the log's capacity in all: each is
 * taken (the live data fits, the cleaner moves it forward), the bytes
 * read back as written, also after a replay; a run in flight across the
 * cleaning, given back as written, leaves the moved blocks dirty.
 */
#define C_BLOCKS	128

static int zfill(void *arg, const struct wb_fid *fid, uint64_t off,
		 void *buf, size_t len)
{
	const unsigned char *src = arg;

	(void)fid;
	memcpy(buf, src + off, len);
	return 0;
}

static void c_check(struct wblog *wl, const unsigned char *src,
		    const unsigned char *cur, unsigned step)
{
	static unsigned char b[C_BLOCKS * WB_BLOCK];
	size_t k;

	memcpy(b, src, sizeof(b));
	assert_true(wblog_overlay(wl, &F1, 0, b, sizeof(b)) >= 0);
	for (k = 0; k < sizeof(b); k++)
		if (b[k] != cur[k])
			fail_msg("step %u: byte %zu is %u, not %u", step, k,
				 b[k], cur[k]);
}

static void test_cleaner(void **state)
{
	struct fx *x = *state;
	static unsigned char cur[C_BLOCKS * WB_BLOCK], src[C_BLOCKS * WB_BLOCK];
	unsigned char p[6000];
	uint64_t rs = 99, written = 0;
	struct wblog_stats s;
	struct wb_run r;
	bool held = false;
	unsigned step;

	memset(cur, 0, sizeof(cur));
	memset(src, 0, sizeof(src));
	for (step = 0; written < 16ull * CAP; step++) {
		bool whole = ut_rnd(&rs) % 10 < 6;
		size_t len = whole ? WB_BLOCK : 1 + ut_rnd(&rs) % sizeof(p);
		uint64_t off = whole ?
			       ut_rnd(&rs) % C_BLOCKS * WB_BLOCK :
			       ut_rnd(&rs) % (sizeof(cur) - len);

		memset(p, 1 + step % 251, len);
		assert_int_equal(wblog_write(x->wl, &F1, off, p, len, zfill,
					     src, NULL), (ssize_t)len);
		memcpy(cur + off, p, len);
		written += len;
		wblog_stats(x->wl, &s);
		assert_true(s.log_used <= s.log_capacity);
		if (step == 500) {
			assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20,
							  NULL, &r), 1);
			held = true;
		}
		if (held && step == 4000) {
			memcpy(src + r.off, r.buf, r.len);
			wblog_flush_done(x->wl, &r, 0);
			held = false;
		}
		if (step % 1500 == 1499) {
			c_check(x->wl, src, cur, step);
			if (!held)
				reopen(x);
			c_check(x->wl, src, cur, step);
		}
	}
	assert_false(held);
	c_check(x->wl, src, cur, step);
	wblog_stats(x->wl, &s);
	assert_true(s.cleaned_bytes > 0);
	assert_true(s.dirty_bytes <= sizeof(cur));
	reopen(x);
	c_check(x->wl, src, cur, step);
	/* flushed whole: the source as the mount showed it */
	while (wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r) == 1) {
		memcpy(src + r.off, r.buf, r.len);
		wblog_flush_done(x->wl, &r, 0);
	}
	assert_int_equal(wblog_release(x->wl), 0);
	assert_memory_equal(src, cur, sizeof(cur));
}

/*
 * Blocks that are all live and none beside another: one record each (a
 * header and a block) would fill the 1024-block log at about 448 of them;
 * the cleaner packs them under shared headers, so 700 fit, and read back
 * after a replay of the packed records.
 */
static void test_cleaner_packs(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	char b[WB_BLOCK], *r;
	uint64_t i;

	for (i = 0; i < 700; i++) {
		memset(b, (int)(1 + i % 120), sizeof(b));
		assert_int_equal(wblog_write(x->wl, &F1, i * 2 * WB_BLOCK, b,
					     sizeof(b), NULL, NULL, NULL),
				 WB_BLOCK);
	}
	wblog_stats(x->wl, &s);
	assert_true(s.cleaned_bytes >= 200 * WB_BLOCK);
	assert_int_equal(s.dirty_blocks, 700);
	reopen(x);
	for (i = 0; i < 700; i++) {
		r = rd(x->wl, &F1, i * 2 * WB_BLOCK, 2 * WB_BLOCK);
		expect_run(r, 0, WB_BLOCK, (int)(1 + i % 120));
		expect_run(r, WB_BLOCK, 2 * WB_BLOCK, '.');
		free(r);
	}
}

/*
 * A batch (wblog_flush_next_by): one owner takes several runs of a file,
 * never a block twice while it is in flight; another caller gets none of
 * the file's meanwhile; a block written again while in flight comes in a
 * later run, and the runs given back in order leave nothing dirty.
 */
static void test_flush_batch(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	int a, b;
	struct wb_run r[4];
	char *got;

	wr(x->wl, &F1, 0, 'a', WB_BLOCK);
	wr(x->wl, &F1, 2 * WB_BLOCK, 'b', WB_BLOCK);
	wr(x->wl, &F2, 0, 'c', 10);
	assert_int_equal(wblog_flush_next_by(x->wl, 0, 1 << 20, NULL, &a,
					     &r[0]), 1);
	assert_int_equal(r[0].fid.ino, F1.ino);
	assert_int_equal(r[0].off, 0);
	/* another owner: not F1's (in flight), F2's */
	assert_int_equal(wblog_flush_next_by(x->wl, 0, 1 << 20, NULL, &b,
					     &r[1]), 1);
	assert_int_equal(r[1].fid.ino, F2.ino);
	wblog_flush_done(x->wl, &r[1], 0);
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r[1]), 0);
	/* the owner: F1's other block, then nothing (block 0 in flight) */
	assert_int_equal(wblog_flush_next_by(x->wl, 0, 1 << 20, NULL, &a,
					     &r[1]), 1);
	assert_int_equal(r[1].off, 2 * WB_BLOCK);
	assert_int_equal(wblog_flush_next_by(x->wl, 0, 1 << 20, NULL, &a,
					     &r[2]), 0);
	/* block 0 written again: a newer run of it for the owner */
	wr(x->wl, &F1, 0, 'A', 100);
	assert_int_equal(wblog_flush_next_by(x->wl, 0, 1 << 20, NULL, &a,
					     &r[2]), 1);
	assert_int_equal(r[2].off, 0);
	assert_int_equal(r[2].len, WB_BLOCK);
	assert_memory_equal(r[2].buf, "AAAA", 4);
	assert_int_equal(r[2].buf[100], 'a');
	wblog_flush_done(x->wl, &r[0], 0);
	wblog_flush_done(x->wl, &r[1], 0);
	/* the older run of block 0 given back: the newer still dirty */
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_blocks, 1);
	assert_int_equal(s.dirty_bytes, WB_BLOCK);
	got = rd(x->wl, &F1, 0, 100);
	expect_run(got, 0, 100, 'A');
	free(got);
	wblog_flush_done(x->wl, &r[2], 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 0);
	assert_int_equal(wblog_release(x->wl), 0);
}

/*----------------------------------------------------------------*/
/* damage (include/hotfs/wblog.h: replay, lost blocks) */

/* c repeated n times at off, then the log synced: the next record
 * attests this one durable */
static void wr_sync(struct wblog *wl, const struct wb_fid *f, uint64_t off,
		    int c, size_t n)
{
	wr(wl, f, off, c, n);
	assert_int_equal(wblog_sync(wl, 0), 0);
}

/* [off, off + n) of f over '.' bytes: wblog_overlay's result */
static ssize_t rd_err(struct wblog *wl, const struct wb_fid *f, uint64_t off,
		      size_t n)
{
	char *b = malloc(n);
	ssize_t r;

	assert_non_null(b);
	memset(b, '.', n);
	r = wblog_overlay(wl, f, off, b, n);
	free(b);
	return r;
}

/* The runs flushed until none is left (each given back written): how
 * many, and the lost blocks met on the way (2). */
static unsigned flush_all(struct wblog *wl, unsigned *lost)
{
	struct wb_run r;
	unsigned n = 0;
	int k;

	*lost = 0;
	while ((k = wblog_flush_next(wl, 0, 1 << 20, NULL, &r)) > 0) {
		if (k == 2) {
			(*lost)++;
			continue;
		}
		wblog_flush_done(wl, &r, 0);
		n++;
	}
	return n;
}

/*
 * A damaged data block with synced records after it: damage, not a torn
 * tail.  Every record is replayed, the block's bytes are lost (an error
 * to a reader, never flushed, counted), the rest reads back; written over
 * whole, the block is found again.
 */
static void test_damage_replayed_around(void **state)
{
	struct fx *x = *state;
	struct wblog_replay rp;
	struct wblog_stats s;
	unsigned lost;
	char *b;

	/* blocks: F1's record at 0 (data 1), F2's at 2, F1's at 4 */
	wr_sync(x->wl, &F1, 0, 'a', 100);
	wr_sync(x->wl, &F2, 0, 'b', 100);
	wr_sync(x->wl, &F1, WB_BLOCK, 'c', 100);
	corrupt(x, AREA + 1 * WB_BLOCK + 50);
	reopen(x);
	wblog_replay_report(x->wl, &rp);
	assert_int_equal(rp.damaged_records, 1);
	assert_int_equal(rp.csum_failures, 1);
	assert_int_equal(rp.torn_records, 0);
	assert_int_equal(rp.unreadable_records, 0);
	assert_false(rp.cut);
	assert_int_equal(rp.lost_bytes, 100);
	assert_int_equal(rp.lost_files, 1);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 3);
	assert_int_equal(s.dirty_bytes, 300);
	assert_int_equal(s.lost_bytes, 100);
	assert_int_equal(s.lost_held_bytes, 100);
	assert_int_equal(s.lost_files, 1);
	assert_int_equal(s.csum_failures, 1);
	/* never the file's own bytes for the lost ones */
	assert_int_equal(rd_err(x->wl, &F1, 0, 2 * WB_BLOCK), -EBADMSG);
	b = rd(x->wl, &F1, WB_BLOCK, 200);
	expect_run(b, 0, 100, 'c');
	free(b);
	b = rd(x->wl, &F2, 0, 100);
	expect_run(b, 0, 100, 'b');
	free(b);
	/* the flusher writes the others, never the lost one */
	assert_int_equal(flush_all(x->wl, &lost), 2);
	assert_int_equal(lost, 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_blocks, 1);
	assert_int_equal(s.lost_blocks, 1);
	assert_int_equal(s.oldest_dirty_ns, 0);
	assert_int_equal(wblog_seal(x->wl, &F1), -EIO);
	/* still lost after a replay */
	assert_int_equal(wblog_release(x->wl), 0);
	reopen(x);
	assert_int_equal(rd_err(x->wl, &F1, 0, 100), -EBADMSG);
	/* a write over part of it cannot take the lost bytes in */
	assert_int_equal(wblog_write(x->wl, &F1, 10, "zz", 2, NULL, NULL,
				     NULL), -EIO);
	/* over all of it: whole again */
	wr(x->wl, &F1, 0, 'z', 100);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.lost_files, 0);
	assert_int_equal(s.lost_held_bytes, 0);
	b = rd(x->wl, &F1, 0, 100);
	expect_run(b, 0, 100, 'z');
	free(b);
}

/* A damaged header with a synced record after it: that record is found
 * and replayed; the damaged one's blocks are counted unreadable. */
static void test_damage_header_read_around(void **state)
{
	struct fx *x = *state;
	struct wblog_replay rp;
	char *b;

	wr_sync(x->wl, &F1, 0, 'a', 100);
	wr_sync(x->wl, &F2, 0, 'b', 3 * WB_BLOCK);	/* at 2, data 3-5 */
	wr_sync(x->wl, &F1, WB_BLOCK, 'c', 100);		/* at 6 */
	corrupt(x, AREA + 2 * WB_BLOCK + 9);
	reopen(x);
	wblog_replay_report(x->wl, &rp);
	assert_int_equal(rp.unreadable_records, 1);
	assert_int_equal(rp.unreadable_blocks, 4);
	assert_int_equal(rp.damaged_records, 0);
	assert_int_equal(rp.torn_records, 0);
	assert_false(rp.cut);
	b = rd(x->wl, &F1, 0, 2 * WB_BLOCK);
	expect_run(b, 0, 100, 'a');
	expect_run(b, WB_BLOCK, WB_BLOCK + 100, 'c');
	free(b);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 0);
	/* appending goes on after the found record; all of it replays */
	wr(x->wl, &F2, 0, 'd', 10);
	reopen(x);
	b = rd(x->wl, &F2, 0, 20);
	expect_run(b, 0, 10, 'd');
	expect_run(b, 10, 20, '.');
	free(b);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), WB_BLOCK + 100);
}

/*
 * A file's records, then a later file's that took its inode number (a
 * birth of its own) after the first was removed: the trim record between
 * damaged (its header: read around), or none at all (removed behind the
 * log).  The later file never shows the earlier one's bytes, nor its
 * size; the earlier one's dirty bytes are dropped and counted, not lost.
 */
static void test_reborn_not_laid_over(void **state)
{
	struct fx *x = *state;
	const struct wb_fid old = { 1, 100, 1700000000000000001ull },
			    new = { 1, 100, 1700000000000000002ull },
			    g1 = { 1, 200, WB_BIRTH_GEN | 7 },
			    g2 = { 1, 200, WB_BIRTH_GEN | 8 };
	struct wblog_replay rp;
	struct wblog_stats s;
	struct wb_fid *l = NULL;
	unsigned lost;
	size_t n;
	char *b;
	int i;

	wr_sync(x->wl, &old, 0, 'o', 5000);		/* at 0, data 1-2 */
	assert_int_equal(wblog_trim(x->wl, &old, 0), 0);	/* at 3 */
	wr_sync(x->wl, &new, 0, 'n', 1);		/* at 4 */
	wr_sync(x->wl, &g1, 0, 'g', 3 * WB_BLOCK);	/* no trim of it */
	wr_sync(x->wl, &g2, WB_BLOCK, 'h', 10);
	corrupt(x, AREA + 3 * WB_BLOCK + 9);
	for (i = 0; i < 2; i++) {	/* and again: the log still has them */
		reopen(x);
		b = rd(x->wl, &new, 0, 5000);
		expect_run(b, 0, 1, 'n');
		expect_run(b, 1, 5000, '.');
		free(b);
		assert_int_equal(wblog_dirty_end(x->wl, &new), 1);
		b = rd(x->wl, &g2, 0, 3 * WB_BLOCK);
		expect_run(b, 0, WB_BLOCK, '.');
		expect_run(b, WB_BLOCK, WB_BLOCK + 10, 'h');
		expect_run(b, WB_BLOCK + 10, 3 * WB_BLOCK, '.');
		free(b);
		assert_int_equal(wblog_dirty_end(x->wl, &g2), WB_BLOCK + 10);
		n = wblog_files(x->wl, &l);
		assert_int_equal(n, 2);
		assert_int_equal(l[0].birth, l[0].ino == 100 ? new.birth :
				 g2.birth);
		assert_int_equal(l[1].birth, l[1].ino == 100 ? new.birth :
				 g2.birth);
		free(l);
		wblog_replay_report(x->wl, &rp);
		assert_int_equal(rp.unreadable_records, 1);
		assert_int_equal(rp.reborn_files, 2);
		assert_int_equal(rp.reborn_bytes, 5000 + 3 * WB_BLOCK);
		assert_int_equal(rp.lost_bytes, 0);
		wblog_stats(x->wl, &s);
		assert_int_equal(s.dirty_bytes, 1 + 10);
		assert_int_equal(s.lost_held_bytes, 0);
		assert_int_equal(s.flush_errors, 2);
	}
	/* the flusher writes the later files' bytes alone */
	assert_int_equal(flush_all(x->wl, &lost), 2);
	assert_int_equal(lost, 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.flushed_bytes, 1 + 10);
}

/* Everything dropped, nothing flushed (a source that claims none of
 * it): the map empty, lost bytes and damage forgotten, and a replay
 * finds none of it. */
static void test_discard(void **state)
{
	struct fx *x = *state;
	struct wblog_replay rp;
	struct wblog_stats s;
	struct wb_run r;

	wr_sync(x->wl, &F1, 0, 'a', 100);
	wr_sync(x->wl, &F2, 0, 'b', 5000);
	wr_sync(x->wl, &F1, WB_BLOCK, 'c', 100);
	corrupt(x, AREA + 1 * WB_BLOCK + 50);
	reopen(x);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.lost_files, 1);
	assert_int_equal(wblog_discard(x->wl), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 0);
	assert_int_equal(s.dirty_blocks, 0);
	assert_int_equal(s.dirty_files, 0);
	assert_int_equal(s.dirty_records, 0);
	assert_int_equal(s.lost_files, 0);
	assert_int_equal(s.lost_bytes, 0);
	assert_int_equal(s.log_used, 0);
	assert_int_equal(s.flushed_bytes, 0);
	wblog_replay_report(x->wl, &rp);
	assert_int_equal(rp.damaged_records, 0);
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 0);
	/* writes go on after it; a replay has them alone */
	wr(x->wl, &F2, 10, 'd', 10);
	reopen(x);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 10);
	assert_int_equal(s.replayed_records, 1);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 20);
}

/*
 * Power loss (this test is linked with --wrap=fdatasync,pwrite64:
 * tests/meson.build).  While pl.ino names the log's file, each fdatasync
 * of it takes the file as the device then holds at the least
 * (pl.durable); once pl.armed, the first write of a header slot keeps the
 * state a power loss right after it may leave: the durable bytes and that
 * header block, none of the log's other writes since the last fdatasync
 * (pl.state).
 */
static struct {
	dev_t dev;
	ino_t ino;
	bool armed;
	char *durable, *state;
	size_t durable_n, state_n;
	char dir[64];		/* the state's directory (teardown's too) */
} pl;

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd);
ssize_t __real_pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off);

/* fd is the recorded log's */
static bool pl_log(int fd)
{
	struct stat st;

	return pl.ino && !fstat(fd, &st) && st.st_ino == pl.ino &&
	       st.st_dev == pl.dev;
}

static void pl_snapshot(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	free(pl.durable);
	pl.durable_n = (size_t)st.st_size;
	pl.durable = malloc(pl.durable_n);
	assert_non_null(pl.durable);
	assert_int_equal(pread(fd, pl.durable, pl.durable_n, 0),
			 (ssize_t)pl.durable_n);
}

int __wrap_fdatasync(int fd)
{
	int r = __real_fdatasync(fd);

	if (!r && pl_log(fd))
		pl_snapshot(fd);
	return r;
}

ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	if (pl.armed && !pl.state && off < (off_t)AREA && pl_log(fd)) {
		pl.state_n = pl.durable_n;
		pl.state = malloc(pl.state_n);
		assert_non_null(pl.state);
		memcpy(pl.state, pl.durable, pl.state_n);
		assert_true((size_t)off + n <= pl.state_n);
		memcpy(pl.state + off, buf, n);
	}
	return __real_pwrite64(fd, buf, n, off);
}

/* Record the log of x from now: the file as it is now is durable (the
 * open synced it). */
static void pl_start(struct fx *x)
{
	struct stat st;

	assert_int_equal(fstat(x->wl->fd, &st), 0);
	pl.dev = st.st_dev;
	pl.ino = st.st_ino;
	pl.armed = false;
	pl.state = NULL;
	pl_snapshot(x->wl->fd);
}

/* The state kept at the header's write, opened as a log of its own in
 * dir (made; pl.dir names it until pl_close_state): the log, NULL if no
 * header was written. */
static struct wblog *pl_open_state(char *dir, size_t len, int *dfd)
{
	struct wblog *wl = NULL;
	char err[200];
	int fd;

	pl.ino = 0;
	if (!pl.state)
		return NULL;
	assert_true(ut_tmpdir("wblog-pl", dir, len));
	snprintf(pl.dir, sizeof(pl.dir), "%s", dir);
	*dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(*dfd >= 0);
	fd = openat(*dfd, WB_LOG_NAME, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, pl.state, pl.state_n, 0),
			 (ssize_t)pl.state_n);
	close(fd);
	free(pl.state);
	free(pl.durable);
	pl.state = pl.durable = NULL;
	assert_int_equal(wblog_open(*dfd, CAP, &wl, err, sizeof(err)), 0);
	return wl;
}

/* What a failed power-loss test left (its asserts jump past
 * pl_close_state): the state's directory, the recorder's buffers. */
static void pl_cleanup(void)
{
	if (pl.dir[0])
		ut_rm_tree(pl.dir);
	pl.dir[0] = 0;
	pl.ino = 0;
	pl.armed = false;
	free(pl.state);
	free(pl.durable);
	pl.state = pl.durable = NULL;
}

static void pl_close_state(struct wblog *wl, char *dir, int dfd)
{
	wblog_close(wl);
	close(dfd);
	ut_rm_tree(dir);
	pl.dir[0] = 0;
}

/* A header was written, and in the state kept then, block 0 of F1 is
 * all older or all newer (the synced write, or the later one). */
static void pl_expect_block0(int older, int newer)
{
	struct wblog *wl;
	char dir[64], *b;
	int dfd;

	wl = pl_open_state(dir, sizeof(dir), &dfd);
	assert_non_null(wl);
	b = rd(wl, &F1, 0, WB_BLOCK);
	expect_run(b, 0, WB_BLOCK, b[0] == newer ? newer : older);
	free(b);
	pl_close_state(wl, dir, dfd);
}

/*
 * The tail passes a record only once whatever made it dead is durable:
 * a record whose block a later, not yet synced write holds anew (that
 * record holds the block's bytes of both writes) is passed by a header
 * that a power loss may keep without the later record.  A synced write
 * is then never lost: block 0 reads the synced write or the later one.
 */
static void test_tail_passes_durable_only(void **state)
{
	struct fx *x = *state;

	pl_start(x);
	wr_sync(x->wl, &F1, 0, 'a', WB_BLOCK);	/* acknowledged */
	wr(x->wl, &F1, 0, 'b', WB_BLOCK);	/* the first is dead */
	pl.armed = true;
	assert_int_equal(wblog_release(x->wl), 0);
	pl_expect_block0('a', 'b');	/* the release wrote a header */
}

/* The same through the cleaner: a batch of synced records with no live
 * block left (each written again since, block 0 by a record not synced)
 * is passed only once the records that hold their blocks now are
 * durable. */
static void test_cleaner_tail_durable_only(void **state)
{
	struct fx *x = *state;
	unsigned i;

	/* an empty log takes the small capacity: 56 blocks for writes */
	wblog_close(x->wl);
	assert_int_equal(wblog_open(x->dfd, SMALL, &x->wl, NULL, 0), 0);
	pl_start(x);
	wr_sync(x->wl, &F1, 0, 'a', WB_BLOCK);	/* acknowledged */
	for (i = 1; i <= 8; i++)
		wr(x->wl, &F1, (uint64_t)i * WB_BLOCK, 'c', WB_BLOCK);
	assert_int_equal(wblog_sync(x->wl, 0), 0);
	wr(x->wl, &F1, 0, 'b', WB_BLOCK);	/* the first is dead */
	pl.armed = true;
	/* blocks 1-8 written again until the log is full: the cleaner's
	 * batch from the tail (block 0's first record and those of blocks
	 * 1-8) has nothing live, and the tail passes it */
	for (i = 0; i < 200 && !pl.state; i++)
		wr(x->wl, &F1, (uint64_t)(i % 8 + 1) * WB_BLOCK, 'd',
		   WB_BLOCK);
	pl_expect_block0('a', 'b');	/* the cleaner moved the tail */
}

/*
 * An open after a kill replays records the kill left in the page cache
 * alone, and its header says they are synced: they must be durable
 * before that header is.  Else a power loss right after the header's
 * write leaves them missing where the header vouches for them, and the
 * next replay takes a torn tail, never acknowledged, for damage to
 * acknowledged records: the writes after it reported lost.
 */
static void test_open_header_after_replayed(void **state)
{
	struct fx *x = *state;
	struct wblog_replay rp;
	struct wblog *wl;
	char dir[64], *b;
	int dfd;

	pl_start(x);
	wr_sync(x->wl, &F1, 0, 'a', WB_BLOCK);		/* acknowledged */
	wr(x->wl, &F1, WB_BLOCK, 'b', WB_BLOCK);	/* in the page cache */
	pl.armed = true;
	reopen(x);			/* a kill, and the mount again */
	wl = pl_open_state(dir, sizeof(dir), &dfd);
	assert_non_null(wl);		/* the open wrote its header */
	wblog_replay_report(wl, &rp);
	assert_false(rp.cut);
	assert_int_equal(rp.damaged_records, 0);
	assert_int_equal(rp.lost_bytes, 0);
	b = rd(wl, &F1, 0, WB_BLOCK);
	expect_run(b, 0, WB_BLOCK, 'a');
	free(b);
	pl_close_state(wl, dir, dfd);
}

/*
 * Torn tails: a bad record past the last sync any record attests is
 * dropped with all after it (a power loss within a group commit: the
 * records of that commit, whole or not), counted, nothing lost.
 */
static void test_torn_past_last_sync(void **state)
{
	struct fx *x = *state;
	struct wblog_replay rp;
	struct wblog_stats s;

	wr_sync(x->wl, &F1, 0, 'a', 100);
	wr(x->wl, &F1, WB_BLOCK, 'b', 100);		/* not synced */
	wr(x->wl, &F2, 0, 'c', 100);			/* attests 1 only */
	corrupt(x, AREA + 3 * WB_BLOCK + 50);		/* record 2's data */
	reopen(x);
	wblog_replay_report(x->wl, &rp);
	assert_int_equal(rp.torn_records, 2);
	assert_int_equal(rp.damaged_records, 0);
	assert_int_equal(rp.lost_bytes, 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 1);
	assert_int_equal(s.dirty_bytes, 100);
	assert_int_equal(s.lost_files, 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 0);
}

/* What the last open replayed was synced: a damaged header there with
 * nothing found after it is damage, cut short, counted. */
static void test_damage_cut(void **state)
{
	struct fx *x = *state;
	struct wblog_replay rp;

	wr(x->wl, &F1, 0, 'a', 100);
	wr(x->wl, &F2, 0, 'b', 100);
	wr(x->wl, &F1, WB_BLOCK, 'c', 100);
	reopen(x);		/* replayed, synced, a new epoch */
	corrupt(x, AREA + 4 * WB_BLOCK + 9);
	reopen(x);
	wblog_replay_report(x->wl, &rp);
	assert_true(rp.cut);
	assert_int_equal(rp.cut_seq, 3);
	assert_true(rp.cut_synced >= 3);
	assert_int_equal(rp.torn_records, 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 100);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 100);
}

/*
 * Every read of a dirty block's copy checks it: damaged after it was
 * written (the replay found it whole), a reader gets -EBADMSG for its
 * bytes and the rest, the flusher says it (2) and writes around it, all
 * counted once; a replay finds it damaged again.
 */
static void test_checksum_on_read(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	struct wb_run r;
	unsigned lost;
	char *b;

	wr(x->wl, &F1, 0, 'a', 3 * WB_BLOCK);		/* data at 1-3 */
	wr(x->wl, &F2, 0, 'b', 10);
	corrupt(x, AREA + 2 * WB_BLOCK + 200);		/* F1's block 1 */
	/* the flusher first: F1's run stops at the damaged block */
	assert_int_equal(wblog_flush_next(x->wl, 0, 1 << 20, NULL, &r), 2);
	assert_int_equal(r.fid.ino, F1.ino);
	assert_int_equal(r.off, WB_BLOCK);
	assert_int_equal(r.len, WB_BLOCK);
	assert_int_equal(flush_all(x->wl, &lost), 3);	/* F1 0, 2; F2 */
	assert_int_equal(lost, 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.csum_failures, 1);
	assert_int_equal(s.lost_bytes, WB_BLOCK);
	assert_int_equal(s.lost_files, 1);
	assert_int_equal(s.dirty_blocks, 1);
	/* a reader: the error for the lost bytes, the rest as written */
	assert_int_equal(rd_err(x->wl, &F1, 0, 3 * WB_BLOCK), -EBADMSG);
	assert_int_equal(rd_err(x->wl, &F1, WB_BLOCK + 100, 1), -EBADMSG);
	assert_int_equal(rd_err(x->wl, &F1, 2 * WB_BLOCK, WB_BLOCK), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.csum_failures, 1);		/* once */
	assert_int_equal(s.lost_bytes, WB_BLOCK);
	/* the replay: damaged still, counted there */
	reopen(x);
	assert_int_equal(rd_err(x->wl, &F1, WB_BLOCK, 1), -EBADMSG);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.lost_files, 1);
	assert_int_equal(s.csum_failures, 1);
	/* a damaged copy found by a reader first (the records replayed
	 * again, none released: this one at 6) */
	wr(x->wl, &F2, 0, 'c', WB_BLOCK);
	corrupt(x, AREA + 7 * WB_BLOCK + 7);		/* its data */
	b = rd(x->wl, &F2, WB_BLOCK, 10);		/* not its bytes */
	expect_run(b, 0, 10, '.');
	free(b);
	assert_int_equal(rd_err(x->wl, &F2, 0, 10), -EBADMSG);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.lost_files, 2);
	assert_int_equal(s.csum_failures, 2);
}

/* The cleaner carries a lost block forward lost (no copy): the damaged
 * record released, a replay finds the block lost from the copy. */
static void test_lost_carried_by_cleaner(void **state)
{
	struct fx *x = *state;
	struct wblog_replay rp;
	struct wblog_stats s;
	char b[WB_BLOCK];
	uint64_t i;

	wr(x->wl, &F1, 0, 'a', 100);
	corrupt(x, AREA + 1 * WB_BLOCK + 50);
	assert_int_equal(rd_err(x->wl, &F1, 0, 100), -EBADMSG);
	for (i = 0; i < 700; i++) {
		memset(b, (int)(1 + i % 120), sizeof(b));
		assert_int_equal(wblog_write(x->wl, &F2, i * 2 * WB_BLOCK, b,
					     sizeof(b), NULL, NULL, NULL),
				 WB_BLOCK);
	}
	wblog_stats(x->wl, &s);
	assert_true(s.cleaned_bytes > 0);
	assert_int_equal(s.lost_files, 1);
	reopen(x);
	wblog_replay_report(x->wl, &rp);
	assert_int_equal(rp.damaged_records, 0);	/* released */
	assert_int_equal(rp.lost_files, 1);
	assert_int_equal(rp.lost_bytes, 100);
	assert_int_equal(rd_err(x->wl, &F1, 0, 100), -EBADMSG);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 100);
}

/*
 * A log of format 3 (one checksum over a record's header and data, no
 * salt) is replayed, then written in format 4 after it: both replay.
 */
static void test_format3_replayed(void **state)
{
	struct fx *x = *state;
	struct wl_super sp = { .version = 3, .block = WB_BLOCK,
			       .nblocks = CAP / WB_BLOCK, .gen = 1,
			       .tail_pos = 0, .tail_seq = 1, .epoch = 1,
			       .epoch_seq = 1 };
	struct wl_rec_v3 h = { .seq = 1, .epoch = 1, .type = WR_DATA,
			       .nblk = 1, .dev = F1.dev, .ino = F1.ino,
			       .off = 10, .len = 100 };
	static char img[AREA + 2 * WB_BLOCK];
	char *b;
	int fd;

	wblog_close(x->wl);
	x->wl = NULL;
	memset(img, 0, sizeof(img));
	memcpy(sp.magic, WL_MAGIC, 8);
	sp.csum = wl_super_csum(&sp);
	memcpy(img + WB_BLOCK, &sp, sizeof(sp));	/* slot of gen 1 */
	memcpy(h.magic, WR_MAGIC_V3, 8);
	memset(img + AREA + WB_BLOCK + 10, 'o', 100);
	h.csum = wl_rec_csum_v3(&h, img + AREA + WB_BLOCK, WB_BLOCK);
	memcpy(img + AREA, &h, sizeof(h));
	fd = openat(x->dfd, WB_LOG_NAME, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
	assert_int_equal(ftruncate(fd, AREA + CAP), 0);	/* its size */
	close(fd);
	reopen(x);
	b = rd(x->wl, &F1, 0, 200);
	expect_run(b, 0, 10, '.');
	expect_run(b, 10, 110, 'o');
	expect_run(b, 110, 200, '.');
	free(b);
	wr(x->wl, &F2, 0, 'n', 10);
	reopen(x);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 110);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 10);
}

int main(int argc, char **argv)
{
	if (argc > 1)		/* another sequence of the model test */
		seed = (unsigned)atoi(argv[1]);
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_write_reads_back),
		T(test_newest_wins),
		T(test_partial_blocks),
		T(test_group_commit),
		T(test_replay),
		T(test_torn_tail),
		T(test_old_life_not_a_successor),
		T(test_garbage_after_head),
		T(test_headers_damaged),
		T(test_trim),
		T(test_birth_and_drop),
		T(test_old_format_refused),
		T(test_flush_oldest_coalesced),
		T(test_one_run_a_file),
		T(test_model),
		T(test_short_write),
		T(test_space),
		T(test_dirty),
		T(test_resize_refused),
		T(test_cleaner),
		T(test_cleaner_packs),
		T(test_flush_batch),
		T(test_damage_replayed_around),
		T(test_damage_header_read_around),
		T(test_reborn_not_laid_over),
		T(test_discard),
		T(test_torn_past_last_sync),
		T(test_tail_passes_durable_only),
		T(test_cleaner_tail_durable_only),
		T(test_open_header_after_replayed),
		T(test_damage_cut),
		T(test_checksum_on_read),
		T(test_lost_carried_by_cleaner),
		T(test_format3_replayed),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
