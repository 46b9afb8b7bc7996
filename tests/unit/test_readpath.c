// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the read path (src/cache/readpath.c) through its
 * interface (cache_read, cache_read_stored), over a real store and a real
 * source file, both in temporary directories; no mocks.  The store lives
 * under /var/tmp (the read-ahead of cached extents needs O_DIRECT, which
 * tmpfs refuses).  Every byte of every reply is checked against the
 * source's; the counters (hotfs/stats.h) tell where the bytes came from,
 * and cache_read_stored, which has no source to fall back on, proves a
 * read can be served by the store alone.
 *
 * What is checked: misses from the source, hits from the store (on
 * io_uring and with pread), a read across cached and missed extents in
 * order, short reads at EOF, a file changed behind the mount or under a
 * write in flight not served from the store, block grain for small
 * random reads against extent grain for whole extents and sequential
 * readers, the extent fill of a filling store, promotions only past the
 * threshold and never of a racy stamp, and large cached reads served by
 * read-ahead.  The handles' clock is the test's own (fh_set_clock).
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "unit_util.h"

#include "hotfs/cache.h"
#include "hotfs/cache_insert.h"
#include "hotfs/cache_write.h"
#include "hotfs/handle.h"
#include "hotfs/promote.h"
#include "hotfs/readahead.h"
#include "hotfs/readpath.h"
#include "hotfs/srcprobe.h"
#include "hotfs/uring.h"

#define EXT	(64u * 1024)
#define BPE	(EXT / ST_BLOCK)		/* blocks per extent */
#define FSIZE	(8 * EXT + 1000)		/* 8 extents and a tail */
#define BIG	(1ull << 30)			/* sparse: no fill */
#define BLK(b)	(ST_REC_BLOCK | (uint32_t)(b))
#define NFH	8

struct fx {
	char dir[64];			/* the source file "f" */
	char cdir[64];			/* the store */
	int dfd;
	struct hotfs_cache c;
	struct hotfs_inode *in;
	struct hotfs_key k;
	unsigned char *data;		/* the source's first FSIZE bytes */
	struct hotfs_fh *fh[NFH];
	unsigned nfh;
};

static const char ident[] = "test_readpath";
static int64_t now_ns = 1000000000LL;
static struct hotfs_srcinfo saved_src;

static int64_t test_now(void)
{
	return now_ns;
}

static unsigned char byte_at(uint64_t i)
{
	return (unsigned char)(i ^ (i >> 8) * 31 ^ (i >> 16) * 7);
}

static int setup_with(void **state, bool uring)
{
	struct hotfs_store_params sp = { 0 };
	struct pol_params pp = { .threshold = 1 };
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];
	struct stat st;
	uint64_t i;

	assert_non_null(f);
	f->data = malloc(FSIZE);
	assert_non_null(f->data);
	for (i = 0; i < FSIZE; i++)
		f->data[i] = byte_at(i);
	f->dfd = ut_dir_with_file("readpath", f->dir, sizeof(f->dir), "f",
				  f->data, FSIZE);
	assert_true(f->dfd >= 0);
	strcpy(f->cdir, "/var/tmp/hotfs-readpath-XXXXXX");
	assert_non_null(mkdtemp(f->cdir));
	sp.ident = ident;
	sp.ident_len = sizeof(ident) - 1;
	sp.capacity = 64ull << 20;
	sp.extent = EXT;
	assert_int_equal(st_open(f->cdir, &sp, &f->c.st, err, sizeof(err)),
			 0);
	assert_int_equal(pol_new(&pp, &f->c.pol), 0);
	assert_int_equal(ino_table_new(&f->c.it, f->dfd), 0);
	f->c.proc_self_fd = open("/proc/self/fd", O_PATH | O_CLOEXEC);
	assert_true(f->c.proc_self_fd >= 0);
	f->c.extent = EXT;
	f->c.ext_shift = 16;
	f->c.uring = uring;
	/* not started: what the reads queue stays there to be seen */
	assert_int_equal(pr_new(&f->c.pr, &f->c, 0), 0);
	f->in = ut_inode(f->c.it, f->dfd, "f", &st);
	assert_non_null(f->in);
	f->c.root_dev = st.st_dev;
	cache_key(&f->c, st.st_dev, st.st_ino, &f->k);
	saved_src = hotfs_src;
	fh_set_clock(test_now);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, true);
}

static int setup_pread(void **state)
{
	return setup_with(state, false);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	unsigned i;

	fh_set_clock(NULL);
	hotfs_src = saved_src;
	/* this thread's ring has this store's data file as its fixed file
	 * 0, for good: the next test's store needs a ring of its own */
	ur_discard();
	pr_free(f->c.pr);
	for (i = 0; i < f->nfh; i++)
		fh_free(f->fh[i]);
	ino_forget(f->c.it, f->in, 1);
	ino_table_free(f->c.it);
	ra_free(f->c.ra);
	st_close(f->c.st);
	pol_free(f->c.pol);
	close(f->c.proc_self_fd);
	close(f->dfd);
	ut_rm_tree(f->dir);
	ut_rm_tree(f->cdir);
	free(f->data);
	free(f);
	return 0;
}

/* A new handle on the source (an open through the mount). */
static struct hotfs_fh *open_fh(struct fx *f)
{
	int fd = openat(f->dfd, "f", O_RDONLY | O_CLOEXEC);
	struct hotfs_fh *fh;

	assert_true(fd >= 0);
	assert_true(f->nfh < NFH);
	fh = fh_new(fd);
	assert_non_null(fh);
	f->fh[f->nfh++] = fh;
	return fh;
}

static struct stat src_stat(struct fx *f)
{
	struct stat st;

	assert_int_equal(fstatat(f->dfd, "f", &st, 0), 0);
	return st;
}

static struct hotfs_stamp src_stamp(struct fx *f)
{
	struct stat st = src_stat(f);
	struct hotfs_stamp s;

	cache_stamp(&st, &s);
	return s;
}

static uint64_t stat_of(struct fx *f, enum hotfs_stat s)
{
	return stats_get(&f->c.stats, s);
}

/* Cache record rec of the file, as a promotion would, from the source's
 * bytes (the reader's bytes would be the same). */
static void insert(struct fx *f, uint32_t rec)
{
	struct hotfs_stamp s = src_stamp(f);
	uint64_t at = st_rec_off(rec, EXT);
	uint64_t len = st_rec_max(rec, EXT);

	if (at + len > FSIZE)
		len = FSIZE - at;
	assert_int_equal(cache_insert(f->c.st, f->in, &f->k, rec, &s,
				      f->in->cw.write_gen, f->data + at, len),
			 0);
	assert_true(st_holds(f->c.st, &f->k, rec));
}

/* The reply's bytes must be the want bytes expect[0..want). */
static void check_reply(const struct rp_reply *r, const unsigned char *expect,
			size_t want)
{
	size_t got = 0;
	int i;

	assert_true(r->n >= 1 && r->n <= RP_IOV);
	for (i = 0; i < r->n; i++) {
		assert_true(got + r->iov[i].iov_len <= want);
		assert_memory_equal(r->iov[i].iov_base, expect + got,
				    r->iov[i].iov_len);
		got += r->iov[i].iov_len;
	}
	assert_int_equal(got, want);
}

/* cache_read of [off, off + size) through fh: want bytes of the source's
 * (the original ones, or expect when not NULL).  Each read comes later
 * than the reorder window after the last (hotfs/seqread.h): one before
 * the run's end is a seek, not a request taken late. */
static void read_check(struct fx *f, struct hotfs_fh *fh, size_t size,
		       uint64_t off, size_t want, const unsigned char *expect)
{
	struct rp_reply r;

	now_ns += 2 * SEQ_REORDER_NS;
	assert_int_equal(cache_read(&f->c, f->in, fh, fh->fd, size,
				    (off_t)off, &r), 0);
	check_reply(&r, expect ? expect : f->data + off, want);
	rp_done(&r);
}

/* Until the promoter has inserted n records (or given up on them). */
static void wait_promoted(struct fx *f, uint64_t n)
{
	struct timespec ts = { 0, 5000000L };
	int i;

	for (i = 0; i < 2000; i++) {
		if (stat_of(f, STAT_PROMOTIONS) + stat_of(f, STAT_NP_RACE) +
		    stat_of(f, STAT_NP_STORE) >= n && pr_depth(f->c.pr) == 0)
			return;
		nanosleep(&ts, NULL);
	}
	fail_msg("promotions: %llu of %llu, depth %u",
		 (unsigned long long)stat_of(f, STAT_PROMOTIONS),
		 (unsigned long long)n, pr_depth(f->c.pr));
}

/* The file grows to BIG (sparse): a store of 64 MiB holds less than a
 * sixth of it, so no read fills its whole extent. */
static void make_big(struct fx *f)
{
	int fd = openat(f->dfd, "f", O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)BIG), 0);
	close(fd);
}

/* Nothing cached: the source's bytes, one miss, nothing queued below the
 * threshold. */
static void test_miss_reads_source(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f);

	assert_int_equal(pol_set_threshold(f->c.pol, 2), 0);
	read_check(f, fh, 8192, 0, 8192, NULL);
	assert_int_equal(stat_of(f, STAT_READ_REQS), 1);
	assert_int_equal(stat_of(f, STAT_MISS_REQS), 1);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 0);
	assert_int_equal(stat_of(f, STAT_MISS_BYTES), 8192);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 0);
	assert_int_equal(stat_of(f, STAT_READ_BYTES), 8192);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 1);
	assert_int_equal(stat_of(f, STAT_NP_THRESHOLD), 1);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 0);
	assert_int_equal(pr_depth(f->c.pr), 0);
	/* and an unaligned one in the middle of an extent */
	read_check(f, fh, 3000, 5 * EXT + 777, 3000, NULL);
	assert_int_equal(stat_of(f, STAT_MISS_REQS), 2);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 0);
}

/*
 * A cached extent: unaligned (a bounce buffer and block checksums),
 * block-aligned (straight into the reply) and whole reads of it are hits
 * with the right bytes, and the store alone (cache_read_stored, no
 * source) serves them too.
 */
static void test_hit_served_from_store(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f);
	struct stat st = src_stat(f);
	struct rp_reply r;

	insert(f, 1);
	read_check(f, fh, 5000, EXT + 100, 5000, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 1);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 5000);
	assert_int_equal(stat_of(f, STAT_MISS_BYTES), 0);
	read_check(f, fh, 8192, EXT + 4096, 8192, NULL);
	read_check(f, fh, EXT, EXT, EXT, NULL);
	read_check(f, fh, 1, 2 * EXT - 1, 1, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 4);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 5000 + 8192 + EXT + 1);
	assert_int_equal(stat_of(f, STAT_MISS_REQS), 0);
	assert_int_equal(stat_of(f, STAT_MISS_BYTES), 0);
	assert_int_equal(stat_of(f, STAT_CSUM_FAIL), 0);

	/* the store alone: no source to read from */
	assert_int_equal(cache_read_stored(&f->c, f->in, fh, &st, 5000,
					   EXT + 100, &r), 0);
	check_reply(&r, f->data + EXT + 100, 5000);
	rp_done(&r);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES),
			 2 * 5000 + 8192 + EXT + 1);
	/* a byte it does not hold: the source is needed */
	assert_int_equal(cache_read_stored(&f->c, f->in, fh, &st, 5000,
					   2 * EXT - 100, &r), -EAGAIN);
	rp_done(&r);
	assert_int_equal(cache_read_stored(&f->c, f->in, fh, &st, 100, 0, &r),
			 -EAGAIN);
	rp_done(&r);
}

/*
 * Reads across cached and missed extents: every byte in its place,
 * counted partly hit; both orders, and a missed extent between two
 * hits.
 */
static void test_spanning_hit_and_miss(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f);

	insert(f, 1);
	insert(f, 3);
	/* hit, then miss */
	read_check(f, fh, EXT, EXT + EXT / 2, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_PARTIAL_REQS), 1);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), EXT / 2);
	assert_int_equal(stat_of(f, STAT_MISS_BYTES), EXT / 2);
	/* miss, then hit */
	read_check(f, fh, EXT - 1000, EXT / 2 + 300, EXT - 1000, NULL);
	assert_int_equal(stat_of(f, STAT_PARTIAL_REQS), 2);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES),
			 EXT / 2 + EXT / 2 + 300 - 1000);
	/* hit, miss, hit: 1 and 3 from the store, 2 from the source */
	read_check(f, fh, 2 * EXT + 2 * 4096 + 5, EXT + EXT / 2 - 4096 - 3,
		   2 * EXT + 2 * 4096 + 5, NULL);
	assert_int_equal(stat_of(f, STAT_PARTIAL_REQS), 3);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 0);
	assert_int_equal(stat_of(f, STAT_MISS_REQS), 0);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), EXT - 700 +
			 (EXT / 2 + 4096 + 3) + (EXT / 2 + 4096 + 2));
	assert_int_equal(stat_of(f, STAT_READ_BYTES),
			 EXT + EXT - 1000 + 2 * EXT + 2 * 4096 + 5);
}

/* Past the end: short, or nothing, cached or not. */
static void test_read_past_eof_is_short(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f);
	struct stat st;
	struct rp_reply r;

	read_check(f, fh, 4096, FSIZE - 500, 500, NULL);
	assert_int_equal(stat_of(f, STAT_MISS_BYTES), 500);
	read_check(f, fh, 4096, FSIZE, 0, NULL);
	read_check(f, fh, 4096, FSIZE + 10 * EXT, 0, NULL);
	/* the last extent cached: its 1000 bytes, no more */
	insert(f, 8);
	read_check(f, fh, 4096, FSIZE - 500, 500, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 500);
	read_check(f, fh, 3 * EXT, 7 * EXT + 10, EXT - 10 + 1000, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 500 + 1000);
	st = src_stat(f);
	assert_int_equal(cache_read_stored(&f->c, f->in, fh, &st, 8192,
					   8 * EXT + 200, &r), 0);
	check_reply(&r, f->data + 8 * EXT + 200, 800);
	rp_done(&r);
	assert_int_equal(stat_of(f, STAT_MISS_BYTES), 500 + EXT - 10);
}

/* Changed behind the mount (another stamp): the source's new bytes, not
 * the store's; the stale records are dropped. */
static void test_changed_behind_not_served(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f);
	struct timespec t[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	unsigned char *now = malloc(FSIZE);
	struct stat st;
	struct rp_reply r;
	int fd;

	assert_non_null(now);
	insert(f, 1);
	insert(f, 2);
	read_check(f, fh, 5000, EXT + 100, 5000, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 5000);

	/* new bytes in extent 1, and a stamp that surely differs */
	memcpy(now, f->data, FSIZE);
	memset(now + EXT, 'N', EXT);
	fd = openat(f->dfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, now + EXT, EXT, EXT), EXT);
	assert_int_equal(futimens(fd, t), 0);
	close(fd);

	/* the store alone does not know: the records are another stamp's */
	st = src_stat(f);
	assert_int_equal(cache_read_stored(&f->c, f->in, fh, &st, 5000,
					   EXT + 100, &r), -EAGAIN);
	rp_done(&r);
	read_check(f, fh, 5000, EXT + 100, 5000, now + EXT + 100);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 5000);
	/* extent 2, unchanged, is not served either: its stamp is gone */
	read_check(f, fh, 5000, 2 * EXT + 100, 5000, now + 2 * EXT + 100);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 5000);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 1);
	assert_false(st_holds(f->c.st, &f->k, 1));
	assert_false(st_holds(f->c.st, &f->k, 2));
	free(now);
}

/* A write through the mount in flight over the range: from the source;
 * once it ended (nothing changed), from the store again. */
static void test_write_in_flight_reads_source(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f);
	struct cache_wr w;

	insert(f, 1);
	cache_write_begin(&f->c, f->c.it, f->in, &w, EXT + 10, 10);
	read_check(f, fh, 5000, EXT + 100, 5000, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 0);
	assert_int_equal(stat_of(f, STAT_MISS_REQS), 1);
	cache_write_end(&f->c, f->in, &w, EXT + 10, 0, NULL);
	read_check(f, fh, 5000, EXT + 100, 5000, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 5000);
}

/*
 * A small random read (not at byte 0, not sequential) goes by blocks:
 * its block is counted and promoted on its own, not its extent.  A whole
 * extent, or a sequential reader from byte 0, goes by extents.  (The
 * file is large beside the store: no extent fill.)
 */
static void test_block_grain_vs_extent_grain(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f), *seq = open_fh(f);
	uint64_t off;

	make_big(f);
	read_check(f, fh, 4096, 3 * EXT + 2 * 4096, 4096, NULL);
	assert_int_equal(stat_of(f, STAT_FILL_READS), 0);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 1);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 1);
	/* a whole extent, at random */
	read_check(f, fh, EXT, 5 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 2);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 2);
	/* a sequential reader: its extent is assembled from its reads and
	 * queued once they cover it */
	for (off = 0; off < EXT; off += EXT / 4) {
		assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 2);
		read_check(f, seq, EXT / 4, off, EXT / 4, NULL);
	}
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 3);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 3);

	assert_int_equal(pr_start(f->c.pr), 0);
	wait_promoted(f, 3);
	assert_int_equal(stat_of(f, STAT_PROMOTIONS), 3);
	assert_int_equal(stat_of(f, STAT_PROMO_BLOCKS), 1);
	assert_int_equal(stat_of(f, STAT_PROMO_EXTENTS), 2);
	assert_int_equal(stat_of(f, STAT_PROMO_SRC_READS), 0);
	assert_true(st_holds(f->c.st, &f->k, BLK(3 * BPE + 2)));
	assert_false(st_holds(f->c.st, &f->k, 3));
	assert_true(st_holds(f->c.st, &f->k, 5));
	assert_false(st_holds(f->c.st, &f->k, BLK(5 * BPE)));
	assert_true(st_holds(f->c.st, &f->k, 0));
	assert_false(st_holds(f->c.st, &f->k, BLK(0)));

	/* and they serve: the block, part of it beside a missed block, the
	 * extents */
	read_check(f, fh, 4096, 3 * EXT + 2 * 4096, 4096, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 1);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 4096);
	read_check(f, fh, 4096, 3 * EXT + 2 * 4096 + 100, 4096, NULL);
	assert_int_equal(stat_of(f, STAT_PARTIAL_REQS), 1);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 2 * 4096 - 100);
	read_check(f, fh, 3000, 5 * EXT + 1234, 3000, NULL);
	read_check(f, fh, 3000, 1234, 3000, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 3);
	assert_int_equal(stat_of(f, STAT_CSUM_FAIL), 0);
}

/*
 * While the store fills and has room for a sixth of the file, a small
 * random miss reads its whole extent from the source and queues every
 * block of it (the reader's and its neighbours), with the reader's bytes.
 */
static void test_extent_fill(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *a = open_fh(f), *b = open_fh(f), *c = open_fh(f);

	assert_true(st_filling(f->c.st));
	/* block 9 of extent 3 held already; a read of it and block 8 is
	 * partly a hit: no fill, block 8 queued alone */
	insert(f, BLK(3 * BPE + 9));
	read_check(f, a, 8192, 3 * EXT + 8 * 4096, 8192, NULL);
	assert_int_equal(stat_of(f, STAT_FILL_READS), 0);
	assert_int_equal(stat_of(f, STAT_PARTIAL_REQS), 1);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 2);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 1);

	/* blocks 2 and 3, missed: the whole extent is read; its blocks but
	 * 9 are queued (8 is queued already) */
	read_check(f, b, 8192, 3 * EXT + 2 * 4096, 8192, NULL);
	assert_int_equal(stat_of(f, STAT_FILL_READS), 1);
	assert_int_equal(stat_of(f, STAT_MISS_REQS), 1);
	assert_int_equal(stat_of(f, STAT_MISS_BYTES), 4096 + 8192);
	assert_int_equal(stat_of(f, STAT_READ_BYTES), 2 * 8192);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 4);
	assert_int_equal(stat_of(f, STAT_FILL_BLOCKS), BPE - 3);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), BPE - 1);

	assert_int_equal(pr_start(f->c.pr), 0);
	wait_promoted(f, BPE - 1);
	assert_int_equal(stat_of(f, STAT_PROMOTIONS), BPE - 1);
	assert_int_equal(stat_of(f, STAT_PROMO_BLOCKS), BPE - 1);
	assert_int_equal(stat_of(f, STAT_PROMO_SRC_READS), 0);
	assert_false(st_holds(f->c.st, &f->k, 3));
	/* a neighbour nobody read is served from the store */
	read_check(f, c, 4096, 3 * EXT + 12 * 4096, 4096, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 1);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 4096 + 4096);
	assert_int_equal(stat_of(f, STAT_FILL_READS), 1);
}

/*
 * Threshold 3: a whole extent read by three opens is queued at the third;
 * a handle reading it again does not count twice.
 */
static void test_promotes_only_past_threshold(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *a = open_fh(f), *b = open_fh(f), *c = open_fh(f);

	assert_int_equal(pol_set_threshold(f->c.pol, 3), 0);
	read_check(f, a, EXT, 2 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 1);
	assert_int_equal(stat_of(f, STAT_NP_THRESHOLD), 1);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 0);
	read_check(f, a, EXT, 2 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 1);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 0);
	read_check(f, b, EXT, 2 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 2);
	assert_int_equal(stat_of(f, STAT_NP_THRESHOLD), 2);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 0);
	assert_int_equal(pr_depth(f->c.pr), 0);
	read_check(f, c, EXT, 2 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_ACCESSES), 3);
	assert_int_equal(stat_of(f, STAT_NP_THRESHOLD), 2);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 1);
	assert_int_equal(pr_depth(f->c.pr), 1);
	assert_int_equal(pr_start(f->c.pr), 0);
	wait_promoted(f, 1);
	assert_true(st_holds(f->c.st, &f->k, 2));
	read_check(f, a, EXT, 2 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), EXT);
}

/*
 * On a source with coarse stamps, a file changed within a tick of now is
 * not promoted (a change in the same tick could keep its stamp); on a
 * fine-grained one, the same read of another open is.
 */
static void test_racy_stamp_not_promoted(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *a, *b;
	int fd;

	hotfs_src.gran_ns = 1000000000;		/* whole seconds */
	fd = openat(f->dfd, "f", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(futimens(fd, NULL), 0);	/* changed now */
	close(fd);
	a = open_fh(f);
	read_check(f, a, EXT, 2 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_NP_RACY), 1);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 0);

	hotfs_src.gran_ns = 1;
	b = open_fh(f);
	read_check(f, b, EXT, 2 * EXT, EXT, NULL);
	assert_int_equal(stat_of(f, STAT_NP_RACY), 1);
	assert_int_equal(stat_of(f, STAT_PROMO_QUEUED), 1);
}

/*
 * A large read of cached extents is served from whole extents read
 * ahead (one iovec per extent, slots held until rp_done); a small random
 * one is not.
 */
static void test_large_cached_read_uses_readahead(void **state)
{
	struct fx *f = *state;
	struct hotfs_fh *fh = open_fh(f);
	struct ra_counts rc;
	struct rp_reply r;
	char why[128];
	uint32_t e;

	if (ra_new(&f->c.ra, f->c.st, EXT, 0, why, sizeof(why)) < 0) {
		print_message("no read-ahead here: %s\n", why);
		f->c.ra = NULL;
		skip();
	}
	for (e = 0; e < 4; e++)
		insert(f, e);
	assert_int_equal(cache_read(&f->c, f->in, fh, fh->fd, 2 * EXT,
				    EXT + 100, &r), 0);
	assert_int_equal(r.n, 3);
	assert_ptr_equal(r.ra, f->c.ra);
	check_reply(&r, f->data + EXT + 100, 2 * EXT);
	rp_done(&r);
	ra_get_counts(f->c.ra, &rc);
	assert_int_equal(rc.served, 3);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 1);
	assert_int_equal(stat_of(f, STAT_HIT_BYTES), 2 * EXT);

	/* small and random: the ordinary path */
	read_check(f, fh, 4096, 4096, 4096, NULL);
	ra_get_counts(f->c.ra, &rc);
	assert_int_equal(rc.served, 3);
	assert_int_equal(stat_of(f, STAT_HIT_REQS), 2);
	/* a large read reaching a missed extent: the ordinary path too */
	read_check(f, fh, 2 * EXT, 3 * EXT, 2 * EXT, NULL);
	ra_get_counts(f->c.ra, &rc);
	assert_int_equal(rc.served, 3);
	assert_int_equal(stat_of(f, STAT_PARTIAL_REQS), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_miss_reads_source,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_hit_served_from_store,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_hit_served_from_store,
						setup_pread, teardown),
		cmocka_unit_test_setup_teardown(test_spanning_hit_and_miss,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_spanning_hit_and_miss,
						setup_pread, teardown),
		cmocka_unit_test_setup_teardown(test_read_past_eof_is_short,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_past_eof_is_short,
						setup_pread, teardown),
		cmocka_unit_test_setup_teardown(test_changed_behind_not_served,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_write_in_flight_reads_source, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_block_grain_vs_extent_grain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extent_fill,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_promotes_only_past_threshold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_racy_stamp_not_promoted,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_large_cached_read_uses_readahead, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
