// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the writeback flusher (flush.c) over real files: a
 * round writes the log's dirty runs into the source files and frees the
 * log; young data waits for its delay; a file gone from the source has
 * its dirty data dropped; a failing write keeps it dirty for the next
 * round; the thread flushes when kicked, and its stop drains the log;
 * data replayed after a reopen is flushed like any other; a run's records
 * are durable in the log before the source is written; a writer waits for
 * room while data reaches the source, however slowly.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hotfs/flush.h"
#include "unit_util.h"

#define CAP	(1024 * WB_BLOCK)

struct fx {
	char dir[64];
	int dfd;		/* the cachedir (wlog) */
	int sfd;		/* the source: a file "f<ino>" per identity */
	struct wblog *wl;
	int fail;		/* -errno the next opens answer (atomic: the
				 * thread reads it) */
	unsigned begins, ends, lost, opens;
	unsigned fills;		/* ends given the run's bytes */
	uint64_t syncs_at_begin;	/* the log's fdatasyncs at the last begin */
	int gated;		/* opens wait for a permit of gate (atomic) */
	sem_t gate;
};

static int fx_open(void *arg, const struct wb_fid *fid)
{
	struct fx *x = arg;
	int fail = __atomic_load_n(&x->fail, __ATOMIC_RELAXED);
	char name[32];
	int fd;

	if (fail)
		return fail;
	if (__atomic_load_n(&x->gated, __ATOMIC_RELAXED))
		sem_wait(&x->gate);
	snprintf(name, sizeof(name), "f%llu", (unsigned long long)fid->ino);
	__atomic_add_fetch(&x->opens, 1, __ATOMIC_RELAXED);
	fd = openat(x->sfd, name, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void *fx_begin(void *arg, const struct wb_fid *fid, uint64_t off,
		      uint64_t len)
{
	(void)fid;
	(void)off;
	(void)len;
	struct fx *x = arg;
	struct wblog_stats s;

	wblog_stats(x->wl, &s);
	x->syncs_at_begin = s.syncs;
	x->begins++;
	return &x->begins;
}

static void fx_end(void *arg, void *cookie, const struct wb_fid *fid,
		   uint64_t off, uint64_t len, const void *data, int err)
{
	(void)fid;
	(void)off;
	(void)len;
	/* the bytes, only once durable (a run's write ends without them,
	 * then a change that changes nothing gives them, after the sync) */
	assert_true(!err || data == NULL);
	/* what begin gave */
	assert_ptr_equal(cookie, &((struct fx *)arg)->begins);
	((struct fx *)arg)->ends++;
	if (data)
		((struct fx *)arg)->fills++;
}

static void fx_lost(void *arg, const struct wb_fid *fid, int err)
{
	(void)fid;
	(void)err;
	((struct fx *)arg)->lost++;
}

static const struct wb_flush_ops ops = {
	.open = fx_open, .begin = fx_begin, .end = fx_end, .lost = fx_lost,
};

static const struct wb_fid F1 = { 1, 1, 0 }, F2 = { 1, 2, 0 };

/* source file f<ino> with n bytes of c */
static void src_file(struct fx *x, uint64_t ino, int c, size_t n)
{
	char name[32], *b = malloc(n + 1);
	int fd;

	assert_non_null(b);
	memset(b, c, n);
	snprintf(name, sizeof(name), "f%llu", (unsigned long long)ino);
	fd = openat(x->sfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
	free(b);
}

/* the source file's bytes, its size in *n */
static char *src_read(struct fx *x, uint64_t ino, size_t *n)
{
	char name[32], *b = calloc(1, 1 << 20);
	ssize_t got;
	int fd;

	assert_non_null(b);
	snprintf(name, sizeof(name), "f%llu", (unsigned long long)ino);
	fd = openat(x->sfd, name, O_RDONLY);
	assert_true(fd >= 0);
	got = read(fd, b, 1 << 20);
	assert_true(got >= 0);
	close(fd);
	*n = (size_t)got;
	return b;
}

static void wr(struct fx *x, const struct wb_fid *f, uint64_t off, int c,
	       size_t n)
{
	char *b = malloc(n);

	assert_non_null(b);
	memset(b, c, n);
	assert_int_equal(wblog_write(x->wl, f, off, b, n, NULL, NULL, NULL),
			 (ssize_t)n);
	free(b);
}

static void expect_run(const char *b, size_t from, size_t to, int c)
{
	size_t i;

	for (i = from; i < to; i++)
		if (b[i] != c)
			fail_msg("byte %zu is 0x%02x, not '%c'", i,
				 (unsigned char)b[i], c);
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x || !ut_tmpdir("flush", x->dir, sizeof(x->dir)))
		return -1;
	x->dfd = open(x->dir, O_RDONLY | O_DIRECTORY);
	if (x->dfd < 0 || mkdirat(x->dfd, "src", 0700))
		return -1;
	x->sfd = openat(x->dfd, "src", O_RDONLY | O_DIRECTORY);
	if (x->sfd < 0 || wblog_open(x->dfd, CAP, &x->wl, NULL, 0))
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	wblog_close(x->wl);
	close(x->sfd);
	close(x->dfd);
	ut_rm_tree(x->dir);
	free(x);
	return 0;
}

static void test_round_writes_back(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	uint64_t bytes;
	size_t n;
	char *b;

	src_file(x, 1, 'o', 10000);
	src_file(x, 2, 'o', 100);
	wr(x, &F1, 4096, 'a', 8192);		/* blocks 1, 2 */
	wr(x, &F1, 100, 'b', 10);
	wr(x, &F2, 200, 'c', 50);		/* grows it, a hole */
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, &bytes), 0);
	assert_int_equal(bytes, 8192 + 10 + 50);
	/* each run: its write, then its bytes given once durable */
	assert_int_equal(x->begins, 6);
	assert_int_equal(x->ends, 6);
	assert_int_equal(x->fills, 3);
	b = src_read(x, 1, &n);
	assert_int_equal(n, 4096 + 8192);
	expect_run(b, 0, 100, 'o');
	expect_run(b, 100, 110, 'b');
	expect_run(b, 110, 4096, 'o');
	expect_run(b, 4096, 4096 + 8192, 'a');
	free(b);
	b = src_read(x, 2, &n);
	assert_int_equal(n, 250);
	expect_run(b, 0, 100, 'o');
	expect_run(b, 100, 200, 0);
	expect_run(b, 200, 250, 'c');
	free(b);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 0);
	assert_int_equal(s.log_used, 0);
	assert_int_equal(s.flushed_bytes, 8192 + 10 + 50);
	/* nothing comes back at a reopen: the tail moved */
	wblog_close(x->wl);
	assert_int_equal(wblog_open(x->dfd, CAP, &x->wl, NULL, 0), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.replayed_records, 0);
	assert_int_equal(s.dirty_bytes, 0);
}

static void test_delay_holds_young_data(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	uint64_t bytes;
	size_t n;
	char *b;

	src_file(x, 1, 'o', 100);
	wr(x, &F1, 0, 'a', 10);
	assert_int_equal(wbf_round(x->wl, &ops, x, 3600LL * 1000000000,
				   &bytes), 0);
	assert_int_equal(bytes, 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 10);
	b = src_read(x, 1, &n);
	expect_run(b, 0, 100, 'o');
	free(b);
}

static void test_gone_and_failing(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	size_t n;
	char *b;

	/* F2 has no source file: removed behind the mount */
	src_file(x, 1, 'o', 100);
	wr(x, &F2, 0, 'z', 10);
	wr(x, &F1, 0, 'a', 10);
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, NULL), 0);
	assert_int_equal(x->lost, 1);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.flush_errors, 1);
	assert_int_equal(s.dirty_bytes, 0);
	/* a failing source: kept dirty, the round says why */
	wr(x, &F1, 50, 'b', 10);
	x->fail = -EIO;
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, NULL), -EIO);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.flush_errors, 2);
	assert_int_equal(s.dirty_bytes, 10);
	x->fail = 0;
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, NULL), 0);
	b = src_read(x, 1, &n);
	expect_run(b, 0, 10, 'a');
	expect_run(b, 50, 60, 'b');
	free(b);
}

static void test_flush_one_file(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	size_t n;
	char *b;

	src_file(x, 1, 'o', 100);
	src_file(x, 2, 'o', 100);
	wr(x, &F2, 0, 'z', 10);			/* older, another file */
	wr(x, &F1, 0, 'a', 10);
	wr(x, &F1, 4096, 'b', 20);		/* another run */
	assert_int_equal(wbf_flush_file(x->wl, &ops, x, &F1), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 10);
	b = src_read(x, 1, &n);
	assert_int_equal(n, 4116);
	expect_run(b, 0, 10, 'a');
	expect_run(b, 10, 100, 'o');
	expect_run(b, 100, 4096, 0);
	expect_run(b, 4096, 4116, 'b');
	free(b);
	b = src_read(x, 2, &n);
	expect_run(b, 0, 100, 'o');
	free(b);
	/* sealed: a replay does not make its flushed records dirty again
	 * (they would go over what the source gets next) */
	wblog_close(x->wl);
	assert_int_equal(wblog_open(x->dfd, CAP, &x->wl, NULL, 0), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F1), 0);
	assert_int_equal(wblog_dirty_end(x->wl, &F2), 10);
	/* the next round releases its space with the rest */
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, NULL), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.log_used, 0);
}

/* Wait up to 10 s for the log to hold no dirty byte. */
static bool wait_clean(struct wblog *wl)
{
	struct timespec ts = { 0, 10 * 1000000 };
	struct wblog_stats s;
	int i;

	for (i = 0; i < 1000; i++) {
		wblog_stats(wl, &s);
		if (!s.dirty_bytes)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

static void test_thread(void **state)
{
	struct fx *x = *state;
	struct wb_flusher *f;
	struct wblog_stats s;
	size_t n;
	char *b;

	src_file(x, 1, 'o', 100);
	/* no delay: the thread's next round flushes it */
	assert_int_equal(wbf_start(x->wl, &ops, x, 0, 1000000, 50, 45, &f),
			 0);
	wr(x, &F1, 0, 'a', 10);
	assert_true(wait_clean(x->wl));
	wbf_stop(f);
	b = src_read(x, 1, &n);
	expect_run(b, 0, 10, 'a');
	free(b);
	/* a long delay holds it; the drain after the stop writes it anyway */
	assert_int_equal(wbf_start(x->wl, &ops, x, 3600LL * 1000000000,
				   1000000, 50, 45, &f), 0);
	wr(x, &F1, 20, 'c', 10);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 10);
	wbf_stop(f);
	assert_int_equal(wbf_drain(x->wl, &ops, x, 3), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 0);
	assert_int_equal(s.log_used, 0);
	b = src_read(x, 1, &n);
	expect_run(b, 20, 30, 'c');
	free(b);
	/* a drain that cannot write: the data stays for the next mount */
	assert_int_equal(wbf_start(x->wl, &ops, x, 3600LL * 1000000000,
				   1000000, 50, 45, &f), 0);
	wr(x, &F1, 40, 'd', 10);
	x->fail = -EIO;
	wbf_stop(f);
	assert_int_equal(wbf_drain(x->wl, &ops, x, 2), -EIO);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 10);
}

static void test_replayed_data_flushed(void **state)
{
	struct fx *x = *state;
	size_t n;
	char *b;

	src_file(x, 1, 'o', 8192);
	wr(x, &F1, 1000, 'a', 5000);
	wr(x, &F1, 2000, 'b', 10);
	/* as after a kill: never synced, never flushed */
	wblog_close(x->wl);
	assert_int_equal(wblog_open(x->dfd, CAP, &x->wl, NULL, 0), 0);
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, NULL), 0);
	b = src_read(x, 1, &n);
	assert_int_equal(n, 8192);
	expect_run(b, 0, 1000, 'o');
	expect_run(b, 1000, 2000, 'a');
	expect_run(b, 2000, 2010, 'b');
	expect_run(b, 2010, 6000, 'a');
	expect_run(b, 6000, 8192, 'o');
	free(b);
}

/* The pacing decision (wbf_pace) at each level of the log's use. */
static void test_pace(void **state)
{
	const int64_t D = 5 * 1000000000LL;	/* writeback_delay */
	struct wbf_pace p = {
		.capacity = 1000, .high = 50, .low = 45, .delay_ns = D,
		.idle_ns = 0,
	};

	(void)state;
	/* below low, the source busy: only data past delay + the cap */
	p.used = 100;
	assert_true(wbf_pace(&p) == D + WBF_BUSY_MAX_NS);
	assert_false(p.urgent);
	/* below low, idle for long enough: data past its delay */
	p.idle_ns = WBF_IDLE_NS;
	assert_true(wbf_pace(&p) == D);
	p.idle_ns = WBF_IDLE_NS - 1;
	assert_true(wbf_pace(&p) == D + WBF_BUSY_MAX_NS);
	/* between low and high: data past its delay, busy or not */
	p.used = 450;
	assert_true(wbf_pace(&p) == D);
	p.used = 499;
	assert_true(wbf_pace(&p) == D);
	assert_false(p.urgent);
	/* at high: everything, and so on down to low (hysteresis) */
	p.used = 500;
	assert_true(wbf_pace(&p) == 0);
	assert_true(p.urgent);
	p.used = 470;
	assert_true(wbf_pace(&p) == 0);
	p.used = 450;
	assert_true(wbf_pace(&p) == 0);
	assert_true(p.urgent);
	p.used = 449;
	assert_true(wbf_pace(&p) == D + WBF_BUSY_MAX_NS);
	assert_false(p.urgent);
	/* back up, still below high: not urgent again */
	p.used = 480;
	assert_true(wbf_pace(&p) == D);
	/* a writer waiting for room: everything, whatever the use */
	p.used = 0;
	p.want_room = true;
	assert_true(wbf_pace(&p) == 0);
	assert_false(p.urgent);
	p.want_room = false;
	/* no delay, idle: everything */
	p.delay_ns = 0;
	p.idle_ns = INT64_MAX;
	assert_true(wbf_pace(&p) == 0);
	/* a delay near the limit does not overflow */
	p.delay_ns = INT64_MAX - 1;
	p.idle_ns = 0;
	assert_true(wbf_pace(&p) == INT64_MAX);
	/* high = low: one threshold; the percentages of a huge log */
	p = (struct wbf_pace){ .capacity = UINT64_MAX / 2, .high = 99,
			       .low = 99, .delay_ns = D, .idle_ns = 0 };
	p.used = p.capacity / 100 * 99 + p.capacity % 100 - 1;
	assert_true(wbf_pace(&p) == D + WBF_BUSY_MAX_NS);
	p.used = p.capacity;
	assert_true(wbf_pace(&p) == 0);
}

/* The flush rate over the last seconds (struct wbf_rate). */
static void test_rate(void **state)
{
	const int64_t S = 1000000000LL;
	struct wbf_rate r = { .n = 0 };

	(void)state;
	assert_true(wbf_rate_get(&r, 5 * S, 100) == 0.0);
	wbf_rate_add(&r, 1 * S, 0);
	/* samples closer than a second apart: one kept */
	wbf_rate_add(&r, 1 * S + S / 2, 999);
	assert_int_equal(r.n, 1);
	/* 1000 bytes/s for 4 s */
	wbf_rate_add(&r, 2 * S, 1000);
	wbf_rate_add(&r, 3 * S, 2000);
	wbf_rate_add(&r, 5 * S, 4000);
	assert_true(wbf_rate_get(&r, 5 * S, 4000) == 1000.0);
	/* nothing more flushed: the rate falls, and is 0 once the window
	 * holds no sample older than the last flush */
	assert_true(wbf_rate_get(&r, 9 * S, 4000) == 500.0);
	for (int64_t t = 6; t <= 20; t++)
		wbf_rate_add(&r, t * S, 4000);
	assert_int_equal(r.n, WBF_RATE_SECS + 1);
	assert_true(wbf_rate_get(&r, 20 * S, 4000) == 0.0);
	/* a burst: 10 MB in the last second of a 10 s window */
	wbf_rate_add(&r, 21 * S, 4000 + 10000000);
	assert_true(wbf_rate_get(&r, 21 * S, 4000 + 10000000) == 1000000.0);
	/* samples all older than the window (one long round): the rate
	 * since the newest; nothing flushed since: none */
	assert_true(wbf_rate_get(&r, 61 * S, 4000 + 10000000) == 0.0);
	assert_true(wbf_rate_get(&r, 61 * S, 4000 + 10000000 + 400000000) ==
		    10000000.0);
}

/* A writer that finds the log full waits for the thread, which flushes
 * flat out though the delay would hold the data. */
static void test_wait_room(void **state)
{
	struct fx *x = *state;
	struct wb_flusher *f;
	struct wblog_stats s;
	char *b = malloc(WB_REC_MAX);
	uint64_t off = 0, gen;
	unsigned waits = 0, tries;
	int r = 0;
	size_t n;
	char *got;

	assert_non_null(b);
	src_file(x, 1, 'o', 0);
	assert_int_equal(wbf_start(x->wl, &ops, x, 3600LL * 1000000000,
				   3600LL * 1000000000, 99, 99, &f), 0);
	/* three times the log, through it */
	while (off < 3 * (uint64_t)CAP) {
		ssize_t w;

		memset(b, 'a' + (int)(off / WB_REC_MAX) % 26, WB_REC_MAX);
		gen = wbf_room_gen(f);
		w = wblog_write(x->wl, &F1, off, b, WB_REC_MAX, NULL, NULL,
				NULL);
		if (w == -ENOSPC) {
			assert_int_equal(wbf_wait_room(f, gen,
						       60 * 1000000000LL), 0);
			waits++;
			continue;
		}
		assert_true(w > 0);
		off += (uint64_t)w;
	}
	assert_true(waits > 0);
	assert_true(wbf_flush_rate(f) > 0);
	/* the source failing: a waiting writer is told so, not kept */
	__atomic_store_n(&x->fail, -EIO, __ATOMIC_RELAXED);
	/* (a round that began before the failure may still make room) */
	for (tries = 0; tries < 1000; tries++) {
		ssize_t w;

		gen = wbf_room_gen(f);
		w = wblog_write(x->wl, &F1, off, b, WB_REC_MAX, NULL, NULL,
				NULL);
		if (w != -ENOSPC) {
			assert_true(w > 0);
			off += (uint64_t)w;
			continue;
		}
		r = wbf_wait_room(f, gen, 60 * 1000000000LL);
		if (r)
			break;
	}
	assert_int_equal(r, -ENOSPC);
	wblog_stats(x->wl, &s);
	assert_true(s.flush_errors > 0);
	__atomic_store_n(&x->fail, 0, __ATOMIC_RELAXED);
	wbf_stop(f);
	assert_int_equal(wbf_drain(x->wl, &ops, x, 3), 0);
	got = src_read(x, 1, &n);
	assert_int_equal(n, 1 << 20);		/* src_read reads 1 MiB */
	expect_run(got, 0, WB_REC_MAX, 'a');
	free(got);
	free(b);
}

/* Blocks of F1 one a record (every other block: no two runs join) from
 * *blk on, until the log has no room: the last try's result, the room's
 * generation taken before it in *gen. */
static int fill_log(struct fx *x, struct wb_flusher *f, uint64_t *blk,
		    uint64_t *gen)
{
	char b[WB_BLOCK];
	ssize_t w;

	memset(b, 'a' + (int)(*blk % 26), sizeof(b));
	for (;; (*blk)++) {
		*gen = f ? wbf_room_gen(f) : 0;
		w = wblog_write(x->wl, &F1, *blk * 2 * WB_BLOCK, b, WB_BLOCK,
				NULL, NULL, NULL);
		if (w != WB_BLOCK)
			return (int)w;
	}
}

/*
 * A writer waits for room while data reaches the source, however slowly:
 * a round longer than its patience does not fail it, as long as a batch
 * of the round gets through meanwhile; nothing getting through for its
 * patience, it gives up (ENOSPC).  The source is a gate here: each
 * batch's open waits for a permit.
 */
static void test_wait_writer(void **state)
{
	const int64_t patience = 200 * 1000000LL;
	struct fx *x = *state;
	struct wbf_waiter w = { 0 };
	struct wblog_stats s;
	struct wb_flusher *f;
	uint64_t blk = 0, gen, was;
	int i;

	src_file(x, 1, 'o', 0);
	assert_int_equal(fill_log(x, NULL, &blk, &gen), -ENOSPC);
	assert_int_equal(sem_init(&x->gate, 0, 0), 0);
	__atomic_store_n(&x->gated, 1, __ATOMIC_RELAXED);
	assert_int_equal(wbf_start(x->wl, &ops, x, 3600LL * 1000000000,
				   3600LL * 1000000000, 99, 99, &f), 0);
	/* nothing gets through: the wait times out (try again), then the
	 * patience has run out */
	assert_int_equal(fill_log(x, f, &blk, &gen), -ENOSPC);
	assert_int_equal(wbf_wait_writer(f, gen, &w, patience), 0);
	assert_int_equal(fill_log(x, f, &blk, &gen), -ENOSPC);
	assert_int_equal(wbf_wait_writer(f, gen, &w, patience), -ENOSPC);
	/* another writer, past its patience too, but a batch got through
	 * meanwhile (its round still going): it waits on */
	memset(&w, 0, sizeof(w));
	assert_int_equal(fill_log(x, f, &blk, &gen), -ENOSPC);
	assert_int_equal(wbf_wait_writer(f, gen, &w, patience), 0);
	was = wblog_flushed(x->wl);
	sem_post(&x->gate);
	for (i = 0; i < 10000 && wblog_flushed(x->wl) == was; i++)
		usleep(1000);
	assert_true(wblog_flushed(x->wl) > was);
	/* (the batch's blocks are released by the writer's cleaner) */
	assert_int_equal(fill_log(x, f, &blk, &gen), -ENOSPC);
	assert_int_equal(wbf_wait_writer(f, gen, &w, patience), 0);
	/* the gate open: everything reaches the source */
	__atomic_store_n(&x->gated, 0, __ATOMIC_RELAXED);
	for (i = 0; i < 1000; i++)
		sem_post(&x->gate);
	wbf_stop(f);
	assert_int_equal(wbf_drain(x->wl, &ops, x, 3), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(s.dirty_bytes, 0);
	/* (a block the cleaner moved while in flight goes twice) */
	assert_true(s.flushed_bytes >= blk * WB_BLOCK);
	sem_destroy(&x->gate);
}

/* A run is written to the source only once its records are durable in
 * the log (else a power loss could leave the source's write torn with no
 * record to repair it); records synced already cost no fdatasync more. */
static void test_logged_durably_first(void **state)
{
	struct fx *x = *state;
	struct wblog_stats s;
	uint64_t seq;
	char b[100];

	src_file(x, 1, 'o', 20000);
	wr(x, &F1, 0, 'a', 8192);
	wr(x, &F1, 12288, 'b', 100);
	wblog_stats(x->wl, &s);
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, NULL), 0);
	assert_int_equal(x->begins, 4);
	assert_true(x->syncs_at_begin > s.syncs);
	/* synced by the writer: the flush adds no fdatasync of the log */
	memset(b, 'c', sizeof(b));
	assert_int_equal(wblog_write(x->wl, &F1, 100, b, sizeof(b), NULL,
				     NULL, &seq), (ssize_t)sizeof(b));
	assert_int_equal(wblog_sync(x->wl, seq), 0);
	wblog_stats(x->wl, &s);
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, NULL), 0);
	assert_int_equal(x->begins, 6);
	assert_int_equal(x->syncs_at_begin, s.syncs);
}

/*
 * A batch: scattered dirty blocks of one file are written as runs in one
 * round with one descriptor (one fdatasync) for the file, and the source
 * ends as the mount showed it (a block written again while in flight:
 * test_wblog.c, test_flush_batch).
 */
static void test_batch_one_file(void **state)
{
	struct fx *x = *state;
	uint64_t bytes;
	size_t n;
	char *b;
	int i;

	src_file(x, 1, 'o', 40 * 4096);
	for (i = 0; i < 20; i++)
		wr(x, &F1, (uint64_t)i * 2 * 4096, 'a' + i, 4096);
	assert_int_equal(wbf_round(x->wl, &ops, x, 0, &bytes), 0);
	assert_int_equal(bytes, 20 * 4096);
	assert_int_equal(x->begins, 40);
	assert_int_equal(x->ends, 40);
	assert_int_equal(x->fills, 20);
	assert_int_equal(x->opens, 1);
	b = src_read(x, 1, &n);
	assert_int_equal(n, 40 * 4096);
	for (i = 0; i < 20; i++) {
		expect_run(b, (size_t)i * 8192, (size_t)i * 8192 + 4096,
			   'a' + i);
		expect_run(b, (size_t)i * 8192 + 4096, (size_t)i * 8192 + 8192,
			   'o');
	}
	free(b);
}

/* test_fill_is_the_sources: a writer rewriting a few blocks while the
 * flusher runs rounds; each end given a run's bytes (a fill) compares
 * them with the source file's there. */
struct race {
	struct fx *x;
	int stop;		/* atomic: the writer reads it */
	unsigned fills, stale;
};

static void *race_begin(void *arg, const struct wb_fid *fid, uint64_t off,
			uint64_t len)
{
	(void)fid;
	(void)off;
	(void)len;
	return arg;
}

static void race_end(void *arg, void *cookie, const struct wb_fid *fid,
		     uint64_t off, uint64_t len, const void *data, int err)
{
	struct race *r = arg;
	char name[32], *b;
	int fd;

	(void)cookie;
	if (!data || err)
		return;
	b = malloc(len);
	assert_non_null(b);
	snprintf(name, sizeof(name), "f%llu", (unsigned long long)fid->ino);
	fd = openat(r->x->sfd, name, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, b, len, (off_t)off), (ssize_t)len);
	close(fd);
	r->fills++;
	if (memcmp(b, data, len))
		r->stale++;
	free(b);
}

static int race_open(void *arg, const struct wb_fid *fid)
{
	return fx_open(((struct race *)arg)->x, fid);
}

static void *race_writer(void *arg)
{
	struct race *r = arg;
	unsigned i = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		wr(r->x, &F1, (uint64_t)(i % 4) * 4096, 'a' + (int)(i % 26),
		   4096);
		i++;
	}
	return NULL;
}

/*
 * The bytes a flushed run gives the cache (its end's data, after the
 * sync) are the source's: a block written again while its run was in
 * flight is a run of its own in the same batch, and the earlier run's
 * bytes are not given (they were: cached under the stamp the batch
 * leaves, the later run's end dropped them only in memory, and a kill
 * -9 before the store made that durable brought them back: a block read
 * an older write after the remount).  A race: counted over 2 s.
 */
static void test_fill_is_the_sources(void **state)
{
	static const struct wb_flush_ops rops = {
		.open = race_open, .begin = race_begin, .end = race_end,
	};
	struct race r = { .x = *state };
	struct timespec t0, t;
	pthread_t th;
	uint64_t bytes;

	src_file(r.x, 1, 'o', 4 * 4096);
	assert_int_equal(pthread_create(&th, NULL, race_writer, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		assert_int_equal(wbf_round(r.x->wl, &rops, &r, 0, &bytes), 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 2);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	print_message("%u fills, %u of bytes the source no longer held\n",
		      r.fills, r.stale);
	assert_true(r.fills > 0);
	assert_int_equal(r.stale, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_round_writes_back),
		T(test_delay_holds_young_data),
		T(test_gone_and_failing),
		T(test_flush_one_file),
		T(test_thread),
		T(test_replayed_data_flushed),
		T(test_pace),
		T(test_rate),
		T(test_wait_room),
		T(test_wait_writer),
		T(test_logged_durably_first),
		T(test_batch_one_file),
		T(test_fill_is_the_sources),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
